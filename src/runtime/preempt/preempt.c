/*
 * preempt.c - the runtime's side of preemption, shared by every mechanism.
 *
 * Owns: the per-kernel-thread state (jf__preempt), the mechanism table, the preemption signal
 * handler, the "may this code be interrupted?" decision, deferral, and the one entry that every
 * mechanism ends in (jf_preempt_request -> jf_sched_preempt at a safepoint, or
 * jf_sched_preempt_to_loop from the signal handler).
 *
 * The handler is thin: it decides from what it can read without a lock (the wakeup flag,
 * has_work, the due time, the policy's tick; whether this worker's timers or the netpoller are
 * due) and, if anything is to be done, switches to the worker's scheduler loop, which fires the
 * timers, polls, requeues and picks on the worker's own stack (thread.c,
 * jf_sched_preempt_to_loop / jf_sched_finish_preempt). A safepoint, an ordinary call, does all
 * of it in place.
 *
 * How a preempted uthread resumes: the signal handler runs on the uthread's own stack (no
 * SA_ONSTACK), and leaves the uthread from inside the handler. The
 * kernel's signal frame, below the handler on that stack, holds every register the CPU has (the
 * whole XCR0 state, AVX-512 included) and the signal mask. When the uthread is picked again, on
 * any worker, it returns from the handler and rt_sigreturn restores that state exactly. Two
 * things in the frame describe the kernel thread it was taken on and are rewritten before
 * returning: uc_stack (rt_sigreturn reinstalls it as the current thread's alternate signal stack)
 * and uc_sigmask (kept: the uthread's mask when it was interrupted, with the preemption signal
 * unblocked; sigreturn installs it on the worker it resumes on). While the handler
 * decides, the signal stays blocked, so a request that arrives meanwhile waits in the kernel
 * instead of nesting; only when it really switches away does it unblock the signal for the
 * uthreads that run next: one sigprocmask per preemption, none per switch (Aspen's signal mode
 * paid one per switch). docs/preemption.md gives the measurements behind the choice.
 *
 * What may not be interrupted: runtime code (the count in jf__preempt, see preempt.h), the
 * application's jf_preempt_disable() regions, and code in libc, the dynamic loader, libstdc++,
 * libgcc_s, libpthread and the sanitizer runtimes, found by address at start-up. That covers
 * malloc and stdio (their locks belong to the kernel thread, which another uthread would share)
 * and every other non-reentrant library routine, without wrapping any of them.
 */
#define _GNU_SOURCE
#include <x86intrin.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../runtime.h"
#include "deadline_arm.h"
#include "preempt.h"
#include "../net/netpoll.h"

__thread struct jf__preempt_tls jf__preempt __attribute__((tls_model("initial-exec")));

static const struct jf_preempt_mech *const mechs[] = {
	&jf_mech_none,	   &jf_mech_timer,  &jf_mech_dispatcher, &jf_mech_safepoint,
	&jf_mech_deadline, &jf_mech_hybrid, &jf_mech_auto,	 &jf_mech_uintr,
};

const struct jf_preempt_mech *jf_preempt_mech_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(mechs) / sizeof(mechs[0]); i++)
		if (!strcmp(mechs[i]->name, name))
			return mechs[i];
	return NULL;
}

uint64_t jf_preempt_default_quantum(const char *name)
{
	const struct jf_preempt_mech *m = jf_preempt_mech_find(name);
	return m && m->quantum_ns ? m->quantum_ns : JF_QUANTUM_FALLBACK_NS;
}

int jf_preempt_available(const char *name, char *why, unsigned long len)
{
	const struct jf_preempt_mech *m = jf_preempt_mech_find(name);
	char tmp[8];

	if (!m)
		return -EINVAL;
	if (!why || !len) {
		why = tmp;
		len = sizeof(tmp);
	}
	why[0] = '\0';
	return m->available(why, len) == 0;
}

const char *jf_preempt_mechanism(void)
{
	return jf_rt && jf_rt->mech ? jf_rt->mech->name : "none";
}

int jf_preempt_stats(struct jf_preempt_stats *out)
{
	struct runtime *rt = jf_rt;
	if (!rt)
		return -ESRCH;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->mechanism = rt->mech->name;
	out->quantum_ns = rt->cfg.quantum_ns;
	out->grace_ns = rt->cfg.grace_ns;
	if (rt->mech->stats)
		rt->mech->stats(out);
	return 0;
}

/* --- code that must not be interrupted ------------------------------------------------------ */

