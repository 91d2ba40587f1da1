/*
 * preempt/test_mechanisms.c - proves that the preemption mechanism is chosen by name, reported
 * truthfully, and that no bad choice passes silently:
 *   - the defaults are "auto" at a 20 us quantum, with the grace period left to the mechanism
 *     (JF_GRACE_DEFAULT: inside jf_run(), jf_preempt_stats() reports 5000 us under auto, 50 us
 *     under hybrid; a configured one is used as it is);
 *   - jf_preempt_available() says 1 for none, timer, dispatcher, safepoint, deadline (where the
 *     runtime clock is the TSC, as on every machine we run on), hybrid and auto, -EINVAL for
 *     unknown names, and for uintr 0 with a reason (this machine has no user interrupts) or 1;
 *   - where uintr is unavailable, jf_run() with it (from the struct or from JIFFY_PREEMPT) returns
 *     -ENOTSUP without running main, with a message on stderr saying uintr is unavailable, and
 *     the process can start a runtime afterwards;
 *   - every JIFFY_PREEMPT / JIFFY_QUANTUM_US / JIFFY_GRACE_US / JIFFY_PREEMPT_SIGNAL value that
 *     cannot be used (unknown mechanism, quantum 0, SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, no signal)
 *     is rejected by jf_config_apply_env() with -EINVAL and a message naming the variable and the
 *     value, leaving the configuration unchanged; good values set their fields;
 *     jf_config_validate() and jf_run() reject such values in the struct too;
 *   - inside jf_run(), jf_preempt_mechanism() and jf_preempt_stats() name the configured
 *     mechanism (and "none" / -ESRCH outside), for none, timer, dispatcher, safepoint, deadline,
 *     hybrid and auto,
 *     each of which runs uthreads that compute past their quantum to completion; only "none" never
 *     preempts.
 * Runs once, from a clean environment (it clears every JIFFY_* variable itself).
 */
#include <fcntl.h>
#include <signal.h>

#include "pt_common.h"

#define NAME "preempt.mechanisms"

static const char *const working[] = {"none",	   "timer",  "dispatcher", "safepoint",
				      "deadline", "hybrid", "auto"};
#define NWORKING (sizeof(working) / sizeof(working[0]))

/* ---- stderr capture ---- */

static int saved_stderr = -1, capture_fd = -1;

static void capture_begin(void)
{
	int p[2];

	fflush(stderr);
	CHECK_EQ(pipe(p), 0);
	saved_stderr = dup(2);
	CHECK(saved_stderr >= 0);
	CHECK(dup2(p[1], 2) == 2);
	close(p[1]);
	capture_fd = p[0];
}

