/*
 * bench/jiffy_sync_bench.c - the synchronization-primitive benchmarks run with Jiffy uthreads.
 *
 * Owns: the Jiffy version of every op of bench/sync_common.h, through the public API only
 * (<jiffy/jiffy.h>, which includes <jiffy/chan.h>). Each op runs in its own runtime (one jf_run() per op): one
 * worker for the uncontended ops and the ping-pongs, BENCH_SYNC_WORKERS workers for the contended
 * ones, whose uthreads are placed alternately on workers 0 and 1 (attr.sched.worker) under the
 * configured policy (default ws, which may move them). Workers are pinned (JIFFY_PIN=0 turns that
 * off); other JIFFY_* variables apply, except that the op decides the number of workers. The
 * harness runs in the main uthread; in the multi-uthread ops it only waits in jf_join().
 *
 * The same loops, with the same counting, are in pthread_sync_bench.c, fiber_sync_bench.cpp and
 * go/sync.go: change them together.
 */
#include <errno.h>
#include <stdatomic.h>

#include <jiffy/jiffy.h>

#include "sync_common.h"

#define RUNTIME "jiffy"

static void die(const char *what, int err)
{
	fprintf(stderr, RUNTIME "_sync_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static void check(const char *what, int rc)
{
	if (rc < 0)
		die(what, -rc);
}

/*
 * State shared by the uthreads of one run. Uthread i runs member[i]; the first one past the start
 * barrier starts the clock (the others may start later: a worker runs its uthreads one after the
 * other), the last one to finish stops it.
 */
struct group {
	uint64_t per; /* iterations per uthread */
	unsigned n;
	jf_waitgroup_t start;
	atomic_uint left;    /* uthreads still running their loop */
	atomic_uint started; /* uthreads past the start barrier */
	uint64_t t0, t1;
	uint64_t stop_at;            /* capped ops stop at this jf_now_ns() (sync_common.h) */
	_Atomic uint64_t done;       /* capped ops: the operations done */
	_Atomic uint64_t stop_round; /* barrier_round: the round every party stops at */
	uint64_t counter; /* what the critical sections touch */
	_Atomic uint64_t sum; /* chan_mpmc: the sum of the values received */
	jf_mutex_t mutex;
	jf_rwlock_t rw;
	jf_sem_t sem_a, sem_b;
	jf_barrier_t barrier;
	jf_chan_t *ping, *pong;
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
	jf_waitgroup_init(&g->start);
	check("jf_waitgroup_add", jf_waitgroup_add(&g->start, n));
	atomic_init(&g->left, n);
	atomic_init(&g->started, 0);
	atomic_init(&g->sum, 0);
	atomic_init(&g->done, 0);
	atomic_init(&g->stop_round, UINT64_MAX);
	g->stop_at = jf_now_ns() + bench_sync_cap_ns();
	jf_mutex_init(&g->mutex);
}

static void group_start(struct member *m)
{
	jf_waitgroup_done(&m->g->start);
	jf_waitgroup_wait(&m->g->start);
	if (atomic_fetch_add(&m->g->started, 1) == 0)
		m->g->t0 = jf_now_ns();
}

/* expired() - whether a capped op's uthread should stop before iteration @i. */
static int expired(const struct group *g, uint64_t i)
{
	return i % BENCH_SYNC_CHECK_EVERY == 0 && jf_now_ns() > g->stop_at;
}

static void group_end(struct member *m)
{
	if (atomic_fetch_sub(&m->g->left, 1) == 1)
		m->g->t1 = jf_now_ns();
}

/* run_group() - run @fn in g->n uthreads, placed alternately on @workers workers; join them. */
static uint64_t run_group(struct group *g, jf_thread_fn fn, unsigned workers)
{
	struct member m[BENCH_SYNC_THREADS];
	jf_thread_t *t[BENCH_SYNC_THREADS];

	for (unsigned i = 0; i < g->n; i++) {
		struct jf_attr attr;
		jf_attr_init(&attr);
		attr.sched.worker = workers > 1 ? (int32_t)(i % workers) : -1;
		m[i] = (struct member){g, i};
		check("jf_spawn", jf_spawn(&t[i], &attr, fn, &m[i]));
	}
	for (unsigned i = 0; i < g->n; i++)
		check("jf_join", jf_join(t[i], NULL));
	return g->t1 - g->t0;
}

/* ---- mutex ---- */

static struct bench_sample op_mutex_uncontended(void *ctx, uint64_t iters)
{
	static jf_mutex_t m = JF_MUTEX_INITIALIZER;
	(void)ctx;
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		jf_mutex_lock(&m);
		jf_mutex_unlock(&m);
	}
	return (struct bench_sample){jf_now_ns() - t0, iters};
}

static void *mutex_hammer(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	uint64_t i;
	group_start(m);
	for (i = 0; i < g->per && !expired(g, i); i++) {
		jf_mutex_lock(&g->mutex);
		g->counter++;
		jf_mutex_unlock(&g->mutex);
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
	return (struct bench_sample){ns, g.counter};
}

/* ---- rwlock ---- */

static struct bench_sample op_rwlock_rd_uncontended(void *ctx, uint64_t iters)
{
	static jf_rwlock_t rw = JF_RWLOCK_INITIALIZER;
	(void)ctx;
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		jf_rwlock_rdlock(&rw);
		jf_rwlock_unlock(&rw);
	}
	return (struct bench_sample){jf_now_ns() - t0, iters};
}

/* rw_mix() - writes in @writes_per_10 of every 10 critical sections, reads in the others. */
static void rw_mix(struct member *m, unsigned writes_per_10)
{
	struct group *g = m->g;
	uint64_t sink = 0, i;
	group_start(m);
	for (i = 0; i < g->per && !expired(g, i); i++) {
		if ((i + m->idx) % 10 < writes_per_10) {
			jf_rwlock_wrlock(&g->rw);
			g->counter++;
		} else {
			jf_rwlock_rdlock(&g->rw);
			sink += g->counter;
		}
		jf_rwlock_unlock(&g->rw);
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

static struct bench_sample rw_contended(uint64_t iters, jf_thread_fn fn)
{
	struct group g;
	group_init(&g, BENCH_SYNC_THREADS, bench_sync_per_thread(iters, BENCH_SYNC_THREADS));
	jf_rwlock_init(&g.rw);
	uint64_t ns = run_group(&g, fn, BENCH_SYNC_WORKERS);
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
	static jf_sem_t s = JF_SEM_INITIALIZER(1);
	(void)ctx;
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		jf_sem_wait(&s);
		jf_sem_post(&s);
	}
	return (struct bench_sample){jf_now_ns() - t0, iters};
}

/* Party 0 (A) posts sem_b and waits on sem_a; party 1 (B) the reverse. */
static void *sem_pong(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	group_start(m);
	for (uint64_t i = 0; i < g->per; i++) {
		if (m->idx == 0) {
			jf_sem_post(&g->sem_b);
			jf_sem_wait(&g->sem_a);
		} else {
			jf_sem_wait(&g->sem_b);
			jf_sem_post(&g->sem_a);
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
	check("jf_sem_init", jf_sem_init(&g.sem_a, 0));
	check("jf_sem_init", jf_sem_init(&g.sem_b, 0));
	uint64_t ns = run_group(&g, sem_pong, 1);
	return (struct bench_sample){ns, 2 * iters};
}

/* ---- barrier ---- */

static void *barrier_rounds(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	uint64_t i;
	group_start(m);
	/* Party 0 decides when to stop: at round i it sets stop_round = i + 1, which every other
	 * party reads after passing barrier i, so all stop after the same number of rounds. */
	for (i = 0; i < g->per && i < atomic_load(&g->stop_round); i++) {
		if (m->idx == 0 && expired(g, i))
			atomic_store(&g->stop_round, i + 1);
		check("jf_barrier_wait", jf_barrier_wait(&g->barrier));
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
	check("jf_barrier_init", jf_barrier_init(&g.barrier, BENCH_SYNC_THREADS));
	uint64_t ns = run_group(&g, barrier_rounds, BENCH_SYNC_WORKERS);
	check("jf_barrier_destroy", jf_barrier_destroy(&g.barrier));
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
	static jf_once_t o = JF_ONCE_INIT;
	(void)ctx;
	check("jf_once", jf_once(&o, once_fn)); /* the slow path, outside the timed loop */
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++)
		jf_once(&o, once_fn);
	uint64_t ns = jf_now_ns() - t0;
	if (once_runs != 1)
		die("once_fast: the function ran more than once", EPROTO);
	return (struct bench_sample){ns, iters};
}

/* ---- waitgroup ---- */

static struct bench_sample op_waitgroup_round(void *ctx, uint64_t iters)
{
	static jf_waitgroup_t wg = JF_WAITGROUP_INITIALIZER;
	(void)ctx;
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		jf_waitgroup_add(&wg, 1);
		jf_waitgroup_done(&wg);
		jf_waitgroup_wait(&wg);
	}
	return (struct bench_sample){jf_now_ns() - t0, iters};
}

/* ---- channels ---- */

static struct bench_sample op_chan_buffered(void *ctx, uint64_t iters)
{
	jf_chan_t *c;
	(void)ctx;
	check("jf_chan_create", jf_chan_create(&c, sizeof(uint64_t), BENCH_SYNC_CHAN_CAP));
	uint64_t t0 = jf_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t v = i, w;
		jf_chan_send(c, &v);
		jf_chan_recv(c, &w);
	}
	uint64_t ns = jf_now_ns() - t0;
	jf_chan_destroy(c);
	return (struct bench_sample){ns, iters};
}

/* Party 0 (A) sends on ping and receives on pong; party 1 (B) the reverse. */
static void *chan_pong(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	uint64_t v = 0;
	group_start(m);
	for (uint64_t i = 0; i < g->per; i++) {
		if (m->idx == 0) {
			check("jf_chan_send", jf_chan_send(g->ping, &v));
			check("jf_chan_recv", jf_chan_recv(g->pong, &v));
		} else {
			check("jf_chan_recv", jf_chan_recv(g->ping, &v));
			v++;
			check("jf_chan_send", jf_chan_send(g->pong, &v));
		}
	}
	group_end(m);
	if (m->idx == 0 && v != g->per)
		die("chan_unbuffered_pingpong: wrong value", EPROTO);
	return NULL;
}

static struct bench_sample op_chan_unbuffered_pingpong(void *ctx, uint64_t iters)
{
	struct group g;
	(void)ctx;
	group_init(&g, 2, iters);
	check("jf_chan_create", jf_chan_create(&g.ping, sizeof(uint64_t), 0));
	check("jf_chan_create", jf_chan_create(&g.pong, sizeof(uint64_t), 0));
	uint64_t ns = run_group(&g, chan_pong, 1);
	jf_chan_destroy(g.ping);
	jf_chan_destroy(g.pong);
	return (struct bench_sample){ns, 2 * iters};
}

/* Parties 0 and 1 (one per worker) produce g->per items each, 2 and 3 consume as many. */
static void *chan_mpmc_party(void *arg)
{
	struct member *m = arg;
	struct group *g = m->g;
	uint64_t v = 0, sum = 0;
	group_start(m);
	for (uint64_t i = 0; i < g->per; i++) {
		if (m->idx < 2) {
			v = i + 1;
			check("jf_chan_send", jf_chan_send(g->ping, &v));
		} else {
			check("jf_chan_recv", jf_chan_recv(g->ping, &v));
			sum += v;
		}
	}
	group_end(m);
	if (m->idx >= 2)
		atomic_fetch_add(&g->sum, sum);
	return NULL;
}

static struct bench_sample op_chan_mpmc(void *ctx, uint64_t iters)
{
	struct group g;
	(void)ctx;
	group_init(&g, 4, bench_sync_per_thread(iters, 2));
	check("jf_chan_create", jf_chan_create(&g.ping, sizeof(uint64_t), BENCH_SYNC_CHAN_CAP));
	uint64_t ns = run_group(&g, chan_mpmc_party, BENCH_SYNC_WORKERS);
	jf_chan_destroy(g.ping);
	if (atomic_load(&g.sum) != g.per * (g.per + 1))
		die("chan_mpmc: lost or duplicated items", EPROTO);
	return (struct bench_sample){ns, 2 * g.per};
}

/* ---- one runtime per op ---- */

struct op {
	const char *name;
	bench_fn fn;
	unsigned workers;
};

static void *bench_main(void *arg)
{
	const struct op *op = arg;
	bench_sync_run(RUNTIME, op->name, op->fn, NULL);
	return NULL;
}

static void run_op(const struct op *op)
{
	struct jf_config cfg;
	char err[256] = "";

	jf_config_default(&cfg);
	cfg.pin_workers = true; /* like the pinned peers; JIFFY_PIN=0 overrides */
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, RUNTIME "_sync_bench: %s\n", err);
		exit(2);
	}
	cfg.workers = op->workers;
	int rc = jf_run(&cfg, bench_main, (void *)op, NULL);
	if (rc) {
		fprintf(stderr, RUNTIME "_sync_bench: %s: jf_run: %s\n", op->name, strerror(-rc));
		bench_sync_print_na(RUNTIME, op->name, NULL);
	}
}

