/*
 * sim/main.c - jiffy-sim's command line: parse, run one simulation per load point, report.
 *
 * Owns: the flags (usage() lists them; docs/simulator.md explains them), their checking and the
 * sweep. They are read by apps/common/flags.c, the parser of every Jiffy program (--flag value,
 * --flag=value, --help, --version). Every input error is a message "jiffy-sim: <flag>: <problem>"
 * naming the value, and exit status 2; a broken invariant found in a run (a policy bug) is exit
 * status 1; success 0.
 * The host CPU time of each run is printed on stderr only: stdout and the files jiffy-sim
 * writes depend on nothing but the command line (same seed, same bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jiffy/jiffy.h>
#include <jiffy/policy.h>

#include "flags.h"
#include "report.h"
#include "sim.h"

#define MAX_POINTS 256
#define PROG "jiffy-sim"

struct cli {
	struct sim_config cfg;
	struct sim_dist dist;
	struct sim_trace trace;
	const char *dist_spec, *arrivals, *mechanism, *calib, *classes, *slo;
	const char *csv, *json, *label, *workload, *server_name;
	double points[MAX_POINTS];
	int npoints;
	bool points_are_loads, quiet, warmup_set, requests_set, list_params;
	/* cost overrides, applied on top of the preset (< 0: not given) */
	double receiver, sender, switch_cost, check, check_every, dispatch;
	int sender_central; /* -1: not given */
	int kick;           /* -1: not given */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: jiffy-sim [options]   (times take a unit: ns, us, ms, s)\n"
"Simulates a Jiffy policy's own code on N workers in virtual time; reports like jiffy-load.\n"
"  --cores N              simulated workers, 1..%d                                 [16]\n"
"  --policy NAME          fifo, ws, rr, twoq, cfs, eevdf, central, lcbe, or ps (ideal\n"
"                         processor sharing, not a Jiffy policy)                   [fifo]\n"
"  --mechanism NAME       the preemption mechanism and its cost model [none]:\n"
"                         %s\n"
"  --calib FILE           jiffy-calibrate --out FILE, for measured:MECH     [calib.json]\n"
"  --quantum T            the runtime's quantum (JIFFY_QUANTUM_US)                [100us]\n"
"cost model (overrides the mechanism's preset):\n"
"  --receiver-cost T  --sender-cost T  --sender central|local  --switch-cost T\n"
"  --check-cost T  --check-every T  --dispatch-cost T\n"
"  --kick on|off          off: no wakeup preemption, only at due times (a timer core)\n"
"policy parameters (docs/policies.md; defaults as in the runtime):\n"
"  --param [POLICY.]NAME=VALUE   one of the policy's parameters, as JIFFY_<POLICY>_<NAME>\n"
"                         takes it (e.g. slice_us=5us); repeatable\n"
"  --list-params          every policy's parameters (a Markdown table), then exit\n"
"  (kept: --rr-slice T  --twoq-long T  --cfs-latency T  --cfs-min-gran T\n"
"  --cfs-wakeup-gran T  --eevdf-slice T  --central sq|mq  --central-preempted head|tail\n"
"  --central-slo T  --lcbe-be-quantum T)\n"
"  --slo CLASS=T,...      attr.slo_ns per request class\n"
"workload:\n"
"  --dist SPEC            fixed:T, exp:MEAN, lognormal:MEAN:SD, bimodal:P:S1:S2,\n"
"                         trimodal:P1:S1:P2:S2:S3, pareto:MEAN:ALPHA, file:PATH  [exp:10us]\n"
"  --arrivals FILE        a trace instead: lines \"ARRIVAL SERVICE [CLASS]\"\n"
"  --rate R | --load U    requests/s | utilisation (rate = U x cores / mean service)\n"
"  --rates R,... | --loads U,...   a sweep: one run (and one set of rows) per value\n"
"  --requests N           measured requests                [200000; a trace: all of it]\n"
"  --warmup N             unmeasured requests before them                [requests / 10]\n"
"  --drain T              measured requests unfinished this long after the\n"
"                         window are lost (jiffy-load's --drain-ms)              [500ms]\n"
"  --seed N               every random stream derives from it                       [1]\n"
"  --block P:T            a request blocks once (I/O) with probability P for T\n"
"  --yield-every T        a request yields after each T of its CPU time\n"
"  --arrival-worker N     every request is enqueued from worker N (one receiver)\n"
"                         instead of a random one (RSS)\n"
"  --park-after T --wake-cost T   idle workers park after spinning T; a parked one\n"
"                         starts its next task T late (JIFFY_SPIN_US; futex wake)\n"
"  --classes A,B,...      rename the classes (e.g. get,scan)\n"
"  --check                conformance checks: work conservation, no task lost\n"
"reports:\n"
"  --csv FILE  --json FILE  --label L  --workload NAME [spin]  --server-name NAME  --quiet\n"
JP_FLAGS_STD_USAGE,
		SIM_MAX_CORES, sim_costs_names());
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* --- values ------------------------------------------------------------------------------- */

