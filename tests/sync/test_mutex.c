/*
 * sync/test_mutex.c - proves jf_mutex_t is a correct FIFO mutex for uthreads: N uthreads x M
 * increments on 2 workers, with yields inside the critical section and a mix of lock and trylock,
 * give the exact total and never two holders at once; trylock fails with -EBUSY while the mutex
 * is held (also by the caller itself); unlocking a mutex one does not hold fails with -EPERM and
 * changes nothing; with jf_config.lock_handoff ownership is handed to waiters in the order they
 * queued (checked on 1 worker, where the queueing order is known), with no barging by the
 * unlocker; without it (the default) the unlocker may take it again at once, and every waiter
 * still gets it; a waiter that keeps losing to a barger gets it by the starvation handoff.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define NTHREADS 16

static long per_thread;
static jf_mutex_t m = JF_MUTEX_INITIALIZER;
static long counter;            /* protected by m */
static jf_thread_t *holder;     /* protected by m */
static atomic_long acquisitions;

static void *incrementer(void *arg)
{
	int who = (int)(intptr_t)arg;
	uint64_t rng = (uint64_t)who;
	long i;

	for (i = 0; i < per_thread; i++) {
		uint64_t r = jft_splitmix64(&rng);
		long v;

		if (r & 1) {
			jf_mutex_lock(&m);
		} else {
			while (jf_mutex_trylock(&m) != 0)
				jf_yield();
		}
		CHECK(holder == NULL);
		holder = jf_self();
		v = counter;
		if ((r >> 1) % 4 == 0)
			jf_yield(); /* the others must wait, not enter */
		counter = v + 1;
		CHECK(holder == jf_self());
		holder = NULL;
		CHECK_EQ(jf_mutex_unlock(&m), 0);
		atomic_fetch_add_explicit(&acquisitions, 1, memory_order_relaxed);
	}
	return arg;
}

static void check_counter(void)
{
	jf_thread_t *t[NTHREADS];
	int i;

	for (i = 0; i < NTHREADS; i++)
		t[i] = jft_spawn_on(i % 3 - 1, incrementer, (void *)(intptr_t)i);
	for (i = 0; i < NTHREADS; i++)
		CHECK_EQ((intptr_t)jft_join(t[i]), i);
	jf_mutex_lock(&m);
	CHECK_EQ(counter, NTHREADS * per_thread);
	CHECK_EQ(jf_mutex_unlock(&m), 0);
	CHECK_EQ(atomic_load(&acquisitions), NTHREADS * per_thread);
}

/* ---- errors ---- */

static jf_mutex_t m2;

static void *try_held(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_mutex_trylock(&m2), -EBUSY);
	CHECK_EQ(jf_mutex_unlock(&m2), -EPERM); /* held by main, not by us */
	CHECK_EQ(jf_mutex_trylock(&m2), -EBUSY); /* ... and still held */
	return NULL;
}

static void *try_free(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_mutex_trylock(&m2), 0);
	CHECK_EQ(jf_mutex_unlock(&m2), 0);
	return NULL;
}

static void check_errors(void)
{
	jf_mutex_t zeroed;

	jf_mutex_init(&m2);
	CHECK_EQ(jf_mutex_unlock(&m2), -EPERM); /* not locked at all */

	jf_mutex_lock(&m2);
	CHECK_EQ(jf_mutex_trylock(&m2), -EBUSY); /* not recursive */
	jft_join(jft_spawn_on(0, try_held, NULL));
	jft_join(jft_spawn_on(1, try_held, NULL));
	CHECK_EQ(jf_mutex_unlock(&m2), 0);
	CHECK_EQ(jf_mutex_unlock(&m2), -EPERM); /* twice */
	jft_join(jft_spawn(NULL, try_free, NULL));

	CHECK_EQ(jf_mutex_trylock(&m2), 0);
	CHECK_EQ(jf_mutex_unlock(&m2), 0);

	/* A zero-initialised mutex is ready to use. */
	memset(&zeroed, 0, sizeof(zeroed));
	CHECK_EQ(jf_mutex_trylock(&zeroed), 0);
	CHECK_EQ(jf_mutex_unlock(&zeroed), 0);
	jf_mutex_lock(&zeroed);
	CHECK_EQ(jf_mutex_unlock(&zeroed), 0);
}

static void *main_fn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_nworkers(), 2);
	check_counter();
	check_errors();
	return NULL;
}

/* ---- FIFO handoff, on one worker ---- */

#define NWAITERS 8

static jf_mutex_t fm;
static int arrival[NWAITERS], acquired[NWAITERS];
static int narrived, nacquired;

static void *fifo_waiter(void *arg)
{
	int who = (int)(intptr_t)arg;

	/* One worker: nothing runs between recording the arrival and queueing in lock(). */
	arrival[narrived++] = who;
	jf_mutex_lock(&fm);
	acquired[nacquired++] = who;
	jf_yield(); /* the next waiter must still wait for us */
	CHECK_EQ(jf_mutex_unlock(&fm), 0);
	return NULL;
}

