/*
 * thread.c - uthread lifecycle and the switch path: spawn, yield, block/wake, exit, join, detach.
 *
 * Owns: every context switch a uthread makes (reschedule, exit_switch) and the join/exit
 * protocol. The model (on_cpu, finish_switch, never caching a worker across a switch) is described
 * in runtime.h; the hot paths here are written top to bottom so that yield can be read in one go:
 * jf_yield -> reschedule (inlined into it) -> pick_next, prepare_run -> jf_ctx_switch (switch.S).
 * Every step of the switch is inline in its caller (JF_HOT_INLINE): make perfcheck counts what a
 * call costs (docs/performance.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fiber.h"
#include "runtime.h"
#include "../common/zero.h"
#include "net/netpoll.h"
#include "preempt/deadline_arm.h"

__thread struct worker *jf_tls_worker __attribute__((tls_model("initial-exec")));

void jf_set_this_worker(struct worker *w)
{
	jf_tls_worker = w;
	if (w)
		w->errno_p = jf__errno_location_slow(); /* fixed for the thread's life */
	jf_local_cur = NULL; /* local.c: no uthread's slots until one is switched to */
}

/*
 * errno lives in glibc's static TLS, at the same offset from the thread pointer (%fs:0) on
 * every thread. Reading it as thread pointer + offset is cheap (__errno_location() is a PLT call)
 * and, being asm volatile, is never reused across a switch to another kernel thread, which
 * __errno_location()'s result may be (it is declared const). The offset is measured at load
 * time and checked on every worker; if a thread ever disagrees, everything falls back to a call
 * the compiler cannot cache. <jiffy/thread.h> uses the same variables for its errno macro.
 */
long jf__errno_tp_offset;
int jf__errno_tp_ok;