static int parse_u64(const char *flag, const char *v, uint64_t min, uint64_t *out)
{
	unsigned long x;

	if (jp_flag_uint(PROG, flag, v, min, ULONG_MAX, &x))
		return 2;
	*out = x;
	return 0;
}

static int parse_positive(const char *flag, const char *v, double *out)
{
	return jp_flag_positive(PROG, flag, v, out) ? 2 : 0;
}

static int parse_time(const char *flag, const char *v, uint64_t *out)
{
	char why[256];

	if (sim_parse_duration_ns(v, out, why, sizeof(why)))
		return fail("%s: %s", flag, why);
	return 0;
}

static int parse_cost(const char *flag, const char *v, double *out)
{
	char why[256];

	if (sim_parse_time_ns(v, out, why, sizeof(why)))
		return fail("%s: %s", flag, why);
	return 0;
}

static int parse_list(struct cli *c, const char *flag, const char *v, bool loads)
{
	char buf[4096], *save = NULL;

	if (c->npoints)
		return fail("%s: give one of --rate, --load, --rates, --loads", flag);
	if (strlen(v) >= sizeof(buf))
		return fail("%s: the list is longer than %zu characters", flag, sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (c->npoints == MAX_POINTS)
			return fail("%s: more than %d values", flag, MAX_POINTS);
		if (parse_positive(flag, tok, &c->points[c->npoints]))
			return 2;
		c->npoints++;
	}
	if (!c->npoints)
		return fail("%s: expected a comma-separated list of numbers > 0, got '%s'", flag, v);
	c->points_are_loads = loads;
	return 0;
}

static int parse_choice(const char *flag, const char *v, const char *a, const char *b, bool *is_b)
{
	const char *const choices[] = {a, b, NULL};
	int i;

	if (jp_flag_choice(PROG, flag, v, choices, &i))
		return 2;
	*is_b = i == 1;
	return 0;
}

static int parse_block(struct cli *c, const char *v)
{
	char buf[128], *colon, *end, why[256];

	snprintf(buf, sizeof(buf), "%s", v);
	if (!(colon = strchr(buf, ':')))
		return fail("--block: expected P:T (a probability, a time: e.g. 0.1:20us), got '%s'", v);
	*colon = '\0';
	c->cfg.block_prob = strtod(buf, &end);
	if (!buf[0] || *end || !(c->cfg.block_prob >= 0 && c->cfg.block_prob <= 1))
		return fail("--block: the probability '%s' is not in [0, 1] (got '%s')", buf, v);
	if (sim_parse_duration_ns(colon + 1, &c->cfg.block_ns, why, sizeof(why)))
		return fail("--block: %s", why);
	return 0;
}

/* --- policy parameters --------------------------------------------------------------------- */

/* The per-parameter flags from before --param, kept: each sets one parameter of one policy. */
static const struct legacy_param {
	const char *flag, *policy, *param;
} legacy_params[] = {
	{"--rr-slice", "rr", "slice_us"},
	{"--twoq-long", "twoq", "long_us"},
	{"--cfs-latency", "cfs", "latency_us"},
	{"--cfs-min-gran", "cfs", "min_gran_us"},
	{"--cfs-wakeup-gran", "cfs", "wakeup_gran_us"},
	{"--eevdf-slice", "eevdf", "slice_us"},
	{"--central", "central", "queues"},
	{"--central-preempted", "central", "preempted"},
	{"--central-slo", "central", "slo_us"},
	{"--lcbe-be-quantum", "lcbe", "be_quantum_us"},
};

static const struct legacy_param *legacy_param(const char *flag)
{
	for (size_t i = 0; i < sizeof(legacy_params) / sizeof(legacy_params[0]); i++)
		if (!strcmp(flag, legacy_params[i].flag))
			return &legacy_params[i];
	return NULL;
}

