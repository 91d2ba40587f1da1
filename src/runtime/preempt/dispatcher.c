/*
 * dispatcher.c - the timer thread that watches every worker: "dispatcher", "safepoint" and
 * "hybrid" (and the sender side of "uintr").
 *
 * One thread reads, for each worker, when its current uthread started running (run_start_ns,
 * published by the worker at every switch) and asks the policy whether other work waits. Only
 * when a uthread has run a full quantum AND other work waits does it act (Aspen's skip rule):
 *   dispatcher: tgkill() the worker (Aspen's timer core, Shinjuku's dispatcher, in signals);
 *   safepoint:  raise the worker's flag, which jf_safepoint() polls (Concord's instrumentation,
 *               without the compiler);
 *   hybrid:     raise the flag; if the same run still goes on after the grace period, tgkill()
 *               (Go's cooperative-then-asynchronous preemption);
 *   uintr:      SENDUIPI instead of tgkill (uintr.c).
 * A request that lands in code that may not be interrupted is retried with a backoff (a quarter
 * quantum, doubling to a quantum). Hybrid sends its signal early by the delivery latency the
 * handlers measure, and meets q + grace by spinning into that deadline (wait_until()). The
 * thread does not spin on a core: it sleeps until the earliest moment a running uthread's quantum
 * ends (at least every quantum), with 1 ns timer slack, or, with JIFFY_TIMER_SPIN=1, spins on a
 * core of its own as Aspen's timer core and Shinjuku's dispatcher do (no wake-up cost, a whole
 * CPU). Receivers re-check everything themselves, so a stale decision here costs a skipped
 * request, never a wrong preemption.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../runtime.h"
#include "preempt.h"
#include "../net/netpoll.h"

enum tt_mode { TT_SIGNAL, TT_FLAG, TT_HYBRID, TT_UINTR };

/* A busy worker's timer this late (no idle worker fired it) is worth an interrupt. */
#define TIMER_LATE_NS 5000u

/* Per worker, written by the timer thread except @sig_lat_ns (the worker's handler, on_signal);
 * a cache line each, so that one worker's handler does not slow the scan of the others. */
struct tt_worker {
	uint64_t seq;      /* the run we last acted on */
	uint64_t acted_ns; /* when */
	uint64_t flag_ns;  /* hybrid: when the flag was raised for that run */
	uint64_t retry_ns; /* backoff before asking that run again */
	uint64_t due;      /* the due time it had (the worker moves it when the policy says "go on") */
	uint64_t timer_ns; /* when we last asked it to fire overdue timers */
	uint64_t timer_late_ns; /* since when its timers are overdue (0: they are not) */
	uint64_t sig_sent_ns; /* when we last sent it a signal (0: its handler consumed it) */
	uint64_t sig_lat_ns;  /* EWMA of send -> handler latency, measured by its handler */
} __attribute__((aligned(64)));

static struct tt_worker *tt;
static enum tt_mode tt_mode;
static uint64_t tt_late_ns; /* EWMA of how late nanosleep wakes this thread (timer thread only) */

/* The thread itself, one per process (one runtime at a time), and its counters. */
static struct {
	pthread_t thread;
	bool running; /* jf_preempt_stats() reads the CPU clock only while it is */
	int stop;
	clockid_t cpu_clock;
	uint64_t scans, signals, flags;
} tth;

static void sleep_until(uint64_t deadline)
{
	uint64_t now = jf_now_ns(), late;
	struct timespec ts;

	if (deadline <= now)
		return;
	ts.tv_sec = (time_t)((deadline - now) / 1000000000u);
	ts.tv_nsec = (long)((deadline - now) % 1000000000u);
	nanosleep(&ts, NULL);
	now = jf_now_ns();
	late = now > deadline ? now - deadline : 0;
	if (late < 1000000u)
		tt_late_ns = tt_late_ns - tt_late_ns / 8 + late / 8;
}

static void interrupt(struct runtime *rt, struct worker *w)
{
	if (tt_mode == TT_UINTR) {
		if (jf_uintr_send(w) == 0)
			__atomic_fetch_add(&tth.signals, 1, __ATOMIC_RELAXED);
		return;
	}
	/* Atomic, and maybe NULL: a worker's wakeup preemption (the kick op) may come before jf_run()
	 * has started the timer thread, or after it stopped it (core.handoff under cfs crashed on a
	 * NULL tt here at start-up). The signal goes all the same; only its latency is not measured. */
	struct tt_worker *all = __atomic_load_n(&tt, __ATOMIC_ACQUIRE);
	if (all)
		__atomic_store_n(&all[w->id].sig_sent_ns, jf_now_ns(), __ATOMIC_RELAXED);
	if (syscall(SYS_tgkill, rt->pid, w->pre.tid, rt->cfg.preempt_signal) == 0)
		__atomic_fetch_add(&tth.signals, 1, __ATOMIC_RELAXED);
}

