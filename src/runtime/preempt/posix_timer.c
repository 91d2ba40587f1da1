/*
 * posix_timer.c - "timer": a per-worker POSIX timer that signals its own worker.
 *
 * The software form of Skyloft's per-core user timer and xUI's kernel-bypass timer: each worker
 * owns a one-shot timer_create(CLOCK_MONOTONIC, SIGEV_THREAD_ID -> the worker's thread) timer;
 * no core is dedicated to watching. The timer is armed only when work is waiting: when a uthread
 * starts running and its worker has other work (on_run), or when work is queued for a worker
 * that is running a uthread (on_work, from the enqueuing thread: POSIX timers are process-wide).
 * A worker with nothing else to run is never interrupted. When the timer fires early for the
 * current run (it was armed for an earlier one), the handler re-arms it for the remainder.
 * Cost: timer_settime ~0.5 us, and a timer signal ~19 us on a KVM guest (ARCHITECTURE.md).
 * The timer itself (create, delete, set) is shared with "auto" (auto.c), whose fallback is this
 * same per-worker timer, armed a grace period after deadline's due time. Its per-worker state
 * (struct pt_worker) lives in the worker's mech_state, which no other file reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "../runtime.h"
#include "preempt.h"
#include "../net/netpoll.h"

/* Per worker, in its mech_state: the timer, whether it is armed (set by whoever arms it, cleared
 * by the handler when it fires and by a kick that moves it) and for when. */
struct pt_worker {
	timer_t timer;
	bool present;
	uint32_t armed;
	uint64_t expiry_ns; /* when it was last armed to fire (jf_now_ns() time) */
};
JF_MECH_STATE_FITS(struct pt_worker);

static inline struct pt_worker *ptw(struct worker *w)
{
	return JF_MECH_STATE(w, struct pt_worker);
}

bool jf_ptimer_present(struct worker *w)
{
	return ptw(w)->present;
}

static void ptimer_on_signal(struct worker *w, const siginfo_t *si)
{
	(void)si;
	__atomic_store_n(&ptw(w)->armed, 0, __ATOMIC_RELAXED); /* one-shot: it fired */
}

static int ptimer_available(char *why, size_t len)
{
	(void)why, (void)len;
	return 0; /* timer_create with SIGEV_THREAD_ID exists on every Linux we build for */
}

int jf_thread_timer_create(pid_t tid, int signo, void *tag, timer_t *out)
{
	return jf_thread_timer_create_clock(CLOCK_MONOTONIC, tid, signo, tag, out);
}

int jf_thread_timer_create_clock(clockid_t clock, pid_t tid, int signo, void *tag, timer_t *out)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = signo;
	sev.sigev_value.sival_ptr = tag;
	sev._sigev_un._tid = tid;
	return timer_create(clock, &sev, out) != 0 ? -errno : 0;
}

