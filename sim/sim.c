/*
 * sim/sim.c - sim_run() and what every engine shares: defaults, the request source, the
 * recording of results (see internal.h), and the trace reader.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/policy.h>

#include "internal.h"
#include "../src/common/errf.h"

static const struct sim_dist default_dist = {
	.kind = SIM_DIST_EXP,
	.spec = "exp:10us",
	.mean_ns = 10000,
	.exp_mean_ns = 10000,
	.nclasses = 1,
	.class_names = {"all"},
};

void sim_config_default(struct sim_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cores = 16;
	snprintf(cfg->policy, sizeof(cfg->policy), "fifo");
	cfg->tun.quantum_ns = JF_POLICY_QUANTUM_DEFAULT_NS; /* the papers' 100 us */
	sim_costs_preset(&cfg->costs, "none", NULL, NULL, 0);
	cfg->dist = &default_dist;
	cfg->rate = 0;
	cfg->requests = 200000;
	cfg->warmup = 20000;
	cfg->drain_ns = 500 * UINT64_C(1000000);
	cfg->seed = 1;
	cfg->arrival_worker = -1;
}

int sim_class_names(const struct sim_config *cfg, const char (**names)[SIM_CLASS_NAME_MAX])
{
	if (cfg->trace) {
		*names = cfg->trace->class_names;
		return cfg->trace->nclasses;
	}
	*names = cfg->dist->class_names;
	return cfg->dist->nclasses;
}

double sim_mean_service_ns(const struct sim_config *cfg)
{
	return cfg->trace ? cfg->trace->mean_service_ns : cfg->dist->mean_ns;
}

double sim_rate_for_load(const struct sim_config *cfg, double load)
{
	double m = sim_mean_service_ns(cfg);
	return m > 0 ? load * cfg->cores * 1e9 / m : 0;
}

/* --- the request source ------------------------------------------------------------------- */

void sim_source_init(struct sim_source *s, const struct sim_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	sim_rng_seed(&s->gaps, cfg->seed, SIM_STREAM_GAPS);
	sim_rng_seed(&s->service, cfg->seed, SIM_STREAM_SERVICE);
	sim_rng_seed(&s->placement, cfg->seed, SIM_STREAM_PLACEMENT);
	sim_rng_seed(&s->block, cfg->seed, SIM_STREAM_BLOCK);
	s->total = cfg->warmup + cfg->requests;
	s->clock_ns = (double)SIM_T0_NS;
	s->trace_scale = 1.0;
	if (cfg->trace) {
		if (s->total > cfg->trace->n)
			s->total = cfg->trace->n;
		if (cfg->rate > 0 && cfg->trace->rate > 0)
			s->trace_scale = cfg->trace->rate / cfg->rate;
	}
}

/* Arrival time of request @i (the caller draws them in order). */
static uint64_t arrival_at(struct sim_source *s, uint64_t i)
{
	const struct sim_trace *tr = s->cfg->trace;

	if (tr)
		return SIM_T0_NS +
		       sim_round_u64((double)(tr->at_ns[i] - tr->at_ns[0]) * s->trace_scale);
	s->clock_ns += -log(sim_rng_uniform_pos(&s->gaps)) * 1e9 / s->cfg->rate;
	return sim_round_u64(s->clock_ns);
}

bool sim_source_next(struct sim_source *s, struct sim_request *r)
{
	const struct sim_config *cfg = s->cfg;
	uint64_t i = s->next;

	if (i >= s->total)
		return false;
	r->index = i;
	r->at_ns = arrival_at(s, i);
	if (cfg->trace) {
		r->service_ns = cfg->trace->service_ns[i];
		r->klass = cfg->trace->klass[i];
	} else {
		r->service_ns = sim_dist_sample(cfg->dist, &s->service, &r->klass);
	}
	r->from = (int)sim_rng_below(&s->placement, (uint32_t)cfg->cores);
	if (cfg->arrival_worker >= 0)
		r->from = cfg->arrival_worker;
	r->blocks = cfg->block_prob > 0 && sim_rng_uniform(&s->block) < cfg->block_prob;
	r->measured = i >= cfg->warmup;
	if (i == cfg->warmup)
		s->w0 = r->at_ns;
	if (i + 1 == s->total) {
		/* The window ends at the arrival after the last measured one (jiffy-load's window
		 * is [warm-up, duration), and no request is sent after it). */
		if (!cfg->trace)
			s->w1 = sim_round_u64(s->clock_ns - log(sim_rng_uniform_pos(&s->gaps)) *
							    1e9 / cfg->rate);
		else if (i + 1 < cfg->trace->n)
			s->w1 = arrival_at(s, i + 1);
		else
			s->w1 = r->at_ns + 1;
		s->w1_known = true;
	}
	s->next++;
	return true;
}

