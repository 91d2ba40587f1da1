/*
 * preempt/test_timers.c - a sleeper wakes on time even when every worker is busy.
 *
 * One worker runs a compute-bound uthread (safepoints under the flag mechanisms) with nothing
 * else queued, so the skip rule keeps the mechanism from interrupting it for the quantum. The
 * main uthread sleeps 2 ms, 20 times. Its timer lives on the busy worker; no idle worker exists
 * to fire it. The mechanism must interrupt the worker when the timer falls due (the timer thread
 * or the worker's POSIX timer watch the earliest timer too), so the sleeps end within a bound
 * far below the hog's run (it computes until main is done, or 10 s). Regression test: before,
 * main slept until the hog finished.
 */
#include "pt_common.h"

static atomic_int stop;
static atomic_ulong hog_chunks;

static void *hog(void *arg)
{
	bool sp = pt_uses_safepoints((const char *)arg, 0);
	uint64_t end = jf_now_ns() + 10 * PT_S;
	uint64_t x = 1;

	while (!atomic_load_explicit(&stop, memory_order_relaxed) && jf_now_ns() < end) {
		x = pt_work(x, 200);
		atomic_fetch_add_explicit(&hog_chunks, 1, memory_order_relaxed);
		if (sp)
			jf_safepoint();
	}
	return (void *)(uintptr_t)(x & 1);
}

static void *main_fn(void *arg)
{
	jf_thread_t *h = jft_spawn(NULL, hog, arg);
	uint64_t worst = 0;

	while (atomic_load(&hog_chunks) == 0)
		jf_yield(); /* the hog runs */
	for (int i = 0; i < 20; i++) {
		uint64_t t0 = jf_now_ns();
		CHECK_EQ(jf_sleep_ns(2 * PT_MS), 0);
		uint64_t slept = jf_now_ns() - t0;
		CHECK_GE(slept, 2 * PT_MS);
		if (slept > worst)
			worst = slept;
	}
	atomic_store(&stop, 1);
	jft_join(h);
	printf("preempt.timers (%s): 20 sleeps of 2 ms beside a busy hog: worst %.2f ms\n",
	       (const char *)arg, (double)worst / 1e6);
	/* The hog would have run 10 s: 1 s catches "not woken until a scheduling point". */
	CHECK(worst < 1 * PT_S);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	const char *m = pt_config(&cfg, 1, "preempt.timers", true);

	jft_run(&cfg, main_fn, (void *)m);
	jft_ok("preempt.timers");
	return 0;
}
