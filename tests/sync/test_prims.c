/*
 * sync/test_prims.c - proves the promises of the primitives issue 18 added, one by one, on 2
 * workers under the CTest policy (run once per policy): jf_mutex_lock_until() times out without
 * taking the mutex or leaving a stale waiter behind, refuses a self-deadlock, and is ended by
 * jf_cancel(); jf_rwlock_t lets readers share and writers exclude, is phase-fair (a reader that
 * comes while a writer waits waits for it; a writer that gives up lets the readers it held back
 * in), and times out; jf_sem_t counts, hands units to waiters in FIFO order, times out and is
 * cancelled without losing a unit, refuses overflow; jf_barrier_t releases each round together
 * with exactly one serial party; jf_once() runs its function once for concurrent callers, in and
 * outside the runtime, and refuses recursion; jf_waitgroup_wait_until() times out; every
 * *_destroy() refuses a busy object; and the int-returning calls fail with -EPERM outside a
 * uthread.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define MS 1000000ull

static uint64_t in_ns(uint64_t ns)
{
	return jf_now_ns() + ns;
}

/* --- mutex ------------------------------------------------------------------------------------ */

static jf_mutex_t mx = JF_MUTEX_INITIALIZER;
static atomic_int mx_step;

static void *mx_timed_waiter(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_mutex_lock_until(&mx, in_ns(2 * MS)), -ETIMEDOUT);
	atomic_store(&mx_step, 1);
	return NULL;
}

static void *mx_cancelled_waiter(void *arg)
{
	(void)arg;
	atomic_store(&mx_step, 2);
	CHECK_EQ(jf_mutex_lock_until(&mx, UINT64_MAX), -ECANCELED);
	atomic_store(&mx_step, 3);
	return NULL;
}

static void check_mutex(void)
{
	jf_thread_t *t;

	CHECK_EQ(jf_mutex_lock_until(&mx, UINT64_MAX), 0);
	CHECK_EQ(jf_mutex_lock_until(&mx, UINT64_MAX), -EDEADLK);
	CHECK_EQ(jf_mutex_destroy(&mx), -EBUSY);
	/* a deadline already past: no wait, no queueing */
	t = jft_spawn_on(1, mx_timed_waiter, NULL);
	jft_join(t);
	CHECK_EQ(atomic_load(&mx_step), 1);
	/* the timed-out waiter left nothing behind: the fast unlock path works, the mutex is free */
	CHECK_EQ(jf_mutex_unlock(&mx), 0);
	CHECK_EQ(jf_mutex_trylock(&mx), 0);
	/* cancellation ends a wait without a deadline, and the mutex is not handed to it later */
	t = jft_spawn_on(1, mx_cancelled_waiter, NULL);
	while (atomic_load(&mx_step) != 2)
		jf_yield();
	CHECK_EQ(jf_sleep_ns(MS), 0);
	CHECK_EQ(jf_cancel(t), 0);
	jft_join(t);
	CHECK_EQ(atomic_load(&mx_step), 3);
	CHECK_EQ(jf_mutex_unlock(&mx), 0);
	CHECK_EQ(jf_mutex_unlock(&mx), -EPERM);
	CHECK_EQ(jf_mutex_destroy(&mx), 0);
	/* a deadline in the past on a free mutex still takes it */
	CHECK_EQ(jf_mutex_lock_until(&mx, 0), 0);
	CHECK_EQ(jf_mutex_unlock(&mx), 0);
}

/* --- rwlock ----------------------------------------------------------------------------------- */

static jf_rwlock_t rw = JF_RWLOCK_INITIALIZER;
static atomic_int readers_in, max_readers_in, rw_events;

static void *reader(void *arg)
{
	int loops = (int)(intptr_t)arg;

	for (int i = 0; i < loops; i++) {
		CHECK_EQ(jf_rwlock_rdlock(&rw), 0);
		int n = atomic_fetch_add(&readers_in, 1) + 1;
		int m = atomic_load(&max_readers_in);
		while (n > m && !atomic_compare_exchange_weak(&max_readers_in, &m, n))
			;
		jf_yield();
		atomic_fetch_sub(&readers_in, 1);
		CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	}
	return NULL;
}

