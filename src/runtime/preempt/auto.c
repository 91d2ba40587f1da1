/*
 * auto.c - "auto": deadline's safepoints first, the worker's own timer signal when none answers.
 *
 * The default mechanism. Code that calls jf_safepoint() (by hand, or through the probe pass) is
 * preempted exactly as under "deadline": while work waits, the worker publishes its running
 * uthread's due time in the per-thread word, and the safepoint compares the TSC with it; a
 * preemption is a yield, with no kernel entry. Code that never reaches a safepoint (a library, a
 * loop nobody instrumented) would run forever under "deadline"; here the worker's own one-shot
 * POSIX timer (posix_timer.c's: SIGEV_THREAD_ID to the worker itself; no timer thread, so no CPU
 * besides the worker's) is armed at the same due time plus a grace period, and its signal
 * preempts the uthread as under "timer". Go's design (cooperative checks, an asynchronous signal
 * as the backstop), without a watching thread.
 *
 * Arming is deadline's (jf_deadline_arm, jf_deadline_notify: nothing at all while no work waits,
 * the skip rule), and the timer goes where the word is stored:
 *   on_run  (the worker, at a run's start: the first safepoint of a lazy run, or the switch
 *           when the timer is not armed; and after a skipped request): due time D published, the
 *           timer set to D + grace unless it is armed for a moment in [D + GRACE_MIN, D + grace]
 *           already (see "cost"); with nothing due, the word is 0 and an armed timer is left
 *           armed (timer_keep: cancelling it cost a VM exit per switch) before deadline's
 *           barrier and second look, which pairs with
 *   on_work (a thread that queued work for a busy worker): deadline's barrier and lowering, then
 *           the timer set to D + grace unless it is armed to fire by then.
 *   kick    (wakeup preemption): the word due at once, the timer within the grace period.
 *   retry   (the signal landed in libc or similar): the word due at once (the first safepoint
 *           after the library call takes it), the timer again after a backoff on the scale of
 *           the grace period.
 * A per-worker spinlock orders the timer_settime() calls of the worker and of the threads that
 * queue work for it, and keeps the recorded expiry (jf_now_ns() time, "armed" while in the
 * future) true to the timer. Only runtime code takes it (preemption count > 0), so the signal
 * handler never finds it held by the code it interrupted; nothing takes it while no work waits.
 *
 * Cost (the project's 2-vCPU KVM guests; numbers and commands in docs/preemption.md): when a
 * safepoint answers in time, the timer must not fire, and a spurious signal costs 19-45 us. So the
 * timer is never left to fire for nothing: it is cancelled when nothing waits any more, and moved
 * when a new run needs it. But a move is dear too: timer_settime() costs ~0.6 us only when the
 * expiry lies beyond the next scheduler tick (4 ms at HZ=250); one within it reprograms the local
 * APIC timer, a VM exit, 6-10 us, and so does cancelling it. Hence a grace period of 5 ms by
 * default (not hybrid's 50 us): every expiry lies beyond the next tick, so arming and cancelling
 * cost ~1 us each, not 6 (a server that parks between requests does both per busy period), and
 * the window: a timer armed for a moment in [D + GRACE_MIN, D + grace] stays where it
 * is. Its signal then comes after the due time, so it is never spurious, only after a shorter
 * grace (at least GRACE_MIN, which a safepoint every few microseconds meets); a worker whose runs
 * keep starting while work waits (preemptions at safepoints, a server's short requests) moves its
 * timer once per grace - GRACE_MIN, not at every switch. A run with nothing waiting leaves an
 * armed timer armed (timer_keep); a worker that parks cancels it (on_park) unless it counts CPU
 * time (below).
 *
 * Clock: from a grace period of 1 ms up (the default's 5 ms), the timer counts the worker
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not the wall clock. A CPU-time timer is not an
 * hrtimer: the kernel looks at it at its scheduler tick, so setting or cancelling it never
 * reprograms the local APIC timer (~0.75 us a call here, at any distance), and it cannot fire
 * while the worker is parked, where a wall-clock timer left armed after a busy period woke the
 * halted vCPU for a signal with nothing to do (a UDP server took ~17 a second at 40,000 req/s;
 * cancelling at every park instead cost two timer_settime() calls per busy period, most of them
 * within the tick: 7,600 a second at 10,000 req/s). What it costs: the signal comes at the first
 * tick after the grace period of CPU time (HZ=250: 0-4 ms later), and a worker that shares its
 * CPU with other threads gets it later on the wall clock (its own time is what the grace
 * measures). A retry (the signal landed in libc) wants a fraction of a millisecond, not a tick:
 * it has its own wall-clock timer (struct auto_worker's retry). Below 1 ms of grace (a user who
 * wants a tight backstop) the timer is on CLOCK_MONOTONIC, cancelled when the worker parks.
 *
 * Without an invariant TSC (or with JIFFY_CLOCK=monotonic) a safepoint cannot time itself: the
 * word stays 0 and "auto" is "timer" armed at the due time itself (grace 0, the wall clock).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime.h"
#include "deadline_arm.h"
#include "preempt.h"

/*
 * The default grace period: long enough that moving the timer is cheap and rare (an expiry within
 * the next scheduler tick, 4 ms at HZ=250, makes timer_settime() reprogram the local APIC timer, a
 * VM exit on a KVM guest: ~6 us instead of ~0.6-0.9 us, to arm and to cancel alike) and that
 * signals to code without safepoints stay a small part of its time (19-45 us each). It was 1 ms
 * until 2026-11-29: on the head-of-line workload (docs/performance.md, "auto on the head-of-line
 * workload") the arming and cancelling per busy period and the signals to long requests running
 * alone took auto's short-request p99 to 384 us where deadline's was 107 us; at 5 ms, 93 us. On a
 * kernel with a slower tick (HZ=100: 10 ms) JIFFY_GRACE_US above it does the same.
 */
