/*
 * core/test_idle_wake.c - proves that idle workers park without a periodic wake-up and that
 * parking without a deadline loses no timer (issue 16's lost wakeup).
 *
 * Part 1, no polling: while main sleeps 400 ms and nothing else exists, the two workers enter
 * FUTEX_WAIT a handful of times (the stats' parks), not every 10 ms: the runtime before issue 16
 * capped every park at 10 ms, ~80 parks here, and this part fails on it (the bound is 20).
 * Part 2, a busy worker's timer: under policy fifo with preemption "none", worker 0 runs a
 * uthread that computes without yielding while a second uthread on the same worker sleeps
 * 5 ms. Worker 1 has nothing to run and has parked. The sleeper's timer sits in worker 0's
 * heap, which worker 0 cannot look at while it computes; only the parked worker can fire it.
 * Parked without a deadline and never told of the new timer (the runtime with the 10 ms bound
 * removed and nothing else changed), it sleeps on and the sleeper wakes only when the
 * computation ends: the computer gives up after 10 s and the test fails. (An arranger pinned to
 * worker 0 waits until worker 1 has parked, then spawns both there.) With jf_timer_arm()
 * kicking a parked worker whose deadline is later, the timer fires (the workers' timers
 * counter, which the computer watches, moves) while the computation goes on. Repeated ROUNDS times, each from a fresh park. The 10 s is a hang
 * bound, not a latency bound: the wake normally comes within a few ms.
 *
 * The test sets its own configuration (2 workers, fifo: attr.worker is kept and nothing is stolen; none; no spinning before
 * parking): the
 * environment does not change what it checks.
 */
#include <string.h>
#include <time.h>

#include "jf_test.h"

#define MS 1000000ull
#define ROUNDS 20
#define HANG_NS (10000 * MS)

static uint64_t timers_before; /* timers fired before the round's sleeper armed its own */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	CHECK_EQ(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t worker_parks(int w)
{
	struct jf_worker_stats s;

	CHECK_EQ(jf_stats_worker(w, &s), 0);
	return s.parks;
}

static uint64_t timers_fired(void)
{
	struct jf_worker_stats s;

	CHECK_EQ(jf_stats_total(&s), 0);
	return s.timers;
}

/*
 * Worker 1 may have been woken meanwhile (by main's join, say) and parks again: wait, computing, until its parks counter has stayed still for 2 ms (at most 200 ms), so that
 * it sleeps with the deadline it computed before this timer exists. Then sleep 5 ms.
 */
static void *sleeper(void *arg)
{
	uint64_t t0 = mono_ns(), p = worker_parks(1), since = t0, now;

	(void)arg;
	while ((now = mono_ns()) - since < 2 * MS && now - t0 < 200 * MS) {
		uint64_t q = worker_parks(1);
		if (q != p) {
			p = q;
			since = now;
		}
	}
	CHECK_EQ(jf_sleep_ns(5 * MS), 0);
	return NULL;
}

/* Computes (no yield, no safepoint that could switch: preemption is "none") until the sleeper's
 * timer fired (the workers' timers counter moved) or HANG_NS passed. Returns how long it
 * computed, in ns, as the uthread's result. */
static void *computer(void *arg)
{
	uint64_t start = mono_ns(), now = start;
	volatile uint64_t x = 0;

	(void)arg;
	while (timers_fired() == timers_before && (now = mono_ns()) - start < HANG_NS)
		for (int i = 0; i < 1000; i++)
			x = x + (uint64_t)i;
	return (void *)(uintptr_t)(now - start);
}

/*
 * One round, on worker 0 (main may be on either): the sleeper and the computer are spawned on
 * worker 0, in that order: the sleeper waits for worker 1 to park, arms its timer and blocks,
 * then the computer keeps worker 0 busy (fifo keeps a uthread on the worker its attr.worker names). Returns the
 * computer's result.
 */
static void *arranger(void *arg)
{
	struct jf_attr attr;
	jf_thread_t *c, *s;
	void *took;

	(void)arg;
	timers_before = timers_fired();
	jf_attr_init(&attr);
	attr.sched.worker = 0;
	CHECK_EQ(jf_spawn(&s, &attr, sleeper, NULL), 0);
	CHECK_EQ(jf_spawn(&c, &attr, computer, NULL), 0);
	CHECK_EQ(jf_join(s, NULL), 0);
	CHECK_EQ(jf_join(c, &took), 0);
	return took;
}

static uint64_t total_parks(void)
{
	struct jf_worker_stats s;

	CHECK_EQ(jf_stats_total(&s), 0);
	return s.parks;
}

static void *main_fn(void *arg)
{
	struct jf_attr attr;
	uint64_t worst = 0;

	(void)arg;
	/* Part 1: two idle workers for 400 ms. */
	jf_sleep_ns(20 * MS); /* let the start-up settle */
	uint64_t parks = total_parks();
	CHECK_EQ(jf_sleep_ns(400 * MS), 0);
	parks = total_parks() - parks;
	printf("idle 400 ms: %llu parks on 2 workers (a 10 ms bound made ~80)\n",
	       (unsigned long long)parks);
	if (parks > 20) {
		fprintf(stderr, "idle workers woke %llu times in 400 ms: a periodic wake-up\n",
			(unsigned long long)parks);
		CHECK(!"idle workers parked without a deadline");
	}

	/* Part 2: a timer armed on a busy worker while the other is parked. */
	jf_attr_init(&attr);
	attr.sched.worker = 0;
	for (int r = 0; r < ROUNDS; r++) {
		jf_thread_t *a;
		void *took;

		CHECK_EQ(jf_spawn(&a, &attr, arranger, NULL), 0);
		CHECK_EQ(jf_join(a, &took), 0);
		if ((uint64_t)(uintptr_t)took >= HANG_NS) {
			fprintf(stderr, "round %d: the sleeper's timer did not fire while worker 0 was "
					"busy (%.1f s): it was lost\n", r, (double)(uintptr_t)took / 1e9);
			jf_stats_print(stderr); /* each worker's parks, unparks and timers */
			CHECK(!"a timer on a busy worker fired");
		}
		if ((uint64_t)(uintptr_t)took > worst)
			worst = (uint64_t)(uintptr_t)took;
	}
	printf("busy worker's timer: %d rounds, the sleeper's timer always fired while worker 0 "
	       "computed "
	       "(longest computation %.1f ms)\n", ROUNDS, (double)worst / 1e6);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	jft_config_fixed(&cfg, 2, "fifo", "none");
	cfg.spin_ns = 0;
	cfg.spin_max_ns = 0;
	CHECK_EQ(jf_run(&cfg, main_fn, NULL, NULL), 0);
	printf("core.idle_wake: ok\n");
	return 0;
}