/* --rr-slice 5us is --param rr.slice_us=5us, with the complaint naming --rr-slice. */
static int option_legacy(struct cli *c, const struct legacy_param *l, const char *v)
{
	const struct jf_policy_ops *ops = jf_policy_find(l->policy);
	int i = ops ? jf_policy_param_index(ops, l->param) : -1;
	char why[512], setting[SIM_PARAM_TEXT_MAX];
	uint64_t x;

	if (i < 0)
		return fail("%s: not handled (a bug: %s has no parameter %s)", l->flag, l->policy,
			    l->param);
	if (jf_policy_param_parse(&ops->params[i], v, &x, why, sizeof(why)))
		return fail("%s: %s", l->flag, why);
	snprintf(setting, sizeof(setting), "%s.%s=%s", l->policy, l->param, v);
	if (sim_param_add(&c->cfg, setting, why, sizeof(why)))
		return fail("%s: %s", l->flag, why);
	return 0;
}

/* --list-params: every policy's table as the rows of docs/policies.md's. */
static void list_params(void)
{
	char names[512], *save = NULL;

	jf_policy_names(names, sizeof(names));
	printf("| variable | policy | `--param` | values | default | meaning |\n");
	printf("| --- | --- | --- | --- | --- | --- |\n");
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save)) {
		const struct jf_policy_ops *ops = jf_policy_find(n);

		for (size_t i = 0; ops && i < ops->nparams; i++) {
			const struct jf_policy_param *p = &ops->params[i];
			char env[96], lo[32], hi[32], def[32];

			jf_policy_param_env(ops->name, p, env, sizeof(env));
			jf_policy_param_format(p, p->def, def, sizeof(def));
			printf("| `%s`", env);
			if (p->env_alias)
				printf(" or `%s`", p->env_alias);
			printf(" | %s | `%s` | ", ops->name, p->name);
			if (p->type == JF_PARAM_ENUM) {
				for (size_t j = 0; p->choices[j]; j++)
					printf("%s`%s`", j ? ", " : "", p->choices[j]);
			} else if (p->type == JF_PARAM_BOOL) {
				printf("0, 1");
			} else {
				const char *unit = p->type == JF_PARAM_US   ? " µs"
						   : p->type == JF_PARAM_NS ? " ns"
									    : "";

				jf_policy_param_format(p, p->min, lo, sizeof(lo));
				jf_policy_param_format(p, p->max, hi, sizeof(hi));
				printf("%s to %s%s", lo, hi, unit);
			}
			printf(" | %s%s%s | %s |\n", p->type == JF_PARAM_ENUM ? "`" : "", def,
			       p->type == JF_PARAM_ENUM ? "`" : "", p->doc ? p->doc : "");
		}
	}
}

/* The unqualified --param settings, once --policy is known. */
static int apply_params(struct cli *c)
{
	char why[512];

	if (sim_params_check(&c->cfg, why, sizeof(why)))
		return fail("%s", why);
	return 0;
}

/* --- options ------------------------------------------------------------------------------ */