#define MAX_DENIED 48
static struct {
	uintptr_t lo, hi;
} denied[MAX_DENIED];
static int nr_denied;

static const char *const denied_libs[] = {
	"/libc.so",    "/ld-linux", "/libstdc++", "/libgcc_s",    "/libpthread",  "/libdl.so",
	"/libasan.so", "/libtsan.so", "/libubsan.so", "/liblsan.so", "/libjemalloc", "/libtcmalloc",
};

static int collect_denied(struct dl_phdr_info *info, size_t size, void *arg)
{
	bool deny = false;

	(void)size, (void)arg;
	for (size_t i = 0; info->dlpi_name && i < sizeof(denied_libs) / sizeof(denied_libs[0]); i++)
		if (strstr(info->dlpi_name, denied_libs[i]))
			deny = true;
	for (int i = 0; deny && i < info->dlpi_phnum && nr_denied < MAX_DENIED; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			denied[nr_denied].lo = info->dlpi_addr + ph->p_vaddr;
			denied[nr_denied].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			nr_denied++;
		}
	}
	return 0;
}

bool jf_preempt_pc_denied(uintptr_t pc)
{
	for (int i = 0; i < nr_denied; i++)
		if (pc >= denied[i].lo && pc < denied[i].hi)
			return true;
	return false;
}

/*
 * Signal frames of the application's own handlers. A handler that interrupted libc (malloc, with
 * its arena lock held by this kernel thread) runs application code: its PC is not denied, and
 * preempting it there once let another uthread on the same kernel thread into the same libc
 * state. So when the interrupted uthread's signal mask differs from the worker's (a handler
 * blocks its own signal and its sa_mask while it runs; the uthread is then in one, or masked
 * signals itself), the stack above the interrupted stack pointer is searched for the kernel's
 * frame of that handler (x86-64 rt_sigframe: the return address to the libc restorer, then the
 * ucontext of what the handler interrupted, whose FPU state lies between the frame and the
 * interrupted stack pointer), and that context's PC decides as the PC does, frame after frame
 * outward. Limits: a handler installed with SA_NODEFER and an empty sa_mask leaves the mask as
 * it was and is not searched for; one whose restorer is not libc's (raw rt_sigaction) is not
 * found; the search covers HANDLER_SCAN_BYTES above the stack pointer.
 */
#define HANDLER_SCAN_BYTES (64 * 1024)
static uintptr_t libc_restorer; /* glibc's __restore_rt, read back from our own sigaction */

/* The end of the stack @sp lies in, on @w running @cur: the uthread's stack or the worker's
 * alternate signal stack; 0 for neither. */
static uintptr_t stack_end_of(uintptr_t sp, struct worker *w, struct jf_thread *cur)
{
	uintptr_t lo = (uintptr_t)cur->map_base, hi = (uintptr_t)cur;

	if (sp >= lo && sp < hi)
		return hi;
	lo = (uintptr_t)w->altstack;
	hi = lo + w->altstack_size;
	if (w->altstack && sp >= lo && sp < hi)
		return hi;
	return 0;
}

/* (Not instrumented by ASan: the words scanned include the redzones of live frames.) */
__attribute__((no_sanitize_address)) static bool
in_handler_over_denied(const ucontext_t *uc, struct worker *w, struct jf_thread *cur)
{
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP], end, a;
	unsigned long mask, wmask;

	/* The kernel's sigset is the first 64 bits of glibc's; only those are in the frame. */
	memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
	memcpy(&wmask, &w->pre.sigmask, sizeof(wmask));
	if (!libc_restorer || mask == wmask)
		return false;
	end = stack_end_of(sp, w, cur);
	if (!end)
		return false;
	if (end - sp > HANDLER_SCAN_BYTES)
		end = sp + HANDLER_SCAN_BYTES;
	for (a = (sp + 7) & ~(uintptr_t)7; a + sizeof(uintptr_t) + sizeof(ucontext_t) <= end;
	     a += sizeof(uintptr_t)) {
		const ucontext_t *u;
		uintptr_t sp2, fp;

		if (*(const uintptr_t *)a != libc_restorer)
			continue;
		u = (const ucontext_t *)(a + sizeof(uintptr_t));
		sp2 = (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
		fp = (uintptr_t)u->uc_mcontext.fpregs;
		if (!(fp > a && fp < sp2 && sp2 <= end))
			continue; /* a stale copy of the address, not a frame */
		if (jf_preempt_pc_denied((uintptr_t)u->uc_mcontext.gregs[REG_RIP]))
			return true;
		a = (sp2 & ~(uintptr_t)7) - sizeof(uintptr_t); /* a handler under that one? */
	}
	return false;
}

