/*
 * bench/pfn_bench.c - libinger's Table 2 for Jiffy's preemptible functions, beside its peers, and
 * how well budgets are kept (docs/pfn.md, docs/performance.md).
 *
 * Owns: timing, in one run and interleaved round by round, of
 *   launch            jf_pfn_launch() of a function that returns at once (the whole round trip);
 *   pause+resume      jf_pfn_resume() of a paused function that pauses again (one round trip);
 *   resume (timeout)  from jf_pfn_resume() of a function stopped by its budget's signal to its
 *                     first instruction again (rt_sigreturn included; the stop itself excluded);
 *   cancel            jf_pfn_cancel() of a paused function (one cleanup handler, its stack back);
 *   jf_spawn+join, pthread_create+join, fork+_exit+waitpid  the ways to run work one could
 *                     cut off otherwise;
 * each as the median over rounds of the mean per operation in a round (min and max of the round
 * means beside it); and the overshoot of budgets: how long after the deadline a spinning function
 * came back, with and without jf_safepoint() in its loop (percentiles over many stops).
 *
 * usage: pfn_bench [--rounds N] [--budget-us B]   (JIFFY_PREEMPT etc. as for any Jiffy program)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#define MAXR 64

static int rounds = 15;
static uint64_t budget_us = 100;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* --- the ops: each returns the mean ns per op of one round ---------------------------------- */

static void *nothing(void *arg)
{
	return arg;
}

static double op_launch(void)
{
	const int n = 20000;
	jf_pfn_t *c;
	void *r;
	uint64_t t0 = jf_now_ns();
	for (int i = 0; i < n; i++)
		if (jf_pfn_launch(nothing, NULL, 1000ull * 1000 * 1000, &r, &c) != JF_PFN_DONE)
			abort();
	return (double)(jf_now_ns() - t0) / n;
}

static void *pause_loop(void *arg)
{
	(void)arg;
	for (;;)
		jf_pfn_pause();
	return NULL;
}

static double op_pause_resume(void)
{
	const int n = 20000;
	jf_pfn_t *c;
	if (jf_pfn_launch(pause_loop, NULL, JF_PFN_UNLIMITED, NULL, &c) != JF_PFN_PAUSED)
		abort();
	uint64_t t0 = jf_now_ns();
	for (int i = 0; i < n; i++)
		if (jf_pfn_resume(c, JF_PFN_UNLIMITED, NULL) != JF_PFN_PAUSED)
			abort();
	double per = (double)(jf_now_ns() - t0) / n;
	jf_pfn_cancel(c);
	return per;
}

static void noop_cleanup(void *arg)
{
	(void)arg;
}

static void *pause_once(void *arg)
{
	struct jf_cleanup c;
	(void)arg;
	jf_cleanup_push(&c, noop_cleanup, NULL);
	jf_pfn_pause();
	abort();
}

static double op_cancel(void)
{
	enum { N = 2000 };
	static jf_pfn_t *c[N];
	for (int i = 0; i < N; i++)
		if (jf_pfn_launch(pause_once, NULL, JF_PFN_UNLIMITED, NULL, &c[i]) != JF_PFN_PAUSED)
			abort();
	uint64_t t0 = jf_now_ns();
	for (int i = 0; i < N; i++)
		jf_pfn_cancel(c[i]);
	return (double)(jf_now_ns() - t0) / N;
}

/* resume after a timeout: the spinning function records the first time it runs after a resume */
static volatile int safepoints;
static volatile uint64_t first_stamp;

static void *spin_first(void *arg)
{
	(void)arg;
	for (;;) {
		if (!first_stamp)
			first_stamp = jf_now_ns();
		if (safepoints)
			jf_safepoint();
	}
	return NULL;
}

static double op_resume_after_timeout(void)
{
	const int n = 100;
	jf_pfn_t *c;
	uint64_t sum = 0;
	safepoints = 0;
	first_stamp = 1;
	if (jf_pfn_launch(spin_first, NULL, 30000, NULL, &c) != JF_PFN_TIMEOUT)
		abort();
	int got = 0;
	for (int i = 0; i < n; i++) {
		first_stamp = 0;
		uint64_t t0 = jf_now_ns();
		if (jf_pfn_resume(c, 30000, NULL) != JF_PFN_TIMEOUT)
			abort();
		if (first_stamp > t0) { /* 0: stopped again before its first iteration (a stall) */
			sum += first_stamp - t0;
			got++;
		}
	}
	jf_pfn_cancel(c);
	return got ? (double)sum / got : 0;
}

static void *uthread_nothing(void *arg)
{
	return arg;
}

