/*
 * bench/pthread_sync_bench.c - the synchronization-primitive benchmarks run with kernel threads
 * (glibc pthreads), the baseline Jiffy is compared with.
 *
 * Owns: the pthread version of every op of bench/sync_common.h: pthread_mutex_t (default type),
 * pthread_rwlock_t (default attributes: glibc prefers readers), sem_t, pthread_barrier_t,
 * pthread_once_t. Uncontended ops run in the main thread, pinned to the first CPU of the affinity
 * mask; the ping-pongs pin both threads to that CPU; the contended ops pin their threads
 * alternately to the first two CPUs.
 *
 * n/a: waitgroup_round (pthreads has no waitgroup) and the three channel ops (pthreads has no
 * channel; a hand-written mutex+condvar queue would measure that queue, not the library).
 *
 * The same loops, with the same counting, are in jiffy_sync_bench.c, fiber_sync_bench.cpp and
 * go/sync.go: change them together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "bench_pin.h"
#include "sync_common.h"

#define RUNTIME "pthread"

static int cpu_first = -1;
static int cpu_second = -1; /* -1 if the process may run on one CPU only */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, RUNTIME "_sync_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static void find_cpus(void)
{
	int rc = bench_find_cpus(&cpu_first, &cpu_second);
	if (rc)
		die("sched_getaffinity", rc);
}

static void pin_self(int cpu)
{
	int rc = bench_pin_self(cpu);
	if (rc)
		die("pthread_setaffinity_np", rc);
}

/* State shared by the threads of one run (see jiffy_sync_bench.c's struct group). */
struct group {
	uint64_t per;
	unsigned n;
	pthread_barrier_t start;
	atomic_uint left;
	atomic_uint started;
	uint64_t t0, t1;
	uint64_t stop_at;
	_Atomic uint64_t done;
	_Atomic uint64_t stop_round;
	uint64_t counter;
	pthread_mutex_t mutex;
	pthread_rwlock_t rw;
	sem_t sem_a, sem_b;
	pthread_barrier_t barrier;
};

struct member {
	struct group *g;
	unsigned idx;
};

static void group_init(struct group *g, unsigned n, uint64_t per)
{
	memset(g, 0, sizeof(*g));
	g->n = n;
	g->per = per;
	pthread_barrier_init(&g->start, NULL, n);
	atomic_init(&g->left, n);
	atomic_init(&g->started, 0);
	atomic_init(&g->done, 0);
	atomic_init(&g->stop_round, UINT64_MAX);
	g->stop_at = now_ns() + bench_sync_cap_ns();
	pthread_mutex_init(&g->mutex, NULL);
	pthread_rwlock_init(&g->rw, NULL);
	sem_init(&g->sem_a, 0, 0);
	sem_init(&g->sem_b, 0, 0);
	pthread_barrier_init(&g->barrier, NULL, n);
}

static void group_destroy(struct group *g)
{
	pthread_barrier_destroy(&g->start);
	pthread_mutex_destroy(&g->mutex);
	pthread_rwlock_destroy(&g->rw);
	sem_destroy(&g->sem_a);
	sem_destroy(&g->sem_b);
	pthread_barrier_destroy(&g->barrier);
}

static void group_start(struct member *m)
{
	pthread_barrier_wait(&m->g->start);
	if (atomic_fetch_add(&m->g->started, 1) == 0)
		m->g->t0 = now_ns();
}

static int expired(const struct group *g, uint64_t i)
{
	return i % BENCH_SYNC_CHECK_EVERY == 0 && now_ns() > g->stop_at;
}

static void group_end(struct member *m)
{
	if (atomic_fetch_sub(&m->g->left, 1) == 1)
		m->g->t1 = now_ns();
}

