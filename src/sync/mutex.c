/*
 * mutex.c - jf_mutex_t: a blocking mutex for uthreads: barging with a starvation handoff (Go's
 * sync.Mutex rule) or strict FIFO handoff, timed locking, spinning on a running holder, and
 * lock-holder preemption deferral (holder.h).
 *
 * Owns: the mutex protocol. state: MX_LOCKED, MX_WAITERS (uthreads are queued), MX_STARVING
 * (the next release hands the mutex to the oldest waiter). The uncontended lock and unlock are
 * one compare-and-swap each. With waiters, what a release does depends on the mode:
 *  - barging (jf_config.lock_handoff false, the default): the release frees the mutex and wakes
 *    the oldest waiter, which must take it like anyone else: a running uthread that asks first
 *    gets it. A woken waiter that loses goes back to the front of the queue; once a waiter has
 *    waited more than STARVE_NS it sets MX_STARVING and the releases hand over from then on
 *    until the queue is empty (its wait counts from when it queued behind another waiter, or,
 *    if it queued alone, from its first lost race: lock_slow says why). Handing a mutex to a
 *    uthread that is queued behind others on its worker leaves it idle until that uthread runs
 *    (a convoy: every other locker waits a few quanta); barging keeps it in use, and the
 *    starvation rule bounds what a waiter can lose.
 *  - handoff (lock_handoff true): every release with waiters hands ownership straight to the
 *    oldest waiter, which wakes up owning it: strict FIFO, no barging, convoys under preemption.
 * The waiter list and the WAITERS and STARVING bits change only under m->lock. A waiter that
 * times out or is cancelled leaves the list under m->lock (mutex_wait_over) and clears WAITERS
 * and STARVING if it was the last, so an unlock never finds the bits without a waiter (and copes
 * when the last one left between its look and the lock).
 *
 * Spinning (jf_config.lock_spin_ns): a contended locker first spins while the holder is running
 * on another worker, i.e. while it is some other worker's current uthread (worker.cur, compared
 * by pointer: the holder's jf_thread is never dereferenced, as it may be freed by then; a reused
 * one only prolongs a bounded spin). A holder that was switched out will not release it soon,
 * so spinning stops at once then, and when the mutex goes to queued waiters by handoff. It does
 * not start while work waits on the spinner's own worker (Go's canSpin rule): that work runs
 * instead. Before this rule (2026-11-29), with 4 uthreads hammering one mutex on 2 workers, a
 * spinner held its worker while the other uthread there waited to run, and kept the mutex's
 * line bouncing with the holder: 28-408 ns per critical section from one run to the next,
 * against 42-49 ns with it (docs/performance.md). Nothing
 * is recorded for spinners at the lock itself: the uncontended path stays one CAS and one store.
 */
#include <errno.h>
#include <string.h>

#include "holder.h"
#include "waitq.h"

#define MX_LOCKED 1u
#define MX_WAITERS 2u
#define MX_STARVING 4u
#define STARVE_NS 1000000ull /* Go's starvationThresholdNs */

void jf_mutex_init(jf_mutex_t *m)
{
	memset(m, 0, sizeof(*m));
}

