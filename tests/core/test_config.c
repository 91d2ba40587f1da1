/*
 * core/test_config.c - proves that the configuration is parsed in one place and that no bad value
 * passes silently: the defaults are usable, every JIFFY_* variable with a good value sets its
 * field, every bad value (and every unknown JIFFY_* name) is rejected with -EINVAL, leaves the
 * struct unchanged and yields a message naming the variable and the value; jf_config_validate()
 * rejects unusable structs; jf_run() refuses an unknown policy with -EINVAL without crashing and
 * the process can start a runtime afterwards; jf_run(NULL, ...) takes the environment.
 * The policies' parameters (check_policy_params and after): every parameter of every built-in
 * policy is read from JIFFY_<POLICY>_<NAME> at its default, its bounds and each choice, and
 * refused, named with its value, below or above its range and when malformed; today's variable
 * names (JIFFY_CENTRAL among them) set what they always set; a misspelt parameter of a known
 * policy is an error listing that policy's variables, whichever policy is selected; a parameter
 * of a policy not selected is checked and kept, unused; jf_config_set_param() and
 * jf_config_get_param() do the same by name; jf_config_validate() refuses a bad setting made by
 * hand; jf_config_print() shows the selected policy's parameters. The clock (check_clock):
 * JIFFY_CLOCK fills jf_config.clock, and jf_run() runs on its configuration's clock, not on the
 * environment's.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <sched.h>

#include "jf_test.h"

static int cfg_equal(const struct jf_config *a, const struct jf_config *b)
{
	return a->workers == b->workers && a->pin_workers == b->pin_workers &&
	       strncmp(a->policy, b->policy, sizeof(a->policy)) == 0 &&
	       a->stack_size == b->stack_size && a->stack_cache == b->stack_cache &&
	       a->spin_ns == b->spin_ns && a->stats == b->stats && a->clock == b->clock &&
	       a->nparams == b->nparams &&
	       memcmp(a->params, b->params, sizeof(a->params[0]) * a->nparams) == 0;
}

/* A configuration that differs from the defaults in every field, to see that nothing moves. */
static void odd_config(struct jf_config *cfg)
{
	jf_config_default(cfg);
	cfg->workers = 5;
	cfg->pin_workers = !cfg->pin_workers;
	snprintf(cfg->policy, sizeof(cfg->policy), "%s", "fifo");
	cfg->stack_size = 3 * 65536;
	cfg->stack_cache = 7;
	cfg->spin_ns = 12345000;
	cfg->stats = !cfg->stats;
	cfg->clock = JF_CLOCK_MONOTONIC;
	CHECK_EQ(jf_config_set_param(cfg, "cfs", "latency_us", "77", NULL, 0), 0);
}

static void check_defaults(void)
{
	struct jf_config cfg;
	char err[256] = "";
	cpu_set_t set;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	long page = sysconf(_SC_PAGESIZE);
	int affinity = 0;

	memset(&cfg, 0xa5, sizeof(cfg));
	jf_config_default(&cfg);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		affinity = CPU_COUNT(&set);
	printf("defaults: workers=%u (online %ld, affinity %d) policy=%s stack=%zu cache=%u "
	       "spin_ns=%llu pin=%d stats=%d\n",
	       cfg.workers, online, affinity, cfg.policy, cfg.stack_size, cfg.stack_cache,
	       (unsigned long long)cfg.spin_ns, cfg.pin_workers, cfg.stats);

	/* One worker per CPU: the CPUs this process may use, or the CPUs online. */
	CHECK(cfg.workers >= 1 && cfg.workers <= JF_MAX_WORKERS);
	CHECK(cfg.workers == (unsigned)affinity || cfg.workers == (unsigned)online);
	CHECK(memchr(cfg.policy, '\0', sizeof(cfg.policy)) != NULL);
	CHECK(cfg.policy[0] != '\0');
	CHECK(jf_policy_find(cfg.policy) != NULL);
	CHECK(jf_policy_find("fifo") != NULL);
	CHECK(jf_policy_find("ws") != NULL);
	CHECK(jf_policy_find("nope") == NULL);
	CHECK_GE(cfg.stack_size, 16 * 1024);
	CHECK_EQ(cfg.stack_size % (size_t)page, 0);
	CHECK(!cfg.stats);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);
}

