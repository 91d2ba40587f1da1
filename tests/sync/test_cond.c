/*
 * sync/test_cond.c - proves jf_cond_t works with jf_mutex_t across workers: a bounded buffer with
 * 4 producers and 4 consumers on 2 workers delivers every item exactly once (per-item marks, sum
 * and xor); broadcast wakes every waiter, each after a single wait (no spurious wakeups);
 * timedwait returns -ETIMEDOUT no earlier than its deadline (lower bound only) and 0 when
 * signalled before it, holding the mutex either way, also when timeouts and signals race;
 * waiting without holding the mutex returns -EPERM.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define MS 1000000ull

/* ---- bounded buffer ---- */

#define CAP 8
#define NPROD 4
#define NCONS 4

static long items_per_producer;
static jf_mutex_t bm = JF_MUTEX_INITIALIZER;
static jf_cond_t not_full = JF_COND_INITIALIZER, not_empty = JF_COND_INITIALIZER;
static uint64_t buf[CAP];
static int head, count;
static long taken, total;
static unsigned char *seen;
static atomic_ullong csum, cxor;

static void *producer(void *arg)
{
	long p = (long)(intptr_t)arg, i;

	for (i = 0; i < items_per_producer; i++) {
		uint64_t item = (uint64_t)(p * items_per_producer + i + 1);

		jf_mutex_lock(&bm);
		while (count == CAP)
			CHECK_EQ(jf_cond_wait(&not_full, &bm), 0);
		buf[(head + count) % CAP] = item;
		count++;
		jf_cond_signal(&not_empty);
		CHECK_EQ(jf_mutex_unlock(&bm), 0);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long mine = 0;

	(void)arg;
	for (;;) {
		uint64_t item;

		jf_mutex_lock(&bm);
		while (count == 0 && taken < total)
			CHECK_EQ(jf_cond_wait(&not_empty, &bm), 0);
		if (taken == total) {
			jf_cond_broadcast(&not_empty); /* release the other consumers */
			CHECK_EQ(jf_mutex_unlock(&bm), 0);
			break;
		}
		item = buf[head];
		head = (head + 1) % CAP;
		count--;
		taken++;
		CHECK(item >= 1 && item <= (uint64_t)total);
		seen[item]++;
		jf_cond_signal(&not_full);
		CHECK_EQ(jf_mutex_unlock(&bm), 0);

		atomic_fetch_add(&csum, item);
		atomic_fetch_xor(&cxor, item);
		mine++;
	}
	return (void *)(intptr_t)mine;
}

static void check_bounded_buffer(void)
{
	jf_thread_t *p[NPROD], *c[NCONS];
	uint64_t esum = 0, exor = 0, i;
	long consumed = 0;
	int k;

	total = NPROD * items_per_producer;
	seen = calloc((size_t)total + 1, 1);
	CHECK(seen != NULL);
	for (k = 0; k < NCONS; k++)
		c[k] = jft_spawn_on(k % 2, consumer, NULL);
	for (k = 0; k < NPROD; k++)
		p[k] = jft_spawn_on((k + 1) % 2, producer, (void *)(intptr_t)k);
	for (k = 0; k < NPROD; k++)
		jft_join(p[k]);
	for (k = 0; k < NCONS; k++)
		consumed += (long)(intptr_t)jft_join(c[k]);

	CHECK_EQ(consumed, total);
	CHECK_EQ(count, 0);
	for (i = 1; i <= (uint64_t)total; i++) {
		if (seen[i] != 1) {
			fprintf(stderr, "item %llu consumed %d times\n", (unsigned long long)i,
				seen[i]);
			CHECK_EQ(seen[i], 1);
		}
		esum += i;
		exor ^= i;
	}
	CHECK_EQ(atomic_load(&csum), esum);
	CHECK_EQ(atomic_load(&cxor), exor);
	free(seen);
}

/* ---- broadcast ---- */

#define NBCAST 10

static jf_mutex_t wm = JF_MUTEX_INITIALIZER;
static jf_cond_t wcv = JF_COND_INITIALIZER;
static int go, waiting;
static atomic_int woke;

static void *bcast_waiter(void *arg)
{
	jf_mutex_lock(&wm);
	waiting++;
	/* One wait, no loop: there are no spurious wakeups, so waking means go was set. */
	CHECK_EQ(jf_cond_wait(&wcv, &wm), 0);
	CHECK_EQ(go, 1);
	CHECK_EQ(jf_mutex_unlock(&wm), 0);
	atomic_fetch_add(&woke, 1);
	return arg;
}

static void wait_for_waiters(int n)
{
	for (;;) {
		int w;

		jf_mutex_lock(&wm);
		w = waiting;
		CHECK_EQ(jf_mutex_unlock(&wm), 0);
		if (w == n)
			return;
		jf_yield();
	}
}

static void check_broadcast(void)
{
	jf_thread_t *t[NBCAST];
	uint64_t deadline;
	int i;

	for (i = 0; i < NBCAST; i++)
		t[i] = jft_spawn_on(i % 3 - 1, bcast_waiter, (void *)(intptr_t)i);
	wait_for_waiters(NBCAST);
	jf_mutex_lock(&wm);
	go = 1;
	jf_cond_broadcast(&wcv);
	CHECK_EQ(jf_mutex_unlock(&wm), 0);

	/* Fail with a message rather than hang if some waiter was not woken. */
	deadline = jf_now_ns() + 20000 * MS;
	while (atomic_load(&woke) < NBCAST) {
		if (jf_now_ns() > deadline) {
			fprintf(stderr, "broadcast woke %d of %d waiters\n", atomic_load(&woke),
				NBCAST);
			CHECK(!"broadcast did not wake every waiter");
		}
		jf_sleep_ns(100000);
	}
	for (i = 0; i < NBCAST; i++)
		CHECK_EQ((intptr_t)jft_join(t[i]), i);

	/* Signal and broadcast with nobody waiting are no-ops. */
	jf_cond_signal(&wcv);
	jf_cond_broadcast(&wcv);
}

/* ---- timed wait ---- */

static jf_mutex_t tm = JF_MUTEX_INITIALIZER;
static jf_cond_t tcv = JF_COND_INITIALIZER;
static int tflag, twaiting;

static void check_timeout(void)
{
	static const uint64_t waits[] = {0, 100000, 1 * MS, 5 * MS};
	size_t i;

	jf_mutex_lock(&tm);
	for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		uint64_t deadline = jf_now_ns() + waits[i];
		int rc = jf_cond_timedwait(&tcv, &tm, deadline);

		CHECK_EQ(rc, -ETIMEDOUT);
		CHECK_GE(jf_now_ns(), deadline);
	}
	/* A deadline already past. */
	CHECK_EQ(jf_cond_timedwait(&tcv, &tm, 0), -ETIMEDOUT);
	CHECK_EQ(jf_cond_timedwait(&tcv, &tm, jf_now_ns() - 1), -ETIMEDOUT);
	/* The mutex is held again after every timeout. */
	CHECK_EQ(jf_mutex_trylock(&tm), -EBUSY);
	CHECK_EQ(jf_mutex_unlock(&tm), 0);
}