int main(int argc, char **argv)
{
	static const struct op ops[BENCH_SYNC_NOPS] = {
		{"mutex_uncontended", op_mutex_uncontended, 1},
		{"mutex_contended", op_mutex_contended, BENCH_SYNC_WORKERS},
		{"rwlock_rd_uncontended", op_rwlock_rd_uncontended, 1},
		{"rwlock_read90", op_rwlock_read90, BENCH_SYNC_WORKERS},
		{"rwlock_write90", op_rwlock_write90, BENCH_SYNC_WORKERS},
		{"sem_uncontended", op_sem_uncontended, 1},
		{"sem_pingpong", op_sem_pingpong, 1},
		{"barrier_round", op_barrier_round, BENCH_SYNC_WORKERS},
		{"once_fast", op_once_fast, 1},
		{"waitgroup_round", op_waitgroup_round, 1},
		{"chan_buffered", op_chan_buffered, 1},
		{"chan_unbuffered_pingpong", op_chan_unbuffered_pingpong, 1},
		{"chan_mpmc", op_chan_mpmc, BENCH_SYNC_WORKERS},
	};

	if (bench_sync_check_args(argc, argv))
		return 2;
	for (int k = 0; k < BENCH_SYNC_NOPS; k++) {
		if (strcmp(ops[k].name, bench_sync_op_names[k]) != 0)
			die("op table out of order", EINVAL);
		if (bench_selected(argc, argv, ops[k].name))
			run_op(&ops[k]);
	}
	return 0;
}