static void raise_flag(struct worker *w)
{
	__atomic_store_n(&w->pre.ptls->poll, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&tth.flags, 1, __ATOMIC_RELAXED);
}

/*
 * Hybrid sends its signal this much before the grace period ends, so that it lands by then: the
 * delivery latency the handlers measured (worker's EWMA), at most half the grace period.
 */
static uint64_t hybrid_lead(struct runtime *rt, struct worker *w)
{
	uint64_t lead = __atomic_load_n(&tt[w->id].sig_lat_ns, __ATOMIC_RELAXED);
	return lead < rt->cfg.grace_ns / 2 ? lead : rt->cfg.grace_ns / 2;
}

/* Ask a run again after a deferral: backoff from a quarter quantum (>= 2 deliveries) to q. */
static uint64_t next_retry(struct runtime *rt, struct tt_worker *s)
{
	uint64_t q = rt->cfg.quantum_ns, floor = 2 * __atomic_load_n(&s->sig_lat_ns, __ATOMIC_RELAXED);
	uint64_t d = s->retry_ns ? s->retry_ns * 2 : q / 4;

	if (d < floor)
		d = floor;
	if (d > q)
		d = q;
	return d;
}

/*
 * One pass over the workers; returns when the thread should look again: the earliest moment a
 * running uthread's quantum ends, a hybrid grace period expires, or a request is due again (a
 * deferred request is retried with a backoff, see next_retry()). Waking no more than needed
 * matters on a VM, where each sleep/wake costs ~40 us of CPU. *@hard is set to the worker whose
 * hybrid grace deadline is the moment returned (that one is met by spinning into it; see
 * timer_thread()), else -1.
 */
static uint64_t scan(struct runtime *rt, uint64_t now, int *hard)
{
	uint64_t q = rt->cfg.quantum_ns;
	uint64_t next = now + q;

	*hard = -1;
	for (int i = 0; i < rt->nworkers; i++) {
		struct worker *w = &rt->workers[i];
		struct tt_worker *s = &tt[i];
		uint64_t start = __atomic_load_n(&w->pre.run_start_ns, __ATOMIC_ACQUIRE);
		uint64_t seq = __atomic_load_n(&w->pre.run_seq, __ATOMIC_RELAXED);
		uint64_t due = __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED), again,
			 grace_end = 0;

		if (!start) {
			s->timer_late_ns = 0; /* idle: it fires its own timers */
			continue;             /* nothing to interrupt */
		}
		uint64_t tdl = jf_timers_next(w);
		/* (Not "tdl + TIMER_LATE_NS <= now": for a worker without timers, tdl = UINT64_MAX,
		 * that sum wrapped to 4999 and every busy worker was signalled every q / 4 with
		 * nothing due, ~7,000 times a second, each signal skipped.) */
		if (tdl <= now && now - tdl >= TIMER_LATE_NS) {
			if (!s->timer_late_ns)
				s->timer_late_ns = now;
		} else {
			s->timer_late_ns = 0;
		}
		if (s->timer_late_ns && now - s->timer_ns >= q / 4) {
			/*
			 * Its timers are overdue (every worker busy): have it fire them. Hybrid raises
			 * the flag first and signals once the overdue timers have waited a grace
			 * period more, as for a quantum: a loop without safepoints never answered
			 * the flag, and a uthread sleeping behind it never woke (a spinner and a
			 * sleeper on one worker hung for good).
			 */
			s->timer_ns = now;
			if (tt_mode == TT_FLAG ||
			    (tt_mode == TT_HYBRID && now - s->timer_late_ns < rt->cfg.grace_ns))
				raise_flag(w);
			else
				interrupt(rt, w);
		} else if (tdl != UINT64_MAX) {
			uint64_t at = tdl + TIMER_LATE_NS > s->timer_ns + q / 4 ? tdl + TIMER_LATE_NS
										  : s->timer_ns + q / 4;
			if (at < next)
				next = at, *hard = -1;
		}
		if (now < due) {
			if (due < next)
				next = due, *hard = -1;
			continue;
		}
		if (!jf_drv_due_worth_interrupt(&rt->drv, w->id, rt->cfg.preempt_skip) &&
		    !jf_netpoll_wants_busy_poll())
			continue; /* nothing else to run: never interrupt (skip rule, unless
				   * JIFFY_PREEMPT_SKIP=0); but a busy worker must poll for uthreads
				   * waiting on descriptors */
		if (s->seq != seq || s->due != due) { /* first action for this run (or slice) */
			s->seq = seq;
			s->due = due;
			s->acted_ns = now;
			s->retry_ns = 0;
			s->flag_ns = due; /* the grace period runs from the end of the quantum, however
					   * late this thread woke, so hybrid stays within q + grace */
			if (tt_mode == TT_FLAG || tt_mode == TT_HYBRID)
				raise_flag(w);
			else
				interrupt(rt, w);
		}
		if (tt_mode == TT_HYBRID) {
			/* (also right after raising the flag, if this thread woke after q + grace) */
			if (now + hybrid_lead(rt, w) >= s->flag_ns + rt->cfg.grace_ns &&
			    now - s->acted_ns >= s->retry_ns &&
			    __atomic_load_n(&w->pre.ptls->poll, __ATOMIC_ACQUIRE)) {
				s->acted_ns = now; /* no safepoint answered within the grace period */
				s->retry_ns = next_retry(rt, s);
				interrupt(rt, w);
			}
		} else if (tt_mode != TT_FLAG && now - s->acted_ns >= (s->retry_ns ? s->retry_ns : q) &&
			   s->acted_ns != now) {
			/* Not preempted yet: the request was deferred (libc, a disabled region). */
			s->retry_ns = next_retry(rt, s);
			s->acted_ns = now;
			interrupt(rt, w);
		}
		if ((tt_mode == TT_FLAG || tt_mode == TT_HYBRID) && now - s->acted_ns >= q &&
		    !__atomic_load_n(&w->pre.ptls->poll, __ATOMIC_ACQUIRE)) {
			s->acted_ns = now; /* answered by a skip (or lost) but the run goes on: again */
			raise_flag(w);
		}
		if (tt_mode == TT_HYBRID) {
			again = s->acted_ns + (s->retry_ns ? s->retry_ns : q);
			grace_end = s->flag_ns + rt->cfg.grace_ns - hybrid_lead(rt, w);
			if (grace_end > now && grace_end < again)
				again = grace_end;
			else
				grace_end = 0;
		} else {
			again = s->acted_ns + (s->retry_ns ? s->retry_ns : q);
		}
		if (again <= now)
			again = now + q / 2, grace_end = 0;
		if (again < next) {
			next = again;
			*hard = grace_end == again ? i : -1;
		}
	}
	return next;
}

