/*
 * tests/sched/test_params.c - policies declare their parameters, and a policy of one's own gets
 * them exactly as a built-in one does (CTest sched.params).
 *
 * Proves:
 *   - a registered policy "mine" with a parameter of every type (uint, ns, us, bool, enum with
 *     an alias variable) receives, in its init, the values set by jf_config_set_param() and by
 *     JIFFY_MINE_<NAME> (and JIFFY_MINE, the alias), the defaults of the rest, and the runtime's
 *     quantum; a setting for another policy does not reach it; jf_config_print() lists them;
 *     a misspelt JIFFY_MINE_* is refused, naming its variables;
 *   - every built-in table passes the checks jf_policy_register() makes (each is registered
 *     again under another name, whose variables then work: JIFFY_COPY_RR_SLICE_US);
 *   - jf_policy_register() refuses malformed tables (-EINVAL): too many entries, a bad or
 *     repeated name, an unknown type, a default outside the range, an enum without choices, an
 *     alias that is no JIFFY_ name, a count without a table;
 *   - the parser (jf_policy_param_parse) reads exactly: decimals and units to the nanosecond,
 *     nothing that is not a whole number of nanoseconds, no overflow, exact choices; and
 *     jf_policy_param_format() writes back what it reads;
 *   - a struct jf_config holds JF_CONFIG_PARAMS_MAX settings, then -ENOSPC (a replacement still
 *     works);
 *   - the registry is lock-free and append-only (src/sched/policy.c): 8 threads registering 2
 *     policies each at once all succeed, each found by name and listed once by jf_policy_names();
 *     the registry then fills to its 32 entries and refuses the next (-ENOSPC).
 */
#include <pthread.h>

#include "../jf_test.h"

/* --- "mine": ws underneath, with a table of its own ----------------------------------------- */

enum { MINE_DEPTH, MINE_SPIN, MINE_BUDGET, MINE_STEAL, MINE_MODE, MINE_NPARAMS };

static const struct jf_policy_param mine_params[MINE_NPARAMS] = {
	[MINE_DEPTH] = {.name = "depth", .type = JF_PARAM_UINT, .min = 1, .max = 64, .def = 8,
			.doc = "queue depth"},
	[MINE_SPIN] = {.name = "spin_ns", .type = JF_PARAM_NS, .min = 0, .max = 1000000,
		       .def = 500, .doc = "spin"},
	[MINE_BUDGET] = {.name = "budget_us", .type = JF_PARAM_US, .min = 1000,
			 .max = 10000000000ull, .def = 20000, .doc = "budget"},
	[MINE_STEAL] = {.name = "steal", .type = JF_PARAM_BOOL, .def = 1, .doc = "steal"},
	[MINE_MODE] = {.name = "mode", .type = JF_PARAM_ENUM, .def = 1,
		       .choices = (const char *const[]){"fast", "fair", "lazy", NULL},
		       .env_alias = "JIFFY_MINE", .doc = "mode"},
};

static struct jf_policy_ops mine;
static struct jf_policy_params mine_seen; /* what the last init was given */
static int mine_inits;

static int mine_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	mine_seen = *params;
	mine_inits++;
	return jf_policy_find("ws")->init(p, params);
}

static void *main_nothing(void *arg)
{
	return arg;
}