uint64_t jf_preempt_retry_delay(struct worker *w, uint64_t quantum_ns)
{
	uint64_t seq = __atomic_load_n(&w->pre.run_seq, __ATOMIC_RELAXED), d;

	if (w->pre.retry_seq != seq) {
		w->pre.retry_seq = seq;
		d = quantum_ns / 4;
	} else {
		d = w->pre.retry_ns * 2;
	}
	if (d > quantum_ns)
		d = quantum_ns;
	w->pre.retry_ns = d;
	return d;
}

/* --- the decision ----------------------------------------------------------------------------- */

/* Where a request entered: counted per path when it preempts (jiffy/stats.h). */
enum request_src { SRC_OTHER, SRC_SAFEPOINT, SRC_INTERRUPT };

/*
 * The start of a lazy run (JF_DUE_LAZY: deadline_arm.h's word_lazy) on @w, at its first safepoint
 * or at a request that found it lazy: what the switch does when it reads the clock (thread.c's
 * preempt_new_run), now: the clock read as the switch reads it (the word is armed from that TSC),
 * the due time from the policy's slice, and the word's publish (word_switch(): auto moves its
 * timer there if it does not fit the run).
 */
static JF_HOT_INLINE void run_resolve_now(struct runtime *rt, struct worker *w)
{
	uint64_t now = jf_now_ns_tsc(&w->pre.run_start_tsc);

	__atomic_store_n(&w->pre.run_due_ns, now + jf_drv_slice(&rt->drv, w->id, &w->cur->task, now),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&w->pre.run_start_ns, now, __ATOMIC_RELEASE);
	word_switch(rt, w, now);
}

/*
 * Is @cur's preemption due on @w at @now: a wakeup preemption with work to switch to, or its
 * slice over and the policy wanting it off? When not, count the skip and re-arm the mechanism
 * for what remains (a new slice if the policy lets it go on). *@quantum: due by its slice.
 */
static bool preemption_due(struct runtime *rt, struct worker *w, struct jf_thread *cur,
			   uint64_t now, bool *quantum)
{
	*quantum = false;
	if (__atomic_exchange_n(&w->pre.preempt_now, 0, __ATOMIC_ACQUIRE)) {
		/* Wakeup preemption: the policy already decided; only a switch to nothing is moot. */
		if (jf_drv_has_work(&rt->drv, w->id))
			return true;
		STAT_INC(w, preempt_skipped);
		return false;
	}
	/* Never a lazy run here: decide_and_preempt(), the one way in (the loop's decision comes
	 * after a handler's), starts it first. */
	if (now < __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED)) {
		STAT_INC(w, preempt_skipped);
		if (rt->mech->on_run)
			rt->mech->on_run(w, now); /* re-arm for what remains, if work waits */
		return false;
	}
	if (!jf_drv_tick(&rt->drv, w->id, &cur->task, now)) {
		/* Nothing else may run here (has_work), or the policy's tick lets it go on: ask
		 * again after another slice, not in a storm. */
		STAT_INC(w, preempt_skipped);
		__atomic_store_n(&w->pre.run_due_ns, now + jf_policy_slice(w, now), __ATOMIC_RELAXED);
		if (rt->mech->on_run)
			rt->mech->on_run(w, now);
		return false;
	}
	*quantum = true;
	return true;
}

/* A preemption of @cur taken by path @src at @now: the counters, lateness and the probe. */
static void count_preempt(struct worker *w, struct jf_thread *cur, enum request_src src,
			  bool quantum, uint64_t now)
{
	/* Lateness: taken (now) minus due, for preemptions at the end of a quantum. */
	uint64_t due = __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED);
	uint64_t late = quantum && now > due ? now - due : 0;

	STAT_INC(w, preempts);
	if (src == SRC_SAFEPOINT)
		STAT_INC(w, preempts_safepoint);
	else if (src == SRC_INTERRUPT)
		STAT_INC(w, preempts_signal);
	if (quantum)
		jf_hist_add(&w->hist[src == SRC_SAFEPOINT   ? JF_HIST_LATENESS_SAFEPOINT
				     : src == SRC_INTERRUPT ? JF_HIST_LATENESS_SIGNAL
							    : JF_HIST_LATENESS_OTHER],
			    late);
	JF_PROBE4(preempt, cur->task.id, w->id, (int)src, late);
	(void)cur;
}

