/*
 * pfn.c - preemptible functions (libinger's model) and uthread cancellation.
 *
 * Owns: jf_pfn_launch/resume/cancel/pause, the budget (its arming and its stop), cleanup
 * handlers, the per-launch arena, and jf_cancel/jf_setcancel/jf_testcancel. The cancellable
 * wait itself is timer.c's (jf_block_wait), join's is thread.c's.
 *
 * A preemptible function is one more stack of the uthread that runs it, not a uthread: launch
 * takes a stack from the worker's cache, switches to it (jf_ctx_switch, as between uthreads:
 * callee-saved registers, MXCSR, x87 control word) and runs the function there; when it returns,
 * it switches back and the stack goes back to the cache. Nothing is queued, no policy is asked,
 * no system call is made while the worker's budget timer is armed early enough (see arming).
 *
 * The stop. A budget ends at a deadline (jf_now_ns() time); inside another function it is also
 * bounded by the enclosing one's. The worker publishes the innermost deadline (pfn_due_ns):
 *  - in its safepoint word (jf__preempt.poll; deadline.c folds it into what it publishes), so a
 *    jf_safepoint() or a compiler probe reached after the deadline enters the runtime;
 *  - through its own one-shot POSIX timer (SIGEV_THREAD_ID to the worker, jf_config.pfn_signal,
 *    si_value = &budget_tag), set a grace period after the deadline, for code that reaches no
 *    safepoint (Debian's libz, say). The handler is the preemption signal's (preempt.c): it runs
 *    on the function's stack and the kernel's frame below it holds every register. The signal is
 *    not the mechanism's own: a timer re-armed while its signal waits behind a handler of the
 *    same signal has that signal dropped by the kernel as stale, so a budget signal that held
 *    the mechanism's back in its handler could cost the mechanism its expiry for good.
 * Either way preempt.c's request() asks jf_pfn_on_request() first, with the count raised and the
 * interrupted PC checked (libc, the loader, ... are never cut: the word is lowered to "at once"
 * and the timer retried, so the stop comes when it leaves them). The stop saves the running
 * context in the stopped function's ctx and switches to its caller: from inside a signal
 * handler, that frame stays on the function's stack until a resume switches back and the
 * handler returns through rt_sigreturn (the same resume as a preempted uthread's).
 *
 * Nesting. Each running function names its parent (the one it runs inside) and child; the
 * uthread names the innermost (jf_thread.pfn). When a deadline passes, the outermost function
 * whose deadline passed stops, and the functions running inside it go into its continuation
 * (@inner is the innermost; the saved context lies on its stack). Their own budgets are kept as
 * what was left (@remaining) and given back when the continuation resumes.
 *
 * Arming is lazy, because a timer_settime() whose expiry lies within the next scheduler tick
 * costs a VM exit here (6-10 us, auto.c): a launch re-arms only when the timer is not armed or
 * armed later than the new deadline plus grace. A timer that fires early (its function returned
 * or has time left) finds nothing due and is set again for the running function, if any; so a
 * worker whose functions keep completing takes about one signal per budget period.
 *
 * Under ThreadSanitizer, which cannot follow a stack switch inside a signal handler, budgets and
 * asynchronous cancellation are enforced at safepoints and probes only (no timer, no signal).
 *
 * Cancelling a continuation runs its cleanup handlers innermost function first, each list last
 * pushed first, on the canceller's stack (the function's stack is still mapped), then frees the
 * arena and the stacks. A function is never stopped in libc, so none of libc's locks can be
 * held by it. A uthread that leaves (jf_exit(), a cancellation) from inside functions first
 * stops the outermost with PFN_UNWIND; its caller (launch or resume, on the uthread's own
 * stack) cancels that continuation and then leaves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fiber.h"
#include "runtime.h"
#include "../common/zero.h"

/* The si_value of the budget timers' signals, to tell them from the mechanism's. */
static char budget_tag;

/* The bytes at the top of a function's stack that hold its struct jf_pfn. */
#define PFN_SIZE ((sizeof(struct jf_pfn) + JF_CACHELINE - 1) & ~(size_t)(JF_CACHELINE - 1))

/* One allocation of the arena; the caller's bytes follow, 16-byte aligned (malloc's alignment,
 * and the header is 16 bytes). */
struct pfn_chunk {
	struct pfn_chunk *next;
	size_t pad;
};
_Static_assert(sizeof(struct pfn_chunk) == 16, "the arena hands out 16-byte aligned memory");

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return b >= UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* --- the budget ------------------------------------------------------------------------------ */