/* run_group() - run @fn in g->n threads pinned alternately to @cpus CPUs (1 or 2); join them. */
static uint64_t run_group(struct group *g, void *(*fn)(void *), unsigned cpus)
{
	struct member m[BENCH_SYNC_THREADS];
	pthread_t t[BENCH_SYNC_THREADS];

	for (unsigned i = 0; i < g->n; i++) {
		pthread_attr_t attr;
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpus > 1 && i % 2 ? cpu_second : cpu_first, &set);
		pthread_attr_init(&attr);
		int rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		if (rc)
			die("pthread_attr_setaffinity_np", rc);
		m[i] = (struct member){g, i};
		rc = pthread_create(&t[i], &attr, fn, &m[i]);
		if (rc)
			die("pthread_create", rc);
		pthread_attr_destroy(&attr);
	}
	for (unsigned i = 0; i < g->n; i++) {
		int rc = pthread_join(t[i], NULL);
		if (rc)
			die("pthread_join", rc);
	}
	return g->t1 - g->t0;
}

/* ---- mutex ---- */

static struct bench_sample op_mutex_uncontended(void *ctx, uint64_t iters)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	(void)ctx;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	return (struct bench_sample){now_ns() - t0, iters};
}

static void *mutex_hammer(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	uint64_t i;
	group_start(m);
	for (i = 0; i < g->per && !expired(g, i); i++) {
		pthread_mutex_lock(&g->mutex);
		g->counter++;
		pthread_mutex_unlock(&g->mutex);
	}
	atomic_fetch_add(&g->done, i);
	group_end(m);
	return NULL;
}

static struct bench_sample op_mutex_contended(void *ctx, uint64_t iters)
{
	struct group g;
	(void)ctx;
	group_init(&g, BENCH_SYNC_THREADS, bench_sync_per_thread(iters, BENCH_SYNC_THREADS));
	uint64_t ns = run_group(&g, mutex_hammer, BENCH_SYNC_WORKERS);
	if (g.counter != atomic_load(&g.done))
		die("mutex_contended: lost updates", EPROTO);
	group_destroy(&g);
	return (struct bench_sample){ns, g.counter};
}

/* ---- rwlock ---- */

static struct bench_sample op_rwlock_rd_uncontended(void *ctx, uint64_t iters)
{
	static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	(void)ctx;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	return (struct bench_sample){now_ns() - t0, iters};
}

static void rw_mix(struct member *m, unsigned writes_per_10)
{
	struct group *g = m->g;
	uint64_t sink = 0, i;
	group_start(m);
	for (i = 0; i < g->per && !expired(g, i); i++) {
		if ((i + m->idx) % 10 < writes_per_10) {
			pthread_rwlock_wrlock(&g->rw);
			g->counter++;
		} else {
			pthread_rwlock_rdlock(&g->rw);
			sink += g->counter;
		}
		pthread_rwlock_unlock(&g->rw);
	}
	atomic_fetch_add(&g->done, i);
	group_end(m);
	__asm__ volatile("" : : "r"(sink));
}

static void *rw_read90(void *arg)
{
	rw_mix(arg, 1);
	return NULL;
}

static void *rw_write90(void *arg)
{
	rw_mix(arg, 9);
	return NULL;
}

static struct bench_sample rw_contended(uint64_t iters, void *(*fn)(void *))
{
	struct group g;
	group_init(&g, BENCH_SYNC_THREADS, bench_sync_per_thread(iters, BENCH_SYNC_THREADS));
	uint64_t ns = run_group(&g, fn, BENCH_SYNC_WORKERS);
	group_destroy(&g);
	return (struct bench_sample){ns, atomic_load(&g.done)};
}

static struct bench_sample op_rwlock_read90(void *ctx, uint64_t iters)
{
	(void)ctx;
	return rw_contended(iters, rw_read90);
}

static struct bench_sample op_rwlock_write90(void *ctx, uint64_t iters)
{
	(void)ctx;
	return rw_contended(iters, rw_write90);
}

/* ---- semaphore ---- */

static struct bench_sample op_sem_uncontended(void *ctx, uint64_t iters)
{
	sem_t s;
	(void)ctx;
	sem_init(&s, 0, 1);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		sem_wait(&s);
		sem_post(&s);
	}
	uint64_t ns = now_ns() - t0;
	sem_destroy(&s);
	return (struct bench_sample){ns, iters};
}