/*
 * Lock-holder preemption (src/sync/holder.h): @cur holds a Jiffy lock and is due to be
 * preempted. Defer it until jf_config.lock_defer_ns after the first such decision: the run's due
 * time moves there (the mechanism is re-armed for it), and the release of the last lock takes the
 * preemption as a wakeup preemption would (preempt_now). At the bound the holder is preempted,
 * lock and all: the deferral is a bound, not a promise.
 */
static bool lock_holder_defer(struct worker *w, struct jf_thread *cur, uint64_t now)
{
	struct runtime *rt = jf_rt;
	uint64_t until = cur->lock_defer_until;

	if (!rt->cfg.lock_defer_ns)
		return false;
	if (!until)
		cur->lock_defer_until = until = now + rt->cfg.lock_defer_ns;
	if (now >= until) {
		cur->lock_defer_until = 0;
		cur->lock_owed = 0;
		return false;
	}
	cur->lock_owed = 1;
	STAT_INC(w, preempt_lock_deferred);
	__atomic_store_n(&w->pre.run_due_ns, until, __ATOMIC_RELAXED);
	if (rt->mech->on_run)
		rt->mech->on_run(w, now);
	return true;
}

void jf_lock_holder_owed(struct jf_thread *cur)
{
	__atomic_store_n(&cur->worker->pre.preempt_now, 1, __ATOMIC_RELEASE);
	jf_ptls()->pending = (int32_t)SRC_OTHER + 1;
}

bool jf_preempt_decide_in_loop(struct worker *w, struct jf_thread *cur, uint64_t now)
{
	bool quantum;

	if (!preemption_due(jf_rt, w, cur, now, &quantum))
		return false;
	if (JF_UNLIKELY(cur->locks_held) && lock_holder_defer(w, cur, now))
		return false;
	count_preempt(w, cur, SRC_INTERRUPT, quantum, now);
	return true;
}

/*
 * With the count raised: is the preemption due, and if so, take it. @in_handler: called from an
 * interrupt's handler (a signal, a user interrupt), which stays thin: it decides from what it
 * can read and switches to the scheduler loop, which fires timers, polls the netpoller, requeues
 * and picks on the worker's own stack (jf_sched_preempt_to_loop). A safepoint is an ordinary
 * call: it fires due timers and polls right here, then decides and switches directly.
 */
