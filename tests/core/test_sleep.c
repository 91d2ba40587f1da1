/*
 * core/test_sleep.c - proves the clock and sleeping keep their promises: jf_now_ns() is on the
 * CLOCK_MONOTONIC time base (within 1 ms of clock_gettime, also after time passes), never goes
 * backwards within a uthread or across a handoff between workers, and names its source;
 * jf_sleep_ns()/jf_sleep_until() never wake early (lower bounds only: how late a wakeup comes
 * depends on the machine), return at once for 0 and past deadlines, refuse with -EPERM outside
 * the runtime; hundreds of concurrent sleepers with different durations on 2 workers all wake;
 * and on 1 worker a sleeper wakes although another uthread yields in a loop without blocking.
 */
#include <stdatomic.h>
#include <time.h>

#include "jf_test.h"

#define MS 1000000ull
#define US 1000ull

static uint64_t mono_ns(void)
{
	struct timespec ts;

	CHECK_EQ(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* jf_now_ns() lies within [before - 1 ms, after + 1 ms] of CLOCK_MONOTONIC readings around it. */
static void check_time_base(const char *when)
{
	uint64_t before = mono_ns();
	uint64_t now = jf_now_ns();
	uint64_t after = mono_ns();

	if (now + MS < before || now > after + MS) {
		fprintf(stderr, "%s: jf_now_ns %llu, CLOCK_MONOTONIC %llu..%llu\n", when,
			(unsigned long long)now, (unsigned long long)before,
			(unsigned long long)after);
		CHECK(!"jf_now_ns() is more than 1 ms off CLOCK_MONOTONIC");
	}
}

static void check_clock_outside(void)
{
	const char *src = jf_clock_source();
	uint64_t prev, i;

	CHECK(src != NULL);
	printf("clock source %s, TSC %llu Hz\n", src, (unsigned long long)jf_tsc_hz());
	CHECK(strcmp(src, "tsc") == 0 || strcmp(src, "clock_monotonic") == 0);
	if (strcmp(src, "tsc") == 0)
		CHECK(jf_tsc_hz() >= 100000000ull && jf_tsc_hz() <= 20000000000ull);
	else
		CHECK_EQ(jf_tsc_hz(), 0);

	check_time_base("outside");
	prev = jf_now_ns();
	for (i = 0; i < 100000; i++) {
		uint64_t now = jf_now_ns();

		CHECK_GE(now, prev);
		prev = now;
	}

	CHECK_EQ(jf_sleep_ns(1), -EPERM);
	CHECK_EQ(jf_sleep_ns(0), -EPERM);
	CHECK_EQ(jf_sleep_until(jf_now_ns() + 1), -EPERM);
}

/* ---- single sleeper: lower bounds ---- */

static void sleep_checked(uint64_t ns)
{
	uint64_t t0 = jf_now_ns(), t1;

	CHECK_EQ(jf_sleep_ns(ns), 0);
	t1 = jf_now_ns();
	if (t1 - t0 < ns) {
		fprintf(stderr, "jf_sleep_ns(%llu) woke after %llu ns\n", (unsigned long long)ns,
			(unsigned long long)(t1 - t0));
		CHECK(!"woke early");
	}
}

static void sleep_until_checked(uint64_t deadline)
{
	CHECK_EQ(jf_sleep_until(deadline), 0);
	CHECK_GE(jf_now_ns(), deadline);
}

static void check_single_sleeper(void)
{
	static const uint64_t durations[] = {0, 1, 500, 1 * US, 10 * US, 100 * US, 1 * MS,
					     5 * MS, 20 * MS};
	size_t i;

	for (i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		sleep_checked(durations[i]);
		sleep_until_checked(jf_now_ns() + durations[i]);
	}
	/* Deadlines already past: return at once, 0. */
	sleep_until_checked(0);
	sleep_until_checked(jf_now_ns() - 1);
	sleep_until_checked(jf_now_ns());
	check_time_base("after sleeping");
}

/* ---- many sleepers ---- */

static atomic_int woken;

static void *sleeper(void *arg)
{
	int i = (int)(intptr_t)arg;
	int round;

	for (round = 0; round < 3; round++) {
		uint64_t d = (uint64_t)((i * 37 + round * 11) % 50) * 100 * US + (uint64_t)i;

		if ((i + round) % 2)
			sleep_checked(d);
		else
			sleep_until_checked(jf_now_ns() + d);
	}
	atomic_fetch_add(&woken, 1);
	return (void *)(intptr_t)i;
}

static void check_many_sleepers(void)
{
	enum { N = 300 };
	static jf_thread_t *t[N];
	int i;

	atomic_store(&woken, 0);
	for (i = 0; i < N; i++)
		t[i] = jft_spawn_on(i % 3 - 1, sleeper, (void *)(intptr_t)i);
	for (i = 0; i < N; i++)
		CHECK_EQ((intptr_t)jft_join(t[i]), i);
	CHECK_EQ(atomic_load(&woken), N);
}

/* ---- monotonic across workers ---- */

static jf_mutex_t hm = JF_MUTEX_INITIALIZER;
static jf_cond_t hcv = JF_COND_INITIALIZER;
static int hturn;
static uint64_t hstamp;
static long hrounds;

/* Two uthreads on different workers hand a timestamp back and forth: each reading after a
 * handoff is >= the one taken before it on the other worker. */
static void *stamper(void *arg)
{
	int side = (int)(intptr_t)arg;
	uint64_t mine = 0;
	long i;

	for (i = 0; i < hrounds; i++) {
		uint64_t now;

		jf_mutex_lock(&hm);
		while (hturn != side)
			CHECK_EQ(jf_cond_wait(&hcv, &hm), 0);
		now = jf_now_ns();
		if (now < hstamp || now < mine) {
			fprintf(stderr, "worker %d read %llu after %llu (other) / %llu (own)\n",
				jf_worker_id(), (unsigned long long)now,
				(unsigned long long)hstamp, (unsigned long long)mine);
			CHECK(!"jf_now_ns went backwards across workers");
		}
		hstamp = now;
		mine = now;
		hturn = 1 - side;
		jf_cond_signal(&hcv);
		CHECK_EQ(jf_mutex_unlock(&hm), 0);
	}
	return NULL;
}

/* Free-running readers on both workers publish the largest value seen; a reader must never see
 * a published value more than a hair (out-of-order timestamp reads) ahead of its own clock. */
static atomic_ullong published;
static atomic_ullong worst_back;

static void *reader(void *arg)
{
	long i, n = (long)(intptr_t)arg;
	uint64_t prev = 0;

	for (i = 0; i < n; i++) {
		uint64_t seen = atomic_load(&published);
		uint64_t now = jf_now_ns();
		uint64_t cur;

		CHECK_GE(now, prev);
		prev = now;
		if (now < seen) {
			uint64_t back = seen - now, w = atomic_load(&worst_back);

			while (back > w && !atomic_compare_exchange_weak(&worst_back, &w, back))
				;
		}
		cur = atomic_load(&published);
		while (now > cur && !atomic_compare_exchange_weak(&published, &cur, now))
			;
		if (i % 1000 == 0)
			jf_yield();
	}
	return NULL;
}

static void check_monotonic_across_workers(void)
{
	jf_thread_t *a, *b;
	long n = JFT_SCALE(200000L, 50000L);

	hrounds = JFT_SCALE(20000L, 5000L);
	a = jft_spawn_on(0, stamper, (void *)0);
	b = jft_spawn_on(1, stamper, (void *)1);
	jft_join(a);
	jft_join(b);

	a = jft_spawn_on(0, reader, (void *)(intptr_t)n);
	b = jft_spawn_on(1, reader, (void *)(intptr_t)n);
	jft_join(a);
	jft_join(b);
	printf("largest cross-worker step back between free-running readers: %llu ns\n",
	       (unsigned long long)atomic_load(&worst_back));
	CHECK(atomic_load(&worst_back) < 1000);
}

static void *main_fn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_nworkers(), 2);
	check_time_base("inside");
	check_single_sleeper();
	check_many_sleepers();
	check_monotonic_across_workers();
	check_time_base("at the end");
	return NULL;
}

/* ---- one worker: a yield loop must not starve a sleeper's timer ---- */

static atomic_int sleeper_done;
static atomic_long busy_yields;

static void *busy_yielder(void *arg)
{
	(void)arg;
	while (!atomic_load(&sleeper_done)) {
		atomic_fetch_add(&busy_yields, 1);
		jf_yield();
	}
	return NULL;
}

static void *short_sleeper(void *arg)
{
	(void)arg;
	sleep_checked(2 * MS);
	sleep_until_checked(jf_now_ns() + 3 * MS);
	atomic_store(&sleeper_done, 1);
	return NULL;
}

static void *main_one_worker(void *arg)
{
	jf_thread_t *y, *s;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 1);
	y = jft_spawn(NULL, busy_yielder, NULL);
	s = jft_spawn(NULL, short_sleeper, NULL);
	jft_join(s);
	jft_join(y);
	CHECK(atomic_load(&busy_yields) > 0);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	check_clock_outside();

	jft_config(&cfg, 2);
	cfg.workers = 2;
	jft_run(&cfg, main_fn, NULL);

	cfg.workers = 1;
	jft_run(&cfg, main_one_worker, NULL);

	check_time_base("after the runtime");
	jft_ok("core.sleep");
	return 0;
}