/* One flag and its value. Return: 0, or 2 after printing why. */
static int option(struct cli *c, const char *f, const char *v)
{
	struct sim_config *cfg = &c->cfg;
	const struct legacy_param *legacy;
	char why[512];
	bool b;

	if (!strcmp(f, "--cores")) {
		unsigned long n;
		if (jp_flag_uint(PROG, f, v, 1, SIM_MAX_CORES, &n))
			return 2;
		cfg->cores = (int)n;
	} else if (!strcmp(f, "--policy")) {
		if (strcmp(v, "ps") && !jf_policy_find(v)) {
			char names[256];
			jf_policy_names(names, sizeof(names));
			return fail("--policy: expected one of %s, ps, got '%s'", names, v);
		}
		snprintf(cfg->policy, sizeof(cfg->policy), "%s", v);
	} else if (!strcmp(f, "--mechanism")) {
		c->mechanism = v;
	} else if (!strcmp(f, "--calib")) {
		c->calib = v;
	} else if (!strcmp(f, "--quantum")) {
		return parse_time(f, v, &cfg->tun.quantum_ns);
	} else if (!strcmp(f, "--receiver-cost")) {
		return parse_cost(f, v, &c->receiver);
	} else if (!strcmp(f, "--sender-cost")) {
		return parse_cost(f, v, &c->sender);
	} else if (!strcmp(f, "--switch-cost")) {
		return parse_cost(f, v, &c->switch_cost);
	} else if (!strcmp(f, "--check-cost")) {
		return parse_cost(f, v, &c->check);
	} else if (!strcmp(f, "--check-every")) {
		return parse_cost(f, v, &c->check_every);
	} else if (!strcmp(f, "--dispatch-cost")) {
		return parse_cost(f, v, &c->dispatch);
	} else if (!strcmp(f, "--sender")) {
		if (parse_choice(f, v, "local", "central", &b))
			return 2;
		c->sender_central = b;
	} else if (!strcmp(f, "--kick")) {
		if (parse_choice(f, v, "off", "on", &b))
			return 2;
		c->kick = b;
	} else if (!strcmp(f, "--param")) {
		if (sim_param_add(cfg, v, why, sizeof(why)))
			return fail("%s", why);
	} else if ((legacy = legacy_param(f)) != NULL) {
		return option_legacy(c, legacy, v);
	} else if (!strcmp(f, "--slo")) {
		c->slo = v;
	} else if (!strcmp(f, "--dist")) {
		c->dist_spec = v;
	} else if (!strcmp(f, "--arrivals")) {
		c->arrivals = v;
	} else if (!strcmp(f, "--rate") || !strcmp(f, "--rates")) {
		return parse_list(c, f, v, false);
	} else if (!strcmp(f, "--load") || !strcmp(f, "--loads")) {
		return parse_list(c, f, v, true);
	} else if (!strcmp(f, "--requests")) {
		c->requests_set = true;
		return parse_u64(f, v, 1, &cfg->requests);
	} else if (!strcmp(f, "--warmup")) {
		c->warmup_set = true;
		return parse_u64(f, v, 0, &cfg->warmup);
	} else if (!strcmp(f, "--drain")) {
		return parse_time(f, v, &cfg->drain_ns);
	} else if (!strcmp(f, "--seed")) {
		return parse_u64(f, v, 0, &cfg->seed);
	} else if (!strcmp(f, "--block")) {
		return parse_block(c, v);
	} else if (!strcmp(f, "--arrival-worker")) {
		unsigned long n;
		if (jp_flag_uint(PROG, f, v, 0, SIM_MAX_CORES - 1, &n))
			return 2;
		cfg->arrival_worker = (int)n;
	} else if (!strcmp(f, "--park-after")) {
		return parse_time(f, v, &cfg->park_after_ns);
	} else if (!strcmp(f, "--wake-cost")) {
		return parse_time(f, v, &cfg->wake_ns);
	} else if (!strcmp(f, "--yield-every")) {
		return parse_time(f, v, &cfg->yield_every_ns);
	} else if (!strcmp(f, "--classes")) {
		c->classes = v;
	} else if (!strcmp(f, "--csv")) {
		c->csv = v;
	} else if (!strcmp(f, "--json")) {
		c->json = v;
	} else if (!strcmp(f, "--label")) {
		c->label = v;
	} else if (!strcmp(f, "--workload")) {
		c->workload = v;
	} else if (!strcmp(f, "--server-name")) {
		c->server_name = v;
	} else {
		return fail("%s: not handled (a bug: it is in options[] but not here)", f);
	}
	return 0;
}

/* Every flag; the ones with a value are handled by option() under their own name. */
enum { F_CHECK = 0x100, F_QUIET, F_LIST_PARAMS, F_VALUE };