static bool decide_and_preempt(struct runtime *rt, struct worker *w, struct jf_thread *cur,
			       uintptr_t pc, const ucontext_t *uc, enum request_src src,
			       bool in_handler)
{
	uint64_t now = jf_now_ns(), seq;
	bool quantum, decided;

	/* A preemptible function's budget, or an asynchronous cancellation (pfn.c) */
	if (JF_UNLIKELY(cur->pfn != NULL || __atomic_load_n(&cur->cancel_req, __ATOMIC_RELAXED)) &&
	    jf_pfn_on_request(w, cur, pc, now))
		return true;
	if (!rt->preempting)
		return false; /* "none": only budgets stop anything */
	if (JF_UNLIKELY(__atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED) == JF_DUE_LAZY)) {
		/* A lazy run that reached no safepoint (auto's timer fired on it): its slice starts
		 * at this first request, wherever it landed. Started only by a landing outside libc,
		 * a run that spends nearly all its time there (preempt.progress) needed two such
		 * landings, one to start it and one to preempt it, and took twice as long: 0.4-2.6 s
		 * in 12 runs beside two hogs, against 0.03-1.3 s before lazy runs and 0.07-1.7 s
		 * started here. */
		run_resolve_now(rt, w);
		if (!pc && !__atomic_load_n(&w->pre.preempt_now, __ATOMIC_RELAXED)) {
			STAT_INC(w, preempt_skipped);
			return false;
		}
		/* a signal goes on: deferred if it landed in libc (retried on the run's clock now),
		 * else skipped below (the slice has just begun), unless a kick is pending */
	}
	if (pc && (jf_preempt_pc_denied(pc) || (uc && in_handler_over_denied(uc, w, cur)))) {
		STAT_INC(w, preempt_deferred);
		if (rt->mech->retry)
			rt->mech->retry(w, now);
		return false;
	}
	if (in_handler) {
		/*
		 * This worker's timers fell due, or the netpoller wants a look (jf_netpoll_wants_look)
		 * and is due one, while its uthread ran: the loop does that and decides after (what they
		 * wake may be the work that waits, or ask for wakeup preemption). Else decide here.
		 */
		bool loop_work = jf_timers_next(w) <= now ||
				 (JF_UNLIKELY(jf_netpoll_wants_look()) && jf_netpoll_due(now));
		decided = !loop_work && preemption_due(rt, w, cur, now, &quantum);
		if (!loop_work && !decided)
			return false;
	} else {
		if (JF_UNLIKELY(jf_timers_next(w) <= now))
			STAT_ADD(w, timers, jf_timers_run(w, now));
		/* Not whenever descriptors are waited on: jf_netpoll_wants_look() says why. */
		if (JF_UNLIKELY(jf_netpoll_wants_look()))
			jf_netpoll_busy(w, now);
		if (!preemption_due(rt, w, cur, now, &quantum))
			return false;
		decided = true;
	}
	if (decided && JF_UNLIKELY(cur->locks_held) && lock_holder_defer(w, cur, now))
		return false; /* the release of its last lock takes it (src/sync/holder.h) */
	if (decided)
		count_preempt(w, cur, src, quantum, now);
	if (pc) {
		/*
		 * The signal is blocked while its handler runs (no SA_NODEFER), so it does not nest
		 * while we decide (a user interrupt's handler, uintr, has no mask to restore: the
		 * call is harmless there; the budget signal, pfn.c, is a signal under every
		 * mechanism). Before other uthreads run on this kernel thread, give it the
		 * worker's own mask back: one system call per preemption, none per switch. Not
		 * just the preemption signal unblocked: the interrupted uthread may have been in a
		 * handler of its own (SIGUSR1 blocked until that handler returns, which it now does
		 * on whichever worker resumes it), and that block must not stay with this kernel
		 * thread (preempt.signals under central, which moves uthreads between workers).
		 * The frame's uc_sigmask, the uthread's own mask, is restored when it resumes.
		 */
		pthread_sigmask(SIG_SETMASK, &w->pre.sigmask, NULL);
	}
	seq = w->pre.run_seq;
	if (in_handler) {
		if (!jf_sched_preempt_to_loop(cur, decided))
			return false; /* the loop found nothing due: the same run goes on */
	} else {
		jf_sched_preempt(cur);
	}
	w = cur->worker;
	now = jf_now_ns();
	if (w->pre.run_seq == seq) {
		/* The policy picked @cur again: no new run started; a new slice, armed for. */
		__atomic_store_n(&w->pre.run_due_ns, now + jf_policy_slice(w, now), __ATOMIC_RELAXED);
		if (rt->mech->on_run)
			rt->mech->on_run(w, now);
		return false;
	}
	/*
	 * Resumed, possibly much later and elsewhere. If switching it in (a signal return on a VM:
	 * tens of us) ate more than half of its slice, the slice counts from now: otherwise it
	 * could end before the uthread runs a single instruction of its own, and the next request
	 * would preempt it again (a livelock at slices shorter than a signal). Not in the usual
	 * case: the mechanism was armed for the old due time, and moving it costs a skipped
	 * interrupt.
	 */
	uint64_t slice = jf_policy_slice(w, now);
	if (__atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED) < now + slice / 2)
		__atomic_store_n(&w->pre.run_due_ns, now + slice, __ATOMIC_RELAXED);
	return true;
}