static void *main_fifo(void *arg)
{
	static const int order[NWAITERS] = {5, 2, 7, 0, 3, 6, 1, 4};
	jf_thread_t *t[NWAITERS];
	int i, round;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 1);
	for (round = 0; round < 3; round++) {
		jf_mutex_init(&fm);
		narrived = nacquired = 0;
		jf_mutex_lock(&fm);
		for (i = 0; i < NWAITERS; i++)
			t[i] = jft_spawn(NULL, fifo_waiter,
					 (void *)(intptr_t)order[(i + round) % NWAITERS]);
		while (narrived < NWAITERS)
			jf_yield();
		CHECK_EQ(nacquired, 0);
		/*
		 * Handed to the oldest waiter, who has not run yet: no barging. (Not preemptible
		 * in between: a policy with wakeup preemption, e.g. twoq, may otherwise run the
		 * woken waiter, and all the others, before main's trylock.)
		 */
		jf_preempt_disable();
		CHECK_EQ(jf_mutex_unlock(&fm), 0);
		CHECK_EQ(jf_mutex_trylock(&fm), -EBUSY);
		jf_preempt_enable();
		if (round == 2) {
			/* Queue behind all of them: main must acquire last. */
			jf_mutex_lock(&fm);
			CHECK_EQ(nacquired, NWAITERS);
			CHECK_EQ(jf_mutex_unlock(&fm), 0);
		}
		for (i = 0; i < NWAITERS; i++)
			jft_join(t[i]);
		CHECK_EQ(nacquired, NWAITERS);
		for (i = 0; i < NWAITERS; i++) {
			if (acquired[i] != arrival[i]) {
				fprintf(stderr, "round %d: position %d acquired by %d, queued %d\n",
					round, i, acquired[i], arrival[i]);
				CHECK_EQ(acquired[i], arrival[i]);
			}
		}
	}
	return NULL;
}

/* ---- barging, on one worker: the releaser may take it again; every waiter still gets it ---- */

static void *main_barge(void *arg)
{
	jf_thread_t *t[NWAITERS];
	int i;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 1);
	jf_mutex_init(&fm);
	narrived = nacquired = 0;
	jf_mutex_lock(&fm);
	for (i = 0; i < NWAITERS; i++)
		t[i] = jft_spawn(NULL, fifo_waiter, (void *)(intptr_t)i);
	while (narrived < NWAITERS)
		jf_yield();
	jf_preempt_disable();
	CHECK_EQ(jf_mutex_unlock(&fm), 0);
	CHECK_EQ(jf_mutex_trylock(&fm), 0); /* freed, not handed over: the running uthread barges */
	jf_preempt_enable();
	CHECK_EQ(nacquired, 0);
	CHECK_EQ(jf_mutex_unlock(&fm), 0);
	for (i = 0; i < NWAITERS; i++)
		jft_join(t[i]);
	CHECK_EQ(nacquired, NWAITERS);
	CHECK_EQ(jf_mutex_destroy(&fm), 0);
	return NULL;
}

/*
 * ---- the starvation handoff, on one worker: a waiter that keeps losing gets the mutex ----
 * main holds the mutex and re-takes it at once after each release (unlock and lock with
 * preemption off, so the woken waiter never runs in between), and yields while it holds it, so
 * the waiter runs, loses and queues again at the front. Only the starvation rule (a waiter that
 * has lost for more than 1 ms sets STARVING, and the next release hands the mutex to it) lets
 * the waiter in: without it this loop never ends. The bound (5 s, for ~1 ms) is liveness.
 */
static jf_mutex_t sm;
static atomic_int starve_queued, starve_got;

static void *starved_waiter(void *arg)
{
	(void)arg;
	atomic_store(&starve_queued, 1);
	jf_mutex_lock(&sm);
	atomic_store(&starve_got, 1);
	CHECK_EQ(jf_mutex_unlock(&sm), 0);
	return NULL;
}

static void *main_starve(void *arg)
{
	uint64_t give_up = jf_now_ns() + 5000000000ull;
	long rounds = 0;
	jf_thread_t *w;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 1);
	jf_mutex_init(&sm);
	jf_mutex_lock(&sm);
	w = jft_spawn(NULL, starved_waiter, NULL);
	while (!atomic_load(&starve_queued))
		jf_yield();
	jf_yield(); /* it blocks in jf_mutex_lock: we hold it */
	while (!atomic_load(&starve_got) && jf_now_ns() < give_up) {
		uint64_t until = jf_now_ns() + 20000; /* hold it 20 us */
		while (jf_now_ns() < until)
			;
		jf_yield(); /* the waiter runs and finds it held: a lost race */
		jf_preempt_disable();
		CHECK_EQ(jf_mutex_unlock(&sm), 0);
		jf_mutex_lock(&sm); /* barges, unless the waiter asked for the handoff */
		jf_preempt_enable();
		rounds++;
	}
	if (!atomic_load(&starve_got))
		fprintf(stderr, "starving waiter never got the mutex in %ld rounds\n", rounds);
	CHECK_EQ(atomic_load(&starve_got), 1);
	CHECK_EQ(jf_mutex_unlock(&sm), 0);
	jft_join(w);
	CHECK_EQ(jf_mutex_destroy(&sm), 0);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	per_thread = JFT_SCALE(5000L, 1000L);
	jft_config(&cfg, 2);
	cfg.workers = 2;
	jft_run(&cfg, main_fn, NULL);

	cfg.workers = 1;
	cfg.lock_handoff = true; /* strict FIFO handoff (JIFFY_LOCK_HANDOFF=1) */
	jft_run(&cfg, main_fifo, NULL);
	cfg.lock_handoff = false; /* barging with the starvation handoff (the default) */
	jft_run(&cfg, main_barge, NULL);
	jft_run(&cfg, main_starve, NULL);
	jft_ok("sync.mutex");
	return 0;
}
