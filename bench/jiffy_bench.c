/*
 * bench/jiffy_bench.c - the microbenchmark ops run with Jiffy uthreads.
 *
 * Owns: the Jiffy version of every op of bench/README.md, using only the public API
 * (<jiffy/jiffy.h>). Each op runs in its own runtime (one jf_run() per op): one worker for the
 * single-core ops, two workers with the "fifo" policy for wakeup_xworker, whose uthreads are placed
 * with attr.sched.worker = 0 and 1. Workers are pinned (JIFFY_PIN=0 turns that off); other JIFFY_*
 * variables apply, except that the op decides the number of workers (and, for wakeup_xworker,
 * the policy). The harness runs in the main uthread, which only waits in jf_join() while an op's
 * two uthreads run, so exactly two uthreads are runnable.
 * The same loops, with the same counting, are in pthread_bench.c, fiber_bench.cpp and go/main.go:
 * change them together.
 */
#include <errno.h>
#include <stdatomic.h>

#include <jiffy/jiffy.h>

#include "bench_common.h"

#define RUNTIME "jiffy"

static void die(const char *what, int err)
{
	fprintf(stderr, RUNTIME "_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static jf_thread_t *spawn_on(jf_thread_fn fn, void *arg, int worker)
{
	struct jf_attr attr;
	jf_thread_t *t;

	jf_attr_init(&attr);
	attr.sched.worker = worker;
	int rc = jf_spawn(&t, &attr, fn, arg);
	if (rc)
		die("jf_spawn", -rc);
	return t;
}

static void join(jf_thread_t *t)
{
	int rc = jf_join(t, NULL);
	if (rc)
		die("jf_join", -rc);
}

/*
 * State shared by uthread A (the initiator, which times its loop) and uthread B.
 * turn: 0 = A's turn, 1 = B's turn. off_worker counts iterations in which A or B found itself
 * on another worker than the one it was placed on (wakeup_xworker only).
 */
struct pair {
	uint64_t iters;
	jf_waitgroup_t start;
	atomic_int stop;
	uint64_t b_count;
	uint64_t elapsed_ns;
	atomic_uint turn;
	jf_mutex_t mutex;
	jf_cond_t cond_a; /* A waits here */
	jf_cond_t cond_b; /* B waits here (the same object as cond_a in condvar_pingpong) */
	jf_cond_t *wait_a, *wait_b;
	int worker_a, worker_b; /* placement: -1 lets the policy decide */
	uint64_t off_worker_a, off_worker_b;
};

/* Totals over every run of wakeup_xworker, reported once at the end. */
static uint64_t xworker_iters, xworker_off_a, xworker_off_b;

static void pair_init(struct pair *p, uint64_t iters, int separate_conds)
{
	memset(p, 0, sizeof(*p));
	p->iters = iters;
	jf_waitgroup_init(&p->start);
	if (jf_waitgroup_add(&p->start, 2))
		die("jf_waitgroup_add", EINVAL);
	jf_mutex_init(&p->mutex);
	jf_cond_init(&p->cond_a);
	jf_cond_init(&p->cond_b);
	p->wait_a = &p->cond_a;
	p->wait_b = separate_conds ? &p->cond_b : &p->cond_a;
	p->worker_a = p->worker_b = -1;
}

static void barrier(struct pair *p)
{
	jf_waitgroup_done(&p->start);
	jf_waitgroup_wait(&p->start);
}

static void run_pair(struct pair *p, jf_thread_fn a, jf_thread_fn b)
{
	jf_thread_t *ta = spawn_on(a, p, p->worker_a);
	jf_thread_t *tb = spawn_on(b, p, p->worker_b);
	join(ta);
	join(tb);
}

/* ---- yield: A yields @iters times while B yields until A is done; ops = all yield calls. ---- */

static void *yield_a(void *arg)
{
	struct pair *p = arg;
	barrier(p);
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < p->iters; i++)
		jf_yield();
	p->elapsed_ns = jf_now_ns() - t0;
	atomic_store(&p->stop, 1);
	return NULL;
}

static void *yield_b(void *arg)
{
	struct pair *p = arg;
	uint64_t n = 0;
	barrier(p);
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		jf_yield();
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
	run_pair(&p, yield_a, yield_b);
	return (struct bench_sample){p.elapsed_ns, iters + p.b_count};
}

/* ---- spawn_join: create a uthread that does nothing and join it; ops = pairs. ---- */

static void *noop(void *arg)
{
	return arg;
}

static struct bench_sample op_spawn_join(void *ctx, uint64_t iters)
{
	(void)ctx;
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		jf_thread_t *t;
		int rc = jf_spawn(&t, NULL, noop, NULL);
		if (rc)
			die("jf_spawn", -rc);
		join(t);
	}
	return (struct bench_sample){jf_now_ns() - t0, iters};
}

