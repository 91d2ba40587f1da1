/*
 * core/test_introspect.c - proves the runtime's self-reporting tells the truth:
 *  - the histogram layout (bucket bounds grow, each bucket at most 1/16 of its value wide,
 *    percentiles land in the right bucket);
 *  - run length and runnable delay: a uthread that computes 5 ms on one worker while another is
 *    runnable shows up as a run of >= 5 ms and a runnable delay of >= 5 ms;
 *  - preemption lateness is recorded for the path that preempted (safepoint here, and the signal
 *    in builds that can follow signal preemption);
 *  - jf_stats_reset() starts counters and histograms from zero;
 *  - without jf_config.histograms (JIFFY_HIST) the switch path's two histograms answer -ENODATA;
 *  - jf_dump_threads() lists uthreads blocked on a mutex, a condition variable and a sleep, and
 *    the running one, with their names and states; with their ages when something reads the
 *    clock at a switch (histograms here), with none and a note saying so when nothing does.
 * With an argument it is the subject of tests/core/check_monitor.sh: "stall" computes past the
 * stall threshold with work waiting, "schedtrace" runs yields for a while.
 */
#include "jf_test.h"

#include <inttypes.h>
#include <time.h>

static void spin_ns(uint64_t ns)
{
	uint64_t end = jf_now_ns() + ns;
	while (jf_now_ns() < end)
		;
}

static void spin_safepoints_ns(uint64_t ns)
{
	uint64_t end = jf_now_ns() + ns;
	while (jf_now_ns() < end)
		jf_safepoint();
}

/* --- histogram layout ------------------------------------------------------------------------ */

static void check_layout(void)
{
	static struct jf_hist h;

	CHECK_EQ(jf_hist_bucket_low(0), 0);
	CHECK_EQ(jf_hist_bucket_low(15), 15);
	CHECK_EQ(jf_hist_bucket_low(16), 16);
	CHECK_EQ(jf_hist_bucket_low(JF_HIST_BUCKETS), 0);
	for (unsigned i = 1; i < JF_HIST_BUCKETS; i++) {
		uint64_t lo = jf_hist_bucket_low(i), prev = jf_hist_bucket_low(i - 1);
		CHECK(lo > prev);
		if (i > 16)
			CHECK(lo - prev <= prev / 16 + 1);
	}
	CHECK(jf_hist_bucket_low(JF_HIST_BUCKETS - 1) >= (1ull << (JF_HIST_MAX_BITS - 1)));
	memset(&h, 0, sizeof(h));
	CHECK_EQ(jf_hist_percentile(&h, 99), 0);
	h.buckets[100] = 99;
	h.buckets[200] = 1;
	h.count = 100;
	CHECK_EQ(jf_hist_percentile(&h, 50), jf_hist_bucket_low(101) - 1);
	CHECK_EQ(jf_hist_percentile(&h, 99), jf_hist_bucket_low(101) - 1);
	CHECK_EQ(jf_hist_percentile(&h, 100), jf_hist_bucket_low(201) - 1);
	CHECK_EQ(jf_hist_percentile(&h, 1000), jf_hist_bucket_low(201) - 1);
	CHECK(strcmp(jf_hist_name(JF_HIST_RUN_LENGTH), "run_length") == 0);
	CHECK(strcmp(jf_hist_name((enum jf_hist_kind)99), "?") == 0);
}

/* --- run length and runnable delay ----------------------------------------------------------- */

static void *quick(void *arg)
{
	return arg;
}

static void *compute_5ms(void *arg)
{
	spin_ns(5000000);
	return arg;
}

/* Run @long_fn in a uthread named @name with a short one queued behind it; join both. */
static void long_then_short(jf_thread_fn long_fn, const char *name)
{
	struct jf_attr attr;
	jf_thread_t *a, *b;

	jf_attr_init(&attr);
	attr.name = name;
	a = jft_spawn(&attr, long_fn, NULL);
	b = jft_spawn(NULL, quick, NULL); /* runnable behind it (one worker) */
	jft_join(a);
	jft_join(b);
}