static const struct option options[] = {
	{"check", no_argument, NULL, F_CHECK},
	{"quiet", no_argument, NULL, F_QUIET},
	{"list-params", no_argument, NULL, F_LIST_PARAMS},
	{"param", required_argument, NULL, F_VALUE},
	{"cores", required_argument, NULL, F_VALUE},
	{"policy", required_argument, NULL, F_VALUE},
	{"mechanism", required_argument, NULL, F_VALUE},
	{"calib", required_argument, NULL, F_VALUE},
	{"quantum", required_argument, NULL, F_VALUE},
	{"receiver-cost", required_argument, NULL, F_VALUE},
	{"sender-cost", required_argument, NULL, F_VALUE},
	{"switch-cost", required_argument, NULL, F_VALUE},
	{"check-cost", required_argument, NULL, F_VALUE},
	{"check-every", required_argument, NULL, F_VALUE},
	{"dispatch-cost", required_argument, NULL, F_VALUE},
	{"sender", required_argument, NULL, F_VALUE},
	{"kick", required_argument, NULL, F_VALUE},
	{"rr-slice", required_argument, NULL, F_VALUE},
	{"twoq-long", required_argument, NULL, F_VALUE},
	{"cfs-latency", required_argument, NULL, F_VALUE},
	{"cfs-min-gran", required_argument, NULL, F_VALUE},
	{"cfs-wakeup-gran", required_argument, NULL, F_VALUE},
	{"eevdf-slice", required_argument, NULL, F_VALUE},
	{"central", required_argument, NULL, F_VALUE},
	{"central-preempted", required_argument, NULL, F_VALUE},
	{"central-slo", required_argument, NULL, F_VALUE},
	{"lcbe-be-quantum", required_argument, NULL, F_VALUE},
	{"slo", required_argument, NULL, F_VALUE},
	{"dist", required_argument, NULL, F_VALUE},
	{"arrivals", required_argument, NULL, F_VALUE},
	{"rate", required_argument, NULL, F_VALUE},
	{"rates", required_argument, NULL, F_VALUE},
	{"load", required_argument, NULL, F_VALUE},
	{"loads", required_argument, NULL, F_VALUE},
	{"requests", required_argument, NULL, F_VALUE},
	{"warmup", required_argument, NULL, F_VALUE},
	{"drain", required_argument, NULL, F_VALUE},
	{"seed", required_argument, NULL, F_VALUE},
	{"block", required_argument, NULL, F_VALUE},
	{"arrival-worker", required_argument, NULL, F_VALUE},
	{"park-after", required_argument, NULL, F_VALUE},
	{"wake-cost", required_argument, NULL, F_VALUE},
	{"yield-every", required_argument, NULL, F_VALUE},
	{"classes", required_argument, NULL, F_VALUE},
	{"csv", required_argument, NULL, F_VALUE},
	{"json", required_argument, NULL, F_VALUE},
	{"label", required_argument, NULL, F_VALUE},
	{"workload", required_argument, NULL, F_VALUE},
	{"server-name", required_argument, NULL, F_VALUE},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

static int parse_args(struct cli *c, int argc, char **argv)
{
	struct jp_flags fl;
	int k;

	jp_flags_init(&fl, PROG, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((k = jp_flags_next(&fl)) != -1) {
		if (k == F_CHECK)
			c->cfg.check = true;
		else if (k == F_QUIET)
			c->quiet = true;
		else if (k == F_LIST_PARAMS)
			c->list_params = true;
		else if (option(c, fl.flag, optarg))
			return 2;
	}
	jp_flags_no_operands(&fl);
	return 0;
}

/* --- after parsing ---------------------------------------------------------------------- */

static int apply_costs(struct cli *c)
{
	char why[512];
	struct sim_costs *k = &c->cfg.costs;

	if (sim_costs_preset(k, c->mechanism ? c->mechanism : "none",
			     c->calib ? c->calib : "calib.json", why, sizeof(why)))
		return fail("%s", why);
	if (!k->preempt && (c->receiver >= 0 || c->sender >= 0 || c->check_every >= 0))
		return fail("--mechanism '%s' never preempts: interrupt costs would not apply",
			    k->name);
	if (c->receiver >= 0)
		k->receiver_ns = c->receiver;
	if (c->sender >= 0)
		k->sender_ns = c->sender;
	if (c->sender_central >= 0)
		k->sender_central = c->sender_central;
	if (c->kick >= 0)
		k->no_kick = !c->kick;
	if (c->switch_cost >= 0)
		k->switch_ns = c->switch_cost;
	if (c->check >= 0)
		k->check_ns = c->check;
	if (c->check_every >= 0)
		k->check_every_ns = c->check_every;
	if (c->dispatch >= 0)
		k->dispatch_ns = c->dispatch;
	if (k->check_ns > 0 && k->check_every_ns <= 0)
		return fail("--check-cost: give --check-every too (how much work between checks)");
	return 0;
}

static int class_of(const struct cli *c, const char *name)
{
	const char (*names)[SIM_CLASS_NAME_MAX];
	int n = sim_class_names(&c->cfg, &names);

	for (int k = 0; k < n; k++)
		if (!strcmp(names[k], name))
			return k;
	return -1;
}

/* --slo CLASS=T,... (class names after --classes renaming). */
static int apply_slo(struct cli *c)
{
	char buf[1024], why[256], *save = NULL;

	if (!c->slo)
		return 0;
	snprintf(buf, sizeof(buf), "%s", c->slo);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int k;
		if (!eq)
			return fail("--slo '%s': '%s' is not CLASS=TIME", c->slo, tok);
		*eq = '\0';
		if ((k = class_of(c, tok)) < 0)
			return fail("--slo '%s': no class '%s' in this workload", c->slo, tok);
		if (sim_parse_duration_ns(eq + 1, &c->cfg.slo_ns[k], why, sizeof(why)))
			return fail("--slo '%s': %s", c->slo, why);
	}
	return 0;
}

/* --classes A,B,...: rename the workload's classes, in order. */
static int apply_classes(struct cli *c)
{
	char buf[1024], *save = NULL;
	char (*names)[SIM_CLASS_NAME_MAX] = c->cfg.trace ? c->trace.class_names
							 : c->dist.class_names;
	int n = c->cfg.trace ? c->trace.nclasses : c->dist.nclasses, k = 0;

	if (!c->classes)
		return 0;
	snprintf(buf, sizeof(buf), "%s", c->classes);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), k++) {
		if (k == n)
			return fail("--classes '%s': the workload has %d class(es)", c->classes, n);
		if (strlen(tok) >= SIM_CLASS_NAME_MAX || !strcmp(tok, "overall"))
			return fail("--classes '%s': bad name '%s'", c->classes, tok);
		snprintf(names[k], SIM_CLASS_NAME_MAX, "%s", tok);
	}
	if (k != n)
		return fail("--classes '%s': the workload has %d class(es)", c->classes, n);
	return 0;
}

