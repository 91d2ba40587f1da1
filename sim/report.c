/*
 * sim/report.c - the reports of report.h. Number formats follow load/src/main.rs: rates {:.1},
 * times in us {:.2}, run_s {:.3}, slowdowns and the rate with f64 Display (shortest
 * round-trip form); JSON numbers are rounded to 3 decimals as jiffy-load's r2() does.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report.h"
#include "../src/common/json_out.h"

void sim_fmt_display(char *buf, size_t len, double v)
{
	char tmp[64], digits[32];
	int p, e, nd = 0;
	const char *m;
	char *o = buf, *end = buf + len - 1;

	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v < 0 ? "-inf" : "inf");
		return;
	}
	if (v == 0) {
		snprintf(buf, len, signbit(v) ? "-0" : "0");
		return;
	}
	for (p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* tmp: [-]d[.ddd]e[+-]XX */
	m = tmp;
	if (*m == '-') {
		if (o < end)
			*o++ = '-';
		m++;
	}
	for (; *m && *m != 'e'; m++)
		if (*m != '.')
			digits[nd++] = *m;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	e = atoi(m + 1);
	if (e < 0) {
		for (int i = 0; i < 2 && o < end; i++)
			*o++ = "0."[i];
		for (int i = 0; i < -e - 1 && o < end; i++)
			*o++ = '0';
		for (int i = 0; i < nd && o < end; i++)
			*o++ = digits[i];
	} else {
		for (int i = 0; i <= e || i < nd; i++) {
			if (i == e + 1 && o < end)
				*o++ = '.';
			if (o < end)
				*o++ = i < nd ? digits[i] : '0';
		}
	}
	*o = '\0';
}

/* jiffy-load's r2(): round to 3 decimals. */
static double r3(double x)
{
	return round(x * 1000.0) / 1000.0;
}

static double window_s(const struct sim_result *res)
{
	return (double)res->window_ns / 1e9;
}

struct summary {
	double p50, p90, p99, p999, max, mean; /* us */
	bool has_slow;
	double s50, s99, s999;
};

static struct summary summarise(const struct sim_class *c)
{
	struct summary s;

	s.p50 = (double)sim_hist_quantile(&c->lat, 0.5) / 1e3;
	s.p90 = (double)sim_hist_quantile(&c->lat, 0.9) / 1e3;
	s.p99 = (double)sim_hist_quantile(&c->lat, 0.99) / 1e3;
	s.p999 = (double)sim_hist_quantile(&c->lat, 0.999) / 1e3;
	s.max = (double)sim_hist_max(&c->lat) / 1e3;
	s.mean = c->count ? (double)c->lat_sum_ns / (double)c->count / 1e3 : 0.0;
	s.has_slow = c->slow.total > 0;
	s.s50 = (double)sim_hist_quantile(&c->slow, 0.5) / 1000.0;
	s.s99 = (double)sim_hist_quantile(&c->slow, 0.99) / 1000.0;
	s.s999 = (double)sim_hist_quantile(&c->slow, 0.999) / 1000.0;
	return s;
}

bool sim_report_valid(const struct sim_result *res)
{
	return res->overall.scheduled > 0 &&
	       !((double)res->overall.lost > 0.001 * (double)res->overall.scheduled) &&
	       !res->violation[0];
}

/* --- human ---------------------------------------------------------------------------------- */

static void human_line(FILE *f, const char *name, const struct sim_class *c)
{
	struct summary s = summarise(c);
	char a[32] = "-", b[32] = "-", d[32] = "-";

	if (s.has_slow) {
		snprintf(a, sizeof(a), "%.2f", s.s50);
		snprintf(b, sizeof(b), "%.2f", s.s99);
		snprintf(d, sizeof(d), "%.2f", s.s999);
	}
	fprintf(f, "%-8s %9llu %6llu %6d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %8s %8s %8s\n", name,
		(unsigned long long)c->count, (unsigned long long)c->lost, 0, s.p50, s.p90, s.p99,
		s.p999, s.max, s.mean, a, b, d);
}