/*
 * After the deadline, how long the signal waits for a safepoint or probe: the mechanism's grace
 * period (auto, hybrid), at most a quantum; for the others PROBE_GRACE_NS while safepoints can
 * time themselves (the TSC), so that probed code is stopped by its probe, not by a signal sent
 * at the same moment (~13 us on this VM, paid even when the probe won); else 0.
 */
#define PROBE_GRACE_NS (10 * 1000u)

static uint64_t budget_grace(void)
{
	uint64_t g = jf_rt->cfg.grace_ns, q = jf_rt->cfg.quantum_ns;

	if (g == 0 && jf_tsc_hz())
		g = PROBE_GRACE_NS;
	return g < q ? g : q;
}

static bool budget_timer(struct worker *w)
{
	if (JF_TSAN)
		return false; /* TSan cannot follow a stack switch in a signal handler: safepoints only */
	if (JF_LIKELY(w->pfn.timer_ok))
		return true;
	if (jf_preempt_signal_ensure(jf_rt) != 0 ||
	    jf_thread_timer_create(w->pre.tid, jf_rt->cfg.pfn_signal, &budget_tag, &w->pfn.timer))
		return false; /* safepoints and probes still stop it */
	w->pfn.timer_ok = true;
	return true;
}

/* Set @w's budget timer to fire at @at unless it fires by then already. */
static void budget_timer_set(struct worker *w, uint64_t at, uint64_t now)
{
	uint64_t armed = w->pfn.timer_at;

	if (armed > now && armed <= at)
		return; /* fires early: it sets itself again then (jf_pfn_on_request) */
	if (!budget_timer(w))
		return;
	if (jf_thread_timer_set(w->pfn.timer, at > now ? at - now : 1))
		w->pfn.timer_at = at > now + JF_PTIMER_MIN_DELAY_NS ? at : now + JF_PTIMER_MIN_DELAY_NS;
}

/* A function with @deadline runs on @w (count raised): publish it to safepoints and the timer. */
static void budget_arm(struct worker *w, uint64_t deadline, uint64_t now)
{
	__atomic_store_n(&w->pfn.due_ns, deadline, __ATOMIC_RELAXED);
	if (deadline == UINT64_MAX)
		return;
	if (jf_tsc_hz()) {
		uint64_t tsc = jf_deadline_lower(w, deadline, now);
		if (tsc)
			w->pfn.poll = tsc;
	}
	budget_timer_set(w, sat_add(deadline, budget_grace()), now);
}

/*
 * The calling uthread runs no preemptible function any more on @w: hand the safepoint word back
 * if it still holds the budget's deadline (or probed code that runs next would keep reading the
 * TSC until that moment passed: +12 % on a zlib decode, docs/pfn-bomb.md), to the mechanism's
 * own due time where it publishes one there. The budget timer is left armed (lazy arming, the
 * file comment): after a stop at a probe its signal lands a grace period later in whatever runs
 * then. Disarming it at the stop was tried: the timer_settime() is a VM exit here (~6 us), and
 * it sat on the stop's path, between the deadline and the caller getting control back (a probed
 * zlib bomb came back 6.5 us late instead of 0.2 us).
 */
static void budget_release(struct worker *w)
{
	uint64_t mine = w->pfn.poll;

	if (mine) {
		w->pfn.poll = 0;
		if (__atomic_compare_exchange_n(&w->pre.ptls->poll, &mine, 0, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED) &&
		    jf_rt->mech->word)
			jf_deadline_arm(w, jf_now_ns(), true, NULL);
	}
}

void jf_pfn_on_run(struct worker *w, struct jf_thread *t, uint64_t now)
{
	if (t->pfn)
		budget_arm(w, t->pfn->deadline, now);
	if (__atomic_load_n(&t->cancel_req, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&t->cancel_mode, __ATOMIC_RELAXED) == JF_CANCEL_ASYNC) {
		/* Cancelled asynchronously: the end of the runtime call it comes back through (the
		 * request left pending on this kernel thread), its next safepoint, or the signal. */
		jf_ptls()->pending = 1;
		jf_deadline_lower(w, 0, 0);
		budget_timer_set(w, now, now);
	}
}

void jf_pfn_signal(struct worker *w, const siginfo_t *si)
{
	if (si->si_code == SI_TIMER && si->si_value.sival_ptr == &budget_tag)
		w->pfn.timer_at = 0; /* one-shot: it fired (jf_cancel()'s tgkill is not it) */
}

