/*
 * deadline_arm.h - the arming of the safepoint word that "deadline" and "auto" share, inline.
 *
 * Owns: the bodies of jf_deadline_due_ns, jf_deadline_lower and jf_deadline_arm (preempt.h
 * gives the protocol; deadline.c's file comment the reasoning), as static inline functions, so
 * that auto.c's and deadline.c's on_run, which run at every switch, inline them instead of
 * calling across files (make perfcheck counted ~60 instructions of calls per switch). deadline.c
 * exports the jf_deadline_* wrappers for everyone else (pfn.c).
 */
#ifndef JIFFY_DEADLINE_ARM_H
#define JIFFY_DEADLINE_ARM_H

#include <x86intrin.h>

#include "../runtime.h"
#include "../net/netpoll.h"
#include "preempt.h"

static JF_HOT_INLINE uint64_t deadline_due_ns(struct runtime *rt, struct worker *w)
{
	uint64_t when = UINT64_MAX, tdl = jf_timers_next(w);

	if (jf_drv_due_worth_interrupt(&rt->drv, w->id, rt->cfg.preempt_skip) ||
	    jf_netpoll_wants_busy_poll())
		when = __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED);
	return tdl < when ? tdl : when;
}

/*
 * The TSC value at jf_now_ns() time @when (it is @now), never early (a safepoint that fired a few
 * ns before the due time would find the quantum not over, skip and fire again): converted as a
 * distance from now, rounded up, so no error accumulates with the time since calibration.
 * 1: at once (0 means "never").
 */
static inline uint64_t tsc_from(uint64_t tsc_now, uint64_t when, uint64_t now)
{
	return when > now ? tsc_now + jf_ns_to_tsc_ticks_inline(when - now) : 1;
}

static inline uint64_t tsc_at(uint64_t when, uint64_t now)
{
	return tsc_from(__rdtsc(), when, now);
}

/* Publish @tsc in @w's word; compiler probes counting toward an older value read the TSC at
 * their next probe. */
static inline void word_store(struct worker *w, uint64_t tsc)
{
	struct jf__preempt_tls *pt = w->pre.ptls;

	__atomic_store_n(&pt->poll, tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&pt->probe_left, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&pt->probe_tsc, 0, __ATOMIC_RELAXED);
}

/* deadline_lower() with the due time as a TSC value already. */
static inline uint64_t deadline_lower_tsc(struct worker *w, uint64_t tsc)
{
	uint64_t cur;

	cur = __atomic_load_n(&w->pre.ptls->poll, __ATOMIC_RELAXED);
	while (cur == 0 || cur > tsc) {
		if (__atomic_compare_exchange_n(&w->pre.ptls->poll, &cur, tsc, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			/* compiler probes counting down toward the old due time: look now */
			__atomic_store_n(&w->pre.ptls->probe_left, 0, __ATOMIC_RELAXED);
			return tsc;
		}
	}
	return 0;
}

static inline uint64_t deadline_lower(struct worker *w, uint64_t when, uint64_t now)
{
	return deadline_lower_tsc(w, tsc_at(when, now));
}

static JF_HOT_INLINE uint64_t deadline_arm(struct worker *w, uint64_t now, bool publish,
					       void (*disarm)(struct worker *w, uint64_t now))
{
	struct runtime *rt = jf_rt;
	uint64_t when = deadline_due_ns(rt, w);

	w->pre.switch_poll = 0; /* re-armed: word_own_armed() no longer applies */
	/* The word also stops a preemptible function whose budget is out (pfn.c); the due time
	 * returned (auto's timer) does not include it: pfn.c's own timer is that backstop. */
	uint64_t pfn = __atomic_load_n(&w->pfn.due_ns, __ATOMIC_RELAXED);

	if (when != UINT64_MAX || pfn != UINT64_MAX) {
		if (publish) {
			uint64_t at = when < pfn ? when : pfn;
			/* At a switch (auto's on_switch for a run whose timer is not armed) the TSC
			 * that @now was read from is at hand: a distance from it, as tsc_at()
			 * computes from a fresh rdtsc. */
			uint64_t tsc = now == __atomic_load_n(&w->pre.run_start_ns, __ATOMIC_RELAXED) &&
						       w->pre.run_start_tsc
					       ? tsc_from(w->pre.run_start_tsc, at, now)
					       : tsc_at(at, now);
			word_store(w, tsc);
		}
		if (when != UINT64_MAX)
			return when;
	}
	if (publish && pfn == UINT64_MAX)
		__atomic_store_n(&w->pre.ptls->poll, 0, __ATOMIC_RELAXED);
	if (disarm)
		disarm(w, now);
	jf_smp_mb(); /* pairs with the one in jf_deadline_notify() */
	when = deadline_due_ns(rt, w);
	if (when != UINT64_MAX && publish)
		deadline_lower(w, when, now);
	return when;
}

/*
 * At a switch: publish the new run's due time (the earliest of its slice, the worker's next timer
 * and a budget) whether or not work waits, from the TSC the switch read, and nothing else: no
 * has_work, no netpoll look, no barrier. The skip rule moves to the due time: a safepoint that
 * reaches it with nothing waiting enters the runtime once, the request is skipped
 * (preemption_due: the policy's has_work) and the skip re-arms through on_run, that is
 * deadline_arm(), which stores 0 when nothing waits; from then on the run's safepoints are the
 * load and branch again. What that costs: a run that outlasts its first slice alone enters the
 * runtime once, and its safepoints read the TSC during that first slice (~10 ns each); compiler
 * probes count down and call jf__probe_armed() at their first two probes of each run (rate
 * unknown yet: one read, then one to measure it; ~20-40 ns a run), which a run with work waiting
 * paid before too (so a busy server pays nothing new, an idle one a little CPU); what it
 * saves: ~70 instructions per switch (the look at the policy's queues, the netpoller, the due
 * times, the call; make perfcheck). Work queued meanwhile needs nothing more: the word is armed
 * for the due time already (word_own_armed(); jf_deadline_notify()'s CAS changes nothing).
 * Return: the due time without the budget (auto's timer: pfn.c has its own).
 */
static JF_HOT_INLINE uint64_t deadline_due_switch(struct worker *w)
{
	uint64_t when = __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED), tdl = jf_timers_next(w);

	return tdl < when ? tdl : when;
}