static void *timed_waiter(void *arg)
{
	int rc;

	(void)arg;
	jf_mutex_lock(&tm);
	twaiting = 1;
	rc = jf_cond_timedwait(&tcv, &tm, jf_now_ns() + 60000 * MS);
	CHECK_EQ(rc, 0);
	CHECK_EQ(tflag, 1);
	CHECK_EQ(jf_mutex_unlock(&tm), 0);
	return NULL;
}

static void check_signalled_before_deadline(void)
{
	jf_thread_t *t;
	int w;

	tflag = twaiting = 0;
	t = jft_spawn_on(1, timed_waiter, NULL);
	do {
		jf_yield();
		jf_mutex_lock(&tm);
		w = twaiting;
		CHECK_EQ(jf_mutex_unlock(&tm), 0);
	} while (!w);
	jf_mutex_lock(&tm);
	tflag = 1;
	jf_cond_signal(&tcv);
	CHECK_EQ(jf_mutex_unlock(&tm), 0);
	jft_join(t);
}

/* Timeouts racing with signals: each wait ends exactly once, with 0 or -ETIMEDOUT, holding the
 * mutex; a signalled waiter is never also timed out (or woken twice) by the timer. */
static jf_mutex_t rm = JF_MUTEX_INITIALIZER;
static jf_cond_t rcv = JF_COND_INITIALIZER;
static long race_rounds;
static atomic_int race_done;
static atomic_long race_signalled, race_timeouts;