static void *late_reader(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_rwlock_rdlock(&rw), 0);
	atomic_fetch_add(&rw_events, 1);
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	return NULL;
}

static void *timed_writer(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_rwlock_wrlock_until(&rw, in_ns(3 * MS)), -ETIMEDOUT);
	return NULL;
}

static void *blocked_writer(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_rwlock_wrlock(&rw), 0);
	atomic_fetch_add(&rw_events, 100);
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	return NULL;
}

static void *not_owner_unlock(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_rwlock_unlock(&rw), -EPERM);
	CHECK_EQ(jf_rwlock_rdlock_until(&rw, in_ns(MS)), -ETIMEDOUT);
	CHECK_EQ(jf_rwlock_tryrdlock(&rw), -EBUSY);
	CHECK_EQ(jf_rwlock_trywrlock(&rw), -EBUSY);
	return NULL;
}

static void check_rwlock(void)
{
	jf_thread_t *t[8], *w, *r;

	/* readers share: one gets in while we hold it for reading */
	CHECK_EQ(jf_rwlock_rdlock(&rw), 0);
	jft_join(jft_spawn_on(1, late_reader, NULL));
	CHECK_EQ(atomic_load(&rw_events), 1);
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	atomic_store(&rw_events, 0);
	for (int i = 0; i < 4; i++)
		t[i] = jft_spawn_on(i % 2, reader, (void *)(intptr_t)200);
	for (int i = 0; i < 4; i++)
		jft_join(t[i]);
	CHECK_EQ(atomic_load(&readers_in), 0);
	CHECK_EQ(jf_rwlock_destroy(&rw), 0);

	/* a writer excludes; misuse */
	CHECK_EQ(jf_rwlock_unlock(&rw), -EPERM);
	CHECK_EQ(jf_rwlock_wrlock(&rw), 0);
	CHECK_EQ(jf_rwlock_wrlock(&rw), -EDEADLK);
	CHECK_EQ(jf_rwlock_rdlock(&rw), -EDEADLK);
	CHECK_EQ(jf_rwlock_destroy(&rw), -EBUSY);
	jft_join(jft_spawn_on(1, not_owner_unlock, NULL));
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);

	/* phase-fair: with a reader in and a writer waiting, a new reader waits for the writer */
	CHECK_EQ(jf_rwlock_rdlock(&rw), 0);
	w = jft_spawn_on(1, blocked_writer, NULL);
	CHECK_EQ(jf_sleep_ns(2 * MS), 0);
	CHECK_EQ(jf_rwlock_tryrdlock(&rw), -EBUSY);
	r = jft_spawn_on(1, late_reader, NULL);
	CHECK_EQ(jf_sleep_ns(2 * MS), 0);
	CHECK_EQ(atomic_load(&rw_events), 0); /* neither got in while we read */
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	jft_join(w);
	jft_join(r);
	CHECK_EQ(atomic_load(&rw_events), 101);

	/* a writer that gives up lets in the reader it held back, while the first reader reads */
	atomic_store(&rw_events, 0);
	CHECK_EQ(jf_rwlock_rdlock(&rw), 0);
	w = jft_spawn_on(1, timed_writer, NULL);
	CHECK_EQ(jf_sleep_ns(MS), 0);
	r = jft_spawn_on(1, late_reader, NULL);
	jft_join(w);
	jft_join(r); /* we still hold our read lock: it got in beside us */
	CHECK_EQ(atomic_load(&rw_events), 1);
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	CHECK_EQ(jf_rwlock_destroy(&rw), 0);
	CHECK_EQ(jf_rwlock_trywrlock(&rw), 0);
	CHECK_EQ(jf_rwlock_unlock(&rw), 0);
}

/* --- semaphore -------------------------------------------------------------------------------- */

static jf_sem_t sem = JF_SEM_INITIALIZER(2);
static atomic_int order[4];
static atomic_int nslots, norder;