#define JF_AUTO_GRACE_NS (5000 * 1000)
/* A timer already armed at least this long after a new run's due time is left there. */
#define GRACE_MIN_NS (50 * 1000)

/* The timer's expiry is struct worker's word_timer_ns (jf_now_ns() time; armed while in the
 * future; 0: not), and word_timer_lo the earliest due time it fits (expiry_record()), which the
 * switch reads inline (word_switch(), deadline_arm.h). */
struct auto_worker {
	uint32_t lock;        /* orders timer_settime() on this worker's timer */
	uint32_t retry_armed; /* the retry timer is armed (the worker's thread and its handler) */
	bool retry_present;
	timer_t retry; /* with the CPU clock: the retries' own, on CLOCK_MONOTONIC (auto_retry) */
} __attribute__((aligned(JF_CACHELINE)));

/* The backstop on the worker's CPU time from this grace period up (the file comment, "clock"). */
#define CPU_CLOCK_MIN_GRACE_NS (1000 * 1000)
static char retry_tag; /* si_value of the retry timer's signal */

static struct auto_worker *aw; /* one per worker, indexed by worker id */
static bool use_tsc;           /* safepoints time themselves (deadline's word is published) */
static bool cpu_clock;         /* the backstop timer counts the worker thread's CPU time */
static uint64_t grace_ns;      /* after the due time, before the signal */
static uint64_t window_ns;     /* grace - GRACE_MIN: how early an armed expiry may stay */

static int auto_available(char *why, size_t len)
{
	(void)why, (void)len;
	return 0; /* the timer works everywhere; without the TSC it works alone (file comment) */
}

static int auto_init(struct runtime *rt)
{
	size_t size = sizeof(*aw) * (size_t)rt->nworkers;

	aw = aligned_alloc(JF_CACHELINE, size);
	if (!aw)
		return -ENOMEM;
	memset(aw, 0, size);
	use_tsc = jf_tsc_hz() != 0;
	grace_ns = use_tsc ? rt->cfg.grace_ns : 0;
	window_ns = grace_ns > GRACE_MIN_NS ? grace_ns - GRACE_MIN_NS : 0;
	cpu_clock = use_tsc && grace_ns >= CPU_CLOCK_MIN_GRACE_NS;
	/* The switch's inline path (word_switch()): a timer that fits the new run stays. */
	rt->word_switch = use_tsc ? JF_WORD_TIMER : JF_WORD_CALL;
	rt->word_window_ns = window_ns;
	return 0;
}

