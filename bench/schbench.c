/*
 * bench/schbench.c - a schbench-like wakeup-latency benchmark: Jiffy's policies beside Linux
 * threads under the kernel scheduler, in one run (Skyloft §5.1, Figure 5).
 *
 * Owns: the workload and the table. One message thread wakes T worker threads in turn; each
 * worker, when woken, records its wakeup latency (from the moment the message thread posted the
 * wakeup to the moment the worker runs), computes for --work-us (schbench's "request", ~2.3 ms by
 * default there; here 1000 us so a run fits in seconds), then sleeps until woken again. The
 * message thread loops: wake every sleeping worker, sleep --interval-us. With T > CPUs the
 * workers queue, and the wakeup latency is what the scheduler makes of it: run to completion
 * keeps a woken worker behind whole requests; a time slice bounds the wait to about
 * (T / CPUs) x slice; a fair policy with wakeup preemption runs the sleeper almost at once.
 *
 *   Linux:  T pthreads + 1 message pthread, condition variables, the kernel's scheduler
 *           (EEVDF on Linux >= 6.6, CFS before; its default parameters).
 *   Jiffy:  the same with uthreads, jf_mutex/jf_cond, one worker per CPU, per policy, under the
 *           mechanism and quantum given (default: timer signals, 50 us).
 * Each cell (scheduler x T) runs in a forked child for --seconds (default 1), the first 10 %
 * discarded. Latencies are exact (every wakeup is kept and sorted), in microseconds.
 *
 * Usage: schbench [--threads 2,4,8,16] [--policies fifo,ws,rr,...] [--preempt timer]
 *                 [--quantum-us 50] [--work-us 1000] [--interval-us 100] [--seconds 1]
 *                 [--csv FILE]
 * (read by apps/common/flags.c, the parser of every Jiffy program: --help, --version, exit 2 on
 * a usage error)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#include "flags.h"

#define MAX_T 256
#define MAX_SAMPLES (1u << 20)

static struct {
	int threads[16], nthreads;
	char policies[256];
	char preempt[16];
	unsigned quantum_us, work_us, interval_us;
	double seconds;
	const char *csv;
} opt = {.nthreads = 0, .policies = "fifo,ws,rr,twoq,cfs,eevdf,central,lcbe",
	 .preempt = "timer", .quantum_us = 50, .work_us = 1000, .interval_us = 100,
	 .seconds = 1.0};

/* Results of one cell, written by the child into shared memory. */
struct cell {
	int ok;
	uint64_t n;
	double p50, p90, p99, p999, max;
	double requests_per_s;
};

/* --- shared between both implementations ------------------------------------------------------ */

static uint64_t *samples; /* per cell, in the child */
static atomic_uint nsamples;
static _Atomic uint64_t measure_from, stop_at;
static atomic_ulong requests;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(uint64_t posted, uint64_t now)
{
	if (now < atomic_load_explicit(&measure_from, memory_order_relaxed))
		return;
	unsigned i = atomic_fetch_add_explicit(&nsamples, 1, memory_order_relaxed);
	if (i < MAX_SAMPLES)
		samples[i] = now > posted ? now - posted : 0;
}

/* The request: --work-us of arithmetic, with safepoints (the safepoint mechanisms need them). */
static uint64_t spin_per_us = 100;

static void work(bool safepoints)
{
	uint64_t x = 1;
	for (uint64_t us = 0; us < opt.work_us; us++) {
		for (uint64_t i = 0; i < spin_per_us; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x));
		}
		if (safepoints)
			jf_safepoint();
	}
}

static void calibrate(void)
{
	uint64_t best = UINT64_MAX, x = 1, iters = 1u << 22;
	for (int r = 0; r < 5; r++) {
		uint64_t t0 = mono_ns();
		for (uint64_t i = 0; i < iters; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x));
		}
		uint64_t d = mono_ns() - t0;
		if (d < best)
			best = d;
	}
	spin_per_us = iters * 1000 / (best ? best : 1);
}

/* --- Linux threads -------------------------------------------------------------------------- */

struct pworker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool posted, sleeping;
	uint64_t posted_ns;
	pthread_t th;
} __attribute__((aligned(64)));

static struct pworker *pw;
static int nthreads;

static void *pthread_worker(void *arg)
{
	struct pworker *me = arg;
	for (;;) {
		pthread_mutex_lock(&me->mu);
		me->sleeping = true;
		while (!me->posted && mono_ns() < atomic_load(&stop_at))
			pthread_cond_wait(&me->cv, &me->mu);
		me->sleeping = false;
		bool go = me->posted;
		me->posted = false;
		uint64_t posted = me->posted_ns;
		pthread_mutex_unlock(&me->mu);
		if (!go)
			return NULL;
		record(posted, mono_ns());
		work(false);
		atomic_fetch_add_explicit(&requests, 1, memory_order_relaxed);
	}
}