static bool request(uintptr_t pc, const ucontext_t *uc, enum request_src src)
{
	struct runtime *rt = jf_rt;
	struct worker *w;
	struct jf_thread *cur;
	bool preempted = false;
	const bool in_handler = pc != 0; /* the whole loop below runs in the interrupt's frame */

	if (jf_pcount() > 0) {
		/* Nothing switches this uthread while the count is raised: its worker is stable. */
		w = jf_this_worker();
		if (!rt || !w || !w->cur)
			return false; /* not a worker, or its scheduler loop: nothing to preempt */
		/* Taken by the outermost jf_preempt_enable(), and counted by the path it came in
		 * by (a signal that lands in a region is still a signal's preemption): src + 1. */
		jf_ptls()->pending = (int32_t)src + 1;
		STAT_INC(w, preempt_deferred);
		return false;
	}
	/*
	 * From here on this is runtime code: a request that arrives now (the signal is not blocked
	 * in its own handler) only marks itself pending instead of re-entering.
	 */
	for (;;) {
		/*
		 * Raise the count BEFORE reading the worker. Called from a safepoint or from
		 * jf_preempt_enable() the count was 0: a signal may preempt this uthread at any
		 * instruction up to here and resume it on another worker, and a worker read before
		 * that names the old one, whose cur is now another uthread. Preempting that one
		 * from here saved this stack as its context: one context resumed twice (hybrid, where
		 * a safepoint and the signal after the grace period meet, crashed 1 run in 25).
		 */
		jf_pcount_set(1);
		w = jf_this_worker();
		if (!rt || !w || !(cur = w->cur)) {
			jf_pcount_set(0);
			return preempted; /* not a worker: nothing to preempt */
		}
		jf_ptls()->pending = 0;
		preempted |= decide_and_preempt(rt, w, cur, pc, uc, src, in_handler);
		jf_pcount_set(0);
		/*
		 * A request that arrived while we decided, or while this uthread was switched out
		 * and back in, was deferred to "the end of the runtime section", which is now:
		 * decide again, in this loop (not by recursion: nested preemptions grew the stack
		 * until it overflowed when switching in cost more than the slice). After a resume
		 * the slice counts from the resume (decide_and_preempt), so this is a skip that
		 * re-arms the mechanism, not a preemption before the uthread ran.
		 */
		int32_t again = jf_ptls()->pending;
		if (!JF_UNLIKELY(again))
			return preempted;
		/*
		 * In a handler @pc stays the interrupted instruction: the uthread is still there (or
		 * back there, resumed). Setting it to 0 here once let the second decision preempt code
		 * the first had refused (libc: malloc's lock held) and switch away with the signal
		 * still blocked on this kernel thread (the mask is restored only for a @pc); both
		 * showed once budget signals (pfn.c) began to nest in the mechanism's handler.
		 */
		src = (enum request_src)(again - 1);
	}
}

bool jf_preempt_request(void *ucontext)
{
	const ucontext_t *uc = ucontext;
	uintptr_t pc = uc ? (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] : 0;
	return request(pc, pc ? uc : NULL, pc ? SRC_INTERRUPT : SRC_OTHER);
}

bool jf_preempt_request_at(uintptr_t pc)
{
	return request(pc, NULL, pc ? SRC_INTERRUPT : SRC_OTHER);
}

/* A deferred preemption, taken at the end of the region; the caller's errno survives it (as it
 * does a signal's), so code may end a region between a failing call and reading errno. */
void jf__preempt_enable_slow(void)
{
	int saved_errno = errno;
	int32_t pending = jf_ptls()->pending;

	jf_ptls()->pending = 0;
	if (jf_pcount() == 0 && pending > 0)
		request(0, NULL, (enum request_src)(pending - 1));
	errno = saved_errno;
}

void jf__safepoint_slow(void)
{
	struct worker *w;
	int saved_errno;

	/* Count raised: a signal cannot move this uthread between reading and using its worker. */
	jf_preempt_disable();
	w = jf_this_worker();
	if (w && __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED) == JF_DUE_LAZY && w->cur) {
		/* The first safepoint of a lazy run (word_lazy): not a request, the run's start
		 * (errno untouched: no system call unless auto's timer moves, which keeps it). A
		 * kick or a deferred request that came meanwhile goes on to request(). */
		run_resolve_now(jf_rt, w);
		if (JF_LIKELY(!__atomic_load_n(&w->pre.preempt_now, __ATOMIC_ACQUIRE) &&
			      !jf_ptls()->pending)) {
			jf_pcount_set(jf_pcount() - 1);
			return;
		}
	}
	saved_errno = errno; /* as across jf_preempt_enable() */
	__atomic_store_n(&jf_ptls()->poll, 0, __ATOMIC_RELAXED);
	if (w)
		STAT_INC(w, preempt_requests); /* a safepoint flag answered */
	jf_pcount_set(jf_pcount() - 1); /* what arrived meanwhile, request() decides now */
	request(0, NULL, SRC_SAFEPOINT);
	errno = saved_errno;
}

/*
 * The cold path of a compiler probe whose countdown ran out while the word is armed
 * (include/jiffy/preempt.h, tools/probe-pass): read the TSC; preempt if due; otherwise let the next
 * check come after about half the remaining time, in probes, at the rate probes ran since the last
 * read (at most PROBE_SPAN_MAX, so a loop whose iterations suddenly get slow is checked again
 * soon; code that stops probing altogether is the signal fallback's: "auto"). The due time is
 * approached by halves, so a quantum costs ~log2(quantum / time per probe) TSC reads, and the
 * preemption is late by at most a probe interval's change within the last span.
 */
#define PROBE_SPAN_MAX 256

