/*
 * bench/pthread_bench.c - the microbenchmark ops run with kernel threads (pthreads), the baseline
 * Jiffy is compared with.
 *
 * Owns: the pthread version of every op of bench/README.md. "One core" means both threads are
 * pinned to the same CPU (the first CPU of the process's affinity mask); wakeup_xworker pins them
 * to the first two CPUs. The same loops, with the same counting, are in jiffy_bench.c,
 * fiber_bench.cpp and go/main.go: change them together.
 *
 * Timing: the initiating thread times its own loop after both threads met at a barrier, so thread
 * creation is never inside the timed region (except in spawn_join, where it is the op).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_pin.h"
#include "bench_common.h"

#define RUNTIME "pthread"

static int cpu_first = -1;  /* the "one core" of single-core ops */
static int cpu_second = -1; /* the other core of wakeup_xworker, -1 if there is none */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, RUNTIME "_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static void find_cpus(void)
{
	int rc = bench_find_cpus(&cpu_first, &cpu_second);
	if (rc)
		die("sched_getaffinity", rc);
}

/* spawn_on_cpu() - start @fn(@arg) on a thread pinned to @cpu from its first instruction. */
static pthread_t spawn_on_cpu(void *(*fn)(void *), void *arg, int cpu)
{
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t t;
	int rc;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (rc)
		die("pthread_attr_setaffinity_np", rc);
	rc = pthread_create(&t, &attr, fn, arg);
	if (rc)
		die("pthread_create", rc);
	pthread_attr_destroy(&attr);
	return t;
}

static void join(pthread_t t)
{
	int rc = pthread_join(t, NULL);
	if (rc)
		die("pthread_join", rc);
}

/*
 * State shared by the two threads of an op. Thread A (the initiator) times its loop; B follows.
 * turn: whose turn it is in the ping-pong ops (0 = A, 1 = B).
 */
struct pair {
	uint64_t iters;
	pthread_barrier_t start;
	atomic_int stop;
	uint64_t b_count;
	uint64_t elapsed_ns;
	atomic_uint turn;
	pthread_mutex_t mutex;
	pthread_cond_t cond_a; /* A waits here */
	pthread_cond_t cond_b; /* B waits here (the same object as cond_a in condvar_pingpong) */
	pthread_cond_t *wait_a, *wait_b;
};

static void pair_init(struct pair *p, uint64_t iters, int separate_conds)
{
	memset(p, 0, sizeof(*p));
	p->iters = iters;
	pthread_barrier_init(&p->start, NULL, 2);
	pthread_mutex_init(&p->mutex, NULL);
	pthread_cond_init(&p->cond_a, NULL);
	pthread_cond_init(&p->cond_b, NULL);
	p->wait_a = &p->cond_a;
	p->wait_b = separate_conds ? &p->cond_b : &p->cond_a;
}

static void pair_destroy(struct pair *p)
{
	pthread_barrier_destroy(&p->start);
	pthread_mutex_destroy(&p->mutex);
	pthread_cond_destroy(&p->cond_a);
	pthread_cond_destroy(&p->cond_b);
}

/* Run @a and @b as two threads pinned to @cpu_a and @cpu_b; A leaves its timing in @p. */
static void run_pair(struct pair *p, void *(*a)(void *), void *(*b)(void *), int cpu_a, int cpu_b)
{
	pthread_t ta = spawn_on_cpu(a, p, cpu_a);
	pthread_t tb = spawn_on_cpu(b, p, cpu_b);
	join(ta);
	join(tb);
}

/* ---- yield: A yields @iters times while B yields until A is done; ops = all yield calls. ---- */

static void *yield_a(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < p->iters; i++)
		sched_yield();
	p->elapsed_ns = now_ns() - t0;
	atomic_store(&p->stop, 1);
	return NULL;
}

static void *yield_b(void *arg)
{
	struct pair *p = arg;
	uint64_t n = 0;
	pthread_barrier_wait(&p->start);
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		sched_yield();
		n++;
	}
	p->b_count = n;
	return NULL;
}

static struct bench_sample op_yield(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	run_pair(&p, yield_a, yield_b, cpu_first, cpu_first);
	pair_destroy(&p);
	return (struct bench_sample){p.elapsed_ns, iters + p.b_count};
}

/* ---- spawn_join: create a thread that does nothing and join it; ops = pairs. ---- */

static void *noop(void *arg)
{
	return arg;
}

static void *spawn_join_loop(void *arg)
{
	struct pair *p = arg;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < p->iters; i++) {
		pthread_t t;
		int rc = pthread_create(&t, NULL, noop, NULL); /* inherits the pinning to one CPU */
		if (rc)
			die("pthread_create", rc);
		join(t);
	}
	p->elapsed_ns = now_ns() - t0;
	return NULL;
}

static struct bench_sample op_spawn_join(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	join(spawn_on_cpu(spawn_join_loop, &p, cpu_first));
	pair_destroy(&p);
	return (struct bench_sample){p.elapsed_ns, iters};
}

/* ---- ctx_switch: strict ping-pong through a futex word; ops = one-way handoffs. ---- */

static void futex_wait(atomic_uint *word, unsigned expected)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_pass(struct pair *p, unsigned me)
{
	atomic_store(&p->turn, !me);
	futex_wake(&p->turn);
}