static void set_env(const char *name, const char *value)
{
	CHECK_EQ(setenv(name, value, 1), 0);
}

static void check_good_values(void)
{
	struct jf_config cfg, def;
	char err[256] = "";

	jf_config_default(&def);

	/* No variable set: nothing changes. */
	cfg = def;
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), 0);
	CHECK(cfg_equal(&cfg, &def));

	cfg = jft_config_good_env("JIFFY_WORKERS", "3");
	CHECK_EQ(cfg.workers, 3);
	cfg = jft_config_good_env("JIFFY_WORKERS", "1");
	CHECK_EQ(cfg.workers, 1);

	cfg = jft_config_good_env("JIFFY_STACK_SIZE", "64K");
	CHECK_EQ(cfg.stack_size, 64 * 1024);
	cfg = jft_config_good_env("JIFFY_STACK_SIZE", "1M");
	CHECK_EQ(cfg.stack_size, 1024 * 1024);
	cfg = jft_config_good_env("JIFFY_STACK_SIZE", "131072");
	CHECK_EQ(cfg.stack_size, 131072);

	cfg = jft_config_good_env("JIFFY_SPIN_US", "50");
	CHECK_EQ(cfg.spin_ns, 50000);
	cfg = jft_config_good_env("JIFFY_SPIN_US", "1000");
	CHECK_EQ(cfg.spin_ns, 1000000);
	cfg = jft_config_good_env("JIFFY_SPIN_MAX_US", "500");
	CHECK_EQ(cfg.spin_max_ns, 500000);
	cfg = jft_config_good_env("JIFFY_SPIN_MAX_US", "0");
	CHECK_EQ(cfg.spin_max_ns, 0);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SKIP", "0");
	CHECK_EQ(cfg.preempt_skip, false);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SKIP", "1");
	CHECK_EQ(cfg.preempt_skip, true);

	cfg = jft_config_good_env("JIFFY_POLICY", "ws");
	CHECK(strcmp(cfg.policy, "ws") == 0);
	cfg = jft_config_good_env("JIFFY_POLICY", "fifo");
	CHECK(strcmp(cfg.policy, "fifo") == 0);

	cfg = jft_config_good_env("JIFFY_PIN", "1");
	CHECK(cfg.pin_workers);
	cfg = jft_config_good_env("JIFFY_PIN", "0");
	CHECK(!cfg.pin_workers);

	cfg = jft_config_good_env("JIFFY_STATS", "1");
	CHECK(cfg.stats);
	cfg = jft_config_good_env("JIFFY_STATS", "0");
	CHECK(!cfg.stats);

	cfg = jft_config_good_env("JIFFY_STACK_CACHE", "8");
	CHECK_EQ(cfg.stack_cache, 8);

	/* Several at once; fields not named keep their value. */
	set_env("JIFFY_WORKERS", "2");
	set_env("JIFFY_POLICY", "ws");
	set_env("JIFFY_STACK_SIZE", "256K");
	jf_config_default(&cfg);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), 0);
	CHECK_EQ(cfg.workers, 2);
	CHECK(strcmp(cfg.policy, "ws") == 0);
	CHECK_EQ(cfg.stack_size, 256 * 1024);
	CHECK_EQ(cfg.spin_ns, def.spin_ns);
	CHECK_EQ(cfg.stack_cache, def.stack_cache);
	CHECK_EQ(cfg.stats, def.stats);
	jft_clear_jiffy_env();
}