static void *race_waiter(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < race_rounds; i++) {
		int rc;

		jf_mutex_lock(&rm);
		rc = jf_cond_timedwait(&rcv, &rm, jf_now_ns() + 1000 + (uint64_t)(i % 50) * 1000);
		CHECK(rc == 0 || rc == -ETIMEDOUT);
		CHECK_EQ(jf_mutex_trylock(&rm), -EBUSY);
		CHECK_EQ(jf_mutex_unlock(&rm), 0);
		if (rc == 0)
			atomic_fetch_add(&race_signalled, 1);
		else
			atomic_fetch_add(&race_timeouts, 1);
	}
	atomic_fetch_add(&race_done, 1);
	return NULL;
}

static void *race_signaller(void *arg)
{
	long n = 0;

	(void)arg;
	while (atomic_load(&race_done) < 2) {
		jf_mutex_lock(&rm);
		if (n++ % 2)
			jf_cond_signal(&rcv);
		else
			jf_cond_broadcast(&rcv);
		CHECK_EQ(jf_mutex_unlock(&rm), 0);
		if (n % 3 == 0)
			jf_sleep_ns((uint64_t)(n % 40) * 1000);
		else
			jf_yield();
	}
	return NULL;
}

static void check_timeout_signal_race(void)
{
	jf_thread_t *w0, *w1, *s0;

	race_rounds = JFT_SCALE(5000L, 1000L);
	w0 = jft_spawn_on(0, race_waiter, NULL);
	w1 = jft_spawn_on(1, race_waiter, NULL);
	s0 = jft_spawn_on(1, race_signaller, NULL);
	jft_join(w0);
	jft_join(w1);
	jft_join(s0);
	CHECK_EQ(atomic_load(&race_signalled) + atomic_load(&race_timeouts), 2 * race_rounds);
	printf("timedwait race: %ld signalled, %ld timed out\n", atomic_load(&race_signalled),
	       atomic_load(&race_timeouts));
}

/* ---- misuse ---- */

static jf_mutex_t em = JF_MUTEX_INITIALIZER;
static jf_cond_t ecv = JF_COND_INITIALIZER;

static void *wait_on_foreign_mutex(void *arg)
{
	(void)arg;
	/* em is held by main. */
	CHECK_EQ(jf_cond_wait(&ecv, &em), -EPERM);
	CHECK_EQ(jf_cond_timedwait(&ecv, &em, jf_now_ns() + MS), -EPERM);
	return NULL;
}

static void check_eperm(void)
{
	CHECK_EQ(jf_cond_wait(&ecv, &em), -EPERM);
	CHECK_EQ(jf_cond_timedwait(&ecv, &em, jf_now_ns() + MS), -EPERM);
	CHECK_EQ(jf_cond_timedwait(&ecv, &em, 0), -EPERM);
	jf_mutex_lock(&em);
	jft_join(jft_spawn(NULL, wait_on_foreign_mutex, NULL));
	CHECK_EQ(jf_mutex_unlock(&em), 0);
	/* The failed waits left the mutex usable. */
	CHECK_EQ(jf_mutex_trylock(&em), 0);
	CHECK_EQ(jf_mutex_unlock(&em), 0);
}

static void *main_fn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_nworkers(), 2);
	check_bounded_buffer();
	check_broadcast();
	check_timeout();
	check_signalled_before_deadline();
	check_timeout_signal_race();
	check_eperm();
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	items_per_producer = JFT_SCALE(25000L, 5000L);
	jft_config(&cfg, 2);
	cfg.workers = 2;
	jft_run(&cfg, main_fn, NULL);
	jft_ok("sync.cond");
	return 0;
}