void jf_pfn_worker_stop(struct worker *w)
{
	if (w->pfn.timer_ok)
		timer_delete(w->pfn.timer);
	w->pfn.timer_ok = false;
	w->pfn.timer_at = 0;
}

/* --- switching between a uthread's stacks ---------------------------------------------------- */

/*
 * Switch from the running context of @cur (saved in @from) to @to, the context of whatever
 * @cur->pfn now says runs (its innermost function, or the uthread's own stack). Each side keeps
 * its own preemption count and errno, in its own frame. @dying: the running stack is never
 * switched back to (ASan drops its fake frames).
 */
static void pfn_switch(struct jf_thread *cur, struct jf_ctx *from, const struct jf_ctx *to,
		       uint32_t *dummy_on_cpu, bool dying)
{
	int saved_errno = errno;
	int32_t count = jf_pcount();
	void *fake = NULL;

	JF_ASSERT(count >= 1, "uthread %llu switches stacks with preemption enabled",
		  (unsigned long long)cur->task.id);
	JF_ASSERT(jf_spins_held() == 0, "uthread %llu switches stacks holding a spinlock",
		  (unsigned long long)cur->task.id);
	asan_enter_thread(dying ? NULL : &fake, cur);
	tsan_enter_thread(cur);
	jf_ctx_switch(from, to, dummy_on_cpu);
	asan_entered(fake);
	jf_pcount_set(count);
	errno = saved_errno;
}

static void pfn_entry(void *arg) __attribute__((noreturn));

static void pfn_entry(void *arg)
{
	struct jf_pfn *p = arg;
	struct jf_thread *cur;
	void *r;

	asan_entered(NULL);
	errno = 0;
	jf_pcount_set(p->start_pcount);
	if (p->start_pcount == 0 && JF_UNLIKELY(jf_ptls()->pending))
		jf__preempt_enable_slow(); /* a request deferred while it was being launched */
	r = p->fn(p->arg);
	/* It may have been stopped and resumed by another uthread meanwhile: ask again. */
	jf_preempt_disable();
	cur = jf_current();
	JF_ASSERT(cur->pfn == p, "a preemptible function returned while another one ran inside it");
	p->retval = r;
	p->why = JF_PFN_DONE;
	p->cleanup = NULL; /* handlers still pushed are dropped (their records were on this stack) */
	cur->pfn = p->parent;
	if (p->parent)
		p->parent->child = NULL;
	pfn_switch(cur, &p->ctx, &p->caller, &p->dummy_on_cpu, true);
	__builtin_unreachable();
}

/*
 * Stop @target, the innermost function @cur runs or one it runs inside, with @why: its caller
 * goes on. Returns when the continuation is resumed (on whichever uthread and worker).
 */
static void pfn_stop(struct jf_thread *cur, struct jf_pfn *target, int why, uint64_t now)
{
	for (struct jf_pfn *q = cur->pfn; q != target; q = q->parent)
		q->remaining = q->own_deadline == UINT64_MAX ? UINT64_MAX
			       : q->own_deadline > now	     ? q->own_deadline - now
							     : 0;
	target->inner = cur->pfn;
	target->why = (uint8_t)why;
	cur->pfn = target->parent;
	if (target->parent)
		target->parent->child = NULL;
	target->parent = NULL;
	__atomic_store_n(&cur->worker->pfn.due_ns, cur->pfn ? cur->pfn->deadline : UINT64_MAX,
			 __ATOMIC_RELAXED);
	if (!cur->pfn)
		budget_release(cur->worker);
	__atomic_store_n(&target->state, PFN_STOPPED, __ATOMIC_RELEASE);
	pfn_switch(cur, &target->ctx, &target->caller, &target->dummy_on_cpu, false);
}

/*
 * Run the handlers of @list, last pushed first. @preemptible: with the count at 0 (a uthread
 * leaving); else as runtime code, so that a canceller inside a preemptible function is not
 * stopped half-way through a cancellation (the rest of it would be lost with its continuation).
 */
static void run_cleanups(struct jf_cleanup **list, bool preemptible)
{
	struct jf_cleanup *c;

	while ((c = *list) != NULL) {
		int32_t count = jf_pcount();
		*list = c->next;
		if (preemptible)
			jf_pcount_set(0);
		c->fn(c->arg);
		jf_pcount_set(count);
	}
}