static void check_user_policy(void)
{
	struct jf_config cfg;
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	FILE *f;

	mine = *jf_policy_find("ws");
	mine.name = "mine";
	mine.init = mine_init;
	mine.params = mine_params;
	mine.nparams = MINE_NPARAMS;
	CHECK_EQ(jf_policy_register(&mine), 0);

	/* Defaults only; and the quantum the runtime runs with. */
	jf_config_default(&cfg);
	snprintf(cfg.policy, sizeof(cfg.policy), "mine");
	cfg.workers = 2;
	cfg.quantum_ns = 50000;
	CHECK_EQ(jf_config_set_param(&cfg, "rr", "slice_us", "20", err, sizeof(err)), 0);
	jft_run(&cfg, main_nothing, NULL);
	CHECK_EQ(mine_inits, 1);
	CHECK_EQ(mine_seen.nworkers, 2);
	CHECK_EQ(mine_seen.quantum_ns, 50000);
	CHECK_EQ(mine_seen.value[MINE_DEPTH], 8);
	CHECK_EQ(mine_seen.value[MINE_SPIN], 500);
	CHECK_EQ(mine_seen.value[MINE_BUDGET], 20000);
	CHECK_EQ(mine_seen.value[MINE_STEAL], 1);
	CHECK_EQ(mine_seen.value[MINE_MODE], 1);
	for (int i = MINE_NPARAMS; i < JF_POLICY_PARAMS_MAX; i++)
		CHECK_EQ(mine_seen.value[i], 0);

	/* By name and from the environment (the alias too), as a built-in policy's. */
	CHECK_EQ(jf_config_set_param(&cfg, "mine", "depth", "16", err, sizeof(err)), 0);
	CHECK_EQ(setenv("JIFFY_MINE_BUDGET_US", "2.5ms", 1), 0);
	CHECK_EQ(setenv("JIFFY_MINE_STEAL", "off", 1), 0);
	CHECK_EQ(setenv("JIFFY_MINE", "lazy", 1), 0);
	CHECK_EQ(setenv("JIFFY_MINE_SPIN_NS", "1us", 1), 0);
	if (jf_config_apply_env(&cfg, err, sizeof(err)))
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), 0);
	jft_clear_jiffy_env();
	jft_run(&cfg, main_nothing, NULL);
	CHECK_EQ(mine_inits, 2);
	CHECK_EQ(mine_seen.value[MINE_DEPTH], 16);
	CHECK_EQ(mine_seen.value[MINE_SPIN], 1000);
	CHECK_EQ(mine_seen.value[MINE_BUDGET], 2500000);
	CHECK_EQ(mine_seen.value[MINE_STEAL], 0);
	CHECK_EQ(mine_seen.value[MINE_MODE], 2);

	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	jf_config_print(&cfg, f);
	CHECK_EQ(fclose(f), 0);
	CHECK_STR_CONTAINS(buf, "mine.depth = 16\n");
	CHECK_STR_CONTAINS(buf, "mine.budget_us = 2500\n");
	CHECK_STR_CONTAINS(buf, "mine.mode = lazy\n");
	CHECK_STR_CONTAINS(buf, "rr.slice_us = 20 (policy rr is not selected: unused)\n");
	free(buf);

	/* Refused, with the value and the range, or the variables it has. */
	CHECK_EQ(jf_config_set_param(&cfg, "mine", "depth", "65", err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "mine.depth='65': expected an integer from 1 to 64");
	CHECK_EQ(jf_config_set_param(&cfg, "mine", "mode", "slow", err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "expected one of fast, fair, lazy");
	CHECK_EQ(setenv("JIFFY_MINE_DEPHT", "4", 1), 0);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "JIFFY_MINE_DEPHT: unknown variable; policy mine's parameters are "
				"JIFFY_MINE_DEPTH, JIFFY_MINE_SPIN_NS");
	jft_clear_jiffy_env();
	printf("a registered policy reads its own parameters: defaults, jf_config_set_param(), "
	       "JIFFY_MINE_*, the alias JIFFY_MINE; misspelt and out-of-range values refused\n");
}

/* --- the built-in tables ------------------------------------------------------------------ */

static void check_builtin_tables(void)
{
	static struct jf_policy_ops copies[16];
	static char names[16][32];
	char list[512], *save = NULL, err[256];
	struct jf_config cfg;
	uint64_t v;
	int n = 0;

	jf_policy_names(list, sizeof(list));
	for (char *p = strtok_r(list, ", ", &save); p && n < 16; p = strtok_r(NULL, ", ", &save)) {
		const struct jf_policy_ops *ops = jf_policy_find(p);

		if (!strcmp(p, "mine") || !strncmp(p, "copy-", 5))
			continue;
		copies[n] = *ops;
		snprintf(names[n], sizeof(names[n]), "copy-%s", p);
		copies[n].name = names[n];
		if (jf_policy_register(&copies[n]) != 0)
			fprintf(stderr, "the table of %s does not pass jf_policy_register()\n", p);
		CHECK_EQ(jf_policy_register(&copies[n]) == -EEXIST, 1); /* so it was registered */
		n++;
	}
	CHECK_GE(n, 8);
	/* A name that is no C identifier still gives a variable: '-' becomes '_'. */
	CHECK_EQ(setenv("JIFFY_COPY_RR_SLICE_US", "7", 1), 0);
	jf_config_default(&cfg);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), 0);
	CHECK_EQ(jf_config_get_param(&cfg, "copy-rr", "slice_us", &v), 0);
	CHECK_EQ(v, 7000);
	jft_clear_jiffy_env();
	printf("the %d built-in tables pass jf_policy_register()'s checks\n", n);
}