/* @known: a variable the runtime reads, so the message names its bad value too. */
static void check_bad(const char *name, const char *value, int known)
{
	struct jf_config cfg, before;
	char err[256];
	char small[8];
	int rc;

	odd_config(&cfg);
	before = cfg;
	memset(err, 0, sizeof(err));
	set_env(name, value);

	rc = jf_config_apply_env(&cfg, err, sizeof(err));
	if (rc != -EINVAL)
		fprintf(stderr, "%s=%s: expected -EINVAL, got %d\n", name, value, rc);
	CHECK_EQ(rc, -EINVAL);
	if (!cfg_equal(&cfg, &before))
		fprintf(stderr, "%s=%s: configuration changed by a rejected variable\n", name,
			value);
	CHECK(cfg_equal(&cfg, &before));
	CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	CHECK_STR_CONTAINS(err, name);
	if (known)
		CHECK_STR_CONTAINS(err, value);

	/* No message buffer, and one too small for the message: still -EINVAL, no overflow. */
	CHECK_EQ(jf_config_apply_env(&cfg, NULL, 0), -EINVAL);
	memset(small, 'x', sizeof(small));
	CHECK_EQ(jf_config_apply_env(&cfg, small, sizeof(small)), -EINVAL);
	CHECK(memchr(small, '\0', sizeof(small)) != NULL);
	CHECK(cfg_equal(&cfg, &before));

	/* A bad variable next to good ones: the good ones must not be applied either. */
	set_env("JIFFY_STACK_CACHE", "3");
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(cfg_equal(&cfg, &before));

	jft_clear_jiffy_env();
}

static void check_bad_values(void)
{
	check_bad("JIFFY_WORKERS", "abc", 1);
	check_bad("JIFFY_WORKERS", "0", 1);
	check_bad("JIFFY_WORKERS", "-1", 1);
	check_bad("JIFFY_WORKERS", "99999", 1);
	check_bad("JIFFY_WORKERS", "2junk", 1);
	check_bad("JIFFY_STACK_SIZE", "12", 1);
	check_bad("JIFFY_STACK_SIZE", "1X", 1);
	check_bad("JIFFY_STACK_SIZE", "abc", 1);
	check_bad("JIFFY_PIN", "maybe", 1);
	check_bad("JIFFY_STATS", "yes please", 1);
	check_bad("JIFFY_SPIN_US", "soon", 1);
	check_bad("JIFFY_SPIN_MAX_US", "lots", 1);
	check_bad("JIFFY_PREEMPT_SKIP", "sometimes", 1);
	check_bad("JIFFY_SPIN_MAX_US", "99999999999", 1);
	check_bad("JIFFY_FOO", "1", 0);
}

static void check_validate(void)
{
	struct jf_config cfg;
	char err[256];

	jf_config_default(&cfg);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);
	CHECK_EQ(jf_config_validate(&cfg, NULL, 0), 0);

	jf_config_default(&cfg);
	cfg.workers = 0;
	err[0] = '\0';
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(err[0] != '\0');
	CHECK_EQ(jf_config_validate(&cfg, NULL, 0), -EINVAL);

	jf_config_default(&cfg);
	cfg.workers = JF_MAX_WORKERS + 1;
	err[0] = '\0';
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(err[0] != '\0');

	jf_config_default(&cfg);
	cfg.workers = JF_MAX_WORKERS;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);

	jf_config_default(&cfg);
	cfg.stack_size = 12;
	err[0] = '\0';
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(err[0] != '\0');

	/* The adaptive spin's bound below the spin it grows from: refused, with a message. */
	jf_config_default(&cfg);
	cfg.spin_max_ns = cfg.spin_ns - 1;
	err[0] = '\0';
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "spin_max_ns") != NULL);
	cfg.spin_max_ns = cfg.spin_ns;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);

	/* A policy name without its terminating NUL must be rejected, not read past. */
	jf_config_default(&cfg);
	memset(cfg.policy, 'a', sizeof(cfg.policy));
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
}

