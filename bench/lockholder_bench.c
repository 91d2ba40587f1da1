/*
 * bench/lockholder_bench.c - lock-holder preemption: a contended jf_mutex_t under preemption,
 * with each remedy on and off (issue 18).
 *
 * Owns: the workload and its table. --threads uthreads on --workers workers (2) loop: compute --out-us
 * (jf_safepoint() in the loop), take the one mutex, compute --cs-us inside it, release it. The
 * quantum (--quantum-us) is short next to what every uthread does between two locks, so holders
 * are often due a preemption inside the critical section; a preempted holder keeps every waiter
 * waiting until it runs again (the other uthreads' quanta on its worker). Measured per
 * configuration: acquisitions per second, and the wait for the lock (from asking to holding)
 * at p50/p99/p99.9.
 *
 * Configurations: the release protocol (jf_config.lock_handoff: barge = free it and wake the
 * oldest waiter, Go's rule; handoff = hand it to the oldest waiter, strict FIFO) x the remedies
 * (jf_config.lock_defer_ns / lock_spin_ns): none, defer (--defer-us), spin (--spin-us), both.
 * Each of the 8 runs for --seconds, in rotation, --reps times.
 *
 * Usage: lockholder_bench [--threads 8] [--cs-us 5] [--out-us 20] [--quantum-us 50]
 *                         [--preempt timer] [--defer-us 50] [--spin-us 2] [--seconds 1]
 *                         [--reps 3] [--policy ws] [--workers 2]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

#include "flags.h"

static struct {
	unsigned threads, cs_us, out_us, quantum_us, defer_us, spin_us, reps, workers;
	double seconds;
	char preempt[16], policy[32];
} opt = {8, 5, 20, 50, 50, 2, 3, 2, 1.0, "timer", "ws"};

#define MAXS (1u << 20)
static jf_mutex_t mx = JF_MUTEX_INITIALIZER;
static atomic_bool stop;
static uint64_t *waits;
static atomic_uint nwaits;
static atomic_ulong acquisitions;
static struct jf_worker_stats totals; /* at the end of a run */

static void spin_ns(uint64_t ns)
{
	uint64_t end = jf_now_ns() + ns;
	while (jf_now_ns() < end)
		jf_safepoint();
}

static void *contender(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		spin_ns(opt.out_us * 1000ull);
		uint64_t t0 = jf_now_ns();
		jf_mutex_lock(&mx);
		uint64_t t1 = jf_now_ns();
		spin_ns(opt.cs_us * 1000ull);
		jf_mutex_unlock(&mx);
		unsigned i = atomic_fetch_add(&nwaits, 1);
		if (i < MAXS)
			waits[i] = t1 - t0;
		atomic_fetch_add(&acquisitions, 1);
	}
	return NULL;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[256];

	(void)arg;
	for (unsigned i = 0; i < opt.threads; i++)
		if (jf_spawn(&t[i], NULL, contender, NULL) != 0)
			exit(1);
	jf_sleep_ns((uint64_t)(opt.seconds * 1e9));
	atomic_store(&stop, true);
	for (unsigned i = 0; i < opt.threads; i++)
		jf_join(t[i], NULL);
	jf_stats_total(&totals);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct res {
	double rate, p50, p99, p999, deferred, preempts;
};

static struct res run(uint64_t defer_ns, uint64_t spin_ns_, bool handoff)
{
	struct jf_config cfg;
	struct jf_worker_stats st;
	struct res r;
	char err[256];
	unsigned n;

	jf_config_default(&cfg);
	cfg.workers = opt.workers;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", opt.policy);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", opt.preempt);
	cfg.quantum_ns = opt.quantum_us * 1000ull;
	cfg.lock_defer_ns = defer_ns;
	cfg.lock_spin_ns = spin_ns_;
	cfg.lock_handoff = handoff;
	if (jf_config_validate(&cfg, err, sizeof(err))) {
		fprintf(stderr, "lockholder_bench: %s\n", err);
		exit(2);
	}
	atomic_store(&stop, false);
	atomic_store(&nwaits, 0);
	atomic_store(&acquisitions, 0);
	memset(&st, 0, sizeof(st));
	if (jf_run(&cfg, main_fn, NULL, NULL) != 0)
		exit(1);
	n = atomic_load(&nwaits);
	n = n < MAXS ? n : MAXS;
	qsort(waits, n, sizeof(*waits), cmp_u64);
	r.rate = (double)atomic_load(&acquisitions) / opt.seconds;
	r.p50 = n ? waits[n / 2] / 1000.0 : 0;
	r.p99 = n ? waits[(unsigned)(n * 0.99)] / 1000.0 : 0;
	r.p999 = n ? waits[(unsigned)(n * 0.999)] / 1000.0 : 0;
	r.deferred = (double)totals.preempt_lock_deferred / opt.seconds;
	r.preempts = (double)totals.preempts / opt.seconds;
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: lockholder_bench [--threads N] [--cs-us N] [--out-us N] [--quantum-us N]\n"
		   "                        [--preempt MECH] [--defer-us N] [--spin-us N] [--seconds S]\n"
		   "                        [--reps N] [--policy NAME] [--workers N]\n" JP_FLAGS_STD_USAGE);
}