/* On the worker's own thread (CLOCK_THREAD_CPUTIME_ID is the caller's). */
static int auto_worker_start(struct worker *w)
{
	struct auto_worker *a = &aw[w->id];
	clockid_t clock = cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	int rc = jf_ptimer_worker_start_clock(w, clock);

	if (rc || !cpu_clock)
		return rc;
	rc = jf_thread_timer_create(w->pre.tid, jf_rt->cfg.preempt_signal, &retry_tag, &a->retry);
	if (rc) {
		jf_ptimer_worker_stop(w);
		return rc;
	}
	a->retry_present = true;
	return 0;
}

static void auto_worker_stop(struct worker *w)
{
	struct auto_worker *a = &aw[w->id];

	if (a->retry_present)
		timer_delete(a->retry);
	a->retry_present = false;
	jf_ptimer_worker_stop(w);
}

static void auto_fini(struct runtime *rt)
{
	(void)rt;
	free(aw);
	aw = NULL;
}

/*
 * Record @w's timer's expiry @e (0: not armed). A new run due at D finds it where it must be when
 * D + GRACE_MIN <= e <= D + grace (expiry_fits()), that is D in [e - grace, e - grace + window]:
 * the switch tests D - word_timer_lo <= window, one subtraction and compare on one word (so the
 * signal handler's store cannot tear it); an unarmed timer's UINT64_MAX fits nothing.
 */
static inline void expiry_record(struct worker *w, uint64_t e)
{
	__atomic_store_n(&w->pre.word_timer_lo, e ? e - grace_ns : UINT64_MAX, __ATOMIC_RELAXED);
	__atomic_store_n(&w->pre.word_timer_ns, e, __ATOMIC_RELAXED);
}

/*
 * Set @w's timer to fire at @at (jf_now_ns() time), or disarm it for 0. Lock held. The expiry is
 * recorded before the timer is set: a signal of this very setting that is handled at once (a
 * stall of the vCPU between the two calls outlasts a short delay) then records 0 after it, so a
 * recorded expiry always means "armed, or its signal still to be handled", which a lazy switch
 * trusts without a clock to compare it with (word_lazy in deadline_arm.h; recorded after, a
 * fired timer stayed "armed" for good and a run without safepoints was never preempted:
 * preempt.registers.auto hung). The other order's race is the harmless one: an older signal
 * handled in between records 0 for an armed timer, which costs the next timer_at() a spare
 * timer_settime().
 */
static void timer_set(struct worker *w, uint64_t at, uint64_t now)
{
	uint64_t d = at == 0 ? 0 : at > now ? at - now : 1;

	if (d && d < JF_PTIMER_MIN_DELAY_NS)
		d = JF_PTIMER_MIN_DELAY_NS; /* as jf_thread_timer_set() does */
	expiry_record(w, d ? now + d : 0);
	if (!jf_ptimer_set(w, d) && d)
		expiry_record(w, 0);
}

/*
 * Is an expiry @e fine for a run that must be interrupted at @at (= due time + grace)? Another
 * thread (@owner false) only needs it armed and no later; the worker itself, at a new run, also
 * wants it no earlier than the due time + GRACE_MIN: an older run's expiry could interrupt the new
 * run before its due time, or before a safepoint had a chance.
 */
static bool expiry_fits(uint64_t e, uint64_t at, uint64_t now, bool owner)
{
	return e > now && e <= at && (!owner || e + window_ns >= at);
}

/* timer_at()'s move, out of line: the switch's fast path has no call and saves no register. */
static __attribute__((noinline)) void timer_move(struct worker *w, struct auto_worker *a,
						 uint64_t at, uint64_t now, bool owner)
{
	if (!jf_ptimer_present(w))
		return;
	jf_spin_lock(&a->lock);
	if (!expiry_fits(w->pre.word_timer_ns, at, now, owner))
		timer_set(w, at, now);
	jf_spin_unlock(&a->lock);
}

