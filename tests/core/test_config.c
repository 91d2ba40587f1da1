/*
 * core/test_config.c - proves that the configuration is parsed in one place and that no bad value
 * passes silently: the defaults are usable, every JIFFY_* variable with a good value sets its
 * field, every bad value (and every unknown JIFFY_* name) is rejected with -EINVAL, leaves the
 * struct unchanged and yields a message naming the variable and the value; jf_config_validate()
 * rejects unusable structs; jf_run() refuses an unknown policy with -EINVAL without crashing and
 * the process can start a runtime afterwards; jf_run(NULL, ...) takes the environment.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "jf_test.h"

static int cfg_equal(const struct jf_config *a, const struct jf_config *b)
{
	return a->workers == b->workers && a->pin_workers == b->pin_workers &&
	       strncmp(a->policy, b->policy, sizeof(a->policy)) == 0 &&
	       a->stack_size == b->stack_size && a->stack_cache == b->stack_cache &&
	       a->spin_ns == b->spin_ns && a->stats == b->stats;
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
	check_run();
	jft_ok("core.config");
	return 0;
}
