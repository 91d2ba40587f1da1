/*
 * sync/test_storm.c - conformance storms: every lock-like primitive hammered by uthreads on 2
 * workers under every policy x {none, timer, deadline} (sync/matrix.h), with timeouts and
 * cancellations racing with the wakeups, each ending in a count that proves nothing was lost or
 * duplicated:
 *   mutex:   lock / lock_until (deadlines of 0-30 us) / trylock; never two holders; the
 *            protected counter equals the acquisitions that succeeded.
 *   rwlock:  writers keep a == b under a write hold, readers see a == b; timed both ways; the
 *            final a equals the writes that succeeded.
 *   sem:     producers post a known number of units; consumers take with wait / wait_until /
 *            trywait, some cancelled while they wait; units taken + units left == units posted.
 *   barrier: rounds of parties; every party sees the whole round arrive, one serial per round.
 *   once:    a fresh once per round, many callers: the function ran once per round.
 *   cond + waitgroup: a bounded queue of values under a mutex with timed waits, a wait group
 *            with timed waits; the sum of values consumed equals the sum produced.
 * Everything is counted with atomics outside the primitive under test; a failed check names the
 * cell (printed before it runs).
 */
#include <stdatomic.h>

#include "sync/matrix.h"

#define US 1000ull
#define WORKERS 2

static int rounds; /* per cell: scaled for the sanitizers */

static uint64_t rnd(uint64_t *s)
{
	return jft_splitmix64(s);
}

/* --- mutex ------------------------------------------------------------------------------------ */

static jf_mutex_t mx;
static long mx_counter;
static jf_thread_t *mx_holder;
static atomic_long mx_acq, mx_timeouts;

static void *mx_worker(void *arg)
{
	uint64_t s = (uint64_t)(intptr_t)arg * 7919u + 1;

	for (int i = 0; i < rounds * 4; i++) {
		uint64_t r = rnd(&s);
		int rc;

		switch (r % 3) {
		case 0:
			jf_mutex_lock(&mx);
			rc = 0;
			break;
		case 1:
			rc = jf_mutex_lock_until(&mx, jf_now_ns() + (r >> 8) % (30 * US));
			break;
		default:
			rc = jf_mutex_trylock(&mx);
			break;
		}
		if (rc != 0) {
			CHECK(rc == -ETIMEDOUT || rc == -EBUSY);
			atomic_fetch_add(&mx_timeouts, 1);
			continue;
		}
		CHECK(mx_holder == NULL);
		mx_holder = jf_self();
		long v = mx_counter;
		if ((r >> 20) % 8 == 0)
			jf_yield();
		mx_counter = v + 1;
		CHECK(mx_holder == jf_self());
		mx_holder = NULL;
		CHECK_EQ(jf_mutex_unlock(&mx), 0);
		atomic_fetch_add(&mx_acq, 1);
	}
	return NULL;
}

/* --- rwlock ----------------------------------------------------------------------------------- */

static jf_rwlock_t rw;
static long rw_a, rw_b;
static atomic_long rw_writes;

static void *rw_writer(void *arg)
{
	uint64_t s = (uint64_t)(intptr_t)arg * 104729u + 3;

	for (int i = 0; i < rounds * 2; i++) {
		uint64_t r = rnd(&s);
		int rc = r & 1 ? jf_rwlock_wrlock(&rw)
			       : jf_rwlock_wrlock_until(&rw, jf_now_ns() + (r >> 8) % (40 * US));
		if (rc) {
			CHECK_EQ(rc, -ETIMEDOUT);
			continue;
		}
		rw_a++;
		if ((r >> 16) % 4 == 0)
			jf_yield();
		rw_b++;
		CHECK_EQ(jf_rwlock_unlock(&rw), 0);
		atomic_fetch_add(&rw_writes, 1);
	}
	return NULL;
}

static void *rw_reader(void *arg)
{
	uint64_t s = (uint64_t)(intptr_t)arg * 15485863u + 5;

	for (int i = 0; i < rounds * 4; i++) {
		uint64_t r = rnd(&s);
		int rc = r % 3 == 0   ? jf_rwlock_rdlock(&rw)
			 : r % 3 == 1 ? jf_rwlock_rdlock_until(&rw, jf_now_ns() + (r >> 8) % (20 * US))
				      : jf_rwlock_tryrdlock(&rw);
		if (rc) {
			CHECK(rc == -ETIMEDOUT || rc == -EBUSY);
			continue;
		}
		CHECK_EQ(__atomic_load_n(&rw_a, __ATOMIC_RELAXED),
			 __atomic_load_n(&rw_b, __ATOMIC_RELAXED));
		if ((r >> 16) % 4 == 0)
			jf_yield();
		CHECK_EQ(jf_rwlock_unlock(&rw), 0);
	}
	return NULL;
}

/* --- semaphore -------------------------------------------------------------------------------- */

static jf_sem_t sem;
static atomic_long sem_posted, sem_taken, sem_cancelled;
static atomic_int producers_left;