/* --- malformed tables ----------------------------------------------------------------------- */

static int register_with(const char *name, const struct jf_policy_param *params, size_t n)
{
	static struct jf_policy_ops ops[32];
	static int used;

	if (used == 32)
		return -99;
	ops[used] = *jf_policy_find("ws");
	ops[used].name = name;
	ops[used].params = params;
	ops[used].nparams = n;
	return jf_policy_register(&ops[used++]);
}

static void check_malformed_tables(void)
{
	static const char *const none[] = {NULL}, *const empty[] = {"a", "", NULL};
	static struct jf_policy_param many[JF_POLICY_PARAMS_MAX + 1];
	static char many_names[JF_POLICY_PARAMS_MAX + 1][8];
	const struct jf_policy_param ok = {.name = "x", .type = JF_PARAM_UINT, .max = 9, .def = 3};
	struct jf_policy_param bad[2];
	int rc;

	for (int i = 0; i <= JF_POLICY_PARAMS_MAX; i++) {
		snprintf(many_names[i], sizeof(many_names[i]), "p%d", i);
		many[i] = ok;
		many[i].name = many_names[i];
	}
	CHECK_EQ(register_with("bad-many", many, JF_POLICY_PARAMS_MAX + 1), -EINVAL);
	CHECK_EQ(register_with("bad-null", NULL, 1), -EINVAL);
#define BAD(field_setting)                                                                      \
	do {                                                                                    \
		bad[0] = ok;                                                                    \
		bad[1] = ok;                                                                    \
		bad[1].name = "y";                                                              \
		field_setting;                                                                  \
		rc = register_with("bad", bad, 2);                                              \
		if (rc != -EINVAL)                                                              \
			fprintf(stderr, "not refused (%d): %s\n", rc, #field_setting);          \
		CHECK_EQ(rc, -EINVAL);                                                          \
	} while (0)
	BAD(bad[1].name = "x");          /* twice */
	BAD(bad[1].name = "Y");          /* not [a-z0-9_] */
	BAD(bad[1].name = "1y");         /* not starting with a letter */
	BAD(bad[1].name = "y-z");
	BAD(bad[1].name = "");
	BAD(bad[1].name = NULL);
	BAD(bad[1].name = "a_name_of_thirty_two_characters_");
	BAD(bad[1].type = (enum jf_param_type)99);
	BAD(bad[1].def = 10);            /* above max */
	BAD((bad[1].min = 5, bad[1].def = 4));
	BAD((bad[1].min = 5, bad[1].max = 4, bad[1].def = 5));
	BAD((bad[1].type = JF_PARAM_ENUM, bad[1].def = 0));
	BAD((bad[1].type = JF_PARAM_ENUM, bad[1].choices = none, bad[1].def = 0));
	BAD((bad[1].type = JF_PARAM_ENUM, bad[1].choices = empty, bad[1].def = 0));
	BAD((bad[1].type = JF_PARAM_BOOL, bad[1].def = 2));
	BAD(bad[1].env_alias = "FOO");
	BAD(bad[1].env_alias = "JIFFY_foo");
#undef BAD
	bad[0] = ok;
	CHECK_EQ(register_with("good-one", bad, 1), 0); /* the same, well formed */
	printf("malformed parameter tables refused by jf_policy_register()\n");
}

/* --- the parser ------------------------------------------------------------------------------- */

static void parses(int index, const char *text, uint64_t want)
{
	char err[256] = "", back[48];
	uint64_t v = ~0ull, again = ~0ull;

	if (jf_policy_param_parse(&mine_params[index], text, &v, err, sizeof(err)))
		fprintf(stderr, "%s: '%s' refused: %s\n", mine_params[index].name, text, err);
	CHECK_EQ(jf_policy_param_parse(&mine_params[index], text, &v, NULL, 0), 0);
	CHECK_EQ(v, want);
	jf_policy_param_format(&mine_params[index], v, back, sizeof(back));
	CHECK_EQ(jf_policy_param_parse(&mine_params[index], back, &again, NULL, 0), 0);
	CHECK_EQ(again, v);
}

static void refuses(int index, const char *text)
{
	char err[256] = "";
	uint64_t v = 12345;

	if (jf_policy_param_parse(&mine_params[index], text, &v, err, sizeof(err)) != -EINVAL)
		fprintf(stderr, "%s: '%s' accepted\n", mine_params[index].name, text);
	CHECK_EQ(jf_policy_param_parse(&mine_params[index], text, &v, err, sizeof(err)), -EINVAL);
	CHECK_EQ(v, 12345);
	CHECK_STR_CONTAINS(err, "expected");
}

static void check_parser(void)
{
	char buf[48];

	parses(MINE_BUDGET, "12.5", 12500);
	parses(MINE_BUDGET, "50us", 50000);
	parses(MINE_BUDGET, "0.05ms", 50000);
	parses(MINE_BUDGET, "12500ns", 12500);
	parses(MINE_BUDGET, "2s", 2000000000);
	parses(MINE_BUDGET, "1.001", 1001);
	parses(MINE_BUDGET, "10000000", 10000000000ull);
	parses(MINE_BUDGET, "7\xc2\xb5s", 7000);
	refuses(MINE_BUDGET, "1.0001");  /* 0.1 ns */
	refuses(MINE_BUDGET, "0.999");   /* below 1 us */
	refuses(MINE_BUDGET, "10000000.001");
	refuses(MINE_BUDGET, "99999999999999999999");
	refuses(MINE_BUDGET, "18446744073709551616ns");
	refuses(MINE_BUDGET, "1.0000000000000000001");
	refuses(MINE_BUDGET, "5 us");
	refuses(MINE_BUDGET, "5m");
	refuses(MINE_BUDGET, "5usec");
	refuses(MINE_BUDGET, NULL);
	parses(MINE_SPIN, "0", 0);
	parses(MINE_SPIN, "500", 500);
	parses(MINE_SPIN, "2us", 2000);
	refuses(MINE_SPIN, "1.5");       /* 1.5 ns */
	refuses(MINE_SPIN, "2ms");
	parses(MINE_DEPTH, "1", 1);
	parses(MINE_DEPTH, "64", 64);
	refuses(MINE_DEPTH, "0");
	refuses(MINE_DEPTH, "65");
	refuses(MINE_DEPTH, "+5");
	refuses(MINE_DEPTH, "0x10");
	refuses(MINE_DEPTH, "16us");     /* no unit: an integer */
	refuses(MINE_DEPTH, "99999999999999999999");
	for (int i = 0; i < 4; i++) {
		static const char *const yes[] = {"1", "yes", "ON", "true"};
		static const char *const no[] = {"0", "no", "off", "False"};
		parses(MINE_STEAL, yes[i], 1);
		parses(MINE_STEAL, no[i], 0);
	}
	refuses(MINE_STEAL, "2");
	refuses(MINE_STEAL, "maybe");
	parses(MINE_MODE, "fast", 0);
	parses(MINE_MODE, "lazy", 2);
	refuses(MINE_MODE, "Fast");
	refuses(MINE_MODE, "3");
	jf_policy_param_format(&mine_params[MINE_BUDGET], 12500, buf, sizeof(buf));
	CHECK(!strcmp(buf, "12.5"));
	jf_policy_param_format(&mine_params[MINE_MODE], 2, buf, sizeof(buf));
	CHECK(!strcmp(buf, "lazy"));
	jf_policy_param_env("copy-rr", &mine_params[MINE_MODE], buf, sizeof(buf));
	CHECK(!strcmp(buf, "JIFFY_COPY_RR_MODE"));
	printf("the parser reads decimals and units to the nanosecond, and nothing else\n");
}

/* --- a full struct jf_config ------------------------------------------------------------------ */

static void check_full_config(void)
{
	static struct jf_policy_param wide[2][JF_POLICY_PARAMS_MAX];
	static char wide_names[JF_POLICY_PARAMS_MAX][8];
	const struct jf_policy_param ok = {.name = "x", .type = JF_PARAM_UINT, .max = 9, .def = 3};
	struct jf_config cfg, before;
	char err[256];

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < JF_POLICY_PARAMS_MAX; i++) {
			snprintf(wide_names[i], sizeof(wide_names[i]), "p%d", i);
			wide[k][i] = ok;
			wide[k][i].name = wide_names[i];
		}
	CHECK_EQ(register_with("wide0", wide[0], JF_POLICY_PARAMS_MAX), 0);
	CHECK_EQ(register_with("wide1", wide[1], JF_POLICY_PARAMS_MAX), 0);
	jf_config_default(&cfg);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < JF_POLICY_PARAMS_MAX; i++)
			CHECK_EQ(jf_config_set_param(&cfg, k ? "wide1" : "wide0", wide_names[i], "5",
						     err, sizeof(err)), 0);
	CHECK_EQ(cfg.nparams, JF_CONFIG_PARAMS_MAX);
	before = cfg;
	CHECK_EQ(jf_config_set_param(&cfg, "rr", "slice_us", "5", err, sizeof(err)), -ENOSPC);
	CHECK_STR_CONTAINS(err, "rr.slice_us");
	CHECK(memcmp(&cfg, &before, sizeof(cfg)) == 0);
	CHECK_EQ(jf_config_set_param(&cfg, "wide1", "p3", "7", err, sizeof(err)), 0);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);
	printf("a struct jf_config holds %d settings, then -ENOSPC\n", JF_CONFIG_PARAMS_MAX);
}