static void *main_delay(void *arg)
{
	struct jf_hist h;

	(void)arg;
	CHECK_EQ(jf_stats_reset(), 0);
	long_then_short(compute_5ms, "compute-5ms");
	CHECK_EQ(jf_stats_hist(0, JF_HIST_RUN_LENGTH, &h), 0);
	CHECK_GE(h.count, 2);
	CHECK_GE(jf_hist_percentile(&h, 100), 5000000);
	CHECK(jf_hist_percentile(&h, 100) < 10000000000ull);
	CHECK_GE(h.sum_ns, 4700000); /* midpoints: within 3.2 % */
	CHECK_EQ(jf_stats_hist(-1, JF_HIST_RUNNABLE_DELAY, &h), 0);
	CHECK_GE(h.count, 2);
	CHECK_GE(jf_hist_percentile(&h, 100), 5000000);
	CHECK_EQ(jf_stats_hist(1, JF_HIST_RUN_LENGTH, &h), -EINVAL);
	CHECK_EQ(jf_stats_hist(0, JF_HIST_NR, &h), -EINVAL);
	CHECK_EQ(jf_stats_hist(0, JF_HIST_RUN_LENGTH, NULL), -EINVAL);
	return NULL;
}

/* --- reset ------------------------------------------------------------------------------------ */

static void *yield10(void *arg)
{
	for (int i = 0; i < 10; i++)
		jf_yield();
	return arg;
}

/* Spawn @n uthreads that yield 10 times each, and join them. */
static void yielders(int n)
{
	jf_thread_t *t[100];

	for (int i = 0; i < n && i < 100; i++)
		t[i] = jft_spawn(NULL, yield10, NULL);
	for (int i = 0; i < n && i < 100; i++)
		jft_join(t[i]);
}

/* Not asked for: the switch path records nothing, and says so; the lateness ones are kept. */
static void *main_hist_off(void *arg)
{
	struct jf_hist h;

	(void)arg;
	yielders(10);
	CHECK_EQ(jf_stats_hist(0, JF_HIST_RUN_LENGTH, &h), -ENODATA);
	CHECK_EQ(jf_stats_hist(-1, JF_HIST_RUNNABLE_DELAY, &h), -ENODATA);
	CHECK_EQ(jf_stats_hist(-1, JF_HIST_LATENESS_SAFEPOINT, &h), 0);
	return NULL;
}

static void *main_reset(void *arg)
{
	struct jf_worker_stats s;
	struct jf_hist h;

	(void)arg;
	yielders(100);
	CHECK_EQ(jf_stats_total(&s), 0);
	CHECK_GE(s.yields, 1000);
	CHECK_GE(s.spawns, 100);
	CHECK_EQ(jf_stats_reset(), 0);
	CHECK_EQ(jf_stats_total(&s), 0);
	CHECK(s.switches < 50 && s.yields < 50 && s.spawns == 0);
	CHECK_EQ(jf_stats_hist(-1, JF_HIST_RUN_LENGTH, &h), 0);
	CHECK(h.count < 50);
	yielders(100);
	CHECK_EQ(jf_stats_total(&s), 0);
	CHECK_GE(s.yields, 1000);
	CHECK_EQ(s.spawns, 100);
	CHECK_EQ(jf_stats_hist(-1, JF_HIST_RUN_LENGTH, &h), 0);
	CHECK_GE(h.count, 100);
	return NULL;
}

/* --- lateness --------------------------------------------------------------------------------- */

static int late_use_safepoints;

#define LATE_PREEMPTS 5
#define LATE_HANG_NS 10000000000ull

static uint64_t preempts_so_far(void)
{
	struct jf_worker_stats s;

	CHECK_EQ(jf_stats_total(&s), 0);
	return s.preempts;
}

/*
 * Two of these share one worker with a 1 ms quantum. Each computes (with safepoints or without)
 * until the runtime has counted LATE_PREEMPTS preemptions, and at least 20 ms: how many a fixed
 * time yields depends on how soon the mechanism's timer thread or signal gets a CPU, which on a
 * loaded 2-vCPU host (the ThreadSanitizer suite beside two CPU hogs) was ~10 ms late each time,
 * 3 preemptions in 100 ms (flake hunt, 2 of 300 runs). LATE_HANG_NS is a hang bound: a mechanism
 * that never preempts fails the checks below after it, not a test that waits for ever.
 */
static void *hog(void *arg)
{
	uint64_t start = jf_now_ns(), now = start;

	while (now - start < 20000000 ||
	       (preempts_so_far() < LATE_PREEMPTS && now - start < LATE_HANG_NS)) {
		if (late_use_safepoints)
			spin_safepoints_ns(1000000);
		else
			spin_ns(1000000);
		now = jf_now_ns();
	}
	return arg;
}