static void *sem_producer(void *arg)
{
	uint64_t s = (uint64_t)(intptr_t)arg + 11;

	for (int i = 0; i < rounds * 4; i++) {
		CHECK_EQ(jf_sem_post(&sem), 0);
		atomic_fetch_add(&sem_posted, 1);
		if (rnd(&s) % 4 == 0)
			jf_yield();
	}
	atomic_fetch_sub(&producers_left, 1);
	return NULL;
}

static void *sem_consumer(void *arg)
{
	uint64_t s = (uint64_t)(intptr_t)arg + 13;

	while (atomic_load(&producers_left) > 0 || jf_sem_value(&sem) > 0) {
		uint64_t r = rnd(&s);
		int rc = r % 3 == 0   ? jf_sem_wait_until(&sem, jf_now_ns() + (r >> 8) % (50 * US))
			 : r % 3 == 1 ? jf_sem_trywait(&sem)
				      : jf_sem_wait_until(&sem, jf_now_ns() + 200 * US);
		if (rc == 0) {
			atomic_fetch_add(&sem_taken, 1);
			continue;
		}
		if (rc == -ECANCELED) {
			atomic_fetch_add(&sem_cancelled, 1);
			return NULL;
		}
		CHECK(rc == -ETIMEDOUT || rc == -EAGAIN);
		if (rc == -EAGAIN)
			jf_yield();
	}
	return NULL;
}

/* A consumer that waits without a deadline until it is cancelled (or takes units meanwhile). */
static void *sem_victim(void *arg)
{
	(void)arg;
	for (;;) {
		int rc = jf_sem_wait(&sem);
		if (rc == -ECANCELED) {
			atomic_fetch_add(&sem_cancelled, 1);
			return NULL;
		}
		CHECK_EQ(rc, 0);
		atomic_fetch_add(&sem_taken, 1);
	}
}

/* --- barrier and once ------------------------------------------------------------------------- */

#define PARTIES 4
static jf_barrier_t bar;
static atomic_int bar_arrived, bar_serials;
static jf_once_t onces[64];
static atomic_int once_runs;

static void once_fn(void)
{
	atomic_fetch_add(&once_runs, 1);
	jf_yield();
}

static void *bar_party(void *arg)
{
	(void)arg;
	int n = rounds / 4 < 64 ? rounds / 4 : 64;

	for (int r = 0; r < n; r++) {
		CHECK_EQ(jf_once(&onces[r], once_fn), 0);
		CHECK_EQ(atomic_load(&once_runs), r + 1);
		atomic_fetch_add(&bar_arrived, 1);
		int s = jf_barrier_wait(&bar);
		CHECK(s == 0 || s == JF_BARRIER_SERIAL);
		if (s)
			atomic_fetch_add(&bar_serials, 1);
		CHECK_GE(atomic_load(&bar_arrived), (r + 1) * PARTIES);
		/* nobody may arrive for round r+1 before all of round r have left: a second barrier */
		s = jf_barrier_wait(&bar);
		CHECK(s == 0 || s == JF_BARRIER_SERIAL);
		if (s)
			atomic_fetch_add(&bar_serials, 1);
	}
	return NULL;
}

/* --- cond + waitgroup: a bounded queue -------------------------------------------------------- */

#define QCAP 8
static jf_mutex_t qm;
static jf_cond_t q_notfull, q_notempty;
static long q_buf[QCAP];
static int q_head, q_len;
static atomic_long q_sum_in, q_sum_out, q_items_out;
static jf_waitgroup_t q_wg;
static long q_items;

static void *q_producer(void *arg)
{
	long base = (long)(intptr_t)arg * 1000000;

	for (long i = 1; i <= rounds * 2; i++) {
		jf_mutex_lock(&qm);
		while (q_len == QCAP) {
			int rc = jf_cond_timedwait(&q_notfull, &qm, jf_now_ns() + 30 * US);
			CHECK(rc == 0 || rc == -ETIMEDOUT);
		}
		q_buf[(q_head + q_len++) % QCAP] = base + i;
		atomic_fetch_add(&q_sum_in, base + i);
		jf_cond_signal(&q_notempty);
		CHECK_EQ(jf_mutex_unlock(&qm), 0);
	}
	CHECK_EQ(jf_waitgroup_done(&q_wg), 0);
	return NULL;
}

static void *q_consumer(void *arg)
{
	(void)arg;
	for (;;) {
		jf_mutex_lock(&qm);
		while (q_len == 0) {
			if (atomic_load(&q_items_out) == q_items) {
				CHECK_EQ(jf_mutex_unlock(&qm), 0);
				return NULL;
			}
			int rc = jf_cond_timedwait(&q_notempty, &qm, jf_now_ns() + 50 * US);
			CHECK(rc == 0 || rc == -ETIMEDOUT);
		}
		long v = q_buf[q_head];
		q_head = (q_head + 1) % QCAP;
		q_len--;
		atomic_fetch_add(&q_sum_out, v);
		atomic_fetch_add(&q_items_out, 1);
		jf_cond_signal(&q_notfull);
		CHECK_EQ(jf_mutex_unlock(&qm), 0);
	}
}

