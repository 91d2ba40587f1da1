/*
 * core/test_shutdown.c - proves that jf_run() returns promptly when main returns even though
 * other uthreads can never finish: blocked on a mutex main holds forever, on a condition variable
 * never signalled, on a wait group never released, joining a blocked thread, sleeping for an
 * hour, and runnable ones yielding in endless loops (joinable and detached). Every such uthread
 * is discarded without running further, jf_run() returns 0 with main's value, and the next
 * jf_run() in the same process starts from a clean state (three cycles). In the ASan build
 * LeakSanitizer checks at exit that the discarded uthreads' stacks and structures were freed.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define NSPINNERS 4

static jf_mutex_t held;
static jf_mutex_t cv_lock;
static jf_cond_t never_cv;
static jf_waitgroup_t never_wg;
static jf_thread_t *blocked_on_mutex;

static atomic_int started;     /* uthreads that reached the point where they block or spin */
static atomic_int ran_on_past; /* code after a point that must never return: stays 0 */
static atomic_long spins;

static void *lock_forever(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	jf_mutex_lock(&held);
	atomic_fetch_add(&ran_on_past, 1);
	return NULL;
}

static void *cond_forever(void *arg)
{
	(void)arg;
	jf_mutex_lock(&cv_lock);
	atomic_fetch_add(&started, 1);
	for (;;) {
		CHECK_EQ(jf_cond_wait(&never_cv, &cv_lock), 0);
		atomic_fetch_add(&ran_on_past, 1);
	}
	return NULL;
}

static void *wg_forever(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	jf_waitgroup_wait(&never_wg);
	atomic_fetch_add(&ran_on_past, 1);
	return NULL;
}

static void *join_blocked(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	jft_join(blocked_on_mutex);
	atomic_fetch_add(&ran_on_past, 1);
	return NULL;
}

static void *sleep_an_hour(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	jf_sleep_ns(3600ull * 1000000000ull);
	atomic_fetch_add(&ran_on_past, 1);
	return NULL;
}

static void *spin_forever(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	for (;;) {
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
		jf_yield();
	}
	return NULL;
}

static void *main_fn(void *arg)
{
	struct jf_attr detached;
	int expect = 0, i;

	(void)arg;
	jf_mutex_lock(&held); /* never released */
	CHECK_EQ(jf_waitgroup_add(&never_wg, 1), 0);

	blocked_on_mutex = jft_spawn(NULL, lock_forever, NULL);
	expect++;
	jft_spawn(NULL, cond_forever, NULL);
	expect++;
	jft_spawn(NULL, wg_forever, NULL);
	expect++;
	jft_spawn(NULL, join_blocked, NULL);
	expect++;
	jft_spawn(NULL, sleep_an_hour, NULL);
	expect++;
	jf_attr_init(&detached);
	detached.detached = 1;
	for (i = 0; i < NSPINNERS; i++) {
		jft_spawn(i % 2 ? &detached : NULL, spin_forever, NULL);
		expect++;
	}
	/* A few detached sleepers and mutex waiters too. */
	jft_spawn(&detached, sleep_an_hour, NULL);
	expect++;
	jft_spawn(&detached, lock_forever, NULL);
	expect++;

	while (atomic_load(&started) < expect)
		jf_yield();
	/* Let them reach their blocking calls. */
	CHECK_EQ(jf_sleep_ns(2000000), 0);
	CHECK(atomic_load(&spins) > 0);
	CHECK_EQ(atomic_load(&ran_on_past), 0);
	return (void *)0x600d;
}

static void *counter_fn(void *arg)
{
	jf_yield();
	return (void *)((intptr_t)arg * 3);
}

/* After a shutdown with leftovers, a fresh runtime works normally. */
static void *main_clean(void *arg)
{
	jf_thread_t *t[64];
	int i;

	(void)arg;
	CHECK(jf_self() != NULL);
	for (i = 0; i < 64; i++)
		t[i] = jft_spawn(NULL, counter_fn, (void *)(intptr_t)i);
	for (i = 0; i < 64; i++)
		CHECK_EQ((intptr_t)jft_join(t[i]), i * 3);
	jf_mutex_lock(&held); /* re-initialised, free again */
	CHECK_EQ(jf_mutex_unlock(&held), 0);
	return (void *)(intptr_t)jf_nworkers();
}

int main(void)
{
	struct jf_config cfg;
	int cycle;

	jft_config(&cfg, 2);
	cfg.workers = 2;
	for (cycle = 0; cycle < 3; cycle++) {
		uint64_t t0, dt;
		void *ret = NULL;

		/* The objects still list the discarded waiters of the last cycle: start afresh. */
		jf_mutex_init(&held);
		jf_mutex_init(&cv_lock);
		jf_cond_init(&never_cv);
		jf_waitgroup_init(&never_wg);
		atomic_store(&started, 0);
		atomic_store(&spins, 0);

		t0 = jf_now_ns();
		CHECK_EQ(jf_run(&cfg, main_fn, NULL, &ret), 0);
		dt = jf_now_ns() - t0;
		CHECK((intptr_t)ret == 0x600d);
		CHECK_EQ(atomic_load(&ran_on_past), 0);
		printf("cycle %d (policy %s): jf_run returned after %.1f ms\n", cycle, cfg.policy,
		       (double)dt / 1e6);
		/* "Promptly": nothing waited for the hour-long sleep (generous for slow CI). */
		CHECK(dt < 30ull * 1000000000ull);
		CHECK(jf_self() == NULL);
		CHECK_EQ(jf_nworkers(), 0);

		jf_mutex_init(&held);
		CHECK_EQ(jf_run(&cfg, main_clean, NULL, &ret), 0);
		CHECK_EQ((intptr_t)ret, 2);
	}
	jft_ok("core.shutdown");
	return 0;
}