static void arena_free(struct jf_pfn *p)
{
	struct pfn_chunk *c = p->arena, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	p->arena = NULL;
}

/* The stack of @p back to the calling worker's cache (count raised). */
static void pfn_free(struct jf_pfn *p)
{
	arena_free(p);
	jf_stack_free(jf_this_worker(), p->stk);
}

/* End the stopped continuation @p: cleanups and arenas, innermost function first, then stacks. */
static void pfn_destroy(struct jf_pfn *p)
{
	struct jf_pfn *q = p->inner;

	for (;;) {
		struct jf_pfn *up = q == p ? NULL : q->parent;
		run_cleanups(&q->cleanup, false);
		pfn_free(q);
		if (!up)
			break;
		q = up;
	}
}

/*
 * Run @p (new, or a stopped continuation claimed by the caller) on @cur with @budget_ns from
 * @now, until it returns or stops. Return: the enum jf_pfn_status.
 */
static int pfn_run(struct jf_thread *cur, struct jf_pfn *p, uint64_t budget_ns, uint64_t now,
		   void **retval)
{
	struct jf_pfn *parent = cur->pfn, *q;
	void *exit_retval;
	int why;

	p->parent = parent;
	if (parent)
		parent->child = p;
	p->own_deadline = sat_add(now, budget_ns);
	p->deadline = parent && parent->deadline < p->own_deadline ? parent->deadline
								    : p->own_deadline;
	/* The functions that were running inside it get their own budgets' rest back. */
	for (q = p; q != p->inner;) {
		q = q->child;
		q->own_deadline = q->remaining == UINT64_MAX ? UINT64_MAX : sat_add(now, q->remaining);
		q->deadline = q->parent->deadline < q->own_deadline ? q->parent->deadline
								    : q->own_deadline;
	}
	cur->pfn = p->inner;
	budget_arm(cur->worker, p->inner->deadline, now);
	pfn_switch(cur, &p->caller, &p->ctx, &p->dummy_on_cpu, false);

	/* Back on the caller's stack: it returned, stopped, or the uthread is leaving. */
	why = p->why;
	if (why == JF_PFN_DONE) {
		__atomic_store_n(&cur->worker->pfn.due_ns,
				 cur->pfn ? cur->pfn->deadline : UINT64_MAX, __ATOMIC_RELAXED);
		if (!cur->pfn)
			budget_release(cur->worker);
		if (retval)
			*retval = p->retval;
		pfn_free(p);
	} else if (why == PFN_UNWIND) {
		exit_retval = p->exit_retval;
		pfn_destroy(p);
		jf_exit(exit_retval); /* its own cleanup handlers, then it ends */
	}
	return why;
}

static int launch_in_runtime(jf_thread_fn fn, void *arg, uint64_t budget_ns, void **retval,
			     jf_pfn_t **cont)
{
	struct jf_thread *cur = jf_current(), *stk;
	struct jf_pfn *p;
	int r;

	if (!cur)
		return -EPERM;
	if (!fn || !budget_ns || !cont)
		return -EINVAL;
	stk = jf_stack_alloc(cur->worker, jf_rt->cfg.stack_size);
	if (!stk)
		return -ENOMEM;
	JF_VIEW_SET(stk, vstate, UV_FREE); /* not a uthread: jf_dump_threads() skips it */
	strcpy(stk->name, "pfn");
	jf_tsan_thread_created(stk);
	p = (struct jf_pfn *)(void *)((char *)stk - PFN_SIZE);
	jf_zero16(p, PFN_SIZE); /* its whole cache lines; not memset: common/zero.h says why */
	p->stk = stk;
	p->fn = fn;
	p->arg = arg;
	p->inner = p;
	p->state = PFN_RUNNING;
	p->start_pcount = jf_pcount() - 1; /* the caller's, outside this call */
	jf_ctx_init(&p->ctx, p, pfn_entry, p);
	r = pfn_run(cur, p, budget_ns, jf_now_ns(), retval);
	if (r != JF_PFN_DONE)
		*cont = p;
	return r;
}

int jf_pfn_launch(jf_thread_fn fn, void *arg, uint64_t budget_ns, void **retval,
		  jf_pfn_t **cont)
{
	return JF_IN_RUNTIME(launch_in_runtime(fn, arg, budget_ns, retval, cont));
}

