/*
 * pfn.h - preemptible functions inside the runtime: the continuation's layout and the hooks the
 * switch path (thread.c), the preemption path (preempt.c) and the signal handler call.
 *
 * Owns: struct jf_pfn. A running preemptible function is a second (third, ...) stack of the
 * uthread that launched or resumed it: jf_thread.pfn names the innermost one, each names the
 * one it runs inside (@parent) and the one running inside it (@child). A stop (budget, pause)
 * saves the running context in the stopped function's @ctx and switches to its @caller; its
 * continuation then holds every function that was running inside it (@inner is the innermost,
 * where @ctx lies). pfn.c has the protocol.
 */
#ifndef JIFFY_PFN_INTERNAL_H
#define JIFFY_PFN_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <jiffy/pfn.h>

#include "context.h"

struct worker;
struct jf_thread;

struct pfn_chunk; /* the arena's (pfn.c) */

enum pfn_state {
	PFN_RUNNING = 1, /* on a uthread's chain */
	PFN_STOPPED,     /* a continuation nobody runs */
};

struct jf_pfn {
	struct jf_ctx ctx;    /* stopped: where it goes on (on @inner's stack) */
	struct jf_ctx caller; /* running: whoever launched or resumed it */
	uint32_t dummy_on_cpu;
	uint8_t state;        /* enum pfn_state */
	uint8_t why;          /* what its caller is told: enum jf_pfn_status, or PFN_UNWIND */
	struct jf_pfn *parent, *child; /* running: the chain of the uthread (outer, inner) */
	struct jf_pfn *inner;          /* stopped: the innermost function inside the continuation */
	struct jf_thread *stk;         /* the mapping of its stack (stack.c); @this lies at its top */
	uint64_t deadline;      /* running: min(@own_deadline, parent's deadline), jf_now_ns() time */
	uint64_t own_deadline;  /* running: from its own budget */
	uint64_t remaining;     /* stopped inside a stopped outer function: own budget left */
	jf_thread_fn fn;
	void *arg;
	void *retval;
	void *exit_retval;      /* PFN_UNWIND for jf_exit(): the uthread's result */
	int32_t start_pcount;   /* the preemption count it starts with */
	struct jf_cleanup *cleanup; /* its handlers, last pushed first */
	struct pfn_chunk *arena;
};

/*
 * struct jf_worker_budget - a worker's side of preemptible functions' budgets (struct
 * worker.pfn): the running uthread's innermost deadline and the worker's own timer for code
 * that reaches no safepoint. W: the worker's kernel thread; H: its signal handlers (preemption,
 * budget signal), the same kernel thread.
 */
struct jf_worker_budget {
	/* The running uthread's innermost budget deadline (UINT64_MAX: none): W at a switch and at
	 * launch/stop (relaxed), H at a stop; W and H read it (deadline_arm.h, relaxed), and
	 * deadline.c publishes it in the safepoint word too. */
	uint64_t due_ns;
	uint64_t timer_at; /* when the budget timer fires (jf_now_ns() time; 0: not armed): W, H */
	timer_t timer;     /* created at the first launch on this worker: W only */
	bool timer_ok;     /* @timer exists: W only */
	bool owed;         /* a stop was denied in libc: H sets it, H or W takes it (preempt.c) */
	uint64_t poll;     /* the safepoint word's value a budget stored (0: none): W and H */
};

/* Stops that are not the caller's to see: the uthread is leaving (jf_exit, cancellation). */
#define PFN_UNWIND 100

/* prepare_run(): @t, which runs a preemptible function or was cancelled, starts a run on @w. */
void jf_pfn_on_run(struct worker *w, struct jf_thread *t, uint64_t now);
/*
 * preempt.c, count raised, before its own decision: is a budget of @cur's out, or must @cur be
 * cancelled (JF_CANCEL_ASYNC)? Then stop it (@pc: the interrupted instruction, 0 outside a
 * handler; denied code is retried later) and return true once it runs again.
 */
bool jf_pfn_on_request(struct worker *w, struct jf_thread *cur, uintptr_t pc, uint64_t now);
/* The budget signal's handler (preempt.c): note a budget timer's expiry (@si tells it from
 * jf_cancel()'s tgkill). */
void jf_pfn_signal(struct worker *w, const siginfo_t *si);
/* jf_exit() from @cur: unwind the preemptible functions it runs, then its cleanup handlers. */
void jf_pfn_before_exit(struct jf_thread *cur, void *retval);
/* Worker stop: delete its budget timer. */
void jf_pfn_worker_stop(struct worker *w);

#endif /* JIFFY_PFN_INTERNAL_H */