static bool try_acquire(jf_mutex_t *m)
{
	uint32_t expected = 0;
	return __atomic_compare_exchange_n(&m->state, &expected, MX_LOCKED, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Take it if it is free and not promised to the waiters (waiters may be queued: barging). */
static bool try_barge(jf_mutex_t *m)
{
	uint32_t s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);

	while (!(s & (MX_LOCKED | MX_STARVING)))
		if (__atomic_compare_exchange_n(&m->state, &s, s | MX_LOCKED, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return true;
	return false;
}

/* @cur owns @m now: record it (spinners look for it among the workers' running uthreads). */
static void owned(jf_mutex_t *m, struct jf_thread *cur)
{
	__atomic_store_n(&m->owner, cur, __ATOMIC_RELAXED);
	holder_acquired(cur);
}

/* The worker other than @self running @t now, or -1 (@hint first: where it ran at the last look). */
static int running_on(const struct runtime *rt, const struct jf_thread *t, int self, int hint)
{
	if (hint >= 0 && __atomic_load_n(&rt->workers[hint].cur, __ATOMIC_RELAXED) == t)
		return hint;
	for (int i = 0; i < rt->nworkers; i++)
		if (i != self && __atomic_load_n(&rt->workers[i].cur, __ATOMIC_RELAXED) == t)
			return i;
	return -1;
}

/* Spin while @m's holder runs on another worker, up to lock_spin_ns. Return: true if acquired. */
static bool spin_acquire(jf_mutex_t *m, struct jf_thread *cur)
{
	struct runtime *rt = jf_rt;
	uint64_t spin = rt->cfg.lock_spin_ns, end;
	int where = -1;

	if (!spin || rt->nworkers < 2)
		return false;
	/* Work waits here: run it rather than spin (Go's canSpin: an empty local run queue). The
	 * spin would hold the worker, and bounce the mutex's line with the holder, for nothing the
	 * queued work could not use better. */
	if (jf_drv_has_work(&rt->drv, cur->worker->id))
		return false;
	end = jf_now_ns() + spin;
	do {
		struct jf_thread *holder = __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
		uint32_t s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);

		if (try_barge(m))
			return true;
		if ((s & MX_STARVING) || ((s & MX_WAITERS) && rt->cfg.lock_handoff))
			return false; /* it goes to a queued waiter, not to us */
		/* NULL: between a taker's CAS and its store of itself, or a release in progress */
		if (holder && (where = running_on(rt, holder, cur->worker->id, where)) < 0)
			return false; /* switched out (or on our worker): it will not release soon */
		jf_cpu_relax();
	} while (jf_now_ns() < end);
	return false;
}

/* mutex_wait_over - a timed-out or cancelled locker leaves the queue (jf_block_wait). */
struct mutex_wait {
	jf_mutex_t *m;
	struct jf_thread *t;
};

static bool mutex_wait_over(void *arg)
{
	struct mutex_wait *mw = arg;
	jf_mutex_t *m = mw->m;
	bool removed;

	jf_spin_lock(&m->lock);
	removed = waitq_remove(&m->waiters, &m->lock, mw->t);
	if (removed && !m->waiters.head)
		__atomic_fetch_and(&m->state, ~(MX_WAITERS | MX_STARVING), __ATOMIC_RELAXED);
	jf_spin_unlock(&m->lock);
	return removed;
}

/*
 * The mutex was freed with waiters queued (a barging release), or a woken waiter gives up
 * (timeout, cancellation) after such a release: if it is still free, wake the oldest waiter to
 * compete for it. If someone took it meanwhile, that holder's release wakes one instead.
 */
static void wake_oldest_if_free(jf_mutex_t *m, struct jf_thread *cur)
{
	struct jf_thread *next = NULL;

	jf_spin_lock(&m->lock);
	if (!(__atomic_load_n(&m->state, __ATOMIC_RELAXED) & MX_LOCKED)) {
		next = waitq_pop(&m->waiters, &m->lock);
		if (!m->waiters.head)
			__atomic_fetch_and(&m->state, ~(MX_WAITERS | MX_STARVING), __ATOMIC_RELAXED);
	}
	jf_spin_unlock(&m->lock);
	if (next)
		jf_sched_make_runnable(cur->worker, next, JF_ENQ_WOKEN);
}

static int lock_slow(jf_mutex_t *m, struct jf_thread *cur, uint64_t deadline, bool timed)
{
	struct mutex_wait mw = {m, cur};
	uint64_t since = 0;
	bool woken = false;
	int r;

	for (;;) {
		if (try_barge(m) || spin_acquire(m, cur)) {
			owned(m, cur);
			return 0;
		}
		if (timed && (jf_cancel_due(cur) || jf_now_ns() >= deadline)) {
			if (woken)
				wake_oldest_if_free(m, cur); /* the release that woke us */
			return jf_cancel_due(cur) ? -ECANCELED : -ETIMEDOUT;
		}
		jf_spin_lock(&m->lock);
		for (;;) {
			uint32_t s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
			if (!(s & (MX_LOCKED | MX_STARVING))) {
				if (__atomic_compare_exchange_n(&m->state, &s, s | MX_LOCKED, false,
								__ATOMIC_ACQUIRE,
								__ATOMIC_RELAXED)) {
					jf_spin_unlock(&m->lock);
					owned(m, cur);
					return 0;
				}
				continue;
			}
			/* Held (or promised to the queue): queue, and say so; a woken waiter that
			 * has waited too long asks for handoffs (only while it is held: then its
			 * holder's release sees the bit). */
			uint32_t want = s | MX_WAITERS;
			if (woken && (s & MX_LOCKED)) {
				uint64_t now = jf_stamp_ns();
				if (!since)
					since = now; /* its first lost race: see below */
				else if (now - since > STARVE_NS)
					want |= MX_STARVING;
			}
			if (want == s || __atomic_compare_exchange_n(&m->state, &s, want, false,
								     __ATOMIC_RELAXED,
								     __ATOMIC_RELAXED))
				break;
		}
		/*
		 * The wait that counts towards STARVE_NS (compared with it only: a coarse stamp
		 * does) starts when it queues behind another waiter, or, queueing alone, at its
		 * first lost race: until the release that wakes it (it is the oldest) nobody can
		 * take the mutex from it, so that wait is the holder's, not lost to bargers. Queueing
		 * alone, the common case of two uthreads taking turns, reads no clock.
		 */
		if (!since && m->waiters.head)
			since = jf_stamp_ns();
		if (woken)
			waitq_push_front(&m->waiters, &m->lock, cur);
		else
			waitq_push(&m->waiters, &m->lock, cur);
		jf_wait_note(cur, "mutex", m);
		if (!timed) {
			jf_sched_block(&m->lock);
			r = 0;
		} else {
			r = jf_block_wait(&m->lock, deadline, mutex_wait_over, &mw);
		}
		if (r != 0) {
			if (woken)
				wake_oldest_if_free(m, cur);
			return r;
		}
		if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == cur) {
			owned(m, cur); /* handed over: jf_mutex_unlock() made us the owner */
			return 0;
		}
		woken = true; /* freed and woken to compete for it */
	}
}

static int lock_common(jf_mutex_t *m, uint64_t deadline, bool timed, const char *fn)
{
	struct jf_thread *cur = jf_current();

	if (!cur) {
		if (!timed)
			jf_die("%s() called outside a uthread", fn);
		return -EPERM;
	}
	if (JF_LIKELY(try_acquire(m))) {
		owned(m, cur);
		return 0;
	}
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == cur) {
		if (!timed)
			jf_die("%s(%p): the calling uthread holds it already", fn, (void *)m);
		return -EDEADLK;
	}
	return lock_slow(m, cur, deadline, timed);
}

