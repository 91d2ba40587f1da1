/*
 * bench/wake_bench.c - wake-to-run latency through each synchronization primitive, per policy
 * (issue 18, "Preemptive wakeups"): how long a uthread woken by a post, an unlock or a signal
 * waits before it runs, when the worker it is woken on is busy.
 *
 * Owns: the workload and its table. Two workers, each running a best-effort hog (klass 1, weight
 * default) that computes without end, calling jf_safepoint() in its loop. The waker, best-effort
 * too, computes beside hog 1 on worker 1: every --gap-us (randomised +-50 %) it reads the clock
 * and wakes the waiter through the primitive under test, then goes on computing. The waiter
 * (klass 0, latency-critical) records the time from that clock read to its first instruction
 * after the wake. It is placed on the waker's worker ("same": the waker must be preempted for it
 * to run, and without wakeup preemption it also waits for hog 1's turn)
 * or on hog 2's ("other": the mechanism's kick), pinned there (jf_attr.pin, so every policy keeps
 * it there); every sample records the worker the waiter ran on and the waker's, and is counted
 * under what really happened.
 * A policy without wakeup preemption leaves the waiter queued behind the hog until the hog's
 * quantum ends (up to --quantum-us); one with it (twoq, lcbe, cfs, eevdf) should run it within a
 * few microseconds on the same worker and within one kick on another.
 *
 * Primitives: sem (jf_sem_post), mutex (jf_mutex_unlock hands the mutex to the waiter), cond
 * (jf_cond_signal), chan (jf_chan_send on an unbuffered channel; jiffy/chan.h).
 *
 * Usage: wake_bench [--policies fifo,ws,...] [--prims sem,mutex,cond,chan] [--preempt auto]
 *                   [--quantum-us 100] [--samples 200] [--gap-us 300] [--reps 3]
 * Prints one line per cell and rep, then a table of medians over reps of p50 and p99 (us);
 * WAKE_BENCH_STATS=1 also prints each cell's runtime counters (wakeups, wakeup preemptions,
 * preemptions, deferrals for lock holders) on stderr. The JIFFY_* environment applies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

#include "flags.h"

enum prim { P_SEM, P_MUTEX, P_COND, P_CHAN, P_NR };
static const char *const prim_names[P_NR] = {"sem", "mutex", "cond", "chan"};

static struct {
	char policies[256];
	char prims[64];
	char preempt[16];
	unsigned quantum_us, samples, gap_us, reps;
} opt = {"fifo,ws,rr,twoq,cfs,eevdf,central,lcbe", "sem,mutex,cond,chan", "auto", 100, 200, 300, 3};

/* One cell's shared state. */
static enum prim prim;
static int place;                 /* the worker the waiter is meant to run on */
static atomic_bool stop;
static _Atomic uint64_t t_wake;   /* when the waker woke it (jf_now_ns) */
static atomic_int waker_worker;
static atomic_uint nsamples;
static uint64_t *lat_same, *lat_other;
static atomic_uint n_same, n_other;
static atomic_int waiter_ready;   /* the waiter is (about to be) blocked for the next sample */

static jf_sem_t sem, again;
static jf_mutex_t mx, cmx;
static jf_cond_t cv;
static int cv_flag;
static jf_chan_t *ch;

static void spin_ns(uint64_t ns)
{
	uint64_t end = jf_now_ns() + ns;
	while (jf_now_ns() < end)
		jf_safepoint();
}

static void *hog(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		spin_ns(10000);
	return NULL;
}

static void record(void)
{
	uint64_t now = jf_now_ns(), t0 = atomic_load(&t_wake);
	int here = jf_worker_id();

	if (atomic_load(&waker_worker) == here) {
		unsigned i = atomic_fetch_add(&n_same, 1);
		if (i < opt.samples)
			lat_same[i] = now - t0;
	} else {
		unsigned i = atomic_fetch_add(&n_other, 1);
		if (i < opt.samples)
			lat_other[i] = now - t0;
	}
	atomic_fetch_add(&nsamples, 1);
}

