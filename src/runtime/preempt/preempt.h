/*
 * preempt.h - the preemption-mechanism interface and the runtime's side of preemption.
 *
 * Owns: struct jf_preempt_mech (one table per mechanism, chosen at start-up by name), the
 * per-kernel-thread preemption state (jf__preempt: nesting count, pending, safepoint flag) and its
 * accessors, and the one entry every mechanism ends in: jf_preempt_request() decides; at a
 * safepoint (an ordinary call) jf_sched_preempt() (thread.c) saves the uthread, tells the policy
 * (JF_ENQ_PREEMPTED) and switches; in the signal handler jf_sched_preempt_to_loop() switches to
 * the worker's scheduler loop, which requeues and picks on its own stack
 * (jf_sched_finish_preempt).
 *
 * Invariant: the count is >= 1 whenever runtime code runs on a worker (every public jf_ call
 * raises it on entry, the scheduler loop keeps it at 1, every switch happens with it >= 1) and a
 * uthread's own count travels with it across switches (saved in struct jf_thread). A request that
 * finds count > 0 is deferred: pending is set and the outermost jf_preempt_enable() takes it.
 */
#ifndef JIFFY_PREEMPT_INTERNAL_H
#define JIFFY_PREEMPT_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jiffy/preempt.h>

struct runtime;
struct worker;

/*
 * struct jf_preempt_mech - one preemption mechanism. Optional ops may be NULL.
 * @available:    can it run here? fill @why when not (required).
 * @init/@fini:   runtime start (after workers are allocated, before they run) / end (after they
 *                stopped). Return 0 or -errno.
 * @worker_start/@worker_stop: on the worker's own kernel thread, before it runs any uthread /
 *                after it ran its last.
 * @on_run:       a uthread starts running on @w at @now, or its run goes on after a request
 *                the worker skipped: arm what must be armed.
 * @on_switch:    a uthread starts running on @w at @now, at a switch (prepare_run); NULL:
 *                @on_run. The hot path: deadline and auto arm the word there without asking
 *                whether work waits (deadline_arm.h).
 * @on_work:      work was queued for @target, which runs a uthread: it may need interrupting.
 * @on_park:      @w has nothing to run and goes to sleep (worker_park, before it blocks): a
 *                timer left armed to save a system call per switch may be cancelled here.
 * @retry:        a request to @w was deferred because the uthread was in code that must not be
 *                interrupted (libc, ...): ask again a little later.
 * @kick:         interrupt @w as soon as possible (wakeup preemption, issue 4).
 * @on_signal:    the preemption signal, sent by this runtime, arrived on @w (its handler, before
 *                deciding): note what the mechanism's own state needs (a one-shot timer is no
 *                longer armed; the timer thread's send time gives the delivery latency).
 * @stats:        add the mechanism's own counters to @out (jf_preempt_stats()).
 * @grace_ns:     the grace period (jf_config.grace_ns) when the configuration leaves it to the
 *                mechanism (JF_GRACE_DEFAULT); 0 for those without one.
 * @quantum_ns:   the quantum when the configuration leaves it to the mechanism
 *                (JF_QUANTUM_DEFAULT); 0: JF_QUANTUM_FALLBACK_NS.
 * @word:         its due times live in the safepoint word (deadline, auto): a budget that
 *                lowered the word (pfn.c) hands it back through jf_deadline_arm().
 */
struct jf_preempt_mech {
	const char *name;
	bool uses_signal;
	bool uses_thread;
	int (*available)(char *why, size_t len);
	int (*init)(struct runtime *rt);
	void (*fini)(struct runtime *rt);
	int (*worker_start)(struct worker *w);
	void (*worker_stop)(struct worker *w);
	void (*on_run)(struct worker *w, uint64_t now);
	void (*on_switch)(struct worker *w, uint64_t now);
	void (*on_work)(struct worker *self, struct worker *target);
	void (*on_park)(struct worker *w);
	void (*retry)(struct worker *w, uint64_t now);
	void (*kick)(struct worker *w);
	void (*on_signal)(struct worker *w, const siginfo_t *si);
	void (*stats)(struct jf_preempt_stats *out);
	uint64_t grace_ns;
	uint64_t quantum_ns;
	bool word; /* it publishes due times in the safepoint word (jf_deadline_arm) */
};