void jf__probe_armed(void)
{
	struct jf__preempt_tls *p = jf_ptls();
	uint64_t when = __atomic_load_n(&p->poll, __ATOMIC_RELAXED), now = __rdtsc();
	uint64_t tsc = __atomic_load_n(&p->probe_tsc, __ATOMIC_RELAXED);
	int64_t span = 1;

	if (when == 0 || now >= when) {
		__atomic_store_n(&p->probe_left, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&p->probe_tsc, 0, __ATOMIC_RELAXED);
		if (when)
			jf__safepoint_slow();
		return;
	}
	if (tsc && now > tsc && p->probe_span > 0) {
		uint64_t per = (now - tsc) / (uint64_t)p->probe_span; /* TSC ticks per probe */
		uint64_t want = (when - now) / 2 / (per ? per : 1);
		span = want < 1 ? 1 : want > PROBE_SPAN_MAX ? PROBE_SPAN_MAX : (int64_t)want;
	}
	__atomic_store_n(&p->probe_tsc, now, __ATOMIC_RELAXED);
	p->probe_span = span;
	__atomic_store_n(&p->probe_left, span, __ATOMIC_RELAXED);
}

/* --- the signal --------------------------------------------------------------------------------- */

static struct sigaction old_action;     /* the preemption signal's before us */
static struct sigaction old_pfn_action; /* the budget signal's (pfn.c) before us */
static pid_t our_pid;

static bool sent_by_us(const siginfo_t *si)
{
	return si->si_code == SI_TIMER || (si->si_code == SI_TKILL && si->si_pid == our_pid);
}

static void preempt_signal(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	struct worker *w = jf_this_worker();
	ucontext_t *uc = ucv;
	/* The budget timers' and jf_cancel()'s own signal (pfn.c), never the mechanism's: a timer
	 * re-armed while its signal waits (blocked in a handler of the same signal) has that signal
	 * dropped as stale by the kernel, so two sources on one signal could lose one's expiry. */
	bool pfn = jf_rt && sig == jf_rt->cfg.pfn_signal;

	if (!w || !jf_rt || !sent_by_us(si)) {
		/* Not ours (another thread, or the signal's ordinary meaning): pass it on. */
		const struct sigaction *old = pfn ? &old_pfn_action : &old_action;
		if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction)
			old->sa_sigaction(sig, si, ucv);
		else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN)
			old->sa_handler(sig);
		errno = saved_errno;
		return;
	}
	STAT_INC(w, preempt_requests);
	if (pfn) {
		jf_pfn_signal(w, si);
	} else {
		if (jf_rt->mech->on_signal)
			jf_rt->mech->on_signal(w, si); /* the mechanism's own state */
		__atomic_store_n(&jf_ptls()->poll, 0, __ATOMIC_RELAXED); /* hybrid: flag answered */
	}
	if (jf_preempt_request(uc)) {
		/* Resumed, perhaps on another worker: make the frame describe this kernel thread. */
		w = jf_this_worker();
		if (w->altstack) {
			uc->uc_stack.ss_sp = w->altstack;
			uc->uc_stack.ss_size = w->altstack_size;
			uc->uc_stack.ss_flags = 0;
		} else {
			uc->uc_stack.ss_sp = NULL;
			uc->uc_stack.ss_size = 0;
			uc->uc_stack.ss_flags = SS_DISABLE;
		}
		/* Its own mask as it was when interrupted: only the preemption signals must be open. */
		sigdelset(&uc->uc_sigmask, jf_rt->cfg.preempt_signal);
		sigdelset(&uc->uc_sigmask, jf_rt->cfg.pfn_signal);
	} else if (JF_UNLIKELY(w->pfn.owed)) {
		/*
		 * A budget ran out while the function was in libc (pfn.c): the next jf_preempt_enable()
		 * that reaches 0 (a runtime call's end, a region's) takes it, as a request deferred in
		 * a region is taken. The interrupted code is libc's: it returns to the application's
		 * code before any such call, and code libc calls back is the application's.
		 */
		w->pfn.owed = false;
		jf_ptls()->pending = (int32_t)SRC_INTERRUPT + 1;
	}
	errno = saved_errno;
}

/* --- lifecycle -------------------------------------------------------------------------------- */

/*
 * The same handler for the preemption signal and the budget signal (pfn.c), each blocking both
 * while it runs: one must not land in the other's handler after its request() returned (count
 * 0, the PC our own code, so not refused), where a budget stop would cut off the code the outer
 * signal interrupted, libc with a stdio lock held (caught by core.pfn's malloc/stdio hammer).
 */