/* A flag's number in [@lo, @hi] (apps/common/flags.h's rules), or exit 2 naming it. */
static unsigned parse_uint(struct jp_flags *fl, const char *v, unsigned lo, unsigned hi)
{
	unsigned long x;

	if (jp_flag_uint(fl->prog, fl->flag, v, lo, hi, &x) != 0)
		exit(2);
	return (unsigned)x;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"threads", required_argument, NULL, 't'},  {"cs-us", required_argument, NULL, 'c'},
		{"out-us", required_argument, NULL, 'o'},   {"quantum-us", required_argument, NULL, 'q'},
		{"preempt", required_argument, NULL, 'm'},  {"defer-us", required_argument, NULL, 'd'},
		{"spin-us", required_argument, NULL, 's'},  {"seconds", required_argument, NULL, 'S'},
		{"reps", required_argument, NULL, 'r'},     {"policy", required_argument, NULL, 'p'},
		{"workers", required_argument, NULL, 'w'},
		JP_FLAGS_STD_OPTIONS,                       {0}};
	static const char *const names[8] = {"barge",       "barge+defer",   "barge+spin",
					     "barge+both",  "handoff",       "handoff+defer",
					     "handoff+spin", "handoff+both"};
	struct jp_flags fl;
	int c;
	static double rate[8][16], p50[8][16], p99[8][16], p999[8][16];

	jp_flags_init(&fl, "lockholder_bench", jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		switch (c) {
		case 't':
			opt.threads = parse_uint(&fl, optarg, 1, 256);
			break;
		case 'c':
			opt.cs_us = parse_uint(&fl, optarg, 0, 100000);
			break;
		case 'o':
			opt.out_us = parse_uint(&fl, optarg, 0, 100000);
			break;
		case 'q':
			opt.quantum_us = parse_uint(&fl, optarg, 1, 100000);
			break;
		case 'm':
			snprintf(opt.preempt, sizeof(opt.preempt), "%s", optarg);
			break;
		case 'd':
			opt.defer_us = parse_uint(&fl, optarg, 0, 10000);
			break;
		case 's':
			opt.spin_us = parse_uint(&fl, optarg, 0, 1000);
			break;
		case 'S':
			opt.seconds = parse_uint(&fl, optarg, 1, 60);
			break;
		case 'r':
			opt.reps = parse_uint(&fl, optarg, 1, 16);
			break;
		case 'p':
			snprintf(opt.policy, sizeof(opt.policy), "%s", optarg);
			break;
		case 'w':
			opt.workers = parse_uint(&fl, optarg, 1, 256);
			break;
		}
	}
	jp_flags_no_operands(&fl);
	waits = malloc(MAXS * sizeof(*waits));
	if (!waits)
		return 1;
	printf("# lockholder_bench: %u uthreads on %u workers, policy %s, preempt %s, quantum %u us, "
	       "cs %u us, out %u us; defer %u us, spin %u us; %.0f s x %u reps, rotated\n",
	       opt.threads, opt.workers, opt.policy, opt.preempt, opt.quantum_us, opt.cs_us, opt.out_us,
	       opt.defer_us, opt.spin_us, opt.seconds, opt.reps);
	printf("%-13s %4s %12s %9s %9s %9s %10s %10s\n", "config", "rep", "acq_per_s", "wait_p50",
	       "wait_p99", "wait_p999", "preempt/s", "deferred/s");
	for (unsigned rep = 0; rep < opt.reps; rep++)
		for (int k = 0; k < 8; k++) {
			uint64_t d = (k & 1) ? opt.defer_us * 1000ull : 0;
			uint64_t s = (k & 2) ? opt.spin_us * 1000ull : 0;
			struct res r = run(d, s, (k & 4) != 0);
			rate[k][rep] = r.rate;
			p50[k][rep] = r.p50;
			p99[k][rep] = r.p99;
			p999[k][rep] = r.p999;
			printf("%-13s %4u %12.0f %9.1f %9.1f %9.1f %10.0f %10.0f\n", names[k], rep,
			       r.rate, r.p50, r.p99, r.p999, r.preempts, r.deferred);
			fflush(stdout);
		}
	printf("\n# median [min-max] over %u reps; waits in us\n", opt.reps);
	printf("%-13s %26s %22s %24s\n", "config", "acq_per_s", "wait_p99", "wait_p999");
	for (int k = 0; k < 8; k++) {
		double *v[3] = {rate[k], p99[k], p999[k]};
		printf("%-13s", names[k]);
		for (int j = 0; j < 3; j++) {
			double tmp[16];
			memcpy(tmp, v[j], opt.reps * sizeof(double));
			qsort(tmp, opt.reps, sizeof(double), cmp_d);
			printf(j == 0 ? " %10.0f [%6.0f-%6.0f]" : " %8.1f [%5.1f-%6.1f]",
			       tmp[opt.reps / 2], tmp[0], tmp[opt.reps - 1]);
		}
		printf("\n");
	}
	(void)p50;
	return 0;
}