/*
 * Each mechanism owns its per-worker state: struct jf_worker_preempt has JF_MECH_STATE_SIZE bytes
 * for it (mech_state), which only the running mechanism's file reads, through its own struct:
 *   struct pt_worker { ... };
 *   JF_MECH_STATE_FITS(struct pt_worker);
 *   ... JF_MECH_STATE(w, struct pt_worker)->armed ...
 * The runtime zeroes it with the worker. (A mechanism with state that is not per worker keeps it
 * in its file, as dispatcher.c does its timer thread's.)
 */
#define JF_MECH_STATE_SIZE 32
#define JF_MECH_STATE(w, type) ((type *)(void *)(w)->pre.mech_state)
#define JF_MECH_STATE_FITS(type)                                                                  \
	_Static_assert(sizeof(type) <= JF_MECH_STATE_SIZE && _Alignof(type) <= 8,                 \
		       #type " does not fit struct worker's mech_state")

/*
 * struct jf_worker_preempt - a worker's preemption state (struct worker.pre): the running run's
 * times, which timer threads, other workers and the monitor read to decide whether to interrupt
 * it, and the running mechanism's own state. Who touches each field, and how:
 *   W  the worker's kernel thread on its scheduling paths (the switch, the loop);
 *   H  its preemption signal's handler (the same kernel thread, asynchronously to W);
 *   T  a mechanism's timer thread (dispatcher, hybrid) or the netpoller's interrupt thread;
 *   O  other workers (wakeup preemption, jf_cancel(), pfn.c's remote stop);
 *   M  the monitor thread (schedtrace, stall reports: monitor.c).
 * A reader on another thread may see a value one run old: every such reader either rereads
 * run_seq around its reads (T, M) or only asks the worker, whose handler decides again on its
 * own fields; a stale read costs a spare or late request, never a wrong preemption.
 */
struct jf_worker_preempt {
	/* Written once by W before its first uthread (jf_preempt_worker_start); read-only after:
	 * T, O and M signal the thread by @tid; @ptls is this thread's jf__preempt (its safepoint
	 * word is raised through it: T and O store it relaxed/release, W and H read it). */
	pid_t tid;
	struct jf__preempt_tls *ptls;
	sigset_t sigmask; /* the worker's mask, taken by W at start; read-only after: H writes it
			   * into signal frames, pfn.c restores it */
	/* When the running uthread started: W at each switch into a uthread (release), 0 in the
	 * loop (release), JF_START_LAZY while a lazy run has not read the clock; H when a run goes
	 * on after a preemption (release). T and M read it with acquire (and run_seq), O relaxed or
	 * acquire (thread.c's wakeup preemption, netpoll.c, deadline.c and posix_timer.c on_work). */
	uint64_t run_start_ns;
	uint64_t run_start_tsc; /* the TSC value run_start_ns was read from: W and H only, plain
				 * (deadline_arm.h arms the word from it, not an rdtsc) */
	uint64_t run_seq;       /* +1 per switch into a uthread: W (relaxed store of its own value
				 * + 1); T and M read it (relaxed/acquire) to tell runs apart */
	/* When the policy should next be asked (slice op / quantum); JF_DUE_LAZY: not known yet.
	 * W at a switch, H when it extends or defers (relaxed); T and O read it relaxed. */
	uint64_t run_due_ns;
	uint32_t preempt_now; /* wakeup preemption asked: O and H store 1 (release), W clears it at
			       * a switch (relaxed), H takes it (exchange, acquire) */
	uint64_t retry_seq, retry_ns; /* deferred-request backoff: the run it is for, the next
				       * delay. H only (preempt.c), plain */
	/* The word's mechanisms (deadline_arm.h): what the switch published for the run, in TSC
	 * ticks; 0: not armed so (another mechanism, re-armed since, auto's timer fired), and
	 * word_own_armed() does not apply. W and H only, plain. */
	uint64_t switch_poll;
	/* auto's backstop timer: when it fires (jf_now_ns() time; armed while in the future, or its
	 * signal not handled yet; 0: not), and the earliest due time it fits (UINT64_MAX: none).
	 * auto.c writes both on W and in H (relaxed); W reads them at a switch (word_switch()).
	 * deadline, which has no timer, keeps UINT64_MAX in word_timer_ns, so that word_lazy() has
	 * one test for both. */
	uint64_t word_timer_ns;
	uint64_t word_timer_lo;
	/* The running mechanism's own per-worker state, laid out by its file (posix_timer.c for
	 * "timer" and "auto", uintr.c): JF_MECH_STATE() below; its file says who touches what. */
	_Alignas(8) unsigned char mech_state[JF_MECH_STATE_SIZE];
};

/* The quantum of a mechanism that names none (a signal or a timer-thread wake per quantum). */
#define JF_QUANTUM_FALLBACK_NS (100 * 1000u)
/* @name's default quantum (JF_QUANTUM_FALLBACK_NS for an unknown name). */
uint64_t jf_preempt_default_quantum(const char *name);

/* The mechanisms' names, in the order of the table in preempt.c (for error messages). */
#define JF_PREEMPT_KNOWN "none, timer, dispatcher, safepoint, deadline, hybrid, auto, uintr"

extern const struct jf_preempt_mech jf_mech_none, jf_mech_timer, jf_mech_dispatcher,
	jf_mech_safepoint, jf_mech_deadline, jf_mech_hybrid, jf_mech_auto, jf_mech_uintr;

/* This kernel thread's preemption state. asm volatile: never reused across a switch. */
static inline struct jf__preempt_tls *jf_ptls(void)
{
	struct jf__preempt_tls *p;
	__asm__ volatile("movq jf__preempt@gottpoff(%%rip), %0\n\t"
			 "addq %%fs:0, %0"
			 : "=r"(p));
	return p;
}

/*
 * The count is read and written by ONE %fs-relative instruction, like jf_preempt_disable()'s
 * incl: at count 0 a signal may preempt the uthread between computing this thread's address
 * (jf_ptls()) and using it, and resume it on another worker. A store through the old address
 * raised the count of the uthread now running on the old worker (never preempted again) and left
 * this one unprotected.
 */
static inline int32_t jf_pcount(void)
{
	int32_t c;
	__asm__ volatile(JF__PREEMPT_TLS_ASM("movl", 0) ", %0" : "=r"(c) : : "rax", "memory");
	return c;
}

static inline void jf_pcount_set(int32_t v)
{
	__asm__ volatile(JF__PREEMPT_TLS_ASM("movl %0,", 0) : : "r"(v) : "rax", "memory");
}

/* Enter / leave the runtime from a public API call (see the invariant above). */
#define JF_RUNTIME_ENTER() jf_preempt_disable()
#define JF_RUNTIME_LEAVE() jf_preempt_enable()

/*
 * The public entry's shape, written once: evaluate @expr (a call of the entry's _in_runtime
 * half, which answers -EPERM itself outside a uthread) inside the runtime and give its value;
 * JF_IN_RUNTIME_DO() for a statement. The same code as the three lines by hand.
 */
#define JF_IN_RUNTIME(expr)                                                                        \
	__extension__({                                                                            \
		JF_RUNTIME_ENTER();                                                                \
		__typeof__(expr) jf__in_runtime_r = (expr);                                        \
		JF_RUNTIME_LEAVE();                                                                \
		jf__in_runtime_r;                                                                  \
	})
#define JF_IN_RUNTIME_DO(stmt)                                                                     \
	do {                                                                                       \
		JF_RUNTIME_ENTER();                                                                \
		stmt;                                                                              \
		JF_RUNTIME_LEAVE();                                                                \
	} while (0)

/*
 * The pthread shim (src/shim/pthread_shim.c), a client of this header alone: pthread lock holders
 * are not preempted (it raises the count above around the real call) unless @cfg->pthread_shim is
 * false (JIFFY_PTHREAD_SHIM=0); set at jf_run().
 */
struct jf_config;
void jf_pthread_shim_setup(const struct jf_config *cfg);
int jf_pthread_shim_active(void);

/* Runtime lifecycle (runtime.c). */
int jf_preempt_setup(struct runtime *rt, char *err, size_t errlen);
void jf_preempt_teardown(struct runtime *rt);
int jf_preempt_worker_start(struct worker *w);
void jf_preempt_worker_stop(struct worker *w);
const struct jf_preempt_mech *jf_preempt_mech_find(const char *name);

/*
 * jf_preempt_request() - a mechanism asks to preempt the uthread running on this kernel thread
 * (called from its signal handler, from a safepoint, or when a deferred request falls due).
 * @ucontext: the interrupted context when called from a signal handler, else NULL.
 * Return: true if the uthread was preempted (and has now resumed, possibly elsewhere).
 */
bool jf_preempt_request(void *ucontext);
/* The same with the interrupted instruction pointer (0: not interrupted, e.g. a safepoint). */
bool jf_preempt_request_at(uintptr_t pc);

/*
 * jf_preempt_retry_delay() - a request to @w was deferred (libc, a disabled region): how long to
 * wait before asking again. Exponential backoff per run: a quarter quantum, then doubling up to a
 * quantum. A short libc call (malloc) is retried soon; a long one (a 4 MB memcpy) costs only
 * log2(4) + 1 extra signals per quantum, not a storm.
 */
uint64_t jf_preempt_retry_delay(struct worker *w, uint64_t quantum_ns);

/* Is @pc in code that must never be interrupted (libc, ld.so, libstdc++, ...)? */
bool jf_preempt_pc_denied(uintptr_t pc);
/* Install the handler for cfg.pfn_signal, the budget timers' and jf_cancel()'s signal (pfn.c),
 * once. Return: 0 or -errno. */
int jf_preempt_signal_ensure(struct runtime *rt);

/*
 * The per-worker POSIX timer of "timer", shared with "auto" (posix_timer.c): created at worker
 * start for the worker's own thread (SIGEV_THREAD_ID, the preemption signal), deleted at its stop.
 * jf_ptimer_set() arms it one-shot @delay_ns from now (at least JF_PTIMER_MIN_DELAY_NS: a timer
 * signal costs ~19 us here, sooner is never useful), or disarms it for 0; errno is kept. Any
 * thread may call it. Return: the delay armed, 0 when disarmed or timer_settime() failed.
 */
#define JF_PTIMER_MIN_DELAY_NS 5000u
/* The timer itself, for any thread @tid (pfn.c's budget timer too): it sends @signo with @tag as
 * si_value. jf_thread_timer_set() as jf_ptimer_set() for @timer. Return: 0 or -errno. */
int jf_thread_timer_create(pid_t tid, int signo, void *tag, timer_t *out);
/* The same on @clock: CLOCK_THREAD_CPUTIME_ID is the calling thread's CPU time (then @tid must be
 * the caller's), whose timers the kernel checks at its scheduler tick (auto.c's backstop). */
int jf_thread_timer_create_clock(clockid_t clock, pid_t tid, int signo, void *tag, timer_t *out);
uint64_t jf_thread_timer_set(timer_t timer, uint64_t delay_ns);
int jf_ptimer_worker_start(struct worker *w);
/* jf_ptimer_worker_start() on @clock (called on the worker's own thread). */
int jf_ptimer_worker_start_clock(struct worker *w, clockid_t clock);
void jf_ptimer_worker_stop(struct worker *w);
uint64_t jf_ptimer_set(struct worker *w, uint64_t delay_ns);
/* Does @w have its timer (created, not yet deleted)? */
bool jf_ptimer_present(struct worker *w);

/*
 * "deadline"'s arming of the safepoint word, shared with "auto" (deadline.c; the protocol is in
 * its file comment). Times are jf_now_ns() times; UINT64_MAX: nothing to arm.
 * jf_deadline_due_ns(): when @w's running uthread must next be looked at (its due time while
 *     work waits, or its earliest timer).
 * jf_deadline_arm(): on_run: with @publish, store the due time in @w's word (0 when none); when
 *     there is none, call @disarm (may be NULL) before the barrier and the second look, so that a
 *     jf_deadline_notify() after it is seen. Return: the due time armed.
 * jf_deadline_notify(): on_work, from the thread that queued work for @target: the barrier (not
 *     when @own: the caller is @target's own thread), then with @publish lower @target's word
 *     to its due time. Return: that due time (and the clock
 *     read in *@now), UINT64_MAX when @target is in its scheduler loop or nothing is due.
 * jf_deadline_lower(): lower @w's word to @when (0: at once) unless it is due sooner. Return:
 *     the value stored, 0 if the word was due sooner already.
 */
uint64_t jf_deadline_due_ns(struct runtime *rt, struct worker *w);
uint64_t jf_deadline_arm(struct worker *w, uint64_t now, bool publish,
			 void (*disarm)(struct worker *w, uint64_t now));
uint64_t jf_deadline_notify(struct worker *target, bool publish, uint64_t *now, bool own);
uint64_t jf_deadline_lower(struct worker *w, uint64_t when, uint64_t now);

/* The timer thread shared by dispatcher, safepoint, hybrid and uintr (dispatcher.c). */
int jf_timer_thread_start(struct runtime *rt);
void jf_timer_thread_stop(struct runtime *rt);
/* Its counters and CPU time into @out (the stats op of those mechanisms). */
void jf_timer_thread_stats(struct jf_preempt_stats *out);
/* "uintr": the timer thread sends user interrupts (dispatcher.c), with SENDUIPI to @w (uintr.c). */
void jf_tt_set_uintr_mode(void);
int jf_uintr_send(struct worker *w);

#endif /* JIFFY_PREEMPT_INTERNAL_H */