static void *waiter(void *arg)
{
	(void)arg;
	for (;;) {
		int v = 0;

		atomic_store(&waiter_ready, 1);
		switch (prim) {
		case P_SEM:
			jf_sem_wait(&sem);
			break;
		case P_MUTEX:
			jf_mutex_lock(&mx);
			break;
		case P_COND:
			jf_mutex_lock(&cmx);
			while (!cv_flag)
				jf_cond_wait(&cv, &cmx);
			cv_flag = 0;
			jf_mutex_unlock(&cmx);
			break;
		default:
			jf_chan_recv(ch, &v);
			break;
		}
		if (atomic_load(&stop))
			return NULL;
		record();
		if (prim == P_MUTEX) {
			jf_mutex_unlock(&mx);
			jf_sem_wait(&again); /* until the waker holds the mutex again: not measured */
		}
	}
}

static void *waker(void *arg)
{
	uint64_t rng = 88172645463325252ull;

	(void)arg;
	if (prim == P_MUTEX)
		jf_mutex_lock(&mx);
	while (atomic_load(&nsamples) < opt.samples) {
		unsigned seen = atomic_load(&nsamples);
		int v = 1;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		spin_ns((opt.gap_us / 2 + rng % (opt.gap_us + 1)) * 1000ull);
		if (!atomic_exchange(&waiter_ready, 0)) {
			continue;
		}
		spin_ns(20000); /* let it block */
		atomic_store(&waker_worker, jf_worker_id());
		atomic_store(&t_wake, jf_now_ns());
		switch (prim) {
		case P_SEM:
			jf_sem_post(&sem);
			break;
		case P_MUTEX:
			jf_mutex_unlock(&mx);
			break;
		case P_COND:
			jf_mutex_lock(&cmx);
			cv_flag = 1;
			jf_cond_signal(&cv);
			jf_mutex_unlock(&cmx);
			break;
		default:
			jf_chan_send(ch, &v);
			break;
		}
		/* compute on until it has run (or 20 ms: a policy that never lets it in is a result) */
		uint64_t give_up = jf_now_ns() + 20000000ull;
		while (atomic_load(&nsamples) == seen && jf_now_ns() < give_up)
			spin_ns(1000);
		if (prim == P_MUTEX) {
			jf_mutex_lock(&mx);
			jf_sem_post(&again);
		}
	}
	atomic_store(&stop, true);
	/* release the waiter for good */
	switch (prim) {
	case P_SEM:
		jf_sem_post(&sem);
		break;
	case P_MUTEX:
		jf_sem_post(&again);
		jf_mutex_unlock(&mx);
		break;
	case P_COND:
		jf_mutex_lock(&cmx);
		cv_flag = 1;
		jf_cond_signal(&cv);
		jf_mutex_unlock(&cmx);
		break;
	default: {
		int v = 0;
		jf_chan_send(ch, &v);
		break;
	}
	}
	return NULL;
}

static jf_thread_t *spawn(int worker, int klass, jf_thread_fn fn)
{
	struct jf_attr a;
	jf_thread_t *t;

	jf_attr_init(&a);
	a.sched.worker = worker;
	a.sched.klass = klass;
	a.pin = 1; /* placed exactly, under every policy (jiffy/local.h) */
	if (jf_spawn(&t, &a, fn, NULL) != 0) {
		fprintf(stderr, "wake_bench: jf_spawn failed\n");
		exit(1);
	}
	return t;
}