/*
 * ---- ctx_switch: strict alternation by yielding until it is my turn; ops = one-way handoffs.
 * With two runnable uthreads every jf_yield() switches to the other, so this is the yield cost
 * measured as a ping-pong (the pthread version uses a futex, Go an unbuffered channel).
 */

static void yield_await(struct pair *p, unsigned me)
{
	while (atomic_load_explicit(&p->turn, memory_order_relaxed) != me)
		jf_yield();
}

static void *switch_a(void *arg)
{
	struct pair *p = arg;
	barrier(p);
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < p->iters; i++) {
		atomic_store_explicit(&p->turn, 1, memory_order_relaxed);
		yield_await(p, 0);
	}
	p->elapsed_ns = jf_now_ns() - t0;
	return NULL;
}

static void *switch_b(void *arg)
{
	struct pair *p = arg;
	barrier(p);
	for (uint64_t i = 0; i < p->iters; i++) {
		yield_await(p, 1);
		atomic_store_explicit(&p->turn, 0, memory_order_relaxed);
	}
	return NULL;
}

static struct bench_sample op_ctx_switch(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	run_pair(&p, switch_a, switch_b);
	return (struct bench_sample){p.elapsed_ns, 2 * iters};
}

/*
 * ---- condvar ping-pong (condvar_pingpong on one worker, wakeup_xworker on two) ----
 * Each uthread waits until turn == me, sets turn = other and signals. A counts iterations; one
 * iteration is a round trip (two one-way handoffs).
 */

static void check_worker(int placed, uint64_t *off)
{
	if (placed >= 0 && jf_worker_id() != placed)
		(*off)++;
}

static void *cond_a(void *arg)
{
	struct pair *p = arg;
	barrier(p);
	uint64_t t0 = jf_now_ns();
	jf_mutex_lock(&p->mutex);
	for (uint64_t i = 0; i < p->iters; i++) {
		atomic_store_explicit(&p->turn, 1, memory_order_relaxed);
		jf_cond_signal(p->wait_b);
		while (atomic_load_explicit(&p->turn, memory_order_relaxed) != 0)
			jf_cond_wait(p->wait_a, &p->mutex);
		check_worker(p->worker_a, &p->off_worker_a);
	}
	jf_mutex_unlock(&p->mutex);
	p->elapsed_ns = jf_now_ns() - t0;
	return NULL;
}

static void *cond_b(void *arg)
{
	struct pair *p = arg;
	barrier(p);
	jf_mutex_lock(&p->mutex);
	for (uint64_t i = 0; i < p->iters; i++) {
		while (atomic_load_explicit(&p->turn, memory_order_relaxed) != 1)
			jf_cond_wait(p->wait_b, &p->mutex);
		check_worker(p->worker_b, &p->off_worker_b);
		atomic_store_explicit(&p->turn, 0, memory_order_relaxed);
		jf_cond_signal(p->wait_a);
	}
	jf_mutex_unlock(&p->mutex);
	return NULL;
}

static struct bench_sample op_condvar_pingpong(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 0);
	run_pair(&p, cond_a, cond_b);
	return (struct bench_sample){p.elapsed_ns, 2 * iters};
}