static inline char *thread_pointer(void)
{
	char *tp;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* glibc's errno.h is shadowed by <jiffy/thread.h>; ask glibc directly. */
__attribute__((noipa)) int *jf__errno_location_slow(void)
{
	return __errno_location();
}

long jf__errno_offset_init(void)
{
	long off = (long)((char *)jf__errno_location_slow() - thread_pointer());
	jf__errno_tp_offset = off;
	__atomic_store_n(&jf__errno_tp_ok, 1, __ATOMIC_RELAXED);
	return off;
}

__attribute__((constructor)) static void errno_offset_init(void)
{
	jf__errno_offset_init();
}

void jf_errno_check(void)
{
	if ((long)((char *)jf__errno_location_slow() - thread_pointer()) != jf__errno_tp_offset)
		jf_die("errno is not at the same thread-pointer offset on every thread: this libc is "
		       "not supported (<jiffy/thread.h> relies on it)");
}

/* --- sanitizer fiber annotations ------------------------------------------------------------ */

/*
 * ThreadSanitizer: every uthread is a TSan fiber, and so is each worker's scheduler loop. A
 * switch synchronizes the two contexts (it is a handoff), which is what the runtime guarantees.
 */
void jf_tsan_thread_created(struct jf_thread *t)
{
#if JF_TSAN
	t->tsan_fiber = __tsan_create_fiber(0);
	__tsan_set_fiber_name(t->tsan_fiber, t->name[0] ? t->name : "uthread");
#else
	t->tsan_fiber = NULL;
#endif
}

void jf_tsan_thread_freed(struct jf_thread *t)
{
#if JF_TSAN
	if (t->tsan_fiber)
		__tsan_destroy_fiber(t->tsan_fiber);
#endif
	t->tsan_fiber = NULL;
}

void jf_tsan_worker_started(struct worker *w)
{
#if JF_TSAN
	w->tsan_fiber = __tsan_get_current_fiber();
#else
	w->tsan_fiber = NULL;
#endif
}

/* --- the switch path ------------------------------------------------------------------------ */

/* Runs first in every context that resumes after a switch, on the worker it resumed on. */
__attribute__((noinline, cold)) static void reap_dead(struct worker *w)
{
	struct jf_thread *dead = w->reap;
	w->reap = NULL;
	jf_stack_free(w, dead);
}

void jf_finish_switch(struct worker *w)
{
	if (JF_UNLIKELY(w->reap != NULL))
		reap_dead(w); /* out of line: the switch's registers are not spent on it */
}

/* How long the running uthread of @w may run from @now before the policy is asked (tick). */
uint64_t jf_policy_slice(struct worker *w, uint64_t now)
{
	return jf_drv_slice(&jf_rt->drv, w->id, w->cur ? &w->cur->task : NULL, now);
}

/* A new run of @next begins on @w at @now: publish it to the mechanism; a request owed to the last run
 * lapses. */
static JF_HOT_INLINE void preempt_new_run(struct worker *w, struct jf_thread *next, uint64_t now)
{
	/*
	 * Clear first, publish second: the timer thread may raise the flag for the new run as soon
	 * as it sees it, and that flag must survive. (A flag meant for the old run that lands after
	 * the clear is harmless: the safepoint re-checks the quantum and skips.)
	 */
	struct runtime *rt = jf_rt;
	struct jf__preempt_tls *pt = w->pre.ptls;

	pt->pending = 0;
	__atomic_store_n(&w->pre.preempt_now, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->pre.run_seq, w->pre.run_seq + 1, __ATOMIC_RELAXED);
	if (!now) { /* the word's mechanisms, nothing else reads the clock (rt->switch_clock) */
		if (JF_LIKELY(word_lazy(w, pt, next->pfn != NULL)))
			return;
		now = jf_now_ns_tsc(&w->pre.run_start_tsc);
	}
	/* Not for a lazy run: only the word's mechanisms make one, and they store the word. */
	if (rt->word_switch == JF_WORD_CALL && !rt->mech->word)
		__atomic_store_n(&pt->poll, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->pre.run_due_ns, now + jf_drv_slice(&rt->drv, w->id, &next->task, now),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&w->pre.run_start_ns, now, __ATOMIC_RELEASE);
	if (JF_LIKELY(rt->word_switch != JF_WORD_CALL))
		word_switch(rt, w, now);
	else if (rt->mech_on_switch)
		rt->mech_on_switch(w, now);
}

/* The time for a switch's stamps and the policy: 0 when nothing uses it (rt->switch_clock). */
static inline uint64_t switch_now(const struct worker *w)
{
	return JF_LIKELY(w->switch_clock) ? jf_now_ns() : 0;
}

/* Nanoseconds from @since to @now, 0 if @since is later (a stamp racing with the read). */
static inline uint64_t ns_since(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

/*
 * Take @next, runnable and removed from its queue, onto worker @w. Return: the time the run
 * starts, or 0 when nothing reads the clock at a switch (w->switch_clock; the word's mechanisms
 * then make the run lazy: word_lazy()). It is the switch's one clock read, taken once @next is
 * off its last CPU: the mechanism compares it with its timers' expiries (a stale one can keep a
 * timer "armed" that fired already), and the outgoing uthread's stamps (leave_run) use it too.
 */
static JF_HOT_INLINE uint64_t prepare_run(struct worker *w, struct jf_thread *next)
{
	uint64_t now, delay;

	jf_wait_off_cpu(next);
	/* 0 when nothing uses the time (w->switch_clock): no stamp, no delay, run_start_ns 0 */
	if (JF_LIKELY(w->switch_clock)) {
		now = jf_now_ns_tsc(&w->pre.run_start_tsc);
		delay = ns_since(now, JF_VIEW_GET(next, state_ns));
	} else {
		now = delay = 0;
	}
	jf_ut_set_state(next, UT_FROM(UT_RUNNABLE), UT_RUNNING);
	next->on_cpu = 1;
	__atomic_store_n(&next->worker, w, __ATOMIC_RELAXED); /* jf_cancel() reads it (pfn.c) */
	jf_drv_run_start(&jf_rt->drv, w->id, &next->task, now);
	__atomic_store_n(&w->cur, next, __ATOMIC_RELAXED); /* read by mutex spinners */
	jf_local_cur = next->local_fast; /* jf_local_get() (local.c) */
	if (JF_UNLIKELY(w->hist_on))
		jf_hist_defer(w, JF_HIST_RUNNABLE_DELAY, delay);
	JF_VIEW_SET(next, vstate, UV_RUNNING);
	JF_VIEW_SET(next, state_ns, now);
	STAT_INC(w, switches);
	WORKER_INC(w, picks);
	JF_PROBE3(switch, next->task.id, w->id, delay);
	/* A budget of a preemptible function it runs (pfn.c) is this worker's to enforce now. */
	if (JF_UNLIKELY(next->pfn != NULL))
		__atomic_store_n(&w->pfn.due_ns, next->pfn->deadline, __ATOMIC_RELAXED);
	else if (JF_UNLIKELY(w->pfn.due_ns != UINT64_MAX))
		__atomic_store_n(&w->pfn.due_ns, UINT64_MAX, __ATOMIC_RELAXED);
	if (jf_rt->preempting) {
		preempt_new_run(w, next, now);
	} else if (now) {
		/* The stall monitor (monitor.c) reads when this run began. */
		__atomic_store_n(&w->pre.run_seq, w->pre.run_seq + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&w->pre.run_start_ns, now, __ATOMIC_RELEASE);
	}
	if (JF_UNLIKELY(next->pfn != NULL || __atomic_load_n(&next->cancel_req, __ATOMIC_RELAXED)))
		jf_pfn_on_run(w, next, now ? now : jf_now_ns());
	return now;
}

/*
 * @cur, still on @w's CPU (on_cpu set), left its run at @now: record the run and stamp when its
 * new state began. A yielded or preempted uthread (@requeued) is runnable from now; a blocked one
 * is blocked from now unless a waker already made it runnable and stamped it. Nobody can run it
 * before the switch clears on_cpu, and a picker reads the stamp only after that.
 */
static JF_HOT_INLINE void leave_run(struct worker *w, struct jf_thread *cur, uint64_t now,
				      bool requeued)
{
	if (JF_UNLIKELY(w->hist_on))
		jf_hist_defer(w, JF_HIST_RUN_LENGTH, ns_since(now, JF_VIEW_GET(cur, state_ns)));
	if (requeued || JF_VIEW_GET(cur, vstate) != UV_RUNNABLE)
		JF_VIEW_SET(cur, state_ns, now);
}

static inline void run_due_timers(struct worker *w)
{
	uint64_t next = jf_timers_next(w);
	if (JF_UNLIKELY(next != UINT64_MAX) && jf_now_ns() >= next)
		STAT_ADD(w, timers, jf_timers_run(w, jf_now_ns()));
}

static inline void after_enqueue(struct worker *w, int target, struct jf_task *t,
				 enum jf_enqueue_reason reason);

/* @t becomes runnable for @reason at @tnow (0: the uthread is the caller, leave_run() stamps it
 * at the switch): what jf_dump_threads() and gdb show. */
static inline void jf_view_runnable(struct jf_thread *t, enum jf_enqueue_reason reason,
				    uint64_t tnow)
{
	JF_VIEW_SET(t, off_reason, (uint8_t)reason);
	JF_VIEW_SET(t, vstate, UV_RUNNABLE);
	if (tnow)
		JF_VIEW_SET(t, state_ns, tnow);
	if (reason == JF_ENQ_WOKEN) {
		JF_VIEW_SET(t, wait_on, NULL);
		JF_VIEW_SET(t, wait_obj, NULL);
		JF_PROBE1(wake, t->task.id);
	}
}

/* New attributes from jf_thread_set_sched_attr(), applied before the policy sees @t again. */
static inline void apply_sched_attr(struct jf_thread *t)
{
	if (JF_UNLIKELY(__atomic_load_n(&t->attr_pending, __ATOMIC_ACQUIRE))) {
		jf_spin_lock(&t->attr_lock);
		t->task.attr = t->attr_next;
		t->attr_pending = 0;
		jf_spin_unlock(&t->attr_lock);
	}
}

/*
 * @t is about to be handed to the driver's enqueue (jf_drv_enqueue, or jf_drv_requeue_pick) for
 * @reason: the one preparation both ways of making a uthread runnable share, so they cannot drift
 * (the exit path's enqueue_pick once skipped the pending attributes). The driver stamps
 * runnable_ns; the pending attributes are the runtime's to apply (driver.h says why). It comes
 * from running (yield, preemption), blocked (woken) or new; @tnow as for jf_view_runnable().
 * @apply_attrs is false only for a uthread leaving its run, whose account_run() just applied them.
 */
static inline void ready_for_policy(struct jf_thread *t, enum jf_enqueue_reason reason,
				    uint64_t tnow, bool apply_attrs)
{
	if (apply_attrs)
		apply_sched_attr(t);
	jf_ut_set_state(t,
			reason == JF_ENQ_WOKEN	 ? UT_FROM(UT_BLOCKED)
			: reason == JF_ENQ_NEW ? UT_FROM(UT_RUNNABLE)
					       : UT_FROM(UT_RUNNING),
			UT_RUNNABLE);
	jf_view_runnable(t, reason, tnow);
}

/*
 * What @w runs next. If @enq is not NULL it is made runnable for @reason first, in the same
 * policy step when the policy offers enqueue_pick (one queue lock on the yield path), and whoever
 * its enqueue concerns is told after the pick. Falls back to stealing when the policy allows it.
 * The order of the policy calls is the driver's (jf_drv_pick, jf_drv_requeue_pick).
 */
static JF_HOT_INLINE struct jf_thread *pick_next(struct worker *w, struct jf_thread *enq,
					  enum jf_enqueue_reason reason)
{
	struct jf_driver *d = &jf_rt->drv;
	uint64_t now = jf_policy_now();
	struct jf_task *t;
	bool stolen;

	run_due_timers(w);
	if (JF_UNLIKELY(jf_netpoll_active()))
		jf_netpoll_busy(w, jf_stamp_ns());
	if (!enq) {
		t = jf_drv_pick(d, w->id, now, &stolen);
	} else {
		int target;
		/* a uthread leaving its run (yield, preemption) had its attributes applied as the
		 * run ended (account_run) */
		ready_for_policy(enq, reason, 0, reason == JF_ENQ_WOKEN);
		t = jf_drv_requeue_pick(d, w->id, &enq->task, reason, now, &target, &stolen);
		after_enqueue(w, target, &enq->task, reason);
	}
	if (stolen) {
		STAT_INC(w, steals);
		JF_PROBE2(steal, t->id, w->id);
	}
	return t ? jf_thread_of_task(t) : NULL;
}

struct jf_thread *jf_sched_pick(struct worker *w)
{
	return pick_next(w, NULL, JF_ENQ_NEW);
}

/*
 * @next was picked while still switching out on another worker. A uthread must not wait for it
 * (see runtime.h): leave it to @w's scheduler loop, which waits once the caller is saved.
 */
static inline bool next_still_on_cpu(struct worker *w, struct jf_thread *next)
{
	if (!__atomic_load_n(&next->on_cpu, __ATOMIC_ACQUIRE))
		return false;
	w->handoff = next;
	return true;
}

/* The scheduler loop of @w switches into @t (prepared) until the loop is needed again. */
static void enter_from_loop(struct worker *w, struct jf_thread *t)
{
	void *fake = NULL;

	asan_enter_thread(&fake, t);
	tsan_enter_thread(t);
	jf_ctx_switch(&w->sched_ctx, &t->ctx, &w->sched_on_cpu);
	asan_entered(fake);
}

/* Called by the scheduler loop: run @next until @w's loop is needed again. */
void jf_sched_run_from_loop(struct worker *w, struct jf_thread *next)
{
	prepare_run(w, next);
	enter_from_loop(w, next);
}

/* @cur stops running (yield, preempt, block, exit): add this run to its ran_ns. */
static inline void account_run(struct jf_thread *cur)
{
	apply_sched_attr(cur);
	jf_drv_run_end(&jf_rt->drv, &cur->task, jf_policy_now());
}

/*
 * The running uthread @cur gives up its worker: made runnable again for @reason if @enq == cur
 * (yield), or left wherever the caller put it (block: in a wait queue, under a timer). Returns
 * when @cur runs again, possibly on another worker.
 */
static JF_HOT_INLINE void reschedule(struct jf_thread *cur, struct jf_thread *enq,
				     enum jf_enqueue_reason reason)
{
	struct worker *w = cur->worker;
	struct jf_thread *next;
	void *fake = NULL;
	uint64_t now;

	JF_ASSERT(jf_pcount() >= 1, "uthread %llu reschedules with preemption enabled (count %d)",
		  (unsigned long long)cur->task.id, (int)jf_pcount());
	JF_ASSERT(w && w->cur == cur, "uthread %llu reschedules but its worker runs another",
		  (unsigned long long)cur->task.id);
	JF_ASSERT(jf_spins_held() == 0, "uthread %llu reschedules holding %d runtime spinlock(s)",
		  (unsigned long long)cur->task.id, (int)jf_spins_held());
	if (enq)
		account_run(cur);
	cur->saved_errno = *w->errno_p;
	cur->saved_pcount = jf_pcount();
	if (JF_UNLIKELY(atomic_load_explicit(&jf_rt->stopping, memory_order_relaxed)))
		next = NULL; /* shutting down: whatever was runnable is discarded */
	else
		next = pick_next(w, enq, reason);

	if (next == cur) { /* woken or re-picked before it left: keep running */
		jf_ut_set_state(cur, UT_FROM(UT_RUNNABLE), UT_RUNNING);
		now = switch_now(w);
		__atomic_store_n(&w->cur, cur, __ATOMIC_RELAXED); /* read by mutex spinners */
		/* picked again: a new run for the policy */
		jf_drv_run_start(&jf_rt->drv, w->id, &cur->task, now);
		leave_run(w, cur, now, true);
		WORKER_INC(w, picks);
		JF_VIEW_SET(cur, vstate, UV_RUNNING);
		if (JF_UNLIKELY(w->hist_on))
			jf_hist_defer(w, JF_HIST_RUNNABLE_DELAY, 0);
		if (JF_UNLIKELY(__atomic_load_n(&cur->cancel_req, __ATOMIC_RELAXED)))
			jf_pfn_on_run(w, cur, now ? now : jf_now_ns()); /* as prepare_run() does */
		*w->errno_p = cur->saved_errno; /* timers and wakeups above may make syscalls */
		return;
	}
	if (next && JF_UNLIKELY(next_still_on_cpu(w, next)))
		next = NULL;
	if (next) {
		now = prepare_run(w, next);
		leave_run(w, cur, now, enq != NULL);
		asan_enter_thread(&fake, next);
		jf_tsan_release(&cur->on_cpu);
		tsan_enter_thread(next);
		jf_ctx_switch(&cur->ctx, &next->ctx, &cur->on_cpu);
	} else {
		leave_run(w, cur, switch_now(w), enq != NULL);
		__atomic_store_n(&w->cur, NULL, __ATOMIC_RELAXED); /* read by mutex spinners */
		asan_enter_sched(&fake, w);
		jf_tsan_release(&cur->on_cpu);
		tsan_enter(w->tsan_fiber);
		jf_ctx_switch(&cur->ctx, &w->sched_ctx, &cur->on_cpu);
	}
	asan_entered(fake);
	w = cur->worker; /* where it resumed */
	jf_finish_switch(w);
	jf_pcount_set(cur->saved_pcount);
	*w->errno_p = cur->saved_errno;
}

/* reschedule() as a call, for the preemption path (a yield and a block have it inline, each
 * with its own constants: a yield requeues the caller, a block leaves it to its wait). */
static void uthread_reschedule(struct jf_thread *cur, struct jf_thread *enq,
			       enum jf_enqueue_reason reason)
{
	reschedule(cur, enq, reason);
}

/* Preempt the running uthread @cur (preempt.c decided, count raised): back to its queue. */
void jf_sched_preempt(struct jf_thread *cur)
{
	uthread_reschedule(cur, cur, JF_ENQ_PREEMPTED);
}

/*
 * The signal path of a preemption, thin: the handler decided (or found only timers or the
 * netpoller due) and @cur, its count raised, leaves its worker for the scheduler loop, which does
 * the rest on the worker's own stack (jf_sched_finish_preempt): nothing but this switch runs in
 * the signal frame. @cur's on_cpu stays 1 (the switch clears a dummy): nobody may take it before
 * the loop has recorded its run and requeued it.
 */
bool jf_sched_preempt_to_loop(struct jf_thread *cur, bool decided)
{
	struct worker *w = cur->worker;
	void *fake = NULL;

	JF_ASSERT(jf_pcount() >= 1, "uthread %llu leaves for the loop with preemption enabled",
		  (unsigned long long)cur->task.id);
	JF_ASSERT(w && w->cur == cur, "uthread %llu leaves for the loop but its worker runs another",
		  (unsigned long long)cur->task.id);
	JF_ASSERT(jf_spins_held() == 0, "uthread %llu leaves for the loop holding %d spinlock(s)",
		  (unsigned long long)cur->task.id, (int)jf_spins_held());
	cur->saved_errno = *w->errno_p;
	cur->saved_pcount = jf_pcount();
	cur->resumed_in_place = 0;
	w->preempted = cur;
	w->preempt_decided = decided;
	asan_enter_sched(&fake, w);
	tsan_enter(w->tsan_fiber);
	jf_ctx_switch(&cur->ctx, &w->sched_ctx, &w->preempt_on_cpu);
	asan_entered(fake);
	w = cur->worker; /* where it resumed */
	jf_finish_switch(w);
	jf_pcount_set(cur->saved_pcount);
	*w->errno_p = cur->saved_errno;
	return !cur->resumed_in_place;
}

/*
 * The scheduler loop's half of jf_sched_preempt_to_loop(), on the worker's own stack: fire the
 * due timers and poll (what they wake is queued first, as at any scheduling point), then, unless
 * the handler decided already, ask again (the wake-ups may have asked for wakeup preemption);
 * not due: resume @cur in place. Due: requeue it (JF_ENQ_PREEMPTED) and run what the policy
 * picks, @cur itself perhaps. Return: false when nothing was run (the loop looks for work).
 */
bool jf_sched_finish_preempt(struct worker *w)
{
	struct jf_thread *cur = w->preempted, *next;

	w->preempted = NULL;
	if (!w->preempt_decided) {
		/* Only timers or the netpoller were due: do that, then decide (pick_next() below
		 * does the same first, so a decided preemption needs it only there). */
		run_due_timers(w);
		if (JF_UNLIKELY(jf_netpoll_active()))
			jf_netpoll_busy(w, jf_stamp_ns());
		if (!jf_preempt_decide_in_loop(w, cur, jf_now_ns())) {
			/* Not due: back into @cur, not requeued; the same run goes on. */
			cur->resumed_in_place = 1;
			enter_from_loop(w, cur);
			return true;
		}
	}
	account_run(cur);
	next = atomic_load_explicit(&jf_rt->stopping, memory_order_relaxed)
		       ? NULL /* shutting down: whatever was runnable is discarded */
		       : pick_next(w, cur, JF_ENQ_PREEMPTED);
	leave_run(w, cur, switch_now(w), true);
	__atomic_store_n(&w->cur, NULL, __ATOMIC_RELAXED); /* read by mutex spinners */
	jf_tsan_release(&cur->on_cpu);
	__atomic_store_n(&cur->on_cpu, 0, __ATOMIC_RELEASE); /* queued and recorded: others may run it */
	if (!next)
		return false;
	jf_sched_run_from_loop(w, next); /* waits for next's on_cpu here, in the loop */
	return true;
}

/* The exiting uthread @cur leaves its worker for good, making its @joiner (if any) runnable. */
__attribute__((noreturn)) static void exit_switch(struct jf_thread *cur, struct jf_thread *joiner)
{
	struct worker *w = cur->worker;
	struct jf_thread *next = NULL;

	JF_ASSERT(jf_pcount() >= 1, "uthread %llu exits with preemption enabled",
		  (unsigned long long)cur->task.id);
	JF_ASSERT(jf_spins_held() == 0, "uthread %llu exits holding %d runtime spinlock(s)",
		  (unsigned long long)cur->task.id, (int)jf_spins_held());
	if (!atomic_load_explicit(&jf_rt->stopping, memory_order_relaxed))
		next = pick_next(w, joiner, JF_ENQ_WOKEN);
	if (next && JF_UNLIKELY(next_still_on_cpu(w, next)))
		next = NULL;
	if (next) {
		leave_run(w, cur, prepare_run(w, next), false);
		asan_enter_thread(NULL, next);
		jf_tsan_release(&cur->on_cpu);
		tsan_enter_thread(next);
		jf_ctx_switch(&cur->ctx, &next->ctx, &cur->on_cpu);
	} else {
		leave_run(w, cur, switch_now(w), false);
		__atomic_store_n(&w->cur, NULL, __ATOMIC_RELAXED); /* read by mutex spinners */
		asan_enter_sched(NULL, w);
		jf_tsan_release(&cur->on_cpu);
		tsan_enter(w->tsan_fiber);
		jf_ctx_switch(&cur->ctx, &w->sched_ctx, &cur->on_cpu);
	}
	__builtin_unreachable();
}

/* --- making runnable, waking parked workers -------------------------------------------------- */

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* Wake worker @k if it is parked. @self counts the wakeup. */
void jf_worker_kick(struct worker *self, struct worker *k)
{
	uint32_t old;

	if (__atomic_load_n(&k->idle.park_state, __ATOMIC_SEQ_CST) == WK_RUNNING)
		return;
	old = __atomic_exchange_n(&k->idle.park_state, WK_RUNNING, __ATOMIC_SEQ_CST);
	if (old == WK_PARKED) {
		int saved = errno; /* callers run in uthreads: their errno must not change */
		futex(&k->idle.park_state, FUTEX_WAKE_PRIVATE, 1, NULL);
		errno = saved;
	} else if (old == WK_PARKED_POLL) {
		jf_netpoll_break();
	} else {
		return;
	}
	if (self)
		STAT_INC(self, unparks);
}

static void kick_one_parked(struct worker *self)
{
	struct runtime *rt = jf_rt;
	for (int i = 1; i < rt->nworkers; i++) {
		struct worker *k = &rt->workers[(self->id + i) % rt->nworkers];
		if (__atomic_load_n(&k->idle.park_state, __ATOMIC_RELAXED) != WK_RUNNING) {
			jf_worker_kick(self, k);
			return;
		}
	}
}

/* The netpoller has a waiter and no worker in epoll: wake a parked worker to poll. */
void jf_kick_parked_worker(struct worker *self)
{
	if (atomic_load_explicit(&jf_rt->nr_parked, memory_order_relaxed) > 0)
		kick_one_parked(self);
}

/*
 * Wakeup preemption: @t was queued for @target, which runs a uthread; the policy wants that one
 * off now. On our own worker the caller is that uthread, inside the runtime: mark the request
 * pending and the outermost jf_preempt_enable() takes it. Elsewhere: the mechanism's kick.
 */
static void wakeup_preempt(struct worker *w, int target, struct jf_task *t)
{
	struct runtime *rt = jf_rt;
	struct worker *k = &rt->workers[target];

	if (!__atomic_load_n(&k->pre.run_start_ns, __ATOMIC_ACQUIRE) ||
	    !jf_drv_wakeup_preempt(&rt->drv, target, t, jf_policy_now()))
		return;
	if (k == w) {
		if (w->cur) {
			__atomic_store_n(&w->pre.preempt_now, 1, __ATOMIC_RELAXED); /* others kick it */
			jf_ptls()->pending = 1;
			STAT_INC(w, wakeup_preempts);
		}
	} else if (rt->preempting && rt->mech->kick) {
		__atomic_store_n(&k->pre.preempt_now, 1, __ATOMIC_RELEASE);
		rt->mech->kick(k);
		STAT_INC(w, wakeup_preempts);
	}
}

/* @target's queue received @t for @reason: wake whoever should run or steal it. */
static JF_HOT_INLINE void after_enqueue(struct worker *w, int target, struct jf_task *t,
				    enum jf_enqueue_reason reason)
{
	struct runtime *rt = jf_rt;

	WORKER_INC(w, enqueues);
	if (reason == JF_ENQ_WOKEN)
		STAT_INC(w, wakeups);
	if (jf_drv_may_wakeup_preempt(&rt->drv, target, reason))
		wakeup_preempt(w, target, t);
	if (rt->mech_on_work) {
		/* A busy worker now has work waiting: whom to tell is the driver's rule (a shared
		 * queue: everyone; a new or woken task: its worker, unless that is us and our own
		 * word is armed for the run; a yielded or preempted one: nobody). */
		int tell = jf_drv_work_to_tell(target, reason);
		if (tell == JF_DRV_TELL_ALL)
			for (int i = 0; i < rt->nworkers; i++)
				rt->mech_on_work(w, &rt->workers[i]);
		else if (tell >= 0 && !(tell == w->id && word_own_armed(w)))
			rt->mech_on_work(w, &rt->workers[tell]);
	}
	if (rt->nworkers == 1 ||
	    (target == w->id && (reason == JF_ENQ_YIELDED || !rt->drv.can_steal)))
		return;
	/* Pairs with the fence in worker_park(): either it sees our enqueue or we see it parked. */
	jf_smp_mb();
	if (target >= 0 && target != w->id) {
		jf_worker_kick(w, &rt->workers[target]);
		return;
	}
	/* No particular worker (a shared queue), or one others may steal from: wake a parked one. */
	if ((rt->drv.can_steal || target < 0) &&
	    atomic_load_explicit(&rt->nr_spinning, memory_order_relaxed) == 0 &&
	    atomic_load_explicit(&rt->nr_parked, memory_order_relaxed) > 0)
		kick_one_parked(w);
}

static JF_HOT_INLINE void make_runnable_at(struct worker *w, struct jf_thread *t,
					    enum jf_enqueue_reason reason, uint64_t tnow)
{
	ready_for_policy(t, reason, tnow, true);
	after_enqueue(w, jf_drv_enqueue(&jf_rt->drv, w->id, &t->task, reason, jf_policy_now()),
		      &t->task, reason);
}

void jf_sched_make_runnable(struct worker *w, struct jf_thread *t, enum jf_enqueue_reason reason)
{
	make_runnable_at(w, t, reason, JF_LIKELY(w->switch_clock) ? jf_stamp_ns() : 0);
}

void jf_sched_block_then(uint32_t *unlock, void (*publish)(void *arg), void *arg)
{
	struct jf_thread *cur = jf_current();
	struct worker *w = cur->worker;
	JF_ASSERT(jf_pcount() >= 1, "uthread %llu blocks with preemption enabled",
		  (unsigned long long)cur->task.id);
	account_run(cur);
	jf_ut_set_state(cur, UT_FROM(UT_RUNNING), UT_BLOCKED);
	JF_VIEW_SET(cur, vstate, UV_BLOCKED);
	JF_PROBE2(block, cur->task.id, JF_VIEW_GET(cur, wait_on));
	jf_drv_blocked(&jf_rt->drv, w->id, &cur->task, jf_policy_now());
	STAT_INC(w, blocks);
	/* Only now may anything wake it: enqueue(WOKEN) must not race with blocked(). */
	if (publish)
		publish(arg);
	if (unlock)
		jf_spin_unlock(unlock);
	reschedule(cur, NULL, JF_ENQ_WOKEN);
}

void jf_sched_block(uint32_t *unlock)
{
	jf_sched_block_then(unlock, NULL, NULL);
}

void jf_sched_wake(struct jf_thread *t)
{
	jf_sched_make_runnable(jf_this_worker(), t, JF_ENQ_WOKEN);
}

/* --- public API ------------------------------------------------------------------------------ */

void jf_attr_init(struct jf_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->sched.worker = -1;
}

static void uthread_exit(struct jf_thread *cur, void *retval) __attribute__((noreturn));

static void uthread_entry(void *arg)
{
	struct jf_thread *t = arg;

	asan_entered(NULL);
	jf_finish_switch(t->worker);
	errno = 0;
	jf_pcount_set(0); /* leaving the runtime: the uthread's own code is preemptible */
	if (JF_UNLIKELY(jf_ptls()->pending))
		jf__preempt_enable_slow(); /* a request deferred while we were being switched in */
	uthread_exit(t, t->fn(t->arg));
}

static uint64_t alloc_id(struct worker *w)
{
	if (JF_UNLIKELY(w->next_id == w->id_end)) {
		w->next_id = __atomic_fetch_add(&jf_rt->next_id_block, 4096, __ATOMIC_RELAXED);
		w->id_end = w->next_id + 4096;
	}
	return w->next_id++;
}

/* Create a uthread on worker @w (not yet runnable). Used by jf_spawn and by jf_run for main. */
int jf_thread_create(struct worker *w, const struct jf_attr *attr, jf_thread_fn fn, void *arg,
		     struct jf_thread **out)
{
	struct runtime *rt = jf_rt;
	size_t stack = attr && attr->stack_size ? attr->stack_size : rt->cfg.stack_size;
	struct jf_thread *t;

	if (!fn)
		return -EINVAL;
	if (attr && attr->stack_size && attr->stack_size < 16384)
		return -EINVAL;
	if (attr && (attr->sched.worker < -1 || attr->sched.worker >= rt->nworkers))
		return -EINVAL;
	t = jf_stack_alloc(w, stack);
	if (!t)
		return -ENOMEM;

	t->on_cpu = 0;
	t->saved_errno = 0;
	t->saved_pcount = 1;
	t->worker = NULL;
	t->fn = fn;
	t->arg = arg;
	t->retval = NULL;
	t->jlock = 0;
	t->attr_lock = 0;
	t->attr_pending = 0;
	t->state = UT_RUNNABLE;
	t->detached = attr ? attr->detached != 0 : 0;
	t->is_main = 0;
	t->joiner = NULL;
	t->wq_next = NULL;
	t->wq_queued = 0;
	t->asan_fake_stack = NULL;
	t->vstate = UV_RUNNABLE;
	t->off_reason = JF_ENQ_NEW;
	t->wait_on = NULL;
	t->wait_obj = NULL;
	t->state_ns = 0;
	t->stall_ns = 0;
	t->pfn = NULL;
	t->cleanup = NULL;
	t->cancel_req = 0;
	t->cancel_mode = JF_CANCEL_DEFERRED;
	t->cw_lock = 0;
	t->cw = NULL;
	t->name[0] = '\0';
	if (attr && attr->name) {
		strncpy(t->name, attr->name, sizeof(t->name) - 1);
		t->name[sizeof(t->name) - 1] = '\0';
	}
	jf_tsan_thread_created(t);

	_Static_assert(sizeof(t->task) % 16 == 0 && _Alignof(struct jf_task) >= 16, "jf_zero16");
	jf_zero16(&t->task, sizeof(t->task)); /* not memset: common/zero.h says why */
	t->task.id = alloc_id(w);
	t->task.last_worker = -1;
	t->task.home_worker = w->id;
	if (attr) {
		t->task.attr = attr->sched;
	} else {
		t->task.attr.worker = -1;
	}
	jf_local_thread_init(t, w, attr); /* no local values; pinned if attr->pin */
	jf_drv_task_init(&rt->drv, w->id, &t->task, jf_policy_now());

	jf_ctx_init(&t->ctx, jf_stack_top(t), uthread_entry, t);
	STAT_INC(w, spawns);
	JF_PROBE2(spawn, t->task.id, t->name);
	*out = t;
	return 0;
}

static int jf_spawn_in_runtime(jf_thread_t **out, const struct jf_attr *attr, jf_thread_fn fn, void *arg)
{
	struct worker *w = jf_this_worker();
	struct jf_thread *t;
	int err;

	if (!w)
		return -EPERM;
	if (!out && !(attr && attr->detached))
		return -EINVAL;
	err = jf_thread_create(w, attr, fn, arg, &t);
	if (err)
		return err;
	if (out)
		*out = t;
	jf_sched_make_runnable(w, t, JF_ENQ_NEW);
	return 0;
}

static void jf_yield_in_runtime(void)
{
	struct worker *w = jf_this_worker();
	struct jf_thread *cur = w ? w->cur : NULL;

	if (JF_UNLIKELY(!cur))
		return;
	STAT_INC(w, yields);
	/* Uthreads woken by the netpoller (descriptors, jf_run_blocking's pool) are work too: a
	 * yield loop on one worker without preemption must not starve them (core.blocking). */
	if (JF_UNLIKELY(jf_netpoll_active()))
		jf_netpoll_busy(w, jf_stamp_ns());
	if (!jf_drv_has_work(&jf_rt->drv, w->id) && jf_timers_next(w) == UINT64_MAX &&
	    !atomic_load_explicit(&jf_rt->stopping, memory_order_relaxed))
		return;
	reschedule(cur, cur, JF_ENQ_YIELDED);
}


static void uthread_exit(struct jf_thread *cur, void *retval)
{
	struct worker *w;

	if (JF_UNLIKELY(cur->local != NULL))
		jf_local_exit(cur); /* its keys' destructors, still in the uthread (local.c) */
	jf_pcount_set(1); /* never preempted again: it is leaving */
	w = cur->worker;
	struct jf_thread *joiner;
	bool detached;

	account_run(cur);
	JF_PROBE1(exit, cur->task.id);
	jf_drv_task_exit(&jf_rt->drv, w->id, &cur->task, jf_policy_now());
	STAT_INC(w, tasks_done);
	if (JF_UNLIKELY(cur->is_main))
		jf_runtime_stop(retval);

	jf_spin_lock(&cur->jlock);
	cur->retval = retval;
	jf_ut_set_state(cur, UT_FROM(UT_RUNNING), UT_EXITED);
	JF_VIEW_SET(cur, vstate, UV_EXITED);
	joiner = cur->joiner;
	detached = cur->detached;
	jf_spin_unlock(&cur->jlock);

	if (detached)
		w->reap = cur; /* freed by whichever context runs next on this worker */
	exit_switch(cur, joiner);
}

_Noreturn void jf_exit(void *retval)
{
	struct jf_thread *cur;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur)
		jf_die("jf_exit() called outside a uthread");
	jf_pfn_before_exit(cur, retval); /* its preemptible functions, its cleanup handlers */
	uthread_exit(jf_current(), retval);
}

struct join_wait {
	struct jf_thread *t, *joiner;
};

/* The joiner's wait ends early (timeout, jf_cancel()): stop being @t's joiner, unless @t exited
 * first (then its exit wakes the joiner, as usual). */
static bool join_wait_over(void *arg)
{
	struct join_wait *jw = arg;
	bool removed = false;

	jf_spin_lock(&jw->t->jlock);
	if (jw->t->joiner == jw->joiner &&
	    __atomic_load_n(&jw->t->state, __ATOMIC_RELAXED) != UT_EXITED) {
		jw->t->joiner = NULL;
		removed = true;
	}
	jf_spin_unlock(&jw->t->jlock);
	return removed;
}

static int jf_join_in_runtime(jf_thread_t *t, void **retval, uint64_t deadline)
{
	struct jf_thread *cur = jf_current();
	struct join_wait jw = {t, cur};

	if (!cur)
		return -EPERM;
	if (!t)
		return -EINVAL;
	if (t == cur)
		return -EDEADLK;
	jf_spin_lock(&t->jlock);
	if (t->detached || t->joiner) {
		jf_spin_unlock(&t->jlock);
		return -EINVAL;
	}
	if (__atomic_load_n(&t->state, __ATOMIC_RELAXED) != UT_EXITED) {
		int r = jf_cancel_due(cur)					     ? -ECANCELED
			: deadline != UINT64_MAX && deadline <= jf_now_ns() ? -ETIMEDOUT
									     : 0;
		if (r) {
			jf_spin_unlock(&t->jlock);
			return r; /* @t stays joinable */
		}
		t->joiner = cur;
		jf_wait_note(cur, "join", t);
		r = jf_block_wait(&t->jlock, deadline, join_wait_over, &jw); /* woken by uthread_exit */
		if (r)
			return r;
	} else {
		jf_spin_unlock(&t->jlock);
	}
	jf_wait_off_cpu(t);
	if (retval)
		*retval = t->retval;
	jf_stack_free(cur->worker, t);
	return 0;
}

static int jf_detach_in_runtime(jf_thread_t *t)
{
	struct jf_thread *cur = jf_current();
	bool exited;

	if (!cur)
		return -EPERM;
	if (!t)
		return -EINVAL;
	jf_spin_lock(&t->jlock);
	if (t->detached || t->joiner) {
		jf_spin_unlock(&t->jlock);
		return -EINVAL;
	}
	exited = __atomic_load_n(&t->state, __ATOMIC_RELAXED) == UT_EXITED;
	t->detached = 1;
	jf_spin_unlock(&t->jlock);
	if (exited) {
		jf_wait_off_cpu(t);
		jf_stack_free(cur->worker, t);
	}
	return 0;
}

static jf_thread_t *jf_self_in_runtime(void)
{
	return jf_current();
}

uint64_t jf_thread_id(const jf_thread_t *t)
{
	return t ? t->task.id : 0;
}

const char *jf_thread_name(const jf_thread_t *t)
{
	return t ? t->name : "";
}

static int jf_worker_id_in_runtime(void)
{
	struct worker *w = jf_this_worker();
	return w ? w->id : -1;
}

void jf_thread_get_sched_attr(const jf_thread_t *t, struct jf_sched_attr *out)
{
	jf_thread_t *m = (jf_thread_t *)t;

	JF_RUNTIME_ENTER();
	jf_spin_lock(&m->attr_lock);
	*out = m->attr_pending ? m->attr_next : m->task.attr;
	jf_spin_unlock(&m->attr_lock);
	JF_RUNTIME_LEAVE();
}

int jf_thread_set_sched_attr(jf_thread_t *t, const struct jf_sched_attr *attr)
{
	if (!t || !attr || !jf_rt)
		return -EINVAL;
	if (attr->worker < -1 || attr->worker >= jf_rt->nworkers)
		return -EINVAL;
	/*
	 * Policies read task.attr inside their ops, from any worker, without our lock: the change
	 * is applied when the uthread is next handed to the policy (apply_sched_attr()), which is
	 * also when a policy can act on it (a new class, type or weight takes effect from its next
	 * enqueue). The caller changing its own attributes sees them from its next yield, block or
	 * preemption.
	 */
	JF_RUNTIME_ENTER();
	jf_spin_lock(&t->attr_lock);
	t->attr_next = *attr;
	__atomic_store_n(&t->attr_pending, 1, __ATOMIC_RELEASE);
	jf_spin_unlock(&t->attr_lock);
	JF_RUNTIME_LEAVE();
	return 0;
}

int jf_spawn(jf_thread_t **out, const struct jf_attr *attr, jf_thread_fn fn, void *arg)
{
	return JF_IN_RUNTIME(jf_spawn_in_runtime(out, attr, fn, arg));
}

void jf_yield(void)
{
	JF_IN_RUNTIME_DO(jf_yield_in_runtime());
}

int jf_join(jf_thread_t *t, void **retval)
{
	return JF_IN_RUNTIME(jf_join_in_runtime(t, retval, UINT64_MAX));
}

int jf_join_timeout(jf_thread_t *t, void **retval, uint64_t timeout_ns)
{
	uint64_t now = jf_now_ns();
	uint64_t deadline = timeout_ns >= UINT64_MAX - now ? UINT64_MAX - 1 : now + timeout_ns;

	return JF_IN_RUNTIME(jf_join_in_runtime(t, retval, deadline));
}

int jf_detach(jf_thread_t *t)
{
	return JF_IN_RUNTIME(jf_detach_in_runtime(t));
}

jf_thread_t *jf_self(void)
{
	return JF_IN_RUNTIME(jf_self_in_runtime());
}

int jf_worker_id(void)
{
	return JF_IN_RUNTIME(jf_worker_id_in_runtime());
}
