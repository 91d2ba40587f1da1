/*
 * tests/preempt/pt_common.h - what the preemption tests share on top of jf_test.h.
 *
 * Owns: reading the mechanism under test from the environment (JIFFY_PREEMPT, set by CTest) and
 * skipping (exit 77, CTest's SKIP_RETURN_CODE) where the test needs preemption to happen and the
 * mechanism is "none" or "uintr" (which needs Intel user interrupts in CPU and kernel); classifying
 * mechanisms (signal-based or flag-based); a bounded busy-work unit; moving a uthread to another
 * worker at its next preemption; summed preemption counters; and a watchdog loop for main that
 * stops the workers once enough preemptions were seen.
 */
#ifndef PT_COMMON_H
#define PT_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "jf_test.h"

#define PT_SKIP 77
#define PT_US 1000ull
#define PT_MS 1000000ull
#define PT_S 1000000000ull

/* The signal mechanisms interrupt code that never calls jf_safepoint() ("hybrid" and "auto"
 * after a grace period). */
static inline bool pt_is_signal(const char *m)
{
	return !strcmp(m, "timer") || !strcmp(m, "dispatcher") || !strcmp(m, "hybrid") ||
	       !strcmp(m, "auto");
}

/* "safepoint", "deadline": only jf_safepoint() yields, and it then yields like jf_yield(). */
static inline bool pt_is_safepoint(const char *m)
{
	return !strcmp(m, "safepoint") || !strcmp(m, "deadline");
}

/*
 * pt_config() - jft_config() for @workers workers (set again after the environment), then skip
 * the test (exit 77) when it needs preemption and the mechanism is none or uintr.
 * Return: the mechanism name (points into @cfg).
 */
static inline const char *pt_config(struct jf_config *cfg, unsigned workers, const char *test,
				    bool needs_preemption)
{
	/* Line by line, so that what was printed survives a crash or a CTest timeout. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	jft_config(cfg, workers);
	if (workers)
		cfg->workers = workers;
	if (needs_preemption && (!strcmp(cfg->preempt, "none") || !strcmp(cfg->preempt, "uintr"))) {
		printf("%s: skipped: needs a preemption mechanism, JIFFY_PREEMPT=%s\n", test,
		       cfg->preempt);
		fflush(stdout);
		exit(PT_SKIP);
	}
	return cfg->preempt;
}

/*
 * pt_uses_safepoints() - should uthread @i call jf_safepoint() in its loops? Always under the
 * safepoint mechanism (nothing else would ever preempt it); under hybrid and auto only the even
 * ones, so that the odd ones are reached by the signal after the grace period; under the pure signal
 * mechanisms the call is a no-op, made by the even ones to show that it stays one.
 */
static inline bool pt_uses_safepoints(const char *m, int i)
{
	return pt_is_safepoint(m) || i % 2 == 0;
}

/* pt_work() - about @n * 4 ns of dependent integer work the compiler cannot remove. */
static inline uint64_t pt_work(uint64_t seed, unsigned n)
{
	uint64_t x = seed | 1;

	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/*
 * pt_hint_other_worker() - ask to continue on another worker: the calling uthread names the next
 * worker as its preferred one, which policy ws honours when it is enqueued, so its next
 * preemption moves it there (and resumes it on another kernel thread).
 */
static inline void pt_hint_other_worker(void)
{
	struct jf_sched_attr a;
	int n = jf_nworkers();

	if (n < 2)
		return;
	jf_preempt_disable(); /* the worker read and the attribute written belong together */
	jf_thread_get_sched_attr(jf_self(), &a);
	a.worker = (jf_worker_id() + 1) % n;
	CHECK_EQ(jf_thread_set_sched_attr(jf_self(), &a), 0);
	jf_preempt_enable();
}

/* pt_stats() - counters summed over every worker (call inside the runtime). */
static inline struct jf_worker_stats pt_stats(void)
{
	struct jf_worker_stats st;

	CHECK_EQ(jf_stats_total(&st), 0);
	return st;
}

static inline void pt_print_stats(const char *test, const char *m, const struct jf_worker_stats *st)
{
	printf("%s [%s]: preempt_requests %llu, preempts %llu, preempt_skipped %llu, "
	       "preempt_deferred %llu, switches %llu, steals %llu\n",
	       test, m, (unsigned long long)st->preempt_requests,
	       (unsigned long long)st->preempts, (unsigned long long)st->preempt_skipped,
	       (unsigned long long)st->preempt_deferred, (unsigned long long)st->switches,
	       (unsigned long long)st->steals);
	fflush(stdout);
}

/*
 * pt_watch() - from main (a uthread): sleep in 10 ms steps until at least @min_ns have passed
 * and the workers counted @want_preempts preemptions, or until @max_ns have passed; then set
 * *@stop. Each 10 ms sleep must end within 5 s although every other uthread computes: with
 * preemption, the worker that owes main its wakeup reaches a scheduling point every quantum or so
 * (a mechanism that leaves the interrupted code no time to run fails this).
 * Return: the preemptions counted when it stopped.
 */
static inline uint64_t pt_watch(atomic_int *stop, uint64_t min_ns, uint64_t max_ns,
				uint64_t want_preempts)
{
	uint64_t t0 = jf_now_ns(), preempts = 0, worst = 0;

	for (;;) {
		uint64_t el, s0 = jf_now_ns(), slept;

		CHECK_EQ(jf_sleep_ns(10 * PT_MS), 0);
		slept = jf_now_ns() - s0;
		if (slept > worst)
			worst = slept;
		el = jf_now_ns() - t0;
		preempts = pt_stats().preempts;
		if ((el >= min_ns && preempts >= want_preempts) || el >= max_ns)
			break;
	}
	atomic_store(stop, 1);
	printf("pt_watch: %.2f s, longest 10 ms sleep took %.1f ms\n", (double)(jf_now_ns() - t0) / 1e9,
	       (double)worst / 1e6);
	if (worst > 5 * PT_S) {
		fprintf(stderr, "pt_watch [%s]: a 10 ms jf_sleep_ns() took %.1f ms: main's wakeup was "
				"starved by uthreads that preemption should have interrupted\n",
			jf_preempt_mechanism(), (double)worst / 1e6);
		CHECK(!"main starved despite preemption");
	}
	return preempts;
}

#endif /* PT_COMMON_H */
