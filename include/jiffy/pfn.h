/*
 * jiffy/pfn.h - preemptible functions (libinger's idea, ATC'20) and uthread cancellation.
 *
 * Owns: calling an ordinary function with a time budget (jf_pfn_launch): it either returns, or
 * comes back as a continuation that the caller may resume later (again with a budget), hand to
 * another uthread, or cancel; cleanup handlers and a per-launch arena that a cancellation
 * releases; and cancelling a whole uthread (jf_cancel), which wakes it from any blocking jf_
 * call with -ECANCELED and, in JF_CANCEL_ASYNC mode, ends it at its next preemption point.
 * docs/pfn.md has the semantics, what a cancelled function may leave behind, and the costs.
 *
 * Where a budget is enforced: the function runs on its own stack, on the calling uthread; when
 * its budget runs out, the first of (a) a jf_safepoint() or compiler probe (tools/probe-pass) it
 * reaches and (b) a per-worker timer signal, sent a grace period after the deadline (the
 * configured grace, at most the quantum; 0 for mechanisms without one), stops it and returns to
 * the caller. It is never stopped inside libc (malloc, stdio), the dynamic loader, libstdc++,
 * inside the runtime or a jf_preempt_disable() region: there the stop waits until it leaves.
 * This works under every preemption mechanism, "none" included (a budget is a request to
 * preempt that function; the signal handler is installed at the first launch).
 */
#ifndef JIFFY_PFN_H
#define JIFFY_PFN_H

#include <jiffy/export.h>

#include <stddef.h>
#include <stdint.h>

#include <jiffy/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque continuation of a preemptible function that timed out or paused. */
typedef struct jf_pfn jf_pfn_t;

/**
 * enum jf_pfn_status - how jf_pfn_launch() / jf_pfn_resume() came back.
 * @JF_PFN_DONE:    the function returned; *retval holds its result; no continuation remains.
 * @JF_PFN_TIMEOUT: its budget ran out; *cont (launch) or the continuation resumed is valid.
 * @JF_PFN_PAUSED:  it called jf_pfn_pause(); the same as a timeout otherwise.
 */
enum jf_pfn_status {
	JF_PFN_DONE = 0,
	JF_PFN_TIMEOUT = 1,
	JF_PFN_PAUSED = 2,
};

/** JF_PFN_UNLIMITED - a budget that never runs out (only jf_pfn_pause() comes back early). */
#define JF_PFN_UNLIMITED UINT64_MAX

/**
 * jf_pfn_launch() - run @fn(@arg) on a fresh stack with a budget of @budget_ns, synchronously.
 * @fn, @arg:   the function and its argument.
 * @budget_ns:  wall-clock nanoseconds it may run before it is stopped (JF_PFN_UNLIMITED: no
 *              limit). Inside another preemptible function the budget is also bounded by what
 *              is left of the enclosing one's: when that runs out, the enclosing function stops
 *              (with this one inside its continuation).
 * @retval:     receives @fn's result when it returned (may be NULL).
 * @cont:       receives the continuation when it did not return (required).
 *
 * Must be called from a uthread. The function runs on the caller's worker, with the caller's
 * identity (jf_self()); it may call any jf_ function, block, yield and be preempted like the
 * uthread itself (time it spends preempted or blocked counts against its budget).
 *
 * Return: a enum jf_pfn_status (>= 0); -EPERM outside a uthread; -EINVAL for a NULL @fn, a
 * zero budget or a NULL @cont; -ENOMEM when no stack could be mapped.
 */
JF_API int jf_pfn_launch(jf_thread_fn fn, void *arg, uint64_t budget_ns, void **retval,
			 jf_pfn_t **cont);

/**
 * jf_pfn_resume() - continue @cont, stopped by its budget or a pause, with a new budget.
 * May be called by any uthread, on any worker, from any stack frame (inside another preemptible
 * function too). The function resumes with every register, its errno and its preemption state
 * exactly as they were. Return and @retval as for jf_pfn_launch(); on JF_PFN_DONE @cont is freed.
 * -EBUSY if @cont is running (resumed by someone else and not yet back); -EINVAL for NULL or a
 * zero budget; -EPERM outside a uthread.
 */
JF_API int jf_pfn_resume(jf_pfn_t *cont, uint64_t budget_ns, void **retval);

/**
 * jf_pfn_cancel() - end @cont without running it further, and free it.
 * Its cleanup handlers (jf_cleanup_push()) run in LIFO order, innermost nested function first,
 * on the calling uthread's stack; then its arena (jf_pfn_alloc()) is freed and its stack (and
 * those of functions nested inside it) returned. It cannot have been stopped while holding a
 * libc lock (see the top of this file). Return: 0; -EBUSY if it is running; -EINVAL for NULL;
 * -EPERM outside a uthread.
 */
JF_API int jf_pfn_cancel(jf_pfn_t *cont);

/**
 * jf_pfn_pause() - inside a preemptible function: return to its caller now, with JF_PFN_PAUSED
 * (libinger's yield). Returns 0 when it is resumed; -EPERM outside a preemptible function.
 */