static void *cell_main(void *arg)
{
	jf_thread_t *h1, *h2, *w, *k;

	(void)arg;
	/* the waker runs on worker 1 beside hog 2 on worker 0; the waiter on place */
	h2 = spawn(0, 1, hog);
	h1 = spawn(1, 1, hog);
	w = spawn(place, 0, waiter);
	k = spawn(1, 1, waker);
	jf_join(k, NULL);
	jf_join(w, NULL);
	jf_join(h1, NULL);
	jf_join(h2, NULL);
	if (getenv("WAKE_BENCH_STATS")) { /* the counters behind a cell, for reading a result */
		struct jf_worker_stats st;
		jf_stats_total(&st);
		fprintf(stderr,
			"stats: wakeups %llu wakeup_preempts %llu preempts %llu lock_deferred %llu "
			"skipped %llu\n",
			(unsigned long long)st.wakeups, (unsigned long long)st.wakeup_preempts,
			(unsigned long long)st.preempts, (unsigned long long)st.preempt_lock_deferred,
			(unsigned long long)st.preempt_skipped);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, unsigned n, double p)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(*v), cmp_u64);
	unsigned i = (unsigned)(p / 100.0 * (n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

struct result {
	double p50, p99;
	unsigned n;
};

static void run_cell(const char *policy, enum prim p, int where, struct result *same,
		     struct result *other)
{
	struct jf_config cfg;
	char err[256];

	prim = p;
	place = where;
	atomic_store(&stop, false);
	atomic_store(&nsamples, 0);
	atomic_store(&n_same, 0);
	atomic_store(&n_other, 0);
	atomic_store(&waiter_ready, 0);
	jf_sem_init(&sem, 0);
	jf_sem_init(&again, 0);
	jf_mutex_init(&mx);
	jf_mutex_init(&cmx);
	jf_cond_init(&cv);
	cv_flag = 0;
	if (p == P_CHAN && jf_chan_create(&ch, sizeof(int), 0) != 0) {
		fprintf(stderr, "wake_bench: jf_chan_create failed\n");
		exit(1);
	}
	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) { /* JIFFY_LOCK_SPIN_US, ... */
		fprintf(stderr, "wake_bench: %s\n", err);
		exit(2);
	}
	cfg.workers = 2;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", policy);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", opt.preempt);
	cfg.quantum_ns = opt.quantum_us * 1000ull;
	if (jf_config_validate(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "wake_bench: %s\n", err);
		exit(2);
	}
	if (jf_run(&cfg, cell_main, NULL, NULL) != 0) {
		fprintf(stderr, "wake_bench: jf_run failed (policy %s)\n", policy);
		exit(1);
	}
	if (p == P_CHAN)
		jf_chan_destroy(ch);
	unsigned ns = atomic_load(&n_same), no = atomic_load(&n_other);
	ns = ns < opt.samples ? ns : opt.samples;
	no = no < opt.samples ? no : opt.samples;
	same->n = ns;
	same->p50 = pct(lat_same, ns, 50);
	same->p99 = pct(lat_same, ns, 99);
	other->n = no;
	other->p50 = pct(lat_other, no, 50);
	other->p99 = pct(lat_other, no, 99);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	unsigned k = 0;
	double tmp[16];
	for (unsigned i = 0; i < n && k < 16; i++)
		if (v[i] >= 0)
			tmp[k++] = v[i];
	if (!k)
		return -1;
	qsort(tmp, k, sizeof(double), cmp_d);
	return tmp[k / 2];
}

static void usage(FILE *f)
{
	fprintf(f, "usage: wake_bench [--policies LIST] [--prims sem,mutex,cond,chan] "
		   "[--preempt MECH]\n"
		   "                  [--quantum-us N] [--samples N] [--gap-us N] [--reps N]\n"
		   JP_FLAGS_STD_USAGE);
}