static int load_workload(struct cli *c)
{
	char why[1024];

	if (c->arrivals && c->dist_spec)
		return fail("--dist and --arrivals exclude each other (a trace has its own "
			    "service times)");
	if (c->arrivals) {
		if (sim_trace_load(&c->trace, c->arrivals, why, sizeof(why)))
			return fail("%s", why);
		c->cfg.trace = &c->trace;
		if (!c->warmup_set)
			c->cfg.warmup = 0;
		if (!c->requests_set) /* the whole trace */
			c->cfg.requests = c->trace.n > c->cfg.warmup ? c->trace.n - c->cfg.warmup : 1;
		return 0;
	}
	if (sim_dist_parse(&c->dist, c->dist_spec ? c->dist_spec : "exp:10us", why, sizeof(why)))
		return fail("%s", why);
	c->cfg.dist = &c->dist;
	if (!c->warmup_set)
		c->cfg.warmup = c->cfg.requests / 10;
	return 0;
}

/* --- runs ------------------------------------------------------------------------------------ */

/*
 * "sim:POLICY/MECHANISM", with ":CHOICE" for each enum parameter and ":NAME" for each bool set
 * away from its default: "sim:central:mq:head/uintr".
 */
static void server_name(const struct cli *c, char *buf, size_t len)
{
	const struct sim_config *cfg = &c->cfg;
	const struct jf_policy_ops *ops = jf_policy_find(cfg->policy);
	struct jf_policy_params pp;
	size_t off;

	if (c->server_name) {
		snprintf(buf, len, "%s", c->server_name);
		return;
	}
	if (!ops) {
		snprintf(buf, len, "sim:%s", cfg->policy);
		return;
	}
	off = (size_t)snprintf(buf, len, "sim:%s", cfg->policy);
	if (sim_policy_params(cfg, ops, &pp, NULL, 0) == 0)
		for (size_t i = 0; i < ops->nparams && off < len; i++) {
			const struct jf_policy_param *p = &ops->params[i];

			if (pp.value[i] == p->def)
				continue;
			if (p->type == JF_PARAM_ENUM)
				off += (size_t)snprintf(buf + off, len - off, ":%s",
							p->choices[pp.value[i]]);
			else if (p->type == JF_PARAM_BOOL)
				off += (size_t)snprintf(buf + off, len - off, ":%s", p->name);
		}
	if (off < len)
		snprintf(buf + off, len - off, "/%s", cfg->costs.name);
}

/* @x to 9 significant digits: a rate derived from a load prints as what was simulated. */
static double round9(double x)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.9g", x);
	return strtod(buf, NULL);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One load point. Return: 0, 1 (violation) or 2 (input/IO error). */