static struct bench_sample op_wakeup_xworker(void *ctx, uint64_t iters)
{
	struct pair p;
	(void)ctx;
	pair_init(&p, iters, 1);
	p.worker_a = 0;
	p.worker_b = 1;
	run_pair(&p, cond_a, cond_b);
	xworker_iters += iters;
	xworker_off_a += p.off_worker_a;
	xworker_off_b += p.off_worker_b;
	return (struct bench_sample){p.elapsed_ns, iters};
}

/*
 * ---- mutex_pingpong: the turn passes through one mutex, which is always contended ----
 * See pthread_bench.c. With Jiffy's FIFO handoff a one-way handoff is: unlock hands the mutex to
 * the blocked uthread, the releaser blocks in lock(), switch; the yield while holding is a no-op
 * in the steady state because the other uthread is blocked on the mutex.
 */

static void mutex_await(struct pair *p, unsigned me)
{
	jf_mutex_lock(&p->mutex);
	while (atomic_load_explicit(&p->turn, memory_order_relaxed) != me) {
		jf_mutex_unlock(&p->mutex);
		jf_yield();
		jf_mutex_lock(&p->mutex);
	}
}

static void mutex_pass(struct pair *p, unsigned me)
{
	atomic_store_explicit(&p->turn, !me, memory_order_relaxed);
	jf_yield();
	jf_mutex_unlock(&p->mutex);
}

static void *mutex_a(void *arg)
{
	struct pair *p = arg;
	barrier(p);
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < p->iters; i++) {
		mutex_await(p, 0);
		mutex_pass(p, 0);
	}
	mutex_await(p, 0);
	p->elapsed_ns = jf_now_ns() - t0;
	jf_mutex_unlock(&p->mutex);
	return NULL;
}

static void *mutex_b(void *arg)
{
	struct pair *p = arg;
	barrier(p);
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
	run_pair(&p, mutex_a, mutex_b);
	return (struct bench_sample){p.elapsed_ns, 2 * iters};
}

/* ---- one runtime per op ---- */

struct op {
	const char *name;
	bench_fn fn;
	unsigned workers;
	const char *policy; /* NULL: the configured one */
};

static void *bench_main(void *arg)
{
	const struct op *op = arg;
	bench_run(RUNTIME, op->name, op->fn, NULL);
	return NULL;
}

static void run_op(const struct op *op)
{
	struct jf_config cfg;
	char err[256] = "";

	jf_config_default(&cfg);
	cfg.pin_workers = true; /* like the pinned peers; JIFFY_PIN=0 overrides */
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, RUNTIME "_bench: %s\n", err);
		exit(2);
	}
	cfg.workers = op->workers;
	if (op->policy)
		snprintf(cfg.policy, sizeof(cfg.policy), "%s", op->policy);

	int rc = jf_run(&cfg, bench_main, (void *)op, NULL);
	if (rc) {
		fprintf(stderr, RUNTIME "_bench: %s: jf_run: %s\n", op->name, strerror(-rc));
		bench_print_na(RUNTIME, op->name);
	}
}

int main(int argc, char **argv)
{
	static const struct op ops[BENCH_NOPS] = {
		{"yield", op_yield, 1, NULL},
		{"spawn_join", op_spawn_join, 1, NULL},
		{"ctx_switch", op_ctx_switch, 1, NULL},
		{"wakeup_xworker", op_wakeup_xworker, 2, "fifo"},
		{"mutex_pingpong", op_mutex_pingpong, 1, NULL},
		{"condvar_pingpong", op_condvar_pingpong, 1, NULL},
	};

	if (bench_check_args(argc, argv))
		return 2;
	for (int k = 0; k < BENCH_NOPS; k++) {
		if (strcmp(ops[k].name, bench_op_names[k]) != 0)
			die("op table out of order", EINVAL);
		if (bench_selected(argc, argv, ops[k].name))
			run_op(&ops[k]);
	}
	if (xworker_iters && (xworker_off_a || xworker_off_b))
		fprintf(stderr,
			RUNTIME "_bench: wakeup_xworker: of %" PRIu64 " round trips, A ran off worker 0 in "
			"%" PRIu64 " and B off worker 1 in %" PRIu64 " (the policy moved them)\n",
			xworker_iters, xworker_off_a, xworker_off_b);
	return 0;
}