static void capture_end(char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	fflush(stderr);
	CHECK(dup2(saved_stderr, 2) == 2);
	close(saved_stderr);
	CHECK_EQ(fcntl(capture_fd, F_SETFL, O_NONBLOCK), 0);
	while (got + 1 < len && (n = read(capture_fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(capture_fd);
	capture_fd = -1;
}

/* ---- jf_preempt_available() ---- */

static int uintr_available;

static void check_available(void)
{
	char why[256];
	char small[8];
	size_t i;

	for (i = 0; i < NWORKING; i++) {
		memset(why, 0, sizeof(why));
		CHECK_EQ(jf_preempt_available(working[i], why, sizeof(why)), 1);
		CHECK_EQ(jf_preempt_available(working[i], NULL, 0), 1);
	}
	memset(why, 'x', sizeof(why));
	CHECK_EQ(jf_preempt_available("bogus", why, sizeof(why)), -EINVAL);
	CHECK_EQ(jf_preempt_available("bogus", NULL, 0), -EINVAL);
	CHECK_EQ(jf_preempt_available("", NULL, 0), -EINVAL);
	CHECK_EQ(jf_preempt_available("timer,hybrid", NULL, 0), -EINVAL);

	memset(why, 0, sizeof(why));
	uintr_available = jf_preempt_available("uintr", why, sizeof(why));
	CHECK(uintr_available == 0 || uintr_available == 1);
	printf("%s: uintr available: %d%s%s\n", NAME, uintr_available, why[0] ? ": " : "", why);
	if (!uintr_available) {
		CHECK(memchr(why, '\0', sizeof(why)) != NULL);
		CHECK(strlen(why) > 0);
		CHECK_EQ(jf_preempt_available("uintr", NULL, 0), 0);
		/* A buffer too small for the reason: cut, terminated, nothing written beyond. */
		memset(small, 'x', sizeof(small));
		CHECK_EQ(jf_preempt_available("uintr", small, 4), 0);
		CHECK(memchr(small, '\0', 4) != NULL);
		for (i = 4; i < sizeof(small); i++)
			CHECK_EQ(small[i], 'x');
	}
}

/* ---- the configuration ---- */

static atomic_int main_calls;

static void *never_main(void *arg)
{
	(void)arg;
	atomic_fetch_add(&main_calls, 1000);
	return NULL;
}

static int cfg_equal(const struct jf_config *a, const struct jf_config *b)
{
	return a->workers == b->workers && strcmp(a->policy, b->policy) == 0 &&
	       strncmp(a->preempt, b->preempt, sizeof(a->preempt)) == 0 &&
	       a->quantum_ns == b->quantum_ns && a->grace_ns == b->grace_ns &&
	       a->preempt_signal == b->preempt_signal;
}

static void odd_config(struct jf_config *cfg)
{
	jf_config_default(cfg);
	cfg->workers = 3;
	snprintf(cfg->preempt, sizeof(cfg->preempt), "%s", "dispatcher");
	cfg->quantum_ns = 333 * PT_US;
	cfg->grace_ns = 77 * PT_US;
	cfg->preempt_signal = SIGWINCH;
}

static void check_bad_env(const char *name, const char *value)
{
	struct jf_config cfg, before;
	char err[256];

	odd_config(&cfg);
	before = cfg;
	memset(err, 0, sizeof(err));
	CHECK_EQ(setenv(name, value, 1), 0);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != -EINVAL) {
		fprintf(stderr, "%s=%s was accepted\n", name, value);
		CHECK(!"bad value accepted");
	}
	CHECK(cfg_equal(&cfg, &before));
	CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	CHECK_STR_CONTAINS(err, name);
	if (value[0])
		CHECK_STR_CONTAINS(err, value);
	CHECK_EQ(jf_config_apply_env(&cfg, NULL, 0), -EINVAL);
	/* jf_run(NULL, ...) takes the environment and refuses it too. */
	capture_begin();
	CHECK_EQ(jf_run(NULL, never_main, NULL, NULL), -EINVAL);
	capture_end(err, sizeof(err));
	CHECK_EQ(atomic_load(&main_calls), 0);
	CHECK_EQ(unsetenv(name), 0);
}

static void check_config(void)
{
	struct jf_config cfg;
	char err[256];
	size_t i;

	jf_config_default(&cfg);
	printf("%s: defaults: preempt %s, quantum %llu ns, grace %s, signal %d\n", NAME,
	       cfg.preempt, (unsigned long long)cfg.quantum_ns,
	       cfg.grace_ns == JF_GRACE_DEFAULT ? "the mechanism's own" : "set", cfg.preempt_signal);
	CHECK(memchr(cfg.preempt, '\0', sizeof(cfg.preempt)) != NULL);
	CHECK_EQ(jf_preempt_available(cfg.preempt, NULL, 0), 1);
	CHECK(strcmp(cfg.preempt, "auto") == 0);
	CHECK(cfg.quantum_ns == JF_QUANTUM_DEFAULT);
	CHECK(cfg.grace_ns == JF_GRACE_DEFAULT);
	CHECK_EQ(cfg.preempt_signal, SIGURG);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);

	for (i = 0; i < NWORKING; i++) {
		cfg = jft_config_good_env("JIFFY_PREEMPT", working[i]);
		CHECK(strcmp(cfg.preempt, working[i]) == 0);
	}
	/* uintr is a known name: whether it can run is jf_run()'s business. */
	cfg = jft_config_good_env("JIFFY_PREEMPT", "uintr");
	CHECK(strcmp(cfg.preempt, "uintr") == 0);
	cfg = jft_config_good_env("JIFFY_QUANTUM_US", "1");
	CHECK_EQ(cfg.quantum_ns, 1000);
	cfg = jft_config_good_env("JIFFY_QUANTUM_US", "250");
	CHECK_EQ(cfg.quantum_ns, 250000);
	cfg = jft_config_good_env("JIFFY_GRACE_US", "0");
	CHECK_EQ(cfg.grace_ns, 0);
	cfg = jft_config_good_env("JIFFY_GRACE_US", "20");
	CHECK_EQ(cfg.grace_ns, 20000);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SIGNAL", "SIGUSR2");
	CHECK_EQ(cfg.preempt_signal, SIGUSR2);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SIGNAL", "USR1");
	CHECK_EQ(cfg.preempt_signal, SIGUSR1);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SIGNAL", "SIGURG");
	CHECK_EQ(cfg.preempt_signal, SIGURG);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SIGNAL", "12");
	CHECK_EQ(cfg.preempt_signal, 12);
	cfg = jft_config_good_env("JIFFY_PREEMPT_SIGNAL", "SIGRTMIN+3");
	CHECK_EQ(cfg.preempt_signal, SIGRTMIN + 3);
	/* the budget timers' signal (jiffy/pfn.h) */
	jf_config_default(&cfg);
	CHECK_EQ(cfg.pfn_signal, SIGRTMIN + 4);
	cfg = jft_config_good_env("JIFFY_PFN_SIGNAL", "SIGRTMIN+6");
	CHECK_EQ(cfg.pfn_signal, SIGRTMIN + 6);
	cfg = jft_config_good_env("JIFFY_PFN_SIGNAL", "USR2");
	CHECK_EQ(cfg.pfn_signal, SIGUSR2);
	check_bad_env("JIFFY_PFN_SIGNAL", "SIGKILL");
	check_bad_env("JIFFY_PFN_SIGNAL", "SIGSEGV");
	check_bad_env("JIFFY_PFN_SIGNAL", "");

	check_bad_env("JIFFY_PREEMPT", "bogus");
	check_bad_env("JIFFY_PREEMPT", "");
	check_bad_env("JIFFY_PREEMPT", "timer,hybrid");
	check_bad_env("JIFFY_QUANTUM_US", "0");
	check_bad_env("JIFFY_QUANTUM_US", "abc");
	check_bad_env("JIFFY_QUANTUM_US", "-5");
	check_bad_env("JIFFY_QUANTUM_US", "10ms");
	check_bad_env("JIFFY_QUANTUM_US", "99999999");
	check_bad_env("JIFFY_GRACE_US", "soon");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "SIGKILL");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "SIGSTOP");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "SIGSEGV");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "SIGBUS");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "9");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "11");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "0");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "SIGNOPE");
	check_bad_env("JIFFY_PREEMPT_SIGNAL", "");

	/* The same values in the struct. */
	jf_config_default(&cfg);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", "bogus");
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	jf_config_default(&cfg);
	memset(cfg.preempt, 't', sizeof(cfg.preempt));
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	jf_config_default(&cfg);
	cfg.quantum_ns = 0;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	jf_config_default(&cfg);
	cfg.preempt_signal = SIGKILL;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	jf_config_default(&cfg);
	cfg.pfn_signal = cfg.preempt_signal;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "pfn_signal") != NULL);
	jf_config_default(&cfg);
	cfg.preempt_signal = SIGSEGV;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	jf_config_default(&cfg);
	cfg.preempt_signal = 0;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
}