/* Take @p from stopped to running (one claimer wins). */
static bool claim(struct jf_pfn *p)
{
	uint8_t expect = PFN_STOPPED;
	return __atomic_compare_exchange_n(&p->state, &expect, PFN_RUNNING, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

int jf_pfn_resume(jf_pfn_t *cont, uint64_t budget_ns, void **retval)
{
	struct jf_thread *cur;
	int r;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur)
		r = -EPERM;
	else if (!cont || !budget_ns)
		r = -EINVAL;
	else if (!claim(cont))
		r = -EBUSY;
	else
		r = pfn_run(cur, cont, budget_ns, jf_now_ns(), retval);
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_pfn_cancel(jf_pfn_t *cont)
{
	int r = 0;

	JF_RUNTIME_ENTER();
	if (!jf_current())
		r = -EPERM;
	else if (!cont)
		r = -EINVAL;
	else if (!claim(cont))
		r = -EBUSY;
	else
		pfn_destroy(cont);
	JF_RUNTIME_LEAVE();
	return r;
}

static int pause_current(struct jf_thread *cur, void *arg)
{
	(void)arg;
	if (!cur->pfn)
		return -EPERM; /* not inside a preemptible function */
	pfn_stop(cur, cur->pfn, JF_PFN_PAUSED, jf_now_ns());
	return 0;
}

int jf_pfn_pause(void)
{
	return jf_on_current(pause_current, NULL);
}

jf_pfn_t *jf_pfn_current(void)
{
	struct jf_thread *cur;
	jf_pfn_t *p;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	p = cur ? cur->pfn : NULL;
	JF_RUNTIME_LEAVE();
	return p;
}

uint64_t jf_pfn_remaining_ns(void)
{
	struct jf_thread *cur;
	uint64_t left = UINT64_MAX, now;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (cur && cur->pfn && cur->pfn->deadline != UINT64_MAX) {
		now = jf_now_ns();
		left = cur->pfn->deadline > now ? cur->pfn->deadline - now : 0;
	}
	JF_RUNTIME_LEAVE();
	return left;
}

void *jf_pfn_alloc(size_t size)
{
	struct jf_thread *cur;
	struct pfn_chunk *c = NULL;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur || !cur->pfn) {
		errno = EPERM;
	} else if (size > SIZE_MAX - sizeof(*c) || !(c = malloc(sizeof(*c) + size))) {
		errno = ENOMEM;
		c = NULL;
	} else {
		c->next = cur->pfn->arena;
		cur->pfn->arena = c;
	}
	JF_RUNTIME_LEAVE();
	return c ? (void *)(c + 1) : NULL;
}

/* --- cleanup handlers ------------------------------------------------------------------------ */

static struct jf_cleanup **cleanup_list(struct jf_thread *cur)
{
	return cur->pfn ? &cur->pfn->cleanup : &cur->cleanup;
}

int jf_cleanup_push(struct jf_cleanup *c, void (*fn)(void *arg), void *arg)
{
	struct jf_thread *cur;
	struct jf_cleanup **list;
	int r = 0;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur) {
		r = -EPERM;
	} else if (!c || !fn) {
		r = -EINVAL;
	} else {
		list = cleanup_list(cur);
		c->fn = fn;
		c->arg = arg;
		c->next = *list;
		c->owner = cur->pfn ? (void *)cur->pfn : (void *)cur;
		*list = c;
	}
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_cleanup_pop(struct jf_cleanup *c, int execute)
{
	struct jf_thread *cur;
	struct jf_cleanup **list;
	int r = 0;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur) {
		r = -EPERM;
	} else if (!c || *(list = cleanup_list(cur)) != c) {
		r = -EINVAL;
	} else {
		*list = c->next;
		c->next = NULL;
	}
	JF_RUNTIME_LEAVE();
	if (r == 0 && execute)
		c->fn(c->arg);
	return r;
}

/* --- stops from the preemption path, leaving ------------------------------------------------- */

static struct jf_pfn *outermost(struct jf_pfn *p)
{
	while (p->parent)
		p = p->parent;
	return p;
}