static void *sem_pong(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	group_start(m);
	for (uint64_t i = 0; i < g->per; i++) {
		if (m->idx == 0) {
			sem_post(&g->sem_b);
			sem_wait(&g->sem_a);
		} else {
			sem_wait(&g->sem_b);
			sem_post(&g->sem_a);
		}
	}
	group_end(m);
	return NULL;
}

static struct bench_sample op_sem_pingpong(void *ctx, uint64_t iters)
{
	struct group g;
	(void)ctx;
	group_init(&g, 2, iters);
	uint64_t ns = run_group(&g, sem_pong, 1);
	group_destroy(&g);
	return (struct bench_sample){ns, 2 * iters};
}

/* ---- barrier ---- */

static void *barrier_rounds(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	uint64_t i;
	group_start(m);
	for (i = 0; i < g->per && i < atomic_load(&g->stop_round); i++) {
		if (m->idx == 0 && expired(g, i))
			atomic_store(&g->stop_round, i + 1); /* see jiffy_sync_bench.c */
		int rc = pthread_barrier_wait(&g->barrier);
		if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
			die("pthread_barrier_wait", rc);
	}
	if (m->idx == 0)
		atomic_store(&g->done, i);
	group_end(m);
	return NULL;
}

static struct bench_sample op_barrier_round(void *ctx, uint64_t iters)
{
	struct group g;
	(void)ctx;
	group_init(&g, BENCH_SYNC_THREADS, iters);
	uint64_t ns = run_group(&g, barrier_rounds, BENCH_SYNC_WORKERS);
	group_destroy(&g);
	return (struct bench_sample){ns, atomic_load(&g.done)};
}

/* ---- once ---- */

static unsigned once_runs;

static void once_fn(void)
{
	once_runs++;
}

static struct bench_sample op_once_fast(void *ctx, uint64_t iters)
{
	static pthread_once_t o = PTHREAD_ONCE_INIT;
	(void)ctx;
	pthread_once(&o, once_fn);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++)
		pthread_once(&o, once_fn);
	uint64_t ns = now_ns() - t0;
	if (once_runs != 1)
		die("once_fast: the function ran more than once", EPROTO);
	return (struct bench_sample){ns, iters};
}

int main(int argc, char **argv)
{
	static const struct {
		bench_fn fn;
		unsigned cpus;
		const char *na; /* why it is n/a */
	} ops[BENCH_SYNC_NOPS] = {
		{op_mutex_uncontended, 1, NULL},
		{op_mutex_contended, 2, NULL},
		{op_rwlock_rd_uncontended, 1, NULL},
		{op_rwlock_read90, 2, NULL},
		{op_rwlock_write90, 2, NULL},
		{op_sem_uncontended, 1, NULL},
		{op_sem_pingpong, 1, NULL},
		{op_barrier_round, 2, NULL},
		{op_once_fast, 1, NULL},
		{NULL, 1, "pthreads has no waitgroup"},
		{NULL, 1, "pthreads has no channel"},
		{NULL, 1, "pthreads has no channel"},
		{NULL, 2, "pthreads has no channel"},
	};

	if (bench_sync_check_args(argc, argv))
		return 2;
	find_cpus();
	pin_self(cpu_first); /* the uncontended ops run on this thread */
	for (int k = 0; k < BENCH_SYNC_NOPS; k++) {
		const char *op = bench_sync_op_names[k];
		if (!bench_selected(argc, argv, op))
			continue;
		if (!ops[k].fn)
			bench_sync_print_na(RUNTIME, op, ops[k].na);
		else if (ops[k].cpus > 1 && cpu_second < 0)
			bench_sync_print_na(RUNTIME, op, "needs two CPUs");
		else
			bench_sync_run(RUNTIME, op, ops[k].fn, NULL);
	}
	return 0;
}