static JF_HOT_INLINE void deadline_publish_at(struct worker *w, uint64_t when, uint64_t now)
{
	uint64_t pfn = __atomic_load_n(&w->pfn.due_ns, __ATOMIC_RELAXED), tsc;
	uint64_t start = w->pre.run_start_tsc; /* read with @now: only ever called at a switch */

	pfn = when < pfn ? when : pfn;
	tsc = JF_LIKELY(start) ? tsc_from(start, pfn, now) : tsc_at(pfn, now);
	w->pre.switch_poll = tsc;
	word_store(w, tsc);
}

static inline uint64_t deadline_publish(struct worker *w, uint64_t now)
{
	uint64_t when = deadline_due_switch(w);

	deadline_publish_at(w, when, now);
	return when;
}

/*
 * The word's mechanisms at a switch, inline in prepare_run (rt->word_switch, set by their init):
 * deadline publishes; auto publishes too when its backstop timer already fires where the new run
 * needs it (in [due + GRACE_MIN, due + grace]: auto.c's window and expiry_record(); then it is
 * armed, since due > now), and otherwise calls its on_switch, which moves the timer, or arms it
 * if work waits.
 */
static JF_HOT_INLINE void word_switch(struct runtime *rt, struct worker *w, uint64_t now)
{
	uint64_t when = deadline_due_switch(w);

	if (rt->word_switch == JF_WORD_TIMER &&
	    JF_UNLIKELY(when - __atomic_load_n(&w->pre.word_timer_lo, __ATOMIC_RELAXED) >
			rt->word_window_ns)) {
		rt->mech_on_switch(w, now);
		return;
	}
	deadline_publish_at(w, when, now);
}

/*
 * A switch that reads no clock (rt->switch_clock false: nothing but the mechanism wants the
 * time): make the new run lazy instead of publishing its due time. The word gets 1, so the run's
 * first safepoint (or compiler probe) enters the runtime, which reads the clock there and does
 * what the switch would have done (preempt.c's run_resolve_now(): the due time, word_switch());
 * a run that reaches no safepoint costs nothing more than the stores below. What it costs: a
 * run's slice counts from its first safepoint, not from the switch (for probed code, within a
 * few hundred ns), and a run that reaches a safepoint enters the runtime once for it (the call
 * and the entry's checks over what the switch did: ~60 instructions). What it saves: the rdtsc
 * and the due time's arithmetic at every switch (~50 instructions and ~6 ns of a 37 ns yield
 * on AMD EPYC, where rdtsc takes ~10 ns; make perfcheck counts the instructions). Not lazy,
 * return false (the caller reads the clock and publishes as before): a budget (pfn.c) whose
 * due time the word must hold, and under auto a worker whose timer is not armed: the backstop
 * for code without safepoints is then armed by the switch, as before (whether work waits
 * decides). An armed one stays where it is: if it fires on a lazy run, the signal starts the
 * run's slice from then (decide_and_preempt in preempt.c) and re-arms for it, so code without
 * safepoints is preempted at most about twice the grace (plus a quantum) after its run began,
 * not once the grace.
 */
static JF_HOT_INLINE bool word_lazy(struct worker *w, struct jf__preempt_tls *pt, bool budget)
{
	/* @pt: w->pre.ptls. @budget: the new run has one (pfn.c). word_timer_ns is UINT64_MAX under
	 * deadline. */
	if (JF_UNLIKELY(budget) || !__atomic_load_n(&w->pre.word_timer_ns, __ATOMIC_RELAXED))
		return false;
	__atomic_store_n(&w->pre.run_due_ns, JF_DUE_LAZY, __ATOMIC_RELAXED);
	__atomic_store_n(&w->pre.run_start_ns, JF_START_LAZY, __ATOMIC_RELEASE);
	w->pre.switch_poll = 1; /* word_own_armed(): armed, the lazy word is 1 */
	/* word_store() but probe_tsc: a probe that finds 1 resets it (jf__probe_armed) */
	__atomic_store_n(&pt->poll, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&pt->probe_left, 0, __ATOMIC_RELAXED);
	return true;
}

/*
 * Work was queued on @w by the uthread running there (a spawn, a wake): is the run armed for its
 * due time already, so that on_work has nothing to do? Yes while the word is still what the
 * switch published, or lower (a budget, a kick) but not 0: w->pre.switch_poll is that value, and 0
 * (nothing is) under the other mechanisms, after a re-arm (deadline_arm()) and, for auto, once its
 * timer fired (auto_on_signal, on this very thread: the switch had checked the timer's window).
 * One compare: p - 1 < switch_poll is 0 < p <= switch_poll. Inline in after_enqueue(): the call
 * is what it saves.
 */
static inline bool word_own_armed(struct worker *w)
{
	return __atomic_load_n(&w->pre.ptls->poll, __ATOMIC_RELAXED) - 1 < w->pre.switch_poll;
}

#endif /* JIFFY_DEADLINE_ARM_H */