/* ---- running each mechanism ---- */

#define NSPIN 4

static const char *expected_mech;
static uint64_t expected_quantum, expected_grace;
static char counter_errors[1024];

static void *spin_fn(void *arg)
{
	uint64_t t0 = jf_now_ns(), x = (uint64_t)(uintptr_t)arg;

	/* 50 quanta of computing; safepoints so that "safepoint" can preempt too. */
	while (jf_now_ns() - t0 < 50 * expected_quantum) {
		x = pt_work(x, 250);
		jf_safepoint();
	}
	return (void *)(uintptr_t)(x | 1);
}

static void *mech_main(void *arg)
{
	struct jf_preempt_stats ps;
	struct jf_worker_stats st;
	jf_thread_t *t[NSPIN];
	int i;

	(void)arg;
	atomic_fetch_add(&main_calls, 1);
	CHECK(jf_preempt_mechanism() != NULL);
	if (strcmp(jf_preempt_mechanism(), expected_mech) != 0) {
		fprintf(stderr, "jf_preempt_mechanism() says '%s' under '%s'\n",
			jf_preempt_mechanism(), expected_mech);
		CHECK(!"wrong mechanism reported");
	}
	memset(&ps, 0, sizeof(ps));
	CHECK_EQ(jf_preempt_stats(&ps), 0);
	CHECK(ps.mechanism != NULL);
	CHECK(strcmp(ps.mechanism, expected_mech) == 0);
	CHECK_EQ(ps.quantum_ns, expected_quantum);
	if (!strcmp(expected_mech, "auto") || !strcmp(expected_mech, "hybrid"))
		CHECK_EQ(ps.grace_ns, expected_grace);

	/* Non-preemptible regions and safepoints are harmless under every mechanism. */
	jf_preempt_disable();
	jf_preempt_disable();
	jf_safepoint();
	jf_preempt_enable();
	jf_preempt_enable();

	for (i = 0; i < NSPIN; i++)
		t[i] = jft_spawn_on(i % jf_nworkers(), spin_fn, (void *)(intptr_t)(i + 1));
	for (i = 0; i < NSPIN; i++)
		CHECK(jft_join(t[i]) != NULL);

	CHECK_EQ(jf_preempt_stats(&ps), 0);
	st = pt_stats();
	printf("%s: %-10s preempts %llu, requests %llu, skipped %llu, deferred %llu; sender: "
	       "scans %llu, signals %llu, flags %llu, timer CPU %.3f ms\n",
	       NAME, expected_mech, (unsigned long long)st.preempts,
	       (unsigned long long)st.preempt_requests, (unsigned long long)st.preempt_skipped,
	       (unsigned long long)st.preempt_deferred,
	       (unsigned long long)ps.scans, (unsigned long long)ps.signals_sent,
	       (unsigned long long)ps.flags_set, (double)ps.timer_cpu_ns / 1e6);
	if (!strcmp(expected_mech, "none")) {
		CHECK_EQ(st.preempts, 0);
		CHECK_EQ(st.preempt_requests, 0);
		CHECK_EQ(ps.signals_sent, 0);
		CHECK_EQ(ps.flags_set, 0);
	} else {
		/* 4 uthreads of 50 quanta each on 1 worker: some waited while others ran. */
		CHECK_GE(st.preempts, 1);
		/*
		 * Every preemption answered a request (a signal, a timer expiry, a safepoint flag:
		 * jiffy/stats.h). Checked at the end, so that the rest of the test still runs.
		 */
		if (st.preempt_requests < st.preempts) {
			size_t len = strlen(counter_errors);

			snprintf(counter_errors + len, sizeof(counter_errors) - len,
				 "  %s: preempt_requests %llu < preempts %llu\n", expected_mech,
				 (unsigned long long)st.preempt_requests,
				 (unsigned long long)st.preempts);
		}
	}
	return (void *)0x600d;
}