/*
 * Wait until @deadline: sleep (default), or spin on a core of its own (JIFFY_TIMER_SPIN=1). A
 * hard deadline (@hard >= 0: hybrid's q + grace for that worker) is met by sleeping until a
 * little before it (the measured wake-up lateness: 20-40 us when a KVM vCPU must leave halt)
 * and spinning the rest, which ends early if the worker answers the flag or switches.
 */
static void wait_until(struct runtime *rt, uint64_t deadline, int hard)
{
	if (!rt->cfg.timer_spin) {
		if (hard < 0) {
			sleep_until(deadline);
			return;
		}
		uint64_t early = tt_late_ns + 2000;
		struct worker *w = &rt->workers[hard];
		uint64_t seq = __atomic_load_n(&w->pre.run_seq, __ATOMIC_RELAXED);
		if (early > rt->cfg.quantum_ns / 2)
			early = rt->cfg.quantum_ns / 2;
		sleep_until(deadline - early);
		while (jf_now_ns() < deadline && __atomic_load_n(&w->pre.ptls->poll, __ATOMIC_RELAXED) &&
		       __atomic_load_n(&w->pre.run_seq, __ATOMIC_RELAXED) == seq)
			for (int i = 0; i < 32; i++)
				jf_cpu_relax();
		return;
	}
	while (jf_now_ns() < deadline && !__atomic_load_n(&tth.stop, __ATOMIC_RELAXED))
		for (int i = 0; i < 32; i++)
			jf_cpu_relax();
}

static void *timer_thread(void *arg)
{
	struct runtime *rt = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* preemption signals are for workers only */
	prctl(PR_SET_TIMERSLACK, 1UL);           /* wake on time, not up to 50 us late */
	while (!__atomic_load_n(&tth.stop, __ATOMIC_ACQUIRE)) {
		int hard;
		uint64_t next = scan(rt, jf_now_ns(), &hard);
		__atomic_fetch_add(&tth.scans, 1, __ATOMIC_RELAXED);
		wait_until(rt, next, hard);
	}
	return NULL;
}

int jf_timer_thread_start(struct runtime *rt)
{
	int rc;

	struct tt_worker *all = aligned_alloc(64, (size_t)rt->nworkers * sizeof(*all));

	tt_late_ns = 0;
	if (!all)
		return -ENOMEM;
	memset(all, 0, (size_t)rt->nworkers * sizeof(*all));
	__atomic_store_n(&tt, all, __ATOMIC_RELEASE);
	tth.stop = 0; /* (the counters start at 0: zero-initialised, reset by the last stop) */
	rc = pthread_create(&tth.thread, NULL, timer_thread, rt);
	if (rc) {
		__atomic_store_n(&tt, NULL, __ATOMIC_RELEASE);
		free(all);
		return -rc;
	}
	pthread_getcpuclockid(tth.thread, &tth.cpu_clock);
	pthread_setname_np(tth.thread, "jiffy-timer");
	/* Uthreads may already run (jf_preempt_stats reads the clock once this is set). */
	__atomic_store_n(&tth.running, true, __ATOMIC_RELEASE);
	return 0;
}