static void run_pthreads(void)
{
	pw = aligned_alloc(64, sizeof(*pw) * (size_t)nthreads);
	memset(pw, 0, sizeof(*pw) * (size_t)nthreads);
	for (int i = 0; i < nthreads; i++) {
		pthread_mutex_init(&pw[i].mu, NULL);
		pthread_cond_init(&pw[i].cv, NULL);
		pthread_create(&pw[i].th, NULL, pthread_worker, &pw[i]);
	}
	while (mono_ns() < atomic_load(&stop_at)) {
		for (int i = 0; i < nthreads; i++) {
			pthread_mutex_lock(&pw[i].mu);
			if (pw[i].sleeping && !pw[i].posted) {
				pw[i].posted = true;
				pw[i].posted_ns = mono_ns();
				pthread_cond_signal(&pw[i].cv);
			}
			pthread_mutex_unlock(&pw[i].mu);
		}
		struct timespec ts = {0, (long)opt.interval_us * 1000};
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_mutex_lock(&pw[i].mu);
		pthread_cond_signal(&pw[i].cv);
		pthread_mutex_unlock(&pw[i].mu);
		pthread_join(pw[i].th, NULL);
	}
}

/* --- Jiffy uthreads ---------------------------------------------------------------------------- */

struct jworker {
	jf_mutex_t mu;
	jf_cond_t cv;
	bool posted, sleeping;
	uint64_t posted_ns;
	jf_thread_t *th;
} __attribute__((aligned(64)));

static struct jworker *jw;
static bool jf_safepoints;

static void *jiffy_worker(void *arg)
{
	struct jworker *me = arg;
	for (;;) {
		jf_mutex_lock(&me->mu);
		me->sleeping = true;
		while (!me->posted && mono_ns() < atomic_load(&stop_at))
			jf_cond_timedwait(&me->cv, &me->mu, jf_now_ns() + 10 * 1000 * 1000ull);
		me->sleeping = false;
		bool go = me->posted;
		me->posted = false;
		uint64_t posted = me->posted_ns;
		jf_mutex_unlock(&me->mu);
		if (!go)
			return NULL;
		record(posted, mono_ns());
		work(jf_safepoints);
		atomic_fetch_add_explicit(&requests, 1, memory_order_relaxed);
	}
}

static void *jiffy_main(void *arg)
{
	(void)arg;
	jw = aligned_alloc(64, sizeof(*jw) * (size_t)nthreads);
	memset(jw, 0, sizeof(*jw) * (size_t)nthreads);
	for (int i = 0; i < nthreads; i++) {
		jf_mutex_init(&jw[i].mu);
		jf_cond_init(&jw[i].cv);
		if (jf_spawn(&jw[i].th, NULL, jiffy_worker, &jw[i]) != 0) {
			fprintf(stderr, "schbench: jf_spawn failed\n");
			exit(1);
		}
	}
	while (mono_ns() < atomic_load(&stop_at)) {
		for (int i = 0; i < nthreads; i++) {
			jf_mutex_lock(&jw[i].mu);
			if (jw[i].sleeping && !jw[i].posted) {
				jw[i].posted = true;
				jw[i].posted_ns = mono_ns();
				jf_cond_signal(&jw[i].cv);
			}
			jf_mutex_unlock(&jw[i].mu);
		}
		jf_sleep_ns((uint64_t)opt.interval_us * 1000);
	}
	for (int i = 0; i < nthreads; i++) {
		jf_mutex_lock(&jw[i].mu);
		jf_cond_signal(&jw[i].cv);
		jf_mutex_unlock(&jw[i].mu);
		jf_join(jw[i].th, NULL);
	}
	return NULL;
}

static int run_jiffy(const char *policy)
{
	struct jf_config cfg;
	char err[256];

	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "schbench: %s\n", err);
		return -1;
	}
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", policy);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", opt.preempt);
	cfg.quantum_ns = (uint64_t)opt.quantum_us * 1000;
	jf_safepoints = strcmp(opt.preempt, "none") != 0;
	if (jf_config_validate(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "schbench: %s\n", err);
		return -1;
	}
	return jf_run(&cfg, jiffy_main, NULL, NULL);
}