static int jf_mutex_trylock_in_runtime(jf_mutex_t *m)
{
	struct jf_thread *cur = sync_current("jf_mutex_trylock");
	if (!try_barge(m))
		return -EBUSY;
	owned(m, cur);
	return 0;
}

/* Release with waiters queued, handing the mutex to the oldest one (handoff, starving). */
static void unlock_handoff(jf_mutex_t *m, struct jf_thread *cur)
{
	struct jf_thread *next;

	jf_spin_lock(&m->lock);
	next = waitq_pop(&m->waiters, &m->lock);
	if (!next) {
		/* The last waiter timed out (mutex_wait_over cleared the bits) after our look. */
		__atomic_store_n(&m->state, 0, __ATOMIC_RELEASE);
		jf_spin_unlock(&m->lock);
		return;
	}
	if (!m->waiters.head)
		__atomic_store_n(&m->state, MX_LOCKED, __ATOMIC_RELAXED);
	__atomic_store_n(&m->owner, next, __ATOMIC_RELAXED);
	jf_spin_unlock(&m->lock);
	jf_sched_make_runnable(cur->worker, next, JF_ENQ_WOKEN);
}

static int jf_mutex_unlock_in_runtime(jf_mutex_t *m)
{
	struct jf_thread *cur = jf_current();
	uint32_t s = MX_LOCKED;

	if (!cur || __atomic_load_n(&m->owner, __ATOMIC_RELAXED) != cur ||
	    !(__atomic_load_n(&m->state, __ATOMIC_RELAXED) & MX_LOCKED))
		return -EPERM;
	__atomic_store_n(&m->owner, NULL, __ATOMIC_RELAXED);
	holder_released(cur);
	if (JF_LIKELY(__atomic_compare_exchange_n(&m->state, &s, 0, false, __ATOMIC_RELEASE,
						  __ATOMIC_RELAXED)))
		return 0;
	if (jf_rt->cfg.lock_handoff) {
		unlock_handoff(m, cur);
		return 0;
	}
	/* Barging: free it (unless a waiter asked for handoffs meanwhile), wake the oldest. */
	for (;;) {
		if (s & MX_STARVING) {
			unlock_handoff(m, cur);
			return 0;
		}
		if (__atomic_compare_exchange_n(&m->state, &s, s & ~MX_LOCKED, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			break;
	}
	if (s & MX_WAITERS)
		wake_oldest_if_free(m, cur);
	return 0;
}

void jf_mutex_lock(jf_mutex_t *m)
{
	JF_IN_RUNTIME_DO((void)lock_common(m, UINT64_MAX, false, "jf_mutex_lock"));
}

int jf_mutex_lock_until(jf_mutex_t *m, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(lock_common(m, deadline_ns, true, "jf_mutex_lock_until"));
}

int jf_mutex_trylock(jf_mutex_t *m)
{
	return JF_IN_RUNTIME(jf_mutex_trylock_in_runtime(m));
}

int jf_mutex_unlock(jf_mutex_t *m)
{
	return JF_IN_RUNTIME(jf_mutex_unlock_in_runtime(m));
}

int jf_mutex_destroy(jf_mutex_t *m)
{
	if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != 0 ||
	    __atomic_load_n(&m->waiters.head, __ATOMIC_RELAXED) != NULL)
		return -EBUSY;
	return 0;
}