/* The value printed for @key in "key = value" lines (alignment spaces allowed), or NULL. */
static const char *printed_value(const char *text, const char *key, char *out, size_t outlen)
{
	const char *line = text;
	size_t klen = strlen(key);

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len > klen && strncmp(line, key, klen) == 0 &&
		    (line[klen] == ' ' || line[klen] == '=')) {
			const char *v = line + klen;

			while (*v == ' ')
				v++;
			if (*v == '=') {
				v++;
				while (*v == ' ')
					v++;
				len -= (size_t)(v - line);
				if (len >= outlen)
					len = outlen - 1;
				memcpy(out, v, len);
				out[len] = '\0';
				return out;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

static void check_print(void)
{
	char val[64];
	struct jf_config cfg;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	jf_config_default(&cfg);
	cfg.workers = 3;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", "ws");
	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	jf_config_print(&cfg, f);
	CHECK_EQ(fclose(f), 0);
	CHECK(buf != NULL);
	printf("jf_config_print:\n%s", buf);
	CHECK(printed_value(buf, "workers", val, sizeof(val)) != NULL);
	CHECK(strcmp(val, "3") == 0);
	CHECK(printed_value(buf, "policy", val, sizeof(val)) != NULL);
	CHECK(strcmp(val, "ws") == 0);
	free(buf);
}

/* --- the policies' parameters ---------------------------------------------------------------- */

/* @var=@value must be accepted, and give @policy's parameter @name the value @want. */
static void check_param_good(const char *var, const char *value, const char *policy,
			     const char *name, uint64_t want)
{
	struct jf_config cfg = jft_config_good_env(var, value);
	uint64_t got = ~0ull;

	CHECK_EQ(jf_config_get_param(&cfg, policy, name, &got), 0);
	if (got != want)
		fprintf(stderr, "%s=%s: %s.%s = %llu, want %llu\n", var, value, policy, name,
			(unsigned long long)got, (unsigned long long)want);
	CHECK_EQ(got, want);
}

/* Every parameter of every built-in policy, through its variable. */
static void check_policy_params(void)
{
	static const char *const malformed[] = {"abc", "", "12x", "-1", "1.2.3", " 5", "5 ",
						"1e3", "0x10", ".5", "5.", "12.5 us"};
	char names[512], *save = NULL;
	int nparams = 0;

	jf_policy_names(names, sizeof(names));
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save)) {
		const struct jf_policy_ops *ops = jf_policy_find(n);

		CHECK(ops != NULL);
		for (size_t i = 0; i < ops->nparams; i++, nparams++) {
			const struct jf_policy_param *p = &ops->params[i];
			char var[96], text[48];

			jf_policy_param_env(ops->name, p, var, sizeof(var));
			jf_policy_param_format(p, p->def, text, sizeof(text));
			check_param_good(var, text, ops->name, p->name, p->def);
			if (p->type == JF_PARAM_ENUM) {
				for (uint64_t c = 0; p->choices[c]; c++)
					check_param_good(var, p->choices[c], ops->name, p->name, c);
				check_bad(var, "nosuch", 1);
				snprintf(text, sizeof(text), "%c%s", toupper(p->choices[0][0]),
					 p->choices[0] + 1);
				check_bad(var, text, 1); /* choices are exact */
			} else {
				jf_policy_param_format(p, p->min, text, sizeof(text));
				check_param_good(var, text, ops->name, p->name, p->min);
				jf_policy_param_format(p, p->max, text, sizeof(text));
				check_param_good(var, text, ops->name, p->name, p->max);
				jf_policy_param_format(p, p->max + 1, text, sizeof(text));
				check_bad(var, text, 1); /* 1 ns above the range */
				if (p->min) {
					jf_policy_param_format(p, p->min - 1, text, sizeof(text));
					check_bad(var, text, 1); /* 1 ns below */
				}
			}
			for (size_t m = 0; m < sizeof(malformed) / sizeof(malformed[0]); m++)
				check_bad(var, malformed[m], 1);
		}
	}
	printf("policy parameters: %d, each good at its default, its bounds or choices, and "
	       "refused out of range and malformed\n", nparams);
	CHECK_GE(nparams, 10);
}