static int install_handler(const struct runtime *rt, int sig, struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = preempt_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART; /* blocked while deciding: see above */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, rt->cfg.preempt_signal);
	sigaddset(&sa.sa_mask, rt->cfg.pfn_signal);
	return sigaction(sig, &sa, old) != 0 ? -errno : 0;
}

int jf_preempt_signal_ensure(struct runtime *rt)
{
	static uint32_t lock;
	int rc = 0;

	if (__atomic_load_n(&rt->pfn_sig_installed, __ATOMIC_ACQUIRE))
		return 0;
	jf_spin_lock(&lock);
	if (!rt->pfn_sig_installed) {
		rc = install_handler(rt, rt->cfg.pfn_signal, &old_pfn_action);
		if (rc == 0)
			__atomic_store_n(&rt->pfn_sig_installed, true, __ATOMIC_RELEASE);
	}
	jf_spin_unlock(&lock);
	return rc;
}

int jf_preempt_setup(struct runtime *rt, char *err, size_t errlen)
{
	const struct jf_preempt_mech *m = jf_preempt_mech_find(rt->cfg.preempt);
	char why[200] = "";
	int rc;

	if (!m) {
		snprintf(err, errlen, "preempt '%s': unknown mechanism", rt->cfg.preempt);
		return -EINVAL;
	}
	if (m->available(why, sizeof(why)) != 0) {
		snprintf(err, errlen, "preempt '%s' is unavailable: %s", m->name, why);
		return -ENOTSUP;
	}
	rt->mech = m;
	rt->mech_on_switch = m->on_switch ? m->on_switch : m->on_run;
	rt->word_switch = JF_WORD_CALL; /* the word's mechanisms' init may inline theirs */
	rt->preempting = m != &jf_mech_none;
	rt->mech_on_work = rt->preempting ? m->on_work : NULL;
	if (rt->cfg.grace_ns == JF_GRACE_DEFAULT)
		rt->cfg.grace_ns = m->grace_ns;
	our_pid = getpid();
	nr_denied = 0;
	/* every mechanism, "none" too: a preemptible function's budget stops code (pfn.c) */
	dl_iterate_phdr(collect_denied, NULL);
	sigemptyset(&rt->psig_set);
	sigaddset(&rt->psig_set, rt->cfg.preempt_signal);
	if (m->uses_signal) {
		if ((rc = install_handler(rt, rt->cfg.preempt_signal, &old_action)) != 0) {
			snprintf(err, errlen, "sigaction(%d): %s", rt->cfg.preempt_signal,
				 strerror(-rc));
			return rc;
		}
		rt->psig_installed = true;
		struct sigaction back;
		if (sigaction(rt->cfg.preempt_signal, NULL, &back) == 0)
			libc_restorer = (uintptr_t)back.sa_restorer; /* libc's, or NULL: no search */
	}
	if (m->init && (rc = m->init(rt)) != 0) {
		snprintf(err, errlen, "preempt '%s': initialisation failed: %s", m->name,
			 strerror(-rc));
		jf_preempt_teardown(rt);
		return rc;
	}
	return 0;
}

void jf_preempt_teardown(struct runtime *rt)
{
	if (rt->mech && rt->mech->fini)
		rt->mech->fini(rt);
	if (rt->psig_installed) {
		sigaction(rt->cfg.preempt_signal, &old_action, NULL);
		rt->psig_installed = false;
	}
	if (rt->pfn_sig_installed) {
		sigaction(rt->cfg.pfn_signal, &old_pfn_action, NULL);
		rt->pfn_sig_installed = false;
	}
}

int jf_preempt_worker_start(struct worker *w)
{
	struct runtime *rt = jf_rt;
	sigset_t unblock;

	w->pre.tid = gettid();
	w->pre.ptls = jf_ptls();
	jf_pcount_set(1); /* the scheduler loop is runtime code */
	/* Open under every mechanism (the preemption signal when it is not the mechanism's: harmless),
	 * and the budget timers' signal (pfn.c). */
	sigemptyset(&unblock);
	sigaddset(&unblock, rt->cfg.preempt_signal);
	sigaddset(&unblock, rt->cfg.pfn_signal);
	pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
	pthread_sigmask(SIG_SETMASK, NULL, &w->pre.sigmask);
	return rt->mech->worker_start ? rt->mech->worker_start(w) : 0;
}

void jf_preempt_worker_stop(struct worker *w)
{
	struct runtime *rt = jf_rt;
	if (rt->mech->worker_stop)
		rt->mech->worker_stop(w);
	jf_pfn_worker_stop(w);
	jf_pcount_set(0);
}