void sim_report_human(FILE *f, const struct sim_config *cfg, const struct sim_result *res,
		      const struct sim_report_info *info, bool quiet)
{
	double ws = window_s(res), offered = (double)res->overall.scheduled / ws;
	double achieved = (double)res->overall.done_in_window / ws;
	struct summary o = summarise(&res->overall);
	bool valid = sim_report_valid(res);

	if (!quiet) {
		fprintf(f, "jiffy-sim: %s, %d cores, %s %s, rate %.1f/s", info->server, cfg->cores,
			info->workload, info->dist, cfg->rate);
		if (info->load > 0)
			fprintf(f, " (load %.3f)", info->load);
		if (cfg->costs.preempt)
			fprintf(f, ", quantum %.2f us", (double)cfg->tun.quantum_ns / 1e3);
		fprintf(f, ", seed %llu\n", (unsigned long long)cfg->seed);
		fprintf(f, "window %.6f s: offered %.1f req/s, achieved %.1f replies/s\n", ws,
			offered, achieved);
		fprintf(f, "sent %llu received %llu lost %llu; virtual time %.6f s, %llu events\n",
			(unsigned long long)res->sent, (unsigned long long)res->received,
			(unsigned long long)res->overall.lost, (double)res->run_ns / 1e9,
			(unsigned long long)res->events);
		fprintf(f, "preemptions %llu (interrupts %llu, skipped %llu, wakeup kicks %llu), "
			   "switches %llu, steals %llu, parked wake-ups %llu, max in flight %llu\n",
			(unsigned long long)res->preempts, (unsigned long long)res->interrupts,
			(unsigned long long)res->preempt_skipped,
			(unsigned long long)res->wakeup_preempts,
			(unsigned long long)res->switches, (unsigned long long)res->steals,
			(unsigned long long)res->parked_wakeups, (unsigned long long)res->max_inflight);
		fprintf(f, "workers busy %.2f %% (overheads %.2f %%), central sender/dispatcher busy "
			   "%.2f %%\n", 100 * res->busy_frac, 100 * res->overhead_frac,
			100 * res->sender_frac);
		fprintf(f, "%-8s %9s %6s %6s %9s %9s %9s %9s %9s %9s %8s %8s %8s\n", "class",
			"count", "lost", "errors", "p50_us", "p90_us", "p99_us", "p99.9_us",
			"max_us", "mean_us", "slow50", "slow99", "slow999");
		for (int k = 0; k < res->nclasses; k++)
			human_line(f, info->class_names[k], &res->cls[k]);
		if (res->nclasses > 1)
			human_line(f, "overall", &res->overall);
	}
	fprintf(f, "%s offered=%.0f achieved=%.0f p50=%.1fus p99=%.1fus mean=%.1fus lost=%llu "
		   "lag_p99=0.0us\n", valid ? "VALID" : "INVALID", offered, achieved, o.p50, o.p99,
		o.mean, (unsigned long long)res->overall.lost);
}

/* --- CSV -------------------------------------------------------------------------------------- */