static void *main_late(void *arg)
{
	enum jf_hist_kind kind = *(enum jf_hist_kind *)arg;
	struct jf_worker_stats s;
	struct jf_hist h;
	jf_thread_t *a, *b;

	CHECK_EQ(jf_stats_reset(), 0);
	a = jft_spawn(NULL, hog, NULL);
	b = jft_spawn(NULL, hog, NULL);
	jft_join(a);
	jft_join(b);
	CHECK_EQ(jf_stats_total(&s), 0);
	CHECK_EQ(jf_stats_hist(-1, kind, &h), 0);
	fprintf(stderr, "lateness %s: %" PRIu64 " preemptions, %" PRIu64 " recorded, p50 %" PRIu64
		" ns\n", jf_hist_name(kind), s.preempts, h.count, jf_hist_percentile(&h, 50));
	CHECK_GE(s.preempts, LATE_PREEMPTS);
	CHECK_GE(h.count, LATE_PREEMPTS);
	return NULL;
}

static void run_late(const char *mech, enum jf_hist_kind kind, int safepoints)
{
	struct jf_config cfg;

	jft_config(&cfg, 1);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", mech);
	cfg.quantum_ns = 1000000;
	late_use_safepoints = safepoints;
	jft_run(&cfg, main_late, &kind);
}

/* --- jf_dump_threads() ----------------------------------------------------------------------- */

static jf_mutex_t mx = JF_MUTEX_INITIALIZER;
static jf_mutex_t cmx = JF_MUTEX_INITIALIZER;
static jf_cond_t cv = JF_COND_INITIALIZER;
static int cv_go;

static void *mx_waiter(void *arg)
{
	jf_mutex_lock(&mx);
	jf_mutex_unlock(&mx);
	return arg;
}

static void *cv_waiter(void *arg)
{
	jf_mutex_lock(&cmx);
	while (!cv_go)
		jf_cond_wait(&cv, &cmx);
	jf_mutex_unlock(&cmx);
	return arg;
}

static void *sleeper(void *arg)
{
	jf_sleep_ns(300000000);
	return arg;
}

static jf_thread_t *spawn_named(const char *name, jf_thread_fn fn)
{
	struct jf_attr attr;

	jf_attr_init(&attr);
	attr.name = name;
	return jft_spawn(&attr, fn, NULL);
}

/* The line of @dump that names @name, copied to @line; 0 if none. */
static int line_of(const char *dump, const char *name, char *line, size_t len)
{
	for (const char *p = dump; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char buf[512];

		snprintf(buf, sizeof(buf), "%.*s", (int)n, p);
		if (strstr(buf, name)) {
			snprintf(line, len, "%s", buf);
			return 1;
		}
		p += n + (e != NULL);
	}
	return 0;
}

static char *dump(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	CHECK_EQ(jf_dump_threads(f), 0);
	fclose(f);
	return buf;
}

/* The "for" column (the age in its state) of @line: id name state worker class for where. */
static void age_of(const char *line, char *age, size_t len)
{
	char a[32] = "";

	CHECK_EQ(sscanf(line, "%*s %*s %*s %*s %*s %31s", a), 1);
	snprintf(age, len, "%s", a);
}

/* @arg: NULL, or "ages" / "no ages": whether the dump must show every uthread's age, or none
 * (a runtime that reads no clock at a switch: JIFFY_PREEMPT=none, a policy without time, no
 * histograms, says so in its header and stamps nothing). */
static void *main_dump(void *arg)
{
	const char *want = arg;
	jf_thread_t *a, *b, *c;
	char line[512], age[32], *out = NULL;
	int settled = 0;

	cv_go = 0; /* run once per configuration */
	jf_mutex_lock(&mx);
	a = spawn_named("mx-waiter", mx_waiter);
	b = spawn_named("cv-waiter", cv_waiter);
	c = spawn_named("sleeper", sleeper);
	for (int i = 0; i < 200 && !settled; i++) {
		jf_sleep_ns(5000000);
		free(out);
		out = dump();
		settled = line_of(out, "mx-waiter", line, sizeof(line)) && strstr(line, "mutex 0x") &&
			  line_of(out, "cv-waiter", line, sizeof(line)) && strstr(line, "cond 0x") &&
			  line_of(out, "sleeper", line, sizeof(line)) && strstr(line, "sleep");
	}
	fputs(out, stderr);
	CHECK(settled);
	CHECK(line_of(out, "mx-waiter", line, sizeof(line)));
	CHECK_STR_CONTAINS(line, "blocked");
	CHECK(line_of(out, "sleeper", line, sizeof(line)));
	CHECK_STR_CONTAINS(line, "blocked");
	CHECK(line_of(out, " main ", line, sizeof(line)));
	CHECK_STR_CONTAINS(line, "running");
	CHECK_STR_CONTAINS(out, "jiffy: 4 uthreads");
	if (want) {
		bool ages = strcmp(want, "ages") == 0;
		const char *names[] = {"mx-waiter", "cv-waiter", "sleeper", " main "};

		CHECK_EQ(strstr(out, "ages not tracked") == NULL, ages);
		fprintf(stderr, "dump with %s: ok\n", want);
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			CHECK(line_of(out, names[i], line, sizeof(line)));
			age_of(line, age, sizeof(age));
			if (ages != (strcmp(age, "-") != 0)) {
				fprintf(stderr, "%s: age '%s', want %s\n", names[i], age, want);
				jft_fail();
			}
		}
	}
	free(out);
	jf_mutex_unlock(&mx);
	jf_mutex_lock(&cmx);
	cv_go = 1;
	jf_cond_signal(&cv);
	jf_mutex_unlock(&cmx);
	jft_join(a);
	jft_join(b);
	jft_join(c);
	CHECK_EQ(jf_dump_threads(NULL), -EINVAL);
	return NULL;
}