static double op_spawn_join(void)
{
	const int n = 5000;
	uint64_t t0 = jf_now_ns();
	for (int i = 0; i < n; i++) {
		jf_thread_t *t;
		if (jf_spawn(&t, NULL, uthread_nothing, NULL) || jf_join(t, NULL))
			abort();
	}
	return (double)(jf_now_ns() - t0) / n;
}

static void *pthread_nothing(void *arg)
{
	return arg;
}

static double op_pthread(void)
{
	const int n = 300;
	uint64_t t0 = jf_now_ns();
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, pthread_nothing, NULL) || pthread_join(t, NULL))
			abort();
	}
	return (double)(jf_now_ns() - t0) / n;
}

static double op_fork(void)
{
	const int n = 30;
	uint64_t t0 = jf_now_ns();
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p < 0 || waitpid(p, NULL, 0) != p)
			abort();
	}
	return (double)(jf_now_ns() - t0) / n;
}

struct op {
	const char *name;
	double (*fn)(void);
	const char *goal;
	double r[MAXR];
};

static struct op ops[] = {
	{"launch (returns at once)", op_launch, "<= 200 ns", {0}},
	{"pause + resume (round trip)", op_pause_resume, "<= 200 ns", {0}},
	{"resume after a timeout", op_resume_after_timeout, "", {0}},
	{"cancel (1 cleanup handler)", op_cancel, "<= 2000 ns", {0}},
	{"jf_spawn + jf_join", op_spawn_join, "", {0}},
	{"pthread_create + join", op_pthread, "", {0}},
	{"fork + _exit + waitpid", op_fork, "", {0}},
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* --- budgets kept ---------------------------------------------------------------------------- */

static void overshoot(int with_safepoints)
{
	enum { N = 400 };
	uint64_t late[N];
	uint64_t b = budget_us * 1000;
	jf_pfn_t *c;

	safepoints = with_safepoints;
	first_stamp = 1;
	for (int i = 0; i < N; i++) {
		uint64_t t0 = jf_now_ns();
		if (jf_pfn_launch(spin_first, NULL, b, NULL, &c) != JF_PFN_TIMEOUT)
			abort();
		uint64_t t1 = jf_now_ns();
		late[i] = t1 - t0 > b ? t1 - t0 - b : 0;
		jf_pfn_cancel(c);
	}
	qsort(late, N, sizeof(late[0]), cmp_u64);
	printf("  %-24s budget %4llu us: over by p50 %6.1f us  p90 %6.1f  p99 %6.1f  max %7.1f\n",
	       with_safepoints ? "jf_safepoint() in loop" : "no safepoint (signal)",
	       (unsigned long long)budget_us, late[N / 2] / 1e3, late[N * 9 / 10] / 1e3,
	       late[N * 99 / 100] / 1e3, late[N - 1] / 1e3);
}

static void *bench_main(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < NOPS; i++)
			ops[i].r[r] = ops[i].fn();
	printf("Table 2 (libinger ATC'20) on Jiffy: mechanism %s, %d rounds interleaved; "
	       "ns per operation, median [min, max] of the round means\n",
	       jf_preempt_mechanism(), rounds);
	printf("  %-30s %10s %10s %10s   %s\n", "operation", "median", "min", "max", "goal");
	for (size_t i = 0; i < NOPS; i++) {
		double v[MAXR];
		memcpy(v, ops[i].r, sizeof(double) * (size_t)rounds);
		for (int a = 1; a < rounds; a++)
			for (int k = a; k > 0 && v[k - 1] > v[k]; k--) {
				double t = v[k];
				v[k] = v[k - 1];
				v[k - 1] = t;
			}
		printf("  %-30s %10.1f %10.1f %10.1f   %s\n", ops[i].name, v[rounds / 2], v[0],
		       v[rounds - 1], ops[i].goal);
	}
	printf("Budgets kept: a spinning function's return after its deadline\n");
	overshoot(0);
	overshoot(1);
	return NULL;
}

int main(int argc, char **argv)
{
	struct jf_config cfg;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--budget-us") && i + 1 < argc) {
			budget_us = strtoull(argv[++i], NULL, 10);
		} else {
			fprintf(stderr, "usage: %s [--rounds N (1-%d)] [--budget-us B]\n", argv[0], MAXR);
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAXR || budget_us == 0) {
		fprintf(stderr, "%s: --rounds must be 1-%d and --budget-us > 0\n", argv[0], MAXR);
		return 2;
	}
	char err[256];
	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	cfg.workers = 1;
	if (jf_run(&cfg, bench_main, NULL, NULL) != 0) {
		fprintf(stderr, "%s: jf_run failed\n", argv[0]);
		return 1;
	}
	return 0;
}