/* --- results ----------------------------------------------------------------------------- */

static int class_init(struct sim_class *c)
{
	memset(c, 0, sizeof(*c));
	if (sim_hist_init(&c->lat) || sim_hist_init(&c->slow))
		return -ENOMEM;
	return 0;
}

static void class_free(struct sim_class *c)
{
	sim_hist_free(&c->lat);
	sim_hist_free(&c->slow);
}

int sim_result_init(struct sim_result *res, int nclasses)
{
	memset(res, 0, sizeof(*res));
	res->nclasses = nclasses;
	for (int k = 0; k < nclasses; k++)
		if (class_init(&res->cls[k]))
			return -ENOMEM;
	return class_init(&res->overall);
}

void sim_result_free(struct sim_result *res)
{
	for (int k = 0; k < SIM_MAX_CLASSES; k++)
		class_free(&res->cls[k]);
	class_free(&res->overall);
}

static void record_into(struct sim_class *c, uint64_t lat_ns, uint64_t svc_ns)
{
	double sd = (double)lat_ns / (double)(svc_ns ? svc_ns : 1);
	uint64_t milli = sim_round_u64(sd * 1000.0);

	sim_hist_record(&c->lat, lat_ns ? lat_ns : 1);
	sim_hist_record(&c->slow, milli ? milli : 1);
	c->lat_sum_ns += lat_ns;
	c->count++;
}

void sim_record(struct sim_result *res, int k, uint64_t lat_ns, uint64_t svc_ns)
{
	record_into(&res->cls[k], lat_ns, svc_ns);
	record_into(&res->overall, lat_ns, svc_ns);
	res->cls[k].completed++;
	res->overall.completed++;
}

void sim_record_lost(struct sim_result *res, int k, uint64_t lat_ns, uint64_t svc_ns)
{
	record_into(&res->cls[k], lat_ns, svc_ns);
	record_into(&res->overall, lat_ns, svc_ns);
	res->cls[k].lost++;
	res->overall.lost++;
}

void sim_record_scheduled(struct sim_result *res, int k)
{
	res->cls[k].scheduled++;
	res->overall.scheduled++;
}

void sim_record_done(struct sim_result *res, const struct sim_source *src, int k, uint64_t t)
{
	res->received++;
	if (t >= src->w0 && (!src->w1_known || t < src->w1) && src->next > src->cfg->warmup) {
		res->cls[k].done_in_window++;
		res->overall.done_in_window++;
	}
}

/* --- sim_run -------------------------------------------------------------------------------- */

static int check_config(const struct sim_config *cfg, char *err, size_t errlen)
{
	if (cfg->cores < 1 || cfg->cores > SIM_MAX_CORES)
		return jf_errf(err, errlen, "--cores %d: must be in 1..%d", cfg->cores, SIM_MAX_CORES);
	if (!cfg->trace && !(cfg->rate > 0 && isfinite(cfg->rate)))
		return jf_errf(err, errlen, "--rate %g: must be > 0 (or give --load)", cfg->rate);
	if (cfg->requests == 0)
		return jf_errf(err, errlen, "--requests 0: at least one request must be measured");
	if (cfg->trace && cfg->trace->n <= cfg->warmup)
		return jf_errf(err, errlen, "--warmup %llu: the trace has only %zu requests",
			    (unsigned long long)cfg->warmup, cfg->trace->n);
	if (!(cfg->block_prob >= 0 && cfg->block_prob <= 1))
		return jf_errf(err, errlen, "--block: probability %g not in [0, 1]", cfg->block_prob);
	if (cfg->arrival_worker >= cfg->cores)
		return jf_errf(err, errlen, "--arrival-worker %d: there are only %d workers",
			    cfg->arrival_worker, cfg->cores);
	if (cfg->costs.preempt && cfg->tun.quantum_ns == 0)
		return jf_errf(err, errlen, "--quantum 0ns: a preemptive mechanism needs a quantum > 0");
	return sim_params_check(cfg, err, errlen);
}