JF_API int jf_pfn_pause(void);

/** jf_pfn_current() - the innermost preemptible function running, NULL when none. */
JF_API jf_pfn_t *jf_pfn_current(void);

/**
 * jf_pfn_remaining_ns() - budget left to the innermost running preemptible function (0 when it
 * has run out and the stop is on its way; UINT64_MAX unlimited or outside one).
 */
JF_API uint64_t jf_pfn_remaining_ns(void);

/**
 * jf_pfn_alloc() - @size bytes from the innermost running preemptible function's arena (16-byte
 * aligned). They are freed when that launch ends: when it returns (so the result must not point
 * into them) or is cancelled. Return: NULL with errno ENOMEM, or EPERM outside a preemptible
 * function.
 */
JF_API void *jf_pfn_alloc(size_t size);

/**
 * struct jf_cleanup - a cleanup handler's record, owned by the caller (usually a local variable)
 * from jf_cleanup_push() to the matching jf_cleanup_pop().
 * @fn:    the handler (set by jf_cleanup_push()).
 * @arg:   its argument.
 * @next:  private: the handler pushed before it.
 * @owner: private.
 */
struct jf_cleanup {
	void (*fn)(void *arg);
	void *arg;
	struct jf_cleanup *next;
	void *owner;
};

/**
 * jf_cleanup_push() - register @fn(@arg) to run if the code is cancelled before the matching
 * jf_cleanup_pop(): inside a preemptible function, when its continuation is cancelled; in a
 * uthread outside one, when the uthread is cancelled (jf_testcancel(), JF_CANCEL_ASYNC) or calls
 * jf_exit(). Pushes and pops pair up LIFO in one function (like pthread_cleanup_push); handlers
 * still pushed when a preemptible function returns are dropped without running.
 * Return: 0; -EPERM outside a uthread; -EINVAL for NULL @c or @fn.
 */
JF_API int jf_cleanup_push(struct jf_cleanup *c, void (*fn)(void *arg), void *arg);

/**
 * jf_cleanup_pop() - unregister @c, the last handler pushed, running it first if @execute.
 * Return: 0; -EINVAL if @c is not the last one pushed here (nothing is popped).
 */
JF_API int jf_cleanup_pop(struct jf_cleanup *c, int execute);

/* --- uthread cancellation ----------------------------------------------------------------- */

/** JF_CANCELED - the result a joiner gets from a uthread that was cancelled. */
#define JF_CANCELED ((void *)(intptr_t)-1)

/**
 * enum jf_cancel_mode - what a cancellation request does to the uthread (jf_setcancel()).
 * @JF_CANCEL_DEFERRED: (the default) its blocking jf_ calls return -ECANCELED from then on, and
 *                      jf_testcancel() ends it; it decides when to stop.
 * @JF_CANCEL_ASYNC:    the same, and it is ended at its next preemption point (a safepoint, a
 *                      probe, a preemption signal; never inside libc or the runtime), running
 *                      its cleanup handlers and cancelling the preemptible functions it is in.
 * @JF_CANCEL_DISABLE:  the request is kept, and nothing happens until another mode is set
 *                      (cleanup code that must block uses this).
 */
enum jf_cancel_mode {
	JF_CANCEL_DEFERRED = 0,
	JF_CANCEL_ASYNC = 1,
	JF_CANCEL_DISABLE = 2,
};

/**
 * jf_cancel() - ask @t to stop (Tokio's abort, Photon's thread_interrupt). If it is blocked in a
 * cancellable jf_ call (sleep, join, condition or waitgroup wait, a channel send, receive or
 * select, a descriptor wait or any jf_ socket call that waits) it wakes with -ECANCELED; jf_mutex_lock() is not cancellable. The
 * request stays: later blocking calls fail the same way. @t must not have been joined or freed.
 * Return: 0; -EINVAL for NULL; -EPERM outside the runtime.
 */
JF_API int jf_cancel(jf_thread_t *t);

/**
 * jf_setcancel() - set the calling uthread's enum jf_cancel_mode; @old receives the previous one
 * (may be NULL). Setting JF_CANCEL_ASYNC with a request pending ends the uthread at once.
 * Return: 0; -EINVAL for an unknown mode; -EPERM outside a uthread.
 */
JF_API int jf_setcancel(int mode, int *old);

/**
 * jf_testcancel() - end the calling uthread if a cancellation is pending and not disabled: its
 * cleanup handlers run (LIFO), the preemptible functions it is in are cancelled, and its joiner
 * gets JF_CANCELED. Return: 0 when nothing is pending.
 */
JF_API int jf_testcancel(void);

/** jf_cancel_pending() - 1 if a cancellation of the calling uthread was requested, else 0. */
JF_API int jf_cancel_pending(void);

/**
 * jf_join_timeout() - jf_join() that gives up after @timeout_ns: -ETIMEDOUT, and @t stays
 * joinable. Otherwise as jf_join(); -ECANCELED if the caller is cancelled while it waits.
 */
JF_API int jf_join_timeout(jf_thread_t *t, void **retval, uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_PFN_H */