/* --- cells, percentiles, the table ----------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, uint64_t n, double p)
{
	uint64_t i = (uint64_t)(p * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

/* Run one cell in a child: @policy NULL = Linux threads. */
static void run_cell(const char *policy, int t, struct cell *out)
{
	struct cell *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(out, 0, sizeof(*out));
	if (shared == MAP_FAILED)
		return;
	memset(shared, 0, sizeof(*shared));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t now = mono_ns(), dur = (uint64_t)(opt.seconds * 1e9);
		samples = malloc(sizeof(uint64_t) * MAX_SAMPLES);
		nthreads = t;
		atomic_store(&measure_from, now + dur / 10);
		atomic_store(&stop_at, now + dur);
		int rc = 0;
		if (policy)
			rc = run_jiffy(policy);
		else
			run_pthreads();
		uint64_t n = atomic_load(&nsamples);
		if (n > MAX_SAMPLES)
			n = MAX_SAMPLES;
		if (rc == 0 && n > 0) {
			qsort(samples, n, sizeof(uint64_t), cmp_u64);
			shared->n = n;
			shared->p50 = pct(samples, n, 0.50);
			shared->p90 = pct(samples, n, 0.90);
			shared->p99 = pct(samples, n, 0.99);
			shared->p999 = pct(samples, n, 0.999);
			shared->max = (double)samples[n - 1] / 1000.0;
			shared->requests_per_s =
				(double)atomic_load(&requests) / opt.seconds;
			shared->ok = 1;
		}
		_exit(rc == 0 ? 0 : 1);
	}
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	*out = *shared;
	munmap(shared, sizeof(*shared));
}

static const char prog[] = "schbench";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--threads LIST] [--policies LIST] [--preempt MECH] [--quantum-us N]\n"
		"          [--work-us N] [--interval-us N] [--seconds S] [--csv FILE]\n"
		"Wakeup latency of Jiffy's policies beside Linux threads (schbench-like).\n"
		"  --threads LIST    worker counts, comma-separated, each 1..%d (default: 1, 2, 4\n"
		"                    and 8 times the CPUs)\n"
		"  --policies LIST   Jiffy policies to run (default %s)\n"
		"  --preempt MECH    the preemption mechanism (default %s)\n"
		"  --quantum-us N    its quantum, 1..1000000 (default %u)\n"
		"  --work-us N       CPU time of one request, 1..1000000 (default %u)\n"
		"  --interval-us N   the message thread's sleep, 1..1000000 (default %u)\n"
		"  --seconds S       per cell, 1..3600 (default %.0f)\n"
		"  --csv FILE        also write the table as CSV\n"
		JP_FLAGS_STD_USAGE,
		prog, MAX_T, opt.policies, opt.preempt, opt.quantum_us, opt.work_us,
		opt.interval_us, opt.seconds);
}

enum { F_THREADS = 0x100, F_POLICIES, F_PREEMPT, F_QUANTUM, F_WORK, F_INTERVAL, F_SECONDS, F_CSV };

static const struct option options[] = {
	{"threads", required_argument, NULL, F_THREADS},
	{"policies", required_argument, NULL, F_POLICIES},
	{"preempt", required_argument, NULL, F_PREEMPT},
	{"quantum-us", required_argument, NULL, F_QUANTUM},
	{"work-us", required_argument, NULL, F_WORK},
	{"interval-us", required_argument, NULL, F_INTERVAL},
	{"seconds", required_argument, NULL, F_SECONDS},
	{"csv", required_argument, NULL, F_CSV},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

/* --threads LIST: 1 to 16 counts, each in [1, MAX_T]. */
static void parse_threads(const struct jp_flags *fl, const char *v)
{
	char buf[256], *save = NULL;
	unsigned long t;
	int max = (int)(sizeof(opt.threads) / sizeof(opt.threads[0]));

	if (strlen(v) >= sizeof(buf))
		jp_flags_fail(fl, "the list is longer than %zu characters", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", v);
	opt.nthreads = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nthreads == max)
			jp_flags_fail(fl, "more than %d counts, got '%s'", max, v);
		if (jp_flag_uint(prog, fl->flag, tok, 1, MAX_T, &t))
			exit(2);
		opt.threads[opt.nthreads++] = (int)t;
	}
	if (opt.nthreads == 0)
		jp_flags_fail(fl, "expected thread counts, e.g. 2,4,8, got '%s'", v);
}

/* A word that must fit in @buf (@len bytes). */
static void copy_word(const struct jp_flags *fl, const char *v, char *buf, size_t len)
{
	if (!*v || strlen(v) >= len)
		jp_flags_fail(fl, "expected 1 to %zu characters, got '%s'", len - 1, v);
	snprintf(buf, len, "%s", v);
}

