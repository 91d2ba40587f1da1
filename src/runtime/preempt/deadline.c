/*
 * deadline.c - "deadline": safepoints that time themselves. No timer thread, no signal.
 *
 * Every mechanism with a timer thread (dispatcher, safepoint, hybrid, uintr) needs a CPU for that
 * thread, and waking a sleeping thread costs ~20-28 us of the CPU it wakes on in a KVM guest
 * (docs/performance.md): on a 2-vCPU machine whose second vCPU runs the load generator, that is
 * as dear as a signal, once per quantum. "deadline" needs nobody to watch: each worker publishes
 * the TSC value at which its running uthread must next be looked at, in the same per-thread word
 * that the timer thread's safepoint flag uses (jf__preempt.poll, include/jiffy/preempt.h), and
 * jf_safepoint() compares the TSC with it. A preemption is then a load, an rdtsc (~10 ns here),
 * a compare and a yield: no kernel entry anywhere. This is the "instrumentation estimates the
 * elapsed time" family of the Aspen paper's related work, without a compiler pass: the code
 * calls jf_safepoint() itself, as it does for "safepoint".
 *
 * Arming follows the skip rule, like "timer" (posix_timer.c): the word holds a due time only
 * while work waits for the worker (the policy's has_work, uthreads waiting on descriptors that
 * no idle worker polls for) or one of its timers falls due; otherwise it is 0 and a safepoint is
 * the same load and branch as under any other mechanism. Except for a run's first slice: the
 * run's first safepoint publishes its due time without looking (the hot path: word_switch() in
 * deadline_arm.h), and the rule is applied when that time comes.
 *   switch   (the worker, at every switch in; inline, word_lazy()): store 1, the run is lazy
 *            (no clock read); with another reader of the clock, word_switch() at once.
 *   first safepoint of a lazy run (preempt.c, run_resolve_now): read the clock, store the
 *            run's due time (word_switch()), whatever waits.
 *   on_run   (the worker itself, after a skipped request): store the due
 *            time, or 0; after storing 0, a full barrier and a second look, which pairs with
 *   on_work  (the thread that queued work for a busy worker): a full barrier, then lower the
 *            word to that worker's due time with a CAS. Either the worker's second look sees
 *            the new work, or the lowering lands after its 0: no arming is lost.
 *   kick     (wakeup preemption): lower the word to 1, due at once.
 * Receivers re-check everything (jf_preempt_request), so an early or stale due time costs a
 * skipped request, never a wrong preemption. "auto" (auto.c) arms exactly so, through the same
 * functions (jf_deadline_arm, jf_deadline_notify, jf_deadline_lower:
 * src/runtime/preempt/preempt.h), and adds its timer where the word is stored.
 *
 * Limits: preemption happens only where the code calls jf_safepoint() (a loop without one runs to
 * completion, as under "safepoint"); the TSC must be the runtime's clock (invariant TSC, not
 * JIFFY_CLOCK=monotonic), since the due time is compared with rdtsc. A uthread that starts
 * waiting on a descriptor does not arm the other busy workers, and need not: its own worker
 * switches at once and arms that run (a descriptor wait is waiting work while no worker is in
 * epoll), or polls itself when it has nothing to run.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <x86intrin.h>

#include "../runtime.h"
#include "preempt.h"
#include "../net/netpoll.h"
#include "deadline_arm.h"

static int deadline_available(char *why, size_t len)
{
	if (jf_tsc_hz())
		return 0;
	snprintf(why, len,
		 "it compares the TSC with a due time in jf_safepoint(), and the runtime clock is "
		 "not the TSC (no invariant TSC on this CPU, or JIFFY_CLOCK=monotonic: "
		 "jf_config.clock)");
	return -1;
}

uint64_t jf_deadline_due_ns(struct runtime *rt, struct worker *w)
{
	return deadline_due_ns(rt, w);
}

uint64_t jf_deadline_lower(struct worker *w, uint64_t when, uint64_t now)
{
	return deadline_lower(w, when, now);
}

uint64_t jf_deadline_arm(struct worker *w, uint64_t now, bool publish,
			 void (*disarm)(struct worker *w, uint64_t now))
{
	return deadline_arm(w, now, publish, disarm);
}

uint64_t jf_deadline_notify(struct worker *target, bool publish, uint64_t *now, bool own)
{
	uint64_t when;

	/* The enqueue before the look at @target: see the file comment. Work queued by @target's
	 * own thread (a wake or spawn by the uthread running there, a timer of its loop) needs no
	 * barrier: that thread's on_run came before it in program order. */
	if (!own)
		jf_smp_mb();
	if (!__atomic_load_n(&target->pre.run_start_ns, __ATOMIC_ACQUIRE))
		return UINT64_MAX; /* in its scheduler loop: it finds the work itself */
	when = deadline_due_ns(jf_rt, target);
	if (when != UINT64_MAX) {
		uint64_t tsc;
		/* Its own thread reads the clock as the switch does (no lfence: jf_now_ns_tsc()),
		 * and arms from that TSC; another thread as deadline_lower() does. A lazy run
		 * (word_lazy) has no due time yet: its word is 1 already (its first safepoint
		 * starts its slice), and auto's timer is armed for a slice from now, which is no
		 * earlier than the run's own would be. */
		if (own) {
			*now = jf_now_ns_tsc(&tsc);
			if (when == JF_DUE_LAZY)
				when = *now + jf_rt->cfg.quantum_ns;
			if (publish)
				deadline_lower_tsc(target, tsc ? tsc_from(tsc, when, *now)
							       : tsc_at(when, *now));
		} else {
			*now = jf_now_ns();
			if (when == JF_DUE_LAZY)
				when = *now + jf_rt->cfg.quantum_ns;
			if (publish)
				deadline_lower(target, when, *now);
		}
	}
	return when;
}

static void deadline_on_run(struct worker *w, uint64_t now)
{
	deadline_arm(w, now, true, NULL);
}

static int deadline_init(struct runtime *rt)
{
	rt->word_switch = JF_WORD_PLAIN; /* the switch publishes inline: word_switch() */
	for (int i = 0; i < rt->nworkers; i++)
		rt->workers[i].pre.word_timer_ns = UINT64_MAX; /* no backstop to wait for: word_lazy() */
	return 0;
}

static void deadline_on_work(struct worker *self, struct worker *target)
{
	uint64_t now;

	jf_deadline_notify(target, true, &now, self == target);
}

static void deadline_kick(struct worker *w)
{
	deadline_lower(w, 0, 0); /* due at once */
}

const struct jf_preempt_mech jf_mech_deadline = {
	.name = "deadline",
	.available = deadline_available,
	.init = deadline_init,
	.on_run = deadline_on_run,
	.on_work = deadline_on_work,
	.kick = deadline_kick,
	.quantum_ns = 20 * 1000, /* µs quanta cost it little: docs/preemption.md */
	.word = true,
};