static void *sem_waiter(void *arg)
{
	CHECK_EQ(jf_sem_wait(&sem), 0);
	atomic_store(&order[atomic_fetch_add(&nslots, 1)], (int)(intptr_t)arg);
	atomic_fetch_add(&norder, 1); /* after the slot is written */
	return NULL;
}

static void *sem_cancelled(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_sem_wait(&sem), -ECANCELED);
	return NULL;
}

static void check_sem(void)
{
	jf_thread_t *t[4];
	jf_sem_t big;

	CHECK_EQ(jf_sem_value(&sem), 2);
	CHECK_EQ(jf_sem_trywait(&sem), 0);
	CHECK_EQ(jf_sem_wait(&sem), 0);
	CHECK_EQ(jf_sem_trywait(&sem), -EAGAIN);
	CHECK_EQ(jf_sem_wait_until(&sem, in_ns(MS)), -ETIMEDOUT);
	CHECK_EQ(jf_sem_destroy(&sem), 0);
	/* FIFO handoff, on one worker so the queueing order is known */
	for (int i = 0; i < 3; i++) {
		t[i] = jft_spawn_on(0, sem_waiter, (void *)(intptr_t)i);
		CHECK_EQ(jf_sleep_ns(MS / 2), 0);
	}
	CHECK_EQ(jf_sem_destroy(&sem), -EBUSY);
	/* a cancelled waiter takes nothing: the three posts below reach the three others */
	t[3] = jft_spawn_on(0, sem_cancelled, NULL);
	CHECK_EQ(jf_sleep_ns(MS / 2), 0);
	CHECK_EQ(jf_cancel(t[3]), 0);
	jft_join(t[3]);
	for (int i = 0; i < 3; i++) {
		/* one unit at a time: the oldest waiter gets it */
		CHECK_EQ(jf_sem_post(&sem), 0);
		while (atomic_load(&norder) != i + 1)
			jf_yield();
		CHECK_EQ(atomic_load(&order[i]), i);
	}
	for (int i = 0; i < 3; i++)
		jft_join(t[i]);
	CHECK_EQ(jf_sem_value(&sem), 0);
	CHECK_EQ(jf_sem_init(&big, JF_SEM_VALUE_MAX + 1), -EINVAL);
	CHECK_EQ(jf_sem_init(&big, JF_SEM_VALUE_MAX), 0);
	CHECK_EQ(jf_sem_post(&big), -EOVERFLOW);
	CHECK_EQ(jf_sem_value(&big), JF_SEM_VALUE_MAX);
}

/* --- barrier ---------------------------------------------------------------------------------- */

#define PARTIES 5
#define ROUNDS 50
static jf_barrier_t bar = JF_BARRIER_INITIALIZER(PARTIES);
static atomic_int arrived[ROUNDS], serials;

static void *party(void *arg)
{
	(void)arg;
	for (int r = 0; r < ROUNDS; r++) {
		atomic_fetch_add(&arrived[r], 1);
		int s = jf_barrier_wait(&bar);
		CHECK(s == 0 || s == JF_BARRIER_SERIAL);
		if (s == JF_BARRIER_SERIAL)
			atomic_fetch_add(&serials, 1);
		CHECK_EQ(atomic_load(&arrived[r]), PARTIES); /* nobody left before all came */
	}
	return NULL;
}

static void check_barrier(void)
{
	jf_thread_t *t[PARTIES];
	jf_barrier_t b0 = {0};

	CHECK_EQ(jf_barrier_wait(&b0), -EINVAL);
	CHECK_EQ(jf_barrier_init(&b0, 0), -EINVAL);
	for (int i = 0; i < PARTIES; i++)
		t[i] = jft_spawn_on(i % 2, party, NULL);
	for (int i = 0; i < PARTIES; i++)
		jft_join(t[i]);
	CHECK_EQ(atomic_load(&serials), ROUNDS);
	CHECK_EQ(jf_barrier_init(&b0, 1), 0);
	CHECK_EQ(jf_barrier_wait(&b0), JF_BARRIER_SERIAL);
	CHECK_EQ(jf_barrier_destroy(&b0), 0);
	CHECK_EQ(jf_barrier_wait(&b0), -EINVAL);
}