static unsigned parse_uint(const struct jp_flags *fl, const char *v, unsigned long lo,
			   unsigned long hi)
{
	unsigned long x;

	if (jp_flag_uint(prog, fl->flag, v, lo, hi, &x))
		exit(2);
	return (unsigned)x;
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *csv = NULL;
	struct utsname un;
	struct jp_flags fl;
	int c;

	jp_flags_init(&fl, prog, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		const char *v = optarg;
		switch (c) {
		case F_THREADS:
			parse_threads(&fl, v);
			break;
		case F_POLICIES:
			copy_word(&fl, v, opt.policies, sizeof(opt.policies));
			break;
		case F_PREEMPT:
			copy_word(&fl, v, opt.preempt, sizeof(opt.preempt));
			break;
		case F_QUANTUM:
			opt.quantum_us = parse_uint(&fl, v, 1, 1000000);
			break;
		case F_WORK:
			opt.work_us = parse_uint(&fl, v, 1, 1000000);
			break;
		case F_INTERVAL:
			opt.interval_us = parse_uint(&fl, v, 1, 1000000);
			break;
		case F_SECONDS:
			opt.seconds = parse_uint(&fl, v, 1, 3600);
			break;
		case F_CSV:
			if (!*v)
				jp_flags_fail(&fl, "expected a file name, got ''");
			opt.csv = v;
			break;
		}
	}
	jp_flags_no_operands(&fl);
	if (!opt.nthreads) {
		int def[] = {(int)ncpu, (int)ncpu * 2, (int)ncpu * 4, (int)ncpu * 8};
		for (int i = 0; i < 4; i++)
			opt.threads[opt.nthreads++] = def[i] < MAX_T ? def[i] : MAX_T;
	}
	char why[160];
	if (jf_preempt_available(opt.preempt, why, sizeof(why)) != 1) {
		fprintf(stderr, "schbench: mechanism '%s' cannot run here: %s\n", opt.preempt,
			why[0] ? why : "unknown mechanism");
		return 2;
	}
	if (opt.csv && !(csv = fopen(opt.csv, "w"))) {
		fprintf(stderr, "schbench: %s: %s\n", opt.csv, strerror(errno));
		return 2;
	}
	if (csv)
		fprintf(csv, "scheduler,threads,wakeups,p50_us,p90_us,p99_us,p999_us,max_us,"
			     "requests_per_s\n");
	calibrate();
	uname(&un);
	printf("schbench-like wakeup latency: 1 message thread waking T workers (each request "
	       "%u us of compute, wake round every %u us), %ld CPUs, %.0f s per cell\n",
	       opt.work_us, opt.interval_us, ncpu, opt.seconds);
	printf("Jiffy: one worker per CPU, mechanism %s, quantum %u us (policy parameters from "
	       "JIFFY_*); Linux: pthreads under the kernel %s scheduler, defaults\n",
	       opt.preempt, opt.quantum_us, un.release);
	printf("wakeup latency in us, p50 / p99 (p99.9 in the CSV)\n\n");

	char names[16][32];
	int nsched = 0;
	snprintf(names[nsched++], 32, "linux");
	char *dup = strdup(opt.policies), *save = NULL;
	for (char *tok = strtok_r(dup, ",", &save); tok && nsched < 16;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!jf_policy_find(tok)) {
			fprintf(stderr, "schbench: policy '%s' is not available here (skipped)\n", tok);
			continue;
		}
		snprintf(names[nsched++], 32, "%s", tok);
	}
	free(dup);

	printf("%-10s", "T");
	for (int s = 0; s < nsched; s++)
		printf(" %17s", names[s]);
	printf("\n");
	for (int ti = 0; ti < opt.nthreads; ti++) {
		printf("%-10d", opt.threads[ti]);
		fflush(stdout);
		for (int s = 0; s < nsched; s++) {
			struct cell c;
			char buf[40];
			run_cell(s == 0 ? NULL : names[s], opt.threads[ti], &c);
			if (c.ok)
				snprintf(buf, sizeof(buf), "%.0f / %.0f", c.p50, c.p99);
			else
				snprintf(buf, sizeof(buf), "failed");
			printf(" %17s", buf);
			fflush(stdout);
			if (csv && c.ok)
				fprintf(csv, "%s,%d,%" PRIu64 ",%.1f,%.1f,%.1f,%.1f,%.1f,%.0f\n",
					names[s], opt.threads[ti], c.n, c.p50, c.p90, c.p99, c.p999,
					c.max, c.requests_per_s);
		}
		printf("\n");
	}
	if (csv)
		fclose(csv);
	return 0;
}