/* --- subjects for check_monitor.sh ----------------------------------------------------------- */

/* Named so that the stall report's backtrace can be checked for it (linked with -rdynamic). */
__attribute__((noinline)) void jft_stalling_compute(uint64_t ns)
{
	spin_ns(ns);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep this frame */
}

static void *staller(void *arg)
{
	jft_stalling_compute(300000000);
	return arg;
}

/* The stall subject: the short uthread is queued by the staller itself, so that only the staller
 * ever runs while work waits. (main spawned both, and its second spawn, with the staller already
 * waiting, once took 2.7-3.9 ms under ThreadSanitizer on a loaded machine, inside TSan's memset:
 * a second, genuine report, for main; 3 runs in 20.) */
static void *staller_with_short(void *arg)
{
	jf_thread_t *b = jft_spawn(NULL, quick, NULL); /* runnable behind us (one worker) */

	staller(arg);
	jft_join(b);
	return arg;
}

static void *main_stall(void *arg)
{
	struct jf_attr attr;

	(void)arg;
	jf_attr_init(&attr);
	attr.name = "the-staller";
	jft_join(jft_spawn(&attr, staller_with_short, NULL)); /* main blocks at once */
	return NULL;
}

static void *main_trace(void *arg)
{
	uint64_t end = jf_now_ns() + 300000000;
	(void)arg;
	while (jf_now_ns() < end) {
		jf_thread_t *t = jft_spawn(NULL, yield10, NULL);
		jft_join(t);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct jf_config cfg;

	if (argc > 1) { /* environment-configured runs for check_monitor.sh */
		jft_config(&cfg, 1);
		jft_run(&cfg, strcmp(argv[1], "stall") == 0 ? main_stall : main_trace, NULL);
		return 0;
	}
	check_layout();
	CHECK_EQ(jf_stats_reset(), -ESRCH);
	CHECK_EQ(jf_dump_threads(stderr), -ESRCH);

	jft_config(&cfg, 1);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "none");
	cfg.histograms = true;
	jft_run(&cfg, main_delay, NULL);

	jft_config(&cfg, 2);
	cfg.histograms = true;
	jft_run(&cfg, main_reset, NULL);

	jft_config(&cfg, 1);
	cfg.histograms = false;
	cfg.stats = false;
	cfg.schedtrace_ns = 0;
	jft_run(&cfg, main_hist_off, NULL);

	run_late("safepoint", JF_HIST_LATENESS_SAFEPOINT, 1);
#if !defined(__SANITIZE_THREAD__)
	run_late("timer", JF_HIST_LATENESS_SIGNAL, 0);
#else
	fprintf(stderr, "lateness late_signal: not checked under ThreadSanitizer, which does not "
			"follow signal preemption (checked in the plain and ASan builds)\n");
#endif

	jft_config(&cfg, 2);
	jft_run(&cfg, main_dump, NULL);
	/* The clock at a switch only for a consumer: none of them, then histograms. */
	jft_config(&cfg, 2);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "none");
	snprintf(cfg.policy, sizeof(cfg.policy), "ws");
	cfg.histograms = cfg.stats = false;
	cfg.schedtrace_ns = 0;
	cfg.stall_report = 0;
	jft_run(&cfg, main_dump, "no ages");
	cfg.histograms = true;
	jft_run(&cfg, main_dump, "ages");
	fprintf(stderr, "introspect: ok\n");
	return 0;
}