/* The variables of before the tables, and what they set (docs/policies.md). */
static void check_param_names_kept(void)
{
	static const struct {
		const char *var, *value, *policy, *name;
		uint64_t want;
	} kept[] = {
		{"JIFFY_RR_SLICE_US", "20", "rr", "slice_us", 20000},
		{"JIFFY_TWOQ_LONG_US", "100", "twoq", "long_us", 100000},
		{"JIFFY_CFS_LATENCY_US", "200", "cfs", "latency_us", 200000},
		{"JIFFY_CFS_MIN_GRAN_US", "50", "cfs", "min_gran_us", 50000},
		{"JIFFY_CFS_WAKEUP_GRAN_US", "0", "cfs", "wakeup_gran_us", 0},
		{"JIFFY_EEVDF_SLICE_US", "50", "eevdf", "slice_us", 50000},
		{"JIFFY_CENTRAL", "mq", "central", "queues", 1},
		{"JIFFY_CENTRAL", "sq", "central", "queues", 0},
		{"JIFFY_CENTRAL_QUEUES", "mq", "central", "queues", 1},
		{"JIFFY_CENTRAL_PREEMPTED", "head", "central", "preempted", 1},
		{"JIFFY_CENTRAL_PREEMPTED", "tail", "central", "preempted", 0},
		{"JIFFY_CENTRAL_SLO_US", "100", "central", "slo_us", 100000},
		{"JIFFY_LCBE_BE_QUANTUM_US", "400", "lcbe", "be_quantum_us", 400000},
		/* and what the table's parser adds: decimals and units */
		{"JIFFY_CFS_MIN_GRAN_US", "12.5", "cfs", "min_gran_us", 12500},
		{"JIFFY_EEVDF_SLICE_US", "0.05ms", "eevdf", "slice_us", 50000},
		{"JIFFY_RR_SLICE_US", "250ns", "rr", "slice_us", 250},
	};
	struct jf_config cfg;
	char err[512] = "";

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		check_param_good(kept[i].var, kept[i].value, kept[i].policy, kept[i].name,
				 kept[i].want);

	/* The name and its alias together: which would win depends on environ's order. */
	set_env("JIFFY_CENTRAL", "mq");
	set_env("JIFFY_CENTRAL_QUEUES", "mq");
	jf_config_default(&cfg);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "JIFFY_CENTRAL ");
	CHECK_STR_CONTAINS(err, "JIFFY_CENTRAL_QUEUES");
	jft_clear_jiffy_env();
}

/* A misspelt parameter is an error, also (above all) for the policy that is selected. */
static void check_param_misspelt(void)
{
	static const char *const selected[] = {"cfs", "ws"};
	struct jf_config cfg;
	char err[512];

	for (size_t i = 0; i < 2; i++) {
		set_env("JIFFY_POLICY", selected[i]);
		set_env("JIFFY_CFS_LATENCYY_US", "50");
		jf_config_default(&cfg);
		err[0] = '\0';
		CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), -EINVAL);
		printf("JIFFY_POLICY=%s JIFFY_CFS_LATENCYY_US=50: %s\n", selected[i], err);
		CHECK_STR_CONTAINS(err, "JIFFY_CFS_LATENCYY_US");
		CHECK_STR_CONTAINS(err, "JIFFY_CFS_LATENCY_US"); /* what was meant, listed */
		CHECK_STR_CONTAINS(err, "JIFFY_CFS_WAKEUP_GRAN_US");
		jft_clear_jiffy_env();
	}
	check_bad("JIFFY_WS_SLICE_US", "50", 0);
	set_env("JIFFY_WS_SLICE_US", "50");
	jf_config_default(&cfg);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "policy ws has no parameters");
	jft_clear_jiffy_env();
}

/* A parameter of a policy not selected: checked, kept, unused (and printed as such). */
static void check_param_not_selected(void)
{
	struct jf_config cfg;
	char err[256], val[64];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	set_env("JIFFY_POLICY", "cfs");
	set_env("JIFFY_RR_SLICE_US", "20");
	jf_config_default(&cfg);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), 0);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);
	CHECK_EQ(cfg.nparams, 1);
	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	jf_config_print(&cfg, f);
	CHECK_EQ(fclose(f), 0);
	CHECK(printed_value(buf, "cfs.latency_us", val, sizeof(val)) && !strcmp(val, "50"));
	CHECK(printed_value(buf, "cfs.min_gran_us", val, sizeof(val)) && !strcmp(val, "12.5"));
	CHECK(printed_value(buf, "rr.slice_us", val, sizeof(val)) != NULL);
	CHECK_STR_CONTAINS(val, "20 (policy rr is not selected");
	free(buf);
	jft_clear_jiffy_env();
	check_bad("JIFFY_RR_SLICE_US", "2000000", 1); /* still checked */
}