/* jiffy-load's csv_field(): quoted when it holds a comma or a quote. */
static void csv_field(FILE *f, const char *s)
{
	if (!strchr(s, ',') && !strchr(s, '"')) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_row(FILE *f, const struct sim_config *cfg, const struct sim_result *res,
		    const struct sim_report_info *info, const char *name, const struct sim_class *c)
{
	struct summary s = summarise(c);
	double ws = window_s(res);
	char a[48] = "", b[48] = "", d[48] = "", rate[64];

	if (s.has_slow) {
		sim_fmt_display(a, sizeof(a), s.s50);
		sim_fmt_display(b, sizeof(b), s.s99);
		sim_fmt_display(d, sizeof(d), s.s999);
	}
	sim_fmt_display(rate, sizeof(rate), cfg->rate);
	csv_field(f, info->label);
	fputc(',', f);
	csv_field(f, info->server);
	fprintf(f, ",%s,", info->workload);
	csv_field(f, info->dist);
	fprintf(f, ",%s,%.1f,%.1f,%llu,%llu,0,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%s,%s,%s,0.00,%s,sim,%s,"
		   "%llu,%llu,0.00,%.3f,0.000\n",
		name, (double)c->scheduled / ws, (double)c->done_in_window / ws,
		(unsigned long long)c->count, (unsigned long long)c->lost, s.p50, s.p90, s.p99,
		s.p999, s.max, s.mean, a, b, d, sim_report_valid(res) ? "true" : "false", rate,
		(unsigned long long)res->sent, (unsigned long long)res->received,
		(double)res->run_ns / 1e9);
}

int sim_report_csv(const char *path, const struct sim_config *cfg, const struct sim_result *res,
		   const struct sim_report_info *info, char *err, size_t errlen)
{
	struct stat st;
	bool fresh = stat(path, &st) != 0 || st.st_size == 0;
	FILE *f = fopen(path, "a");

	if (!f) {
		int e = errno;
		snprintf(err, errlen, "--csv %s: %s", path, strerror(e));
		return -e;
	}
	if (fresh)
		fputs("label,server,workload,dist,class,offered_rps,achieved_rps,count,lost,errors,"
		      "p50_us,p90_us,p99_us,p999_us,max_us,mean_us,slow_p50,slow_p99,slow_p999,"
		      "lag_p99_us,valid,mode,rate,sent,received,lag_max_us,run_s,cpu_s\n", f);
	for (int k = 0; k < res->nclasses; k++)
		csv_row(f, cfg, res, info, info->class_names[k], &res->cls[k]);
	csv_row(f, cfg, res, info, "overall", &res->overall);
	if (fclose(f) != 0) {
		int e = errno;
		snprintf(err, errlen, "--csv %s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

/* --- JSON ------------------------------------------------------------------------------------ */

static void json_num(FILE *f, double v)
{
	char buf[64];

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	sim_fmt_display(buf, sizeof(buf), r3(v));
	fputs(buf, f);
}

/* @prefix (", \"name\": "), then @v. */
static void json_field(FILE *f, const char *prefix, double v)
{
	fputs(prefix, f);
	json_num(f, v);
}

static void json_class(FILE *f, const struct sim_result *res, const struct sim_class *c,
		       const char *indent)
{
	struct summary s = summarise(c);
	double ws = window_s(res);

	fprintf(f, "{\"count\": %llu, \"completed\": %llu, \"lost\": %llu, \"errors\": 0, "
		   "\"scheduled\": %llu,\n%s \"offered_rps\": ",
		(unsigned long long)c->count, (unsigned long long)c->completed,
		(unsigned long long)c->lost, (unsigned long long)c->scheduled, indent);
	json_num(f, (double)c->scheduled / ws);
	json_field(f, ", \"achieved_rps\": ", (double)c->done_in_window / ws);
	fprintf(f, ",\n%s \"p50_us\": ", indent);
	json_num(f, s.p50);
	json_field(f, ", \"p90_us\": ", s.p90);
	json_field(f, ", \"p99_us\": ", s.p99);
	json_field(f, ", \"p999_us\": ", s.p999);
	json_field(f, ", \"max_us\": ", s.max);
	json_field(f, ", \"mean_us\": ", s.mean);
	if (s.has_slow) {
		fprintf(f, ",\n%s \"slow_p50\": ", indent);
		json_num(f, s.s50);
		json_field(f, ", \"slow_p99\": ", s.s99);
		json_field(f, ", \"slow_p999\": ", s.s999);
	}
	fputc('}', f);
}

static void json_costs(FILE *f, const struct sim_costs *c)
{
	fputs("{\"preempt\": ", f);
	fputs(c->preempt ? "true" : "false", f);
	json_field(f, ", \"receiver_ns\": ", c->receiver_ns);
	json_field(f, ", \"sender_ns\": ", c->sender_ns);
	fprintf(f, ", \"sender_central\": %s, \"switch_ns\": ", c->sender_central ? "true" : "false");
	json_num(f, c->switch_ns);
	json_field(f, ", \"check_ns\": ", c->check_ns);
	json_field(f, ", \"check_every_ns\": ", c->check_every_ns);
	json_field(f, ", \"dispatch_ns\": ", c->dispatch_ns);
	fprintf(f, ", \"kick\": %s", c->preempt && !c->no_kick ? "true" : "false");
	fputs(",\n      \"source\": ", f);
	jf_json_str(f, c->source);
	fputc('}', f);
}

/*
 * The simulated policy's parameters, every one of its table under its own name, in the unit
 * it is written in (a duration in that of its type: slice_us in us), a choice by name:
 * {"slice_us": 50}; {} for ps.
 */
static void json_params(FILE *f, const struct sim_config *cfg)
{
	const struct jf_policy_ops *ops = jf_policy_find(cfg->policy);
	struct jf_policy_params pp;

	fputc('{', f);
	if (ops && sim_policy_params(cfg, ops, &pp, NULL, 0) == 0)
		for (size_t i = 0; i < ops->nparams; i++) {
			const struct jf_policy_param *p = &ops->params[i];

			fputs(i ? ", " : "", f);
			jf_json_str(f, p->name);
			fputs(": ", f);
			if (p->type == JF_PARAM_US)
				json_num(f, (double)pp.value[i] / 1e3);
			else if (p->type == JF_PARAM_BOOL)
				fputs(pp.value[i] ? "true" : "false", f);
			else if (p->type == JF_PARAM_ENUM)
				jf_json_str(f, p->choices[pp.value[i]]);
			else
				fprintf(f, "%llu", (unsigned long long)pp.value[i]);
		}
	fputc('}', f);
}

static void json_config(FILE *f, const struct sim_config *cfg, const struct sim_result *res,
			const struct sim_report_info *info)
{
	double mean = sim_mean_service_ns(cfg);

	fprintf(f, "{\"cores\": %d, \"policy\": ", cfg->cores);
	jf_json_str(f, cfg->policy);
	fputs(", \"mechanism\": ", f);
	jf_json_str(f, cfg->costs.name);
	fputs(",\n    \"costs\": ", f);
	json_costs(f, &cfg->costs);
	json_field(f, ",\n    \"quantum_us\": ", (double)cfg->tun.quantum_ns / 1e3);
	fputs(", \"policy_params\": ", f);
	json_params(f, cfg);
	json_field(f, ",\n    \"rate\": ", cfg->rate);
	json_field(f, ", \"load\": ", info->load);
	fprintf(f, ", \"requests\": %llu, \"warmup\": %llu, \"seed\": %llu, \"drain_ms\": ",
		(unsigned long long)cfg->requests, (unsigned long long)cfg->warmup,
		(unsigned long long)cfg->seed);
	json_num(f, (double)cfg->drain_ns / 1e6);
	json_field(f, ", \"block_prob\": ", cfg->block_prob);
	json_field(f, ", \"block_us\": ", (double)cfg->block_ns / 1e3);
	json_field(f, ", \"yield_every_us\": ", (double)cfg->yield_every_ns / 1e3);
	fputs(",\n    \"classes\": [", f);
	for (int k = 0; k < res->nclasses; k++) {
		fputs(k ? ", " : "", f);
		jf_json_str(f, info->class_names[k]);
	}
	fputs("], \"slo_us\": [", f);
	for (int k = 0; k < res->nclasses; k++) {
		fputs(k ? ", " : "", f);
		json_num(f, (double)cfg->slo_ns[k] / 1e3);
	}
	json_field(f, "], \"mean_service_us\": ", mean / 1e3);
	json_field(f, ", \"offered_utilisation\": ", mean * cfg->rate / 1e9 / cfg->cores);
	fprintf(f, ", \"arrival_worker\": %d, \"park_after_us\": ", cfg->arrival_worker);
	json_num(f, (double)cfg->park_after_ns / 1e3);
	json_field(f, ", \"wake_cost_us\": ", (double)cfg->wake_ns / 1e3);
	fprintf(f, ", \"check\": %s}", cfg->check ? "true" : "false");
}

void sim_report_json(FILE *f, const struct sim_config *cfg, const struct sim_result *res,
		     const struct sim_report_info *info)
{
	double ws = window_s(res);
	bool valid = sim_report_valid(res);

	fputs("{\n  \"label\": ", f);
	jf_json_str(f, info->label);
	fputs(", \"server\": ", f);
	jf_json_str(f, info->server);
	fputs(", \"workload\": ", f);
	jf_json_str(f, info->workload);
	fputs(", \"dist\": ", f);
	jf_json_str(f, info->dist);
	fprintf(f, ", \"mode\": \"sim\",\n  \"valid\": %s, \"invalid_reasons\": [", valid ? "true"
											  : "false");
	if (res->overall.scheduled == 0)
		jf_json_str(f, "no request was measured");
	else if ((double)res->overall.lost > 0.001 * (double)res->overall.scheduled)
		fprintf(f, "\"%llu of %llu measured requests lost\"",
			(unsigned long long)res->overall.lost,
			(unsigned long long)res->overall.scheduled);
	fputs("], \"violation\": ", f);
	if (res->violation[0])
		jf_json_str(f, res->violation);
	else
		fputs("null", f);
	fputs(",\n  \"config\": ", f);
	json_config(f, cfg, res, info);
	json_field(f, ",\n  \"window_s\": ", ws);
	json_field(f, ", \"offered_rps\": ", (double)res->overall.scheduled / ws);
	json_field(f, ", \"achieved_rps\": ", (double)res->overall.done_in_window / ws);
	fprintf(f, ", \"sent\": %llu, \"received\": %llu, \"lost\": %llu, \"run_s\": ",
		(unsigned long long)res->sent, (unsigned long long)res->received,
		(unsigned long long)res->overall.lost);
	json_num(f, (double)res->run_ns / 1e9);
	fprintf(f, ",\n  \"sim\": {\"events\": %llu, \"preemptions\": %llu, \"interrupts\": %llu, "
		   "\"preempt_skipped\": %llu, \"wakeup_preemptions\": %llu, \"switches\": %llu, "
		   "\"steals\": %llu, \"parked_wakeups\": %llu, \"max_inflight\": %llu, "
		   "\"busy_frac\": ",
		(unsigned long long)res->events, (unsigned long long)res->preempts,
		(unsigned long long)res->interrupts, (unsigned long long)res->preempt_skipped,
		(unsigned long long)res->wakeup_preempts, (unsigned long long)res->switches,
		(unsigned long long)res->steals, (unsigned long long)res->parked_wakeups,
		(unsigned long long)res->max_inflight);
	json_num(f, res->busy_frac);
	json_field(f, ", \"overhead_frac\": ", res->overhead_frac);
	json_field(f, ", \"sender_frac\": ", res->sender_frac);
	fputs("},\n  \"overall\": ", f);
	json_class(f, res, &res->overall, "   ");
	fputs(",\n  \"classes\": {", f);
	for (int k = 0; k < res->nclasses; k++) {
		fputs(k ? ",\n    " : "\n    ", f);
		jf_json_str(f, info->class_names[k]);
		fputs(": ", f);
		json_class(f, res, &res->cls[k], "     ");
	}
	fputs("}\n}", f);
}