/* After the workers stopped (the fini op): no handler reads tt[] any more. */
void jf_timer_thread_stop(struct runtime *rt)
{
	(void)rt;
	if (!__atomic_load_n(&tth.running, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&tth.stop, 1, __ATOMIC_RELEASE);
	pthread_join(tth.thread, NULL);
	__atomic_store_n(&tth.running, false, __ATOMIC_RELEASE);
	/* The workers have stopped: nobody reads the counters until the next runtime's. */
	tth.scans = tth.signals = tth.flags = 0;
	struct tt_worker *all = tt;
	__atomic_store_n(&tt, NULL, __ATOMIC_RELEASE);
	free(all);
}

void jf_timer_thread_stats(struct jf_preempt_stats *out)
{
	struct timespec ts;

	out->scans = __atomic_load_n(&tth.scans, __ATOMIC_RELAXED);
	out->signals_sent = __atomic_load_n(&tth.signals, __ATOMIC_RELAXED);
	out->flags_set = __atomic_load_n(&tth.flags, __ATOMIC_RELAXED);
	if (__atomic_load_n(&tth.running, __ATOMIC_ACQUIRE) &&
	    clock_gettime(tth.cpu_clock, &ts) == 0)
		out->timer_cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Our signal arrived on @w (dispatcher, hybrid): learn how long delivery takes, an EWMA of
 * send -> handler (hybrid sends that much early). Only while the thread runs (tt is allocated
 * before it starts and freed after the workers stopped).
 */
static void tt_on_signal(struct worker *w, const siginfo_t *si)
{
	/* Atomic: the handler may run on a worker while jf_run() sets it up or tears it down. */
	struct tt_worker *all = __atomic_load_n(&tt, __ATOMIC_ACQUIRE), *s;

	if (si->si_code != SI_TKILL || !all)
		return;
	s = &all[w->id];
	uint64_t now = jf_now_ns();
	uint64_t sent = __atomic_exchange_n(&s->sig_sent_ns, 0, __ATOMIC_RELAXED);
	uint64_t lat = s->sig_lat_ns;
	if (sent && now > sent && now - sent < 1000000u)
		__atomic_store_n(&s->sig_lat_ns, lat ? lat - lat / 8 + (now - sent) / 8 : now - sent,
				 __ATOMIC_RELAXED);
}

static int always_available(char *why, size_t len)
{
	(void)why, (void)len;
	return 0;
}

#define TT_INIT(fn, mode)                                                                         \
	static int fn(struct runtime *rt)                                                         \
	{                                                                                          \
		(void)rt;                                                                          \
		tt_mode = mode;                                                                    \
		return 0;                                                                          \
	}
TT_INIT(dispatcher_init, TT_SIGNAL)
TT_INIT(safepoint_init, TT_FLAG)
TT_INIT(hybrid_init, TT_HYBRID)

/* The timer thread starts once the workers published their thread ids (runtime.c). */
static void tt_fini(struct runtime *rt)
{
	jf_timer_thread_stop(rt);
}

static void tt_kick(struct worker *w)
{
	struct runtime *rt = jf_rt;
	if (tt_mode == TT_FLAG)
		raise_flag(w);
	else
		interrupt(rt, w);
}

const struct jf_preempt_mech jf_mech_dispatcher = {
	.name = "dispatcher",
	.uses_signal = true,
	.uses_thread = true,
	.available = always_available,
	.init = dispatcher_init,
	.fini = tt_fini,
	.kick = tt_kick,
	.on_signal = tt_on_signal,
	.stats = jf_timer_thread_stats,
};

const struct jf_preempt_mech jf_mech_safepoint = {
	.name = "safepoint",
	.uses_thread = true,
	.available = always_available,
	.init = safepoint_init,
	.fini = tt_fini,
	.kick = tt_kick,
	.stats = jf_timer_thread_stats,
};

const struct jf_preempt_mech jf_mech_hybrid = {
	.name = "hybrid",
	.grace_ns = 50 * 1000, /* docs/preemption.md */
	.uses_signal = true,
	.uses_thread = true,
	.available = always_available,
	.init = hybrid_init,
	.fini = tt_fini,
	.kick = tt_kick,
	.on_signal = tt_on_signal,
	.stats = jf_timer_thread_stats,
};

void jf_tt_set_uintr_mode(void)
{
	tt_mode = TT_UINTR;
}