static int run_point(struct cli *c, double point, FILE *json, bool first)
{
	struct sim_config *cfg = &c->cfg;
	struct sim_result res;
	struct sim_report_info info;
	const char (*names)[SIM_CLASS_NAME_MAX];
	char err[512], server[160], dist[SIM_SPEC_MAX + 16];
	double t0, cpu, load = 0;
	int rc;

	if (c->points_are_loads) {
		load = point;
		if (!(sim_mean_service_ns(cfg) > 0))
			return fail("--load %g: the mean service time is 0; give --rate", load);
		cfg->rate = round9(sim_rate_for_load(cfg, load));
	} else {
		cfg->rate = point; /* 0 with a trace: as recorded */
	}
	t0 = cpu_seconds();
	if ((rc = sim_run(cfg, &res, err, sizeof(err))) != 0)
		return fail("%s", err);
	cpu = cpu_seconds() - t0;
	if (cfg->trace && cfg->rate == 0)
		cfg->rate = round9(cfg->trace->rate);
	server_name(c, server, sizeof(server));
	if (cfg->trace)
		snprintf(dist, sizeof(dist), "trace:%s", c->arrivals);
	else
		snprintf(dist, sizeof(dist), "%s", c->dist.spec);
	sim_class_names(cfg, &names);
	info = (struct sim_report_info){
		.label = c->label ? c->label : "",
		.server = server,
		.workload = c->workload ? c->workload : "spin",
		.dist = dist,
		.class_names = names,
		.load = load,
	};
	sim_report_human(stdout, cfg, &res, &info, c->quiet);
	fflush(stdout);
	if (!c->quiet)
		fprintf(stderr, "jiffy-sim: %llu requests, %llu events in %.3f s CPU: %.2f M "
				"requests/s, %.2f M events/s\n",
			(unsigned long long)res.sent, (unsigned long long)res.events, cpu,
			cpu > 0 ? (double)res.sent / cpu / 1e6 : 0.0,
			cpu > 0 ? (double)res.events / cpu / 1e6 : 0.0);
	rc = 0;
	if (c->csv && sim_report_csv(c->csv, cfg, &res, &info, err, sizeof(err)))
		rc = fail("%s", err);
	if (json) {
		fputs(first ? "" : ",\n", json);
		sim_report_json(json, cfg, &res, &info);
	}
	if (res.violation[0]) {
		fprintf(stderr, "jiffy-sim: error: %s\n", res.violation);
		rc = rc ? rc : 1;
	} else if (cfg->check && !c->quiet) {
		printf("conformance: no task lost or duplicated%s\n",
		       strcmp(cfg->policy, "fifo") ? ", no worker idle while work waits" : "");
	}
	sim_result_free(&res);
	return rc;
}

int main(int argc, char **argv)
{
	static struct cli c;
	FILE *json = NULL;
	int rc = 0;

	sim_config_default(&c.cfg);
	c.receiver = c.sender = c.switch_cost = c.check = c.check_every = c.dispatch = -1;
	c.sender_central = c.kick = -1;
	if ((rc = parse_args(&c, argc, argv)) != 0)
		return rc;
	if (c.list_params) {
		list_params();
		return 0;
	}
	if ((rc = apply_params(&c)) || (rc = apply_costs(&c)) || (rc = load_workload(&c)) ||
	    (rc = apply_classes(&c)) || (rc = apply_slo(&c)))
		goto out;
	if (!c.npoints) {
		if (!c.cfg.trace) {
			rc = fail("give --rate, --load, --rates or --loads");
			goto out;
		}
		c.points[c.npoints++] = 0;
	}
	if (c.json && !(json = fopen(c.json, "w"))) {
		rc = fail("--json %s: %s", c.json, strerror(errno));
		goto out;
	}
	if (json && c.npoints > 1)
		fputs("[\n", json);
	for (int i = 0; i < c.npoints && rc != 2; i++) {
		int r = run_point(&c, c.points[i], json, i == 0);
		if (r > rc)
			rc = r;
	}
	if (json) {
		fputs(c.npoints > 1 ? "\n]\n" : "\n", json);
		if (fclose(json) != 0 && rc == 0)
			rc = fail("--json %s: %s", c.json, strerror(errno));
	}
out:
	sim_dist_free(&c.dist);
	sim_trace_free(&c.trace);
	return rc;
}