/* --- once ------------------------------------------------------------------------------------- */

static jf_once_t once = JF_ONCE_INIT, once_rec = JF_ONCE_INIT, once_outside = JF_ONCE_INIT;
static atomic_int once_runs, once_done, rec_result;

static void once_fn(void)
{
	atomic_fetch_add(&once_runs, 1);
	for (int i = 0; i < 5; i++)
		jf_yield(); /* the others arrive while it runs */
	CHECK_EQ(jf_sleep_ns(MS), 0);
	atomic_store(&once_done, 1);
}

static void *once_caller(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_once(&once, once_fn), 0);
	CHECK_EQ(atomic_load(&once_done), 1); /* returned only after it finished */
	return NULL;
}

static void rec_fn(void)
{
	atomic_store(&rec_result, jf_once(&once_rec, rec_fn));
}

static void outside_fn(void)
{
	atomic_fetch_add(&once_runs, 100);
}

static void check_once(void)
{
	jf_thread_t *t[8];

	for (int i = 0; i < 8; i++)
		t[i] = jft_spawn_on(i % 2, once_caller, NULL);
	for (int i = 0; i < 8; i++)
		jft_join(t[i]);
	CHECK_EQ(atomic_load(&once_runs), 1);
	CHECK_EQ(jf_once(&once_rec, rec_fn), 0);
	CHECK_EQ(atomic_load(&rec_result), -EDEADLK);
	CHECK_EQ(jf_once(NULL, once_fn), -EINVAL);
	CHECK_EQ(jf_once(&once_outside, outside_fn), 0); /* ran before jf_run(): not again */
	CHECK_EQ(atomic_load(&once_runs), 1);
}

/* --- waitgroup -------------------------------------------------------------------------------- */

static void check_waitgroup(void)
{
	jf_waitgroup_t wg = JF_WAITGROUP_INITIALIZER;

	CHECK_EQ(jf_waitgroup_add(&wg, 1), 0);
	CHECK_EQ(jf_waitgroup_wait_until(&wg, in_ns(MS)), -ETIMEDOUT);
	CHECK_EQ(jf_waitgroup_destroy(&wg), 0);
	CHECK_EQ(jf_waitgroup_done(&wg), 0);
	CHECK_EQ(jf_waitgroup_wait_until(&wg, 0), 0);
}

static void *main_fn(void *arg)
{
	(void)arg;
	check_mutex();
	check_rwlock();
	check_sem();
	check_barrier();
	check_once();
	check_waitgroup();
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	jf_sem_t s = JF_SEM_INITIALIZER(0);
	jf_rwlock_t r = JF_RWLOCK_INITIALIZER;
	jf_barrier_t b = JF_BARRIER_INITIALIZER(2);
	jf_waitgroup_t wg = JF_WAITGROUP_INITIALIZER;

	/* outside a uthread: -EPERM, nothing changed (a post with no waiter is allowed) */
	CHECK_EQ(jf_mutex_lock_until(&mx, UINT64_MAX), -EPERM);
	CHECK_EQ(jf_sem_wait(&s), -EPERM);
	CHECK_EQ(jf_sem_post(&s), 0);
	CHECK_EQ(jf_sem_trywait(&s), 0);
	CHECK_EQ(jf_rwlock_rdlock(&r), -EPERM);
	CHECK_EQ(jf_rwlock_wrlock(&r), -EPERM);
	CHECK_EQ(jf_rwlock_unlock(&r), -EPERM);
	CHECK_EQ(jf_barrier_wait(&b), -EPERM);
	CHECK_EQ(jf_waitgroup_wait(&wg), -EPERM);
	CHECK_EQ(jf_once(&once_outside, outside_fn), 0);
	CHECK_EQ(atomic_load(&once_runs), 100);
	atomic_store(&once_runs, 0);

	jft_config(&cfg, 2);
	jft_run(&cfg, main_fn, NULL);
	jft_ok("sync.prims");
	return 0;
}