static void check_run_each(void)
{
	struct jf_preempt_stats ps;
	size_t i;

	CHECK(strcmp(jf_preempt_mechanism(), "none") == 0);
	CHECK_EQ(jf_preempt_stats(&ps), -ESRCH);
	for (i = 0; i < NWORKING; i++) {
		struct jf_config cfg;

		/*
		 * One worker: the machine may have 2 CPUs, and the timer thread of dispatcher,
		 * safepoint and hybrid must not have to wait for one.
		 */
		jf_config_default(&cfg);
		cfg.workers = 1;
		snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", working[i]);
		cfg.quantum_ns = 200 * PT_US;
		expected_mech = working[i];
		expected_quantum = cfg.quantum_ns;
		expected_grace = !strcmp(working[i], "auto") ? 5000 * PT_US : 50 * PT_US;
		CHECK(jft_run(&cfg, mech_main, NULL) == (void *)0x600d);
		if (!strcmp(working[i], "auto") || !strcmp(working[i], "hybrid")) {
			/* A configured grace period is used as it is. */
			cfg.grace_ns = expected_grace = 300 * PT_US;
			CHECK(jft_run(&cfg, mech_main, NULL) == (void *)0x600d);
		}
		CHECK(strcmp(jf_preempt_mechanism(), "none") == 0);
		CHECK_EQ(jf_preempt_stats(&ps), -ESRCH);
	}
	/* Selected through the environment, with jf_run(NULL, ...). */
	CHECK_EQ(setenv("JIFFY_PREEMPT", "dispatcher", 1), 0);
	CHECK_EQ(setenv("JIFFY_QUANTUM_US", "150", 1), 0);
	CHECK_EQ(setenv("JIFFY_WORKERS", "1", 1), 0);
	expected_mech = "dispatcher";
	expected_quantum = 150 * PT_US;
	{
		void *ret = NULL;

		CHECK_EQ(jf_run(NULL, mech_main, NULL, &ret), 0);
		CHECK(ret == (void *)0x600d);
	}
	jft_clear_jiffy_env();
	/* A signal mechanism with no quantum named: its own, 100 us (not auto's 20 us). */
	CHECK_EQ(setenv("JIFFY_PREEMPT", "timer", 1), 0);
	CHECK_EQ(setenv("JIFFY_WORKERS", "1", 1), 0);
	expected_mech = "timer";
	expected_quantum = 100 * PT_US;
	expected_grace = 0;
	{
		void *ret = NULL;

		CHECK_EQ(jf_run(NULL, mech_main, NULL, &ret), 0);
		CHECK(ret == (void *)0x600d);
	}
	jft_clear_jiffy_env();
	/* Nothing chosen: the default, auto at 20 us with its own grace period. */
	CHECK_EQ(setenv("JIFFY_WORKERS", "1", 1), 0);
	expected_mech = "auto";
	expected_quantum = 20 * PT_US;
	expected_grace = 5000 * PT_US;
	{
		void *ret = NULL;

		CHECK_EQ(jf_run(NULL, mech_main, NULL, &ret), 0);
		CHECK(ret == (void *)0x600d);
	}
	jft_clear_jiffy_env();
}