/* The same by name: jf_config_set_param(), jf_config_get_param(). */
static void check_set_param(void)
{
	struct jf_config cfg, before;
	char err[512];
	uint64_t v = 0;

	jf_config_default(&cfg);
	CHECK_EQ(jf_config_get_param(&cfg, "cfs", "latency_us", &v), 0);
	CHECK_EQ(v, 50000);
	CHECK_EQ(jf_config_set_param(&cfg, "cfs", "latency_us", "200", err, sizeof(err)), 0);
	CHECK_EQ(jf_config_get_param(&cfg, "cfs", "latency_us", &v), 0);
	CHECK_EQ(v, 200000);
	CHECK_EQ(jf_config_set_param(&cfg, "cfs", "latency_us", "300us", err, sizeof(err)), 0);
	CHECK_EQ(cfg.nparams, 1); /* replaced, not added */
	CHECK_EQ(jf_config_get_param(&cfg, "cfs", "latency_us", &v), 0);
	CHECK_EQ(v, 300000);
	CHECK_EQ(jf_config_set_param(&cfg, "central", "queues", "mq", err, sizeof(err)), 0);
	CHECK_EQ(jf_config_get_param(&cfg, "central", "queues", &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);

	before = cfg;
	CHECK_EQ(jf_config_set_param(&cfg, "cfs", "latency_us", "0", err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "cfs.latency_us='0'");
	CHECK_STR_CONTAINS(err, "from 1 to 1000000");
	CHECK_EQ(jf_config_set_param(&cfg, "cfs", "latency_us", "fast", err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "'fast'");
	CHECK_EQ(jf_config_set_param(&cfg, "cfs", "latency", "50", err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "latency_us, min_gran_us, wakeup_gran_us");
	CHECK_EQ(jf_config_set_param(&cfg, "nope", "latency_us", "50", err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "'nope' is unknown");
	CHECK_EQ(jf_config_set_param(&cfg, NULL, NULL, NULL, NULL, 0), -EINVAL);
	CHECK_EQ(jf_config_set_param(&cfg, "cfs", "latency_us", NULL, NULL, 0), -EINVAL);
	CHECK(cfg_equal(&cfg, &before));
	CHECK_EQ(jf_config_get_param(&cfg, "cfs", "latency", &v), -ENOENT);
	CHECK_EQ(jf_config_get_param(&cfg, "nope", "latency_us", &v), -ENOENT);
}

/* Settings made by hand in the struct are checked too. */
static void check_validate_params(void)
{
	struct jf_config cfg;
	char err[512];

	jf_config_default(&cfg);
	cfg.nparams = 1;
	snprintf(cfg.params[0].policy, sizeof(cfg.params[0].policy), "rr");
	snprintf(cfg.params[0].name, sizeof(cfg.params[0].name), "slice_us");
	cfg.params[0].value = 20000;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);
	cfg.params[0].value = 0;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "rr.slice_us='0'");
	cfg.params[0].value = 20000;
	snprintf(cfg.params[0].name, sizeof(cfg.params[0].name), "slice");
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "no such parameter");
	snprintf(cfg.params[0].policy, sizeof(cfg.params[0].policy), "nope");
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	memset(cfg.params[0].policy, 'r', sizeof(cfg.params[0].policy));
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	cfg.nparams = JF_CONFIG_PARAMS_MAX + 1;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	jf_config_default(&cfg);
	cfg.clock = (enum jf_clock_kind)7;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "clock");
}

/* --- the clock ----------------------------------------------------------------------------- */

static void *main_clock(void *arg)
{
	(void)arg;
	return (void *)jf_clock_source();
}

static const char *run_clock(const struct jf_config *cfg)
{
	void *ret = NULL;

	CHECK_EQ(jf_run(cfg, main_clock, NULL, &ret), 0);
	return (const char *)ret;
}

static void check_clock(void)
{
	struct jf_config cfg;
	const char *tsc;

	CHECK_EQ(jft_config_good_env("JIFFY_CLOCK", "monotonic").clock, JF_CLOCK_MONOTONIC);
	CHECK_EQ(jft_config_good_env("JIFFY_CLOCK", "tsc").clock, JF_CLOCK_TSC);
	check_bad("JIFFY_CLOCK", "hpet", 1);

	jf_config_default(&cfg);
	cfg.workers = 1;
	CHECK_EQ(cfg.clock, JF_CLOCK_TSC);
	tsc = run_clock(&cfg); /* "tsc" on a CPU with an invariant TSC, else "clock_monotonic" */
	cfg.clock = JF_CLOCK_MONOTONIC;
	CHECK(!strcmp(run_clock(&cfg), "clock_monotonic"));

	/* The caller's configuration is respected: JIFFY_CLOCK is the environment's, not its. */
	set_env("JIFFY_CLOCK", "monotonic");
	cfg.clock = JF_CLOCK_TSC;
	CHECK(!strcmp(run_clock(&cfg), tsc));
	set_env("JIFFY_WORKERS", "1");
	CHECK(!strcmp(run_clock(NULL), "clock_monotonic")); /* jf_run(NULL): the environment's */
	jft_clear_jiffy_env();
	CHECK(!strcmp(run_clock(&cfg), tsc));
	printf("clock: default %s; jf_config.clock = JF_CLOCK_MONOTONIC and jf_run(NULL) with "
	       "JIFFY_CLOCK=monotonic run on clock_monotonic, a config with JF_CLOCK_TSC on %s "
	       "whatever JIFFY_CLOCK says\n", tsc, tsc);
}

static int main_calls;

static void *main_count(void *arg)
{
	main_calls++;
	return arg;
}

static void *main_nworkers(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)jf_nworkers();
}