uint64_t jf_thread_timer_set(timer_t timer, uint64_t delay_ns)
{
	struct itimerspec its;
	int saved = errno;

	if (delay_ns && delay_ns < JF_PTIMER_MIN_DELAY_NS)
		delay_ns = JF_PTIMER_MIN_DELAY_NS;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(delay_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(delay_ns % 1000000000u);
	if (timer_settime(timer, 0, &its, NULL) != 0)
		delay_ns = 0;
	errno = saved;
	return delay_ns;
}

int jf_ptimer_worker_start(struct worker *w)
{
	return jf_ptimer_worker_start_clock(w, CLOCK_MONOTONIC);
}

int jf_ptimer_worker_start_clock(struct worker *w, clockid_t clock)
{
	timer_t t;
	int rc = jf_thread_timer_create_clock(clock, w->pre.tid, jf_rt->cfg.preempt_signal, NULL, &t);

	if (rc)
		return rc;
	ptw(w)->timer = t;
	ptw(w)->present = true;
	return 0;
}

void jf_ptimer_worker_stop(struct worker *w)
{
	if (ptw(w)->present)
		timer_delete(ptw(w)->timer);
	ptw(w)->present = false;
}

uint64_t jf_ptimer_set(struct worker *w, uint64_t delay_ns)
{
	return jf_thread_timer_set(ptw(w)->timer, delay_ns);
}

/*
 * Arm @w's timer to fire in @delay_ns from @now, unless it is armed to fire by then already. Any
 * thread may call this. "Armed" is believed only for an expiry still in the future (as auto.c
 * keeps it): a flag alone was trusted forever, so
 *  - a run that began with only a far timer due (a uthread sleeping for a minute) kept it, and a
 *    sleep of 100 us started later on that busy worker waited the minute;
 *  - an expiry whose signal never reached the handler (Linux >= 6.13 drops a timer's queued
 *    signal as stale once the timer is set again, and a second expiry while it is queued only
 *    counts an overrun) left the worker without a timer for good.
 * Both were caught by core.pfn's cancellation test under "timer" (a worker busy for a minute).
 */
static void arm(struct worker *w, uint64_t now, uint64_t delay_ns)
{
	uint64_t at, exp;

	if (delay_ns < JF_PTIMER_MIN_DELAY_NS)
		delay_ns = JF_PTIMER_MIN_DELAY_NS;
	at = now + delay_ns;
	exp = __atomic_load_n(&ptw(w)->expiry_ns, __ATOMIC_RELAXED);
	if (__atomic_load_n(&ptw(w)->armed, __ATOMIC_RELAXED) && exp > now && exp <= at)
		return; /* the switch path's usual case: loads only */
	if (__atomic_exchange_n(&ptw(w)->armed, 1, __ATOMIC_ACQ_REL) && exp > now && exp <= at)
		return;
	__atomic_store_n(&ptw(w)->expiry_ns, at, __ATOMIC_RELAXED);
	if (!jf_ptimer_set(w, delay_ns))
		__atomic_store_n(&ptw(w)->armed, 0, __ATOMIC_RELAXED);
}

static void ptimer_on_run(struct worker *w, uint64_t now)
{
	struct runtime *rt = jf_rt;
	uint64_t when = UINT64_MAX, tdl, due, exp;

	if (!__atomic_load_n(&w->pre.run_start_ns, __ATOMIC_RELAXED))
		return;
	due = __atomic_load_n(&w->pre.run_due_ns, __ATOMIC_RELAXED);
	tdl = jf_timers_next(w);
	exp = __atomic_load_n(&ptw(w)->expiry_ns, __ATOMIC_RELAXED);
	if (__atomic_load_n(&ptw(w)->armed, __ATOMIC_RELAXED) && exp > now && exp <= due &&
	    exp <= tdl)
		return; /* fires by whatever this run could need: no policy call at this switch */
	if (jf_drv_due_worth_interrupt(&rt->drv, w->id, rt->cfg.preempt_skip) ||
	    jf_netpoll_wants_busy_poll())
		when = due;
	if (tdl < when)
		when = tdl;
	if (when != UINT64_MAX)
		arm(w, now, when > now ? when - now : 0);
}

static void ptimer_on_work(struct worker *self, struct worker *target)
{
	(void)self;
	if (__atomic_load_n(&target->pre.run_start_ns, __ATOMIC_RELAXED) &&
	    ptw(target)->present &&
	    (!__atomic_load_n(&ptw(target)->armed, __ATOMIC_RELAXED) ||
	     __atomic_load_n(&ptw(target)->expiry_ns, __ATOMIC_RELAXED) >
		     __atomic_load_n(&target->pre.run_due_ns, __ATOMIC_RELAXED) ||
	     __atomic_load_n(&ptw(target)->expiry_ns, __ATOMIC_RELAXED) <
		     __atomic_load_n(&target->pre.run_start_ns, __ATOMIC_RELAXED)))
		ptimer_on_run(target, jf_now_ns());
}

/*
 * The uthread was in libc (or similar) when the signal came: look again after a backoff (a
 * quarter quantum, doubling up to a quantum for the same run). A fixed quarter quantum was a
 * storm of ~19 us timer signals on a long libc call (test_registers ran 100x slower).
 */
static void ptimer_retry(struct worker *w, uint64_t now)
{
	(void)now;
	arm(w, now, jf_preempt_retry_delay(w, jf_rt->cfg.quantum_ns));
}

static void ptimer_kick(struct worker *w)
{
	if (ptw(w)->present) {
		__atomic_store_n(&ptw(w)->armed, 0, __ATOMIC_RELAXED);
		arm(w, jf_now_ns(), 0);
	}
}

const struct jf_preempt_mech jf_mech_timer = {
	.name = "timer",
	.uses_signal = true,
	.available = ptimer_available,
	.worker_start = jf_ptimer_worker_start,
	.worker_stop = jf_ptimer_worker_stop,
	.on_run = ptimer_on_run,
	.on_work = ptimer_on_work,
	.retry = ptimer_retry,
	.kick = ptimer_kick,
	.on_signal = ptimer_on_signal,
};