int sim_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen)
{
	const char (*names)[SIM_CLASS_NAME_MAX];
	int rc = check_config(cfg, err, errlen);

	memset(res, 0, sizeof(*res));
	if (rc)
		return rc;
	if (sim_result_init(res, sim_class_names(cfg, &names))) {
		sim_result_free(res);
		return jf_errf(err, errlen, "out of memory for the histograms");
	}
	if (!strcmp(cfg->policy, "ps"))
		rc = sim_ps_run(cfg, res, err, errlen);
	else
		rc = sim_engine_run(cfg, res, err, errlen);
	if (rc) {
		sim_result_free(res);
		memset(res, 0, sizeof(*res));
	}
	return rc;
}

/* --- traces --------------------------------------------------------------------------------- */

static int trace_push(struct sim_trace *tr, size_t *cap, uint64_t at, uint64_t svc, int k)
{
	if (tr->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		uint64_t *a = realloc(tr->at_ns, nc * sizeof(*a)), *s;
		uint8_t *c;
		if (!a)
			return -ENOMEM;
		tr->at_ns = a;
		if (!(s = realloc(tr->service_ns, nc * sizeof(*s))))
			return -ENOMEM;
		tr->service_ns = s;
		if (!(c = realloc(tr->klass, nc)))
			return -ENOMEM;
		tr->klass = c;
		*cap = nc;
	}
	tr->at_ns[tr->n] = at;
	tr->service_ns[tr->n] = svc;
	tr->klass[tr->n++] = (uint8_t)k;
	return 0;
}

struct trace_ctx {
	struct sim_trace *tr;
	const char *path;
	size_t cap;
};

/* One line of an --arrivals trace: "ARRIVAL SERVICE [CLASS]". */
static int trace_line(void *ctx, char **f, int n, long lineno, char *err, size_t errlen)
{
	struct trace_ctx *c = ctx;
	struct sim_trace *tr = c->tr;
	char why[256];
	uint64_t at, svc;
	int k;

	if (n < 2 || n > 3)
		return jf_errf(err, errlen, "--arrivals '%s': line %ld: expected ARRIVAL SERVICE "
					     "[CLASS] (e.g. 12.5us 3us short)", c->path, lineno);
	if (sim_parse_duration_ns(f[0], &at, why, sizeof(why)) ||
	    sim_parse_duration_ns(f[1], &svc, why, sizeof(why)))
		return jf_errf(err, errlen, "--arrivals '%s': line %ld: %s", c->path, lineno, why);
	if (tr->n && at < tr->at_ns[tr->n - 1])
		return jf_errf(err, errlen, "--arrivals '%s': line %ld: arrival %s is before the "
					     "previous one (times must not decrease)", c->path, lineno, f[0]);
	if ((k = sim_class_intern(tr->class_names, &tr->nclasses, n == 3 ? f[2] : "all")) < 0)
		return jf_errf(err, errlen, "--arrivals '%s': line %ld: more than %d classes",
				c->path, lineno, SIM_MAX_CLASSES);
	if (trace_push(tr, &c->cap, at, svc, k))
		return jf_errf(err, errlen, "--arrivals '%s': out of memory", c->path);
	return 0;
}

int sim_trace_load(struct sim_trace *tr, const char *path, char *err, size_t errlen)
{
	struct trace_ctx c = {tr, path, 0};
	char what[300], *f[3];
	double sum = 0;
	int rc;

	memset(tr, 0, sizeof(*tr));
	snprintf(what, sizeof(what), "--arrivals '%s'", path);
	rc = sim_read_lines(path, what, f, 3, trace_line, &c, err, errlen);
	if (rc == 0 && tr->n < 2)
		rc = jf_errf(err, errlen, "--arrivals '%s': fewer than 2 requests", path);
	if (rc) {
		sim_trace_free(tr);
		return rc;
	}
	for (size_t i = 0; i < tr->n; i++)
		sum += (double)tr->service_ns[i];
	tr->mean_service_ns = sum / (double)tr->n;
	tr->rate = tr->at_ns[tr->n - 1] > tr->at_ns[0]
			   ? (double)(tr->n - 1) * 1e9 / (double)(tr->at_ns[tr->n - 1] - tr->at_ns[0])
			   : 0;
	return 0;
}

void sim_trace_free(struct sim_trace *tr)
{
	free(tr->at_ns);
	free(tr->service_ns);
	free(tr->klass);
	memset(tr, 0, sizeof(*tr));
}