/* Make @w's timer fire at @at (see expiry_fits() for @owner). An expiry that fits is one that
 * was set, so the timer is there: looked at only when it must move. */
static JF_HOT_INLINE void timer_at(struct worker *w, uint64_t at, uint64_t now, bool owner)
{
	struct auto_worker *a = &aw[w->id];

	if (!expiry_fits(__atomic_load_n(&w->pre.word_timer_ns, __ATOMIC_RELAXED), at, now, owner))
		timer_move(w, a, at, now, owner);
}

/* Nothing is due on @w: cancel its timer if armed (jf_deadline_arm calls it before its barrier). */
static void timer_disarm(struct worker *w, uint64_t now)
{
	struct auto_worker *a = &aw[w->id];

	if (__atomic_load_n(&w->pre.word_timer_ns, __ATOMIC_RELAXED) <= now)
		return; /* not armed, or fired already: its signal finds the run changed and skips */
	jf_spin_lock(&a->lock);
	if (w->pre.word_timer_ns > now)
		timer_set(w, 0, now);
	jf_spin_unlock(&a->lock);
}

/*
 * The timer fired: its signal arrived on @w (to be taken now, deferred, or found in the loop), so
 * it is armed no more, whatever word_timer_ns says. Without this, a signal that landed in the switch
 * (count raised: deferred, and the pending request then dropped by the new run) left a record
 * still "in the future" for the stale clock read that on_run compares it with: on_run kept the
 * fired timer as armed and the run went on without one for good, work queued behind it (caught
 * by preempt.malloc.auto under ASan: one worker ran one uthread for 58 s). Lock-free (the handler
 * may interrupt this thread inside timer_at()'s locked section): a timer_set() by another thread
 * racing with this store may leave 0 recorded for an armed timer, which costs the next timer_at()
 * a spare timer_settime(), never a lost one.
 */
static void auto_on_signal(struct worker *w, const siginfo_t *si)
{
	if (si->si_value.sival_ptr == &retry_tag) {
		/* The retry timer's: the backstop timer is where it was. */
		__atomic_store_n(&aw[w->id].retry_armed, 0, __ATOMIC_RELAXED);
		return;
	}
	expiry_record(w, 0);
	w->pre.switch_poll = 0; /* word_own_armed(): the run has no timer now */
}

/*
 * Nothing is due on @w at a switch: leave an armed timer where it is (jf_deadline_arm's disarm).
 * Cancelling it here cost a timer_settime() per switch, and re-arming it at the next queued wake
 * another: two VM exits per handoff (a ping-pong through a channel took 10 us a round trip
 * instead of 0.5 us under "deadline"). Left armed, it stays armed no later than any run needs it
 * (what on_work's look relies on); if it fires while nothing waits, its signal finds nothing due
 * and is skipped: one signal at the end of a busy period at most, since a worker that keeps
 * switching with work waiting moves it later (timer_at, owner) before it fires. A worker that
 * parks cancels it (auto_on_park): nothing more to save there.
 */
static void timer_keep(struct worker *w, uint64_t now)
{
	(void)w, (void)now;
}

static void auto_on_run(struct worker *w, uint64_t now)
{
	uint64_t when = deadline_arm(w, now, use_tsc, timer_keep);

	if (when != UINT64_MAX)
		timer_at(w, when + grace_ns, now, true);
}

/*
 * At a switch whose timer is not where the new run needs it (the switch's inline look at it,
 * word_switch() in deadline_arm.h, found it elsewhere or not armed). Armed (work was queued since
 * it last fired or the worker parked: a busy worker whose runs outlast the window): publish the
 * run's due time as the switch does and move the timer. Not armed: whether work waits decides, as
 * after a skipped request (on_run: deadline's look at the queues and barrier, the timer armed only
 * if work waits).
 */
static void auto_on_switch(struct worker *w, uint64_t now)
{
	if (JF_LIKELY(use_tsc) && __atomic_load_n(&w->pre.word_timer_ns, __ATOMIC_RELAXED) > now) {
		timer_at(w, deadline_publish(w, now) + grace_ns, now, true);
		return;
	}
	auto_on_run(w, now);
}