/* --- concurrent registration ------------------------------------------------------------- */

#define PAR_THREADS 8
#define PAR_EACH 2
static struct jf_policy_ops par_ops[PAR_THREADS][PAR_EACH];
static char par_names[PAR_THREADS][PAR_EACH][16];
static pthread_barrier_t par_start;

static void *par_register(void *arg)
{
	intptr_t t = (intptr_t)arg;

	pthread_barrier_wait(&par_start);
	for (int k = 0; k < PAR_EACH; k++)
		CHECK_EQ(jf_policy_register(&par_ops[t][k]), 0);
	return NULL;
}

/* How many names jf_policy_names() lists, and how many of them are @name (if not NULL). */
static int count_names(const char *name, int *hits)
{
	static char list[4096];
	char *save = NULL;
	int n = 0;

	jf_policy_names(list, sizeof(list));
	if (hits)
		*hits = 0;
	for (char *p = strtok_r(list, ", ", &save); p; p = strtok_r(NULL, ", ", &save), n++)
		if (hits && name && !strcmp(p, name))
			(*hits)++;
	return n;
}

static void check_concurrent_registration(void)
{
	const struct jf_policy_ops *ws = jf_policy_find("ws");
	pthread_t th[PAR_THREADS];
	int before = count_names(NULL, NULL), seen = 0, extra = 0;

	for (int t = 0; t < PAR_THREADS; t++)
		for (int k = 0; k < PAR_EACH; k++) {
			par_ops[t][k] = *ws;
			snprintf(par_names[t][k], sizeof(par_names[t][k]), "par-%d-%d", t, k);
			par_ops[t][k].name = par_names[t][k];
		}
	CHECK_EQ(pthread_barrier_init(&par_start, NULL, PAR_THREADS), 0);
	for (intptr_t t = 0; t < PAR_THREADS; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, par_register, (void *)t), 0);
	for (int t = 0; t < PAR_THREADS; t++)
		CHECK_EQ(pthread_join(th[t], NULL), 0);
	pthread_barrier_destroy(&par_start);
	for (int t = 0; t < PAR_THREADS; t++)
		for (int k = 0; k < PAR_EACH; k++) {
			int hits;
			CHECK(jf_policy_find(par_names[t][k]) == &par_ops[t][k]);
			count_names(par_names[t][k], &hits);
			CHECK_EQ(hits, 1);
			seen++;
		}
	CHECK_EQ(seen, PAR_THREADS * PAR_EACH);
	/* Fill the registry (32 entries after the built-in ones), then one too many. */
	static struct jf_policy_ops fill[40];
	static char fill_names[40][16];
	int rc = 0, n;
	for (n = 0; n < 40; n++) {
		fill[n] = *ws;
		snprintf(fill_names[n], sizeof(fill_names[n]), "fill-%d", n);
		fill[n].name = fill_names[n];
		if ((rc = jf_policy_register(&fill[n])) != 0)
			break;
		extra++;
	}
	CHECK_EQ(rc, -ENOSPC);
	int total = count_names(NULL, NULL);
	printf("sched.params: %d policies registered by %d threads at once, all found; the "
	       "registry full at %d names (built-in ones included), then -ENOSPC\n", seen, PAR_THREADS, total);
	CHECK_EQ(total, before + seen + extra);
	CHECK(extra > 0);
}

int main(void)
{
	jft_clear_jiffy_env();
	check_user_policy();
	check_builtin_tables();
	check_malformed_tables();
	check_parser();
	check_full_config();
	check_concurrent_registration();
	jft_ok("sched.params");
	return 0;
}