/* A flag's number in [@lo, @hi] (apps/common/flags.h's rules), or exit 2 naming it. */
static unsigned parse_uint(struct jp_flags *fl, const char *v, unsigned lo, unsigned hi)
{
	unsigned long x;

	if (jp_flag_uint(fl->prog, fl->flag, v, lo, hi, &x) != 0)
		exit(2);
	return (unsigned)x;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"policies", required_argument, NULL, 'P'}, {"prims", required_argument, NULL, 'p'},
		{"preempt", required_argument, NULL, 'm'},  {"quantum-us", required_argument, NULL, 'q'},
		{"samples", required_argument, NULL, 's'},  {"gap-us", required_argument, NULL, 'g'},
		{"reps", required_argument, NULL, 'r'},     JP_FLAGS_STD_OPTIONS,
		{0}};
	struct jp_flags fl;
	const char *policies[16];
	int npol = 0, c;
	bool want[P_NR] = {0};
	char *save, *tok;

	jp_flags_init(&fl, "wake_bench", jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		switch (c) {
		case 'P':
			snprintf(opt.policies, sizeof(opt.policies), "%s", optarg);
			break;
		case 'p':
			snprintf(opt.prims, sizeof(opt.prims), "%s", optarg);
			break;
		case 'm':
			snprintf(opt.preempt, sizeof(opt.preempt), "%s", optarg);
			break;
		case 'q':
			opt.quantum_us = parse_uint(&fl, optarg, 1, 100000);
			break;
		case 's':
			opt.samples = parse_uint(&fl, optarg, 10, 100000);
			break;
		case 'g':
			opt.gap_us = parse_uint(&fl, optarg, 50, 100000);
			break;
		case 'r':
			opt.reps = parse_uint(&fl, optarg, 1, 15);
			break;
		}
	}
	jp_flags_no_operands(&fl);
	for (tok = strtok_r(opt.policies, ",", &save); tok && npol < 16;
	     tok = strtok_r(NULL, ",", &save))
		policies[npol++] = tok;
	for (tok = strtok_r(opt.prims, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;
		for (k = 0; k < P_NR && strcmp(tok, prim_names[k]); k++)
			;
		if (k == P_NR) {
			fprintf(stderr, "wake_bench: --prims: unknown primitive '%s'\n", tok);
			return 2;
		}
		want[k] = true;
	}
	lat_same = calloc(opt.samples, sizeof(uint64_t));
	lat_other = calloc(opt.samples, sizeof(uint64_t));
	if (!lat_same || !lat_other)
		return 1;

	/* results[policy][prim][place same/other][rep] */
	static double p50[16][P_NR][2][15], p99[16][P_NR][2][15];
	printf("# wake_bench: 2 workers, preempt=%s, quantum %u us, %u samples, gap %u us\n",
	       opt.preempt, opt.quantum_us, opt.samples, opt.gap_us);
	printf("%-8s %-6s %-6s %4s %5s %9s %9s\n", "policy", "prim", "placed", "rep", "n",
	       "p50_us", "p99_us");
	for (unsigned r = 0; r < opt.reps; r++)
		for (int i = 0; i < npol; i++)
			for (int k = 0; k < P_NR; k++) {
				if (!want[k])
					continue;
				for (int where = 1; where >= 0; where--) {
					struct result s, o, *got;
					run_cell(policies[i], (enum prim)k, where, &s, &o);
					/* placed on the waker's worker (1) or the other (0); count
					 * what happened */
					int idx = where == 1 ? 0 : 1;
					got = where == 1 ? &s : &o;
					p50[i][k][idx][r] = got->n >= opt.samples / 2 ? got->p50 : -1;
					p99[i][k][idx][r] = got->n >= opt.samples / 2 ? got->p99 : -1;
					printf("%-8s %-6s %-6s %4u %5u %9.1f %9.1f   (other placement: "
					       "%u)\n",
					       policies[i], prim_names[k], idx ? "other" : "same", r,
					       got->n, got->p50, got->p99, where == 1 ? o.n : s.n);
					fflush(stdout);
				}
			}
	printf("\n# medians over %u reps (us); '-' = fewer than half the samples ran where "
	       "placed\n",
	       opt.reps);
	printf("%-8s %-6s %10s %10s %10s %10s\n", "policy", "prim", "same_p50", "same_p99",
	       "other_p50", "other_p99");
	for (int i = 0; i < npol; i++)
		for (int k = 0; k < P_NR; k++) {
			if (!want[k])
				continue;
			double v[4] = {median(p50[i][k][0], opt.reps), median(p99[i][k][0], opt.reps),
				       median(p50[i][k][1], opt.reps), median(p99[i][k][1], opt.reps)};
			printf("%-8s %-6s", policies[i], prim_names[k]);
			for (int j = 0; j < 4; j++) {
				if (v[j] < 0)
					printf(" %10s", "-");
				else
					printf(" %10.1f", v[j]);
			}
			printf("\n");
		}
	return 0;
}