static void check_run(void)
{
	struct jf_config cfg;
	void *ret = (void *)1;

	/* An unknown policy: -EINVAL, main never runs, nothing left behind. */
	jf_config_default(&cfg);
	cfg.workers = 2;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", "nope");
	CHECK_EQ(jf_run(&cfg, main_count, NULL, &ret), -EINVAL);
	CHECK_EQ(main_calls, 0);

	/* An invalid configuration. */
	jf_config_default(&cfg);
	cfg.workers = 0;
	CHECK_EQ(jf_run(&cfg, main_count, NULL, NULL), -EINVAL);
	CHECK_EQ(main_calls, 0);

	/* The process can still start a runtime. */
	jf_config_default(&cfg);
	cfg.workers = 2;
	CHECK_EQ(jf_run(&cfg, main_count, (void *)0x77, &ret), 0);
	CHECK_EQ(main_calls, 1);
	CHECK(ret == (void *)0x77);

	/* jf_run(NULL, ...): defaults overridden by the environment. */
	set_env("JIFFY_WORKERS", "1");
	CHECK_EQ(jf_run(NULL, main_nworkers, NULL, &ret), 0);
	CHECK_EQ((intptr_t)ret, 1);
	set_env("JIFFY_WORKERS", "2");
	CHECK_EQ(jf_run(NULL, main_nworkers, NULL, &ret), 0);
	CHECK_EQ((intptr_t)ret, 2);
	jft_clear_jiffy_env();

	/* ... and a bad environment makes jf_run(NULL, ...) fail with -EINVAL. */
	set_env("JIFFY_FOO", "1");
	CHECK_EQ(jf_run(NULL, main_count, NULL, NULL), -EINVAL);
	CHECK_EQ(main_calls, 1);
	jft_clear_jiffy_env();
}

int main(void)
{
	jft_clear_jiffy_env();
	check_defaults();
	check_good_values();
	check_bad_values();
	check_validate();
	check_print();
	check_policy_params();
	check_param_names_kept();
	check_param_misspelt();
	check_param_not_selected();
	check_set_param();
	check_validate_params();
	check_run();
	check_clock();
	jft_ok("core.config");
	return 0;
}