bool jf_pfn_on_request(struct worker *w, struct jf_thread *cur, uintptr_t pc, uint64_t now)
{
	struct jf_pfn *p = cur->pfn, *target = NULL;
	bool cancel = __atomic_load_n(&cur->cancel_req, __ATOMIC_RELAXED) &&
		      __atomic_load_n(&cur->cancel_mode, __ATOMIC_RELAXED) == JF_CANCEL_ASYNC;

	if (p && p->deadline <= now) {
		target = p; /* the outermost whose budget is out: the others are inside it */
		while (target->parent && target->parent->deadline <= now)
			target = target->parent;
	}
	if (!target && !cancel) {
		if (p) /* early (a timer armed for an earlier function, a mechanism's request) */
			budget_arm(w, p->deadline, now);
		return false;
	}
	if (pc && jf_preempt_pc_denied(pc)) {
		/*
		 * In libc or the like: the first safepoint after it, the end of the next runtime call
		 * or jf_preempt_disable() region (the handler leaves the request pending: @pfn_owed),
		 * or the timer a bit later.
		 */
		STAT_INC(w, preempt_deferred);
		jf_deadline_lower(w, 0, 0);
		w->pfn.owed = true;
		w->pfn.timer_at = 0;
		budget_timer_set(w, now + jf_preempt_retry_delay(w, jf_rt->cfg.quantum_ns), now);
		return false;
	}
	if (pc)
		pthread_sigmask(SIG_SETMASK, &w->pre.sigmask, NULL); /* as preempt.c does: see there */
	if (cancel)
		jf_exit(JF_CANCELED); /* through jf_pfn_before_exit(): functions, then handlers */
	pfn_stop(cur, target, JF_PFN_TIMEOUT, now);
	return true;
}

void jf_pfn_before_exit(struct jf_thread *cur, void *retval)
{
	if (cur->pfn) {
		struct jf_pfn *o = outermost(cur->pfn);
		o->exit_retval = retval;
		pfn_stop(cur, o, PFN_UNWIND, jf_now_ns());
		jf_die("a preemptible function that was unwinding ran again");
	}
	__atomic_store_n(&cur->cancel_mode, JF_CANCEL_DISABLE, __ATOMIC_RELAXED);
	run_cleanups(&cur->cleanup, true);
}

/* --- uthread cancellation -------------------------------------------------------------------- */

int jf_cancel(jf_thread_t *t)
{
	struct runtime *rt = jf_rt;
	struct worker *tw;
	int r = 0;

	JF_RUNTIME_ENTER();
	if (!rt || !jf_this_worker()) {
		r = -EPERM;
	} else if (!t) {
		r = -EINVAL;
	} else {
		__atomic_store_n(&t->cancel_req, 1, __ATOMIC_SEQ_CST);
		jf_cancel_wake(t);
		/* Asynchronous and running elsewhere: interrupt it (a stale worker costs a skip). */
		tw = __atomic_load_n(&t->worker, __ATOMIC_RELAXED);
		if (t != jf_current() && tw &&
		    __atomic_load_n(&t->cancel_mode, __ATOMIC_RELAXED) == JF_CANCEL_ASYNC &&
		    __atomic_load_n(&t->state, __ATOMIC_RELAXED) == UT_RUNNING) {
			jf_deadline_lower(tw, 0, 0);
			if (!JF_TSAN && jf_preempt_signal_ensure(rt) == 0) {
				int saved = errno;
				syscall(SYS_tgkill, rt->pid, tw->pre.tid, rt->cfg.pfn_signal);
				errno = saved;
			}
		}
	}
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_setcancel(int mode, int *old)
{
	struct jf_thread *cur;
	int r = 0;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur) {
		r = -EPERM;
	} else if (mode != JF_CANCEL_DEFERRED && mode != JF_CANCEL_ASYNC &&
		   mode != JF_CANCEL_DISABLE) {
		r = -EINVAL;
	} else {
		if (old)
			*old = __atomic_load_n(&cur->cancel_mode, __ATOMIC_RELAXED);
		__atomic_store_n(&cur->cancel_mode, (uint8_t)mode, __ATOMIC_RELAXED);
		if (mode == JF_CANCEL_ASYNC && __atomic_load_n(&cur->cancel_req, __ATOMIC_RELAXED))
			jf_exit(JF_CANCELED);
	}
	JF_RUNTIME_LEAVE();
	return r;
}

static int testcancel(struct jf_thread *cur, void *arg)
{
	(void)arg;
	if (jf_cancel_due(cur))
		jf_exit(JF_CANCELED);
	return 0;
}

int jf_testcancel(void)
{
	return jf_on_current(testcancel, NULL);
}

int jf_cancel_pending(void)
{
	struct jf_thread *cur;
	int r;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	r = cur && __atomic_load_n(&cur->cancel_req, __ATOMIC_RELAXED);
	JF_RUNTIME_LEAVE();
	return r;
}