static void check_uintr(void)
{
	struct jf_config cfg;
	char msg[4096];
	int calls = atomic_load(&main_calls), rc;

	jf_config_default(&cfg);
	cfg.workers = 1;
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", "uintr");
	if (uintr_available) {
		expected_mech = "uintr";
		expected_quantum = cfg.quantum_ns;
		CHECK(jft_run(&cfg, mech_main, NULL) == (void *)0x600d);
		return;
	}
	capture_begin();
	rc = jf_run(&cfg, never_main, NULL, NULL);
	capture_end(msg, sizeof(msg));
	printf("%s: jf_run(preempt=uintr) = %d, stderr: %s", NAME, rc, msg);
	if (!msg[0] || msg[strlen(msg) - 1] != '\n')
		printf("\n");
	CHECK_EQ(rc, -ENOTSUP);
	CHECK_EQ(atomic_load(&main_calls), calls);
	CHECK_STR_CONTAINS(msg, "uintr");
	CHECK_STR_CONTAINS(msg, "unavailable");
	CHECK(strcmp(jf_preempt_mechanism(), "none") == 0);

	/* Chosen through the environment: the same. */
	CHECK_EQ(setenv("JIFFY_PREEMPT", "uintr", 1), 0);
	capture_begin();
	rc = jf_run(NULL, never_main, NULL, NULL);
	capture_end(msg, sizeof(msg));
	CHECK_EQ(rc, -ENOTSUP);
	CHECK_STR_CONTAINS(msg, "uintr");
	CHECK_STR_CONTAINS(msg, "unavailable");
	CHECK_EQ(atomic_load(&main_calls), calls);
	jft_clear_jiffy_env();

	/* Nothing was left behind: a runtime starts (with preemption) afterwards. */
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", "timer");
	cfg.quantum_ns = 200 * PT_US;
	expected_mech = "timer";
	expected_quantum = cfg.quantum_ns;
	CHECK(jft_run(&cfg, mech_main, NULL) == (void *)0x600d);
}

static void check_run_bad(void)
{
	struct jf_config cfg;
	char msg[4096];
	int calls = atomic_load(&main_calls);

	jf_config_default(&cfg);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", "bogus");
	capture_begin();
	CHECK_EQ(jf_run(&cfg, never_main, NULL, NULL), -EINVAL);
	capture_end(msg, sizeof(msg));
	CHECK_STR_CONTAINS(msg, "bogus");
	jf_config_default(&cfg);
	cfg.preempt_signal = SIGKILL;
	capture_begin();
	CHECK_EQ(jf_run(&cfg, never_main, NULL, NULL), -EINVAL);
	capture_end(msg, sizeof(msg));
	CHECK_EQ(atomic_load(&main_calls), calls);
}

int main(void)
{
	jft_clear_jiffy_env();
	check_available();
	check_config();
	check_run_bad();
	check_run_each();
	check_uintr();
	if (counter_errors[0]) {
		fprintf(stderr, "%s: preemptions without a counted request:\n%s", NAME,
			counter_errors);
		CHECK(!"stats preempt_requests does not count every request");
	}
	jft_ok(NAME);
	return 0;
}