/* --- one cell --------------------------------------------------------------------------------- */

static void reset(void)
{
	jf_mutex_init(&mx);
	mx_counter = 0;
	mx_holder = NULL;
	atomic_store(&mx_acq, 0);
	atomic_store(&mx_timeouts, 0);
	jf_rwlock_init(&rw);
	rw_a = rw_b = 0;
	atomic_store(&rw_writes, 0);
	CHECK_EQ(jf_sem_init(&sem, 0), 0);
	atomic_store(&sem_posted, 0);
	atomic_store(&sem_taken, 0);
	atomic_store(&sem_cancelled, 0);
	CHECK_EQ(jf_barrier_init(&bar, PARTIES), 0);
	atomic_store(&bar_arrived, 0);
	atomic_store(&bar_serials, 0);
	memset(onces, 0, sizeof(onces));
	atomic_store(&once_runs, 0);
	jf_mutex_init(&qm);
	jf_cond_init(&q_notfull);
	jf_cond_init(&q_notempty);
	q_head = q_len = 0;
	atomic_store(&q_sum_in, 0);
	atomic_store(&q_sum_out, 0);
	atomic_store(&q_items_out, 0);
	jf_waitgroup_init(&q_wg);
}

#define MAXT 40

static void *cell(void *arg)
{
	jf_thread_t *t[MAXT], *victims[2];
	int n = 0;

	(void)arg;
	reset();
	for (int i = 0; i < 6; i++)
		t[n++] = jft_spawn_on(i % WORKERS, mx_worker, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		t[n++] = jft_spawn_on(i % WORKERS, rw_writer, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		t[n++] = jft_spawn_on(i % WORKERS, rw_reader, (void *)(intptr_t)i);
	atomic_store(&producers_left, 3);
	for (int i = 0; i < 3; i++)
		t[n++] = jft_spawn_on(i % WORKERS, sem_producer, (void *)(intptr_t)i);
	for (int i = 0; i < 3; i++)
		t[n++] = jft_spawn_on(i % WORKERS, sem_consumer, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		victims[i] = jft_spawn_on(i % WORKERS, sem_victim, NULL);
	for (int i = 0; i < PARTIES; i++)
		t[n++] = jft_spawn_on(i % WORKERS, bar_party, NULL);
	q_items = 3L * rounds * 2;
	CHECK_EQ(jf_waitgroup_add(&q_wg, 3), 0);
	for (int i = 0; i < 3; i++)
		t[n++] = jft_spawn_on(i % WORKERS, q_producer, (void *)(intptr_t)(i + 1));
	for (int i = 0; i < 2; i++)
		t[n++] = jft_spawn_on(i % WORKERS, q_consumer, NULL);
	for (;;) {
		int rc = jf_waitgroup_wait_until(&q_wg, jf_now_ns() + 100 * US);
		if (rc == 0)
			break;
		CHECK_EQ(rc, -ETIMEDOUT);
	}
	CHECK_EQ(jf_cancel(victims[0]), 0); /* cancelled while it waits, or between two units */
	for (int i = 0; i < n; i++)
		jft_join(t[i]);
	CHECK_EQ(jf_cancel(victims[1]), 0);
	for (int i = 0; i < 2; i++)
		jft_join(victims[i]);

	CHECK_EQ(mx_counter, atomic_load(&mx_acq));
	CHECK_EQ(atomic_load(&mx_acq) + atomic_load(&mx_timeouts), 6L * rounds * 4);
	CHECK_EQ(jf_mutex_destroy(&mx), 0);
	CHECK_EQ(rw_a, atomic_load(&rw_writes));
	CHECK_EQ(rw_b, rw_a);
	CHECK_EQ(jf_rwlock_destroy(&rw), 0);
	CHECK_EQ(atomic_load(&sem_posted), 3L * rounds * 4);
	CHECK_EQ(atomic_load(&sem_taken) + (long)jf_sem_value(&sem), atomic_load(&sem_posted));
	CHECK_EQ(atomic_load(&sem_cancelled), 2);
	CHECK_EQ(jf_sem_destroy(&sem), 0);
	int nb = rounds / 4 < 64 ? rounds / 4 : 64;
	CHECK_EQ(atomic_load(&bar_serials), 2 * nb);
	CHECK_EQ(atomic_load(&once_runs), nb);
	CHECK_EQ(jf_barrier_destroy(&bar), 0);
	CHECK_EQ(atomic_load(&q_items_out), q_items);
	CHECK_EQ(atomic_load(&q_sum_out), atomic_load(&q_sum_in));
	CHECK_EQ(jf_cond_destroy(&q_notempty), 0);
	CHECK_EQ(jf_waitgroup_destroy(&q_wg), 0);
	return NULL;
}

int main(void)
{
	rounds = JFT_SCALE(600, 150);
	jft_clear_jiffy_env();
	jft_matrix_run("sync.storm", WORKERS, cell, NULL);
	jft_ok("sync.storm");
	return 0;
}