static void futex_await(struct pair *p, unsigned me)
{
	while (atomic_load(&p->turn) != me)
		futex_wait(&p->turn, !me);
}

static void *switch_a(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < p->iters; i++) {
		futex_pass(p, 0);
		futex_await(p, 0);
	}
	p->elapsed_ns = now_ns() - t0;
	return NULL;
}

static void *switch_b(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	for (uint64_t i = 0; i < p->iters; i++) {
		futex_await(p, 1);
		futex_pass(p, 1);
	}
	return NULL;
}

static struct bench_sample op_ctx_switch(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	run_pair(&p, switch_a, switch_b, cpu_first, cpu_first);
	pair_destroy(&p);
	return (struct bench_sample){p.elapsed_ns, 2 * iters};
}

/*
 * ---- condvar ping-pong (condvar_pingpong on one CPU, wakeup_xworker on two) ----
 * Each thread waits until turn == me, sets turn = other and signals. A counts iterations;
 * one iteration is a round trip (two one-way handoffs).
 */

static void *cond_a(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	uint64_t t0 = now_ns();
	pthread_mutex_lock(&p->mutex);
	for (uint64_t i = 0; i < p->iters; i++) {
		atomic_store_explicit(&p->turn, 1, memory_order_relaxed);
		pthread_cond_signal(p->wait_b);
		while (atomic_load_explicit(&p->turn, memory_order_relaxed) != 0)
			pthread_cond_wait(p->wait_a, &p->mutex);
	}
	pthread_mutex_unlock(&p->mutex);
	p->elapsed_ns = now_ns() - t0;
	return NULL;
}

static void *cond_b(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	pthread_mutex_lock(&p->mutex);
	for (uint64_t i = 0; i < p->iters; i++) {
		while (atomic_load_explicit(&p->turn, memory_order_relaxed) != 1)
			pthread_cond_wait(p->wait_b, &p->mutex);
		atomic_store_explicit(&p->turn, 0, memory_order_relaxed);
		pthread_cond_signal(p->wait_a);
	}
	pthread_mutex_unlock(&p->mutex);
	return NULL;
}

static struct bench_sample op_condvar_pingpong(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	run_pair(&p, cond_a, cond_b, cpu_first, cpu_first);
	pair_destroy(&p);
	return (struct bench_sample){p.elapsed_ns, 2 * iters};
}

static struct bench_sample op_wakeup_xworker(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 1);
	run_pair(&p, cond_a, cond_b, cpu_first, cpu_second);
	pair_destroy(&p);
	return (struct bench_sample){p.elapsed_ns, iters};
}

/*
 * ---- mutex_pingpong: the turn passes through one mutex, which is always contended ----
 * The thread whose turn it is sets turn = other and yields while still holding the mutex, so the
 * other thread is blocked in lock() when the mutex is released. A thread that acquires the mutex
 * when it is not its turn (possible with mutexes that let the releaser re-acquire) releases it and
 * yields. ops = one-way handoffs of the turn.
 */

static void mutex_await(struct pair *p, unsigned me)
{
	pthread_mutex_lock(&p->mutex);
	while (atomic_load_explicit(&p->turn, memory_order_relaxed) != me) {
		pthread_mutex_unlock(&p->mutex);
		sched_yield();
		pthread_mutex_lock(&p->mutex);
	}
}

static void mutex_pass(struct pair *p, unsigned me)
{
	atomic_store_explicit(&p->turn, !me, memory_order_relaxed);
	sched_yield();
	pthread_mutex_unlock(&p->mutex);
}

static void *mutex_a(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < p->iters; i++) {
		mutex_await(p, 0);
		mutex_pass(p, 0);
	}
	mutex_await(p, 0);
	p->elapsed_ns = now_ns() - t0;
	pthread_mutex_unlock(&p->mutex);
	return NULL;
}

static void *mutex_b(void *arg)
{
	struct pair *p = arg;
	pthread_barrier_wait(&p->start);
	for (uint64_t i = 0; i < p->iters; i++) {
		mutex_await(p, 1);
		mutex_pass(p, 1);
	}
	return NULL;
}

static struct bench_sample op_mutex_pingpong(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	run_pair(&p, mutex_a, mutex_b, cpu_first, cpu_first);
	pair_destroy(&p);
	return (struct bench_sample){p.elapsed_ns, 2 * iters};
}

int main(int argc, char **argv)
{
	static const bench_fn fns[BENCH_NOPS] = {
		op_yield,          op_spawn_join,     op_ctx_switch,
		op_wakeup_xworker, op_mutex_pingpong, op_condvar_pingpong,
	};

	if (bench_check_args(argc, argv))
		return 2;
	find_cpus();
	for (int k = 0; k < BENCH_NOPS; k++) {
		const char *op = bench_op_names[k];
		if (!bench_selected(argc, argv, op))
			continue;
		if (fns[k] == op_wakeup_xworker && cpu_second < 0) {
			fprintf(stderr, RUNTIME "_bench: %s needs two CPUs\n", op);
			bench_print_na(RUNTIME, op);
			continue;
		}
		bench_run(RUNTIME, op, fns[k], NULL);
	}
	return 0;
}