/*
 * The worker parks. On the wall clock, its timer would fire into the park (waking a halted vCPU
 * for a signal that finds nothing to do): cancelled. On the CPU clock it cannot fire while the
 * thread sleeps, so it stays (and a busy period soon after finds it where it fits, without a
 * timer_settime()); only a retry timer still armed (rare: a retry whose run ended) is cancelled.
 */
static void auto_on_park(struct worker *w)
{
	struct auto_worker *a = &aw[w->id];

	if (!cpu_clock) {
		timer_disarm(w, jf_now_ns());
	} else if (__atomic_load_n(&a->retry_armed, __ATOMIC_RELAXED)) {
		__atomic_store_n(&a->retry_armed, 0, __ATOMIC_RELAXED);
		jf_thread_timer_set(a->retry, 0);
	}
}

static void auto_on_work(struct worker *self, struct worker *target)
{
	uint64_t now, when = jf_deadline_notify(target, use_tsc, &now, self == target);

	/* Queued on its own worker (a wake of a uthread by the one running there): that run's own
	 * rule, so the timer moves later rather than firing early at an older run's expiry. */
	if (when != UINT64_MAX)
		timer_at(target, when + grace_ns, now, self == target);
}

static void auto_kick(struct worker *w)
{
	uint64_t now = jf_now_ns();

	if (use_tsc)
		deadline_lower(w, 0, 0); /* due at once */
	timer_at(w, now + grace_ns, now, false);
}

/*
 * The signal found the uthread in libc (or similar). A safepoint after the call takes the
 * preemption at once; code without one gets the signal again, backing off on the fallback's own
 * time scale (a quarter grace period, doubling up to one), not the quantum's: at a quantum of a
 * few microseconds that would be a storm of 19-45 us signals over a long memcpy(). The scale is
 * capped at RETRY_SCALE_MAX_NS, the grace of before 2026-11-29: the 5 ms grace made the retries
 * 5x rarer, and a uthread that spends nearly all its time in memcpy() (preempt.progress part 3),
 * whose signals land in libc with a probability near 1, went unpreempted for 10 s in a CI run.
 * A retry is rare (code without safepoints, inside libc when its due time came), so its timer
 * moving within the tick costs little overall.
 */
#define RETRY_SCALE_MAX_NS (1000 * 1000)
static void auto_retry(struct worker *w, uint64_t now)
{
	uint64_t q = jf_rt->cfg.quantum_ns;
	uint64_t scale = grace_ns < RETRY_SCALE_MAX_NS ? grace_ns : RETRY_SCALE_MAX_NS;
	uint64_t delay = jf_preempt_retry_delay(w, scale > q ? scale : q);
	struct auto_worker *a = &aw[w->id];

	if (use_tsc)
		jf_deadline_lower(w, 0, 0);
	if (cpu_clock && a->retry_present) {
		/* Not the backstop's CPU clock, whose expiries the kernel finds only at its tick: a
		 * retry 250 us on would come 0-4 ms on (the file comment, "clock"). */
		__atomic_store_n(&a->retry_armed, 1, __ATOMIC_RELAXED);
		if (!jf_thread_timer_set(a->retry, delay))
			__atomic_store_n(&a->retry_armed, 0, __ATOMIC_RELAXED);
		return;
	}
	timer_at(w, now + delay, now, true);
}

const struct jf_preempt_mech jf_mech_auto = {
	.name = "auto",
	.grace_ns = JF_AUTO_GRACE_NS,
	.uses_signal = true,
	.available = auto_available,
	.init = auto_init,
	.fini = auto_fini,
	.worker_start = auto_worker_start,
	.worker_stop = auto_worker_stop,
	.on_run = auto_on_run,
	.on_switch = auto_on_switch,
	.on_work = auto_on_work,
	.on_park = auto_on_park,
	.retry = auto_retry,
	.kick = auto_kick,
	.on_signal = auto_on_signal,
	.quantum_ns = 20 * 1000, /* µs quanta cost it little: docs/preemption.md */
	.word = true,
};
