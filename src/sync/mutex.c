/*
 * mutex.c - jf_mutex_t: a blocking mutex with FIFO handoff, timed locking, spinning on a running
 * holder, and lock-holder preemption deferral.
 *
 * Owns: the mutex protocol. state: 0 free, MX_LOCKED, MX_LOCKED|MX_WAITERS. The uncontended
 * lock and unlock are one compare-and-swap each. With waiters, unlock does not release the mutex:
 * it hands ownership straight to the oldest waiter (no barging, no starvation), which wakes up
 * owning it. The waiter list and the WAITERS bit change only under m->lock; a waiter that times
 * out or is cancelled leaves the list under m->lock too (mutex_wait_over) and clears WAITERS if
 * it was the last, so that an unlock never finds the bit without a waiter.
 *
 * Spinning (jf_config.lock_spin_ns): a contended locker first spins while the holder is running
 * on another worker, i.e. while that worker is still in the run (owner_run: worker + run_seq) in
 * which the holder took the mutex. A holder that was switched out will not release it soon, so
 * spinning stops at once then, and when the mutex is being handed to a queued waiter. Only
 * worker and run counters are read: never the holder's jf_thread, which may be freed by then.
 */
#include <errno.h>
#include <string.h>

#include "holder.h"
#include "waitq.h"

#define MX_LOCKED 1u
#define MX_WAITERS 2u
#define RUN_SEQ_BITS 48
#define RUN_SEQ_MASK ((1ull << RUN_SEQ_BITS) - 1)

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

/* @cur owns @m now: record it (and where it runs, for spinners). */
static void owned(jf_mutex_t *m, struct jf_thread *cur)
{
	struct worker *w = cur->worker;
	uint64_t seq = __atomic_load_n(&w->run_seq, __ATOMIC_RELAXED);

	__atomic_store_n(&m->owner, cur, __ATOMIC_RELAXED);
	__atomic_store_n(&m->owner_run,
			 ((uint64_t)(w->id + 1) << RUN_SEQ_BITS) | (seq & RUN_SEQ_MASK),
			 __ATOMIC_RELAXED);
	holder_acquired(cur);
}

/* Spin while @m's holder runs on another worker, up to lock_spin_ns. Return: true if acquired. */
static bool spin_acquire(jf_mutex_t *m, struct jf_thread *cur)
{
	struct runtime *rt = jf_rt;
	uint64_t spin = rt->cfg.lock_spin_ns, end;

	if (!spin || rt->nworkers < 2)
		return false;
	end = jf_now_ns() + spin;
	do {
		uint64_t run = __atomic_load_n(&m->owner_run, __ATOMIC_RELAXED);
		int ow = (int)(run >> RUN_SEQ_BITS) - 1;
		struct worker *k;

		if (__atomic_load_n(&m->state, __ATOMIC_RELAXED) == 0 && try_acquire(m))
			return true;
		if (ow < 0 || ow >= rt->nworkers || ow == cur->worker->id)
			return false; /* no holder recorded yet, or it is not running (on our worker) */
		k = &rt->workers[ow];
		if ((__atomic_load_n(&k->run_seq, __ATOMIC_RELAXED) & RUN_SEQ_MASK) !=
			    (run & RUN_SEQ_MASK) ||
		    !__atomic_load_n(&k->run_start_ns, __ATOMIC_RELAXED))
			return false; /* the holder was switched out: it will not release soon */
		if (__atomic_load_n(&m->state, __ATOMIC_RELAXED) & MX_WAITERS)
			return false; /* the mutex goes to a queued waiter, not to us */
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
		__atomic_fetch_and(&m->state, ~MX_WAITERS, __ATOMIC_RELAXED);
	jf_spin_unlock(&m->lock);
	return removed;
}

static int lock_slow(jf_mutex_t *m, struct jf_thread *cur, uint64_t deadline, bool timed)
{
	struct mutex_wait mw = {m, cur};
	int r;

	if (spin_acquire(m, cur)) {
		owned(m, cur);
		return 0;
	}
	if (timed && jf_cancel_due(cur))
		return -ECANCELED;
	if (timed && jf_now_ns() >= deadline)
		return try_acquire(m) ? (owned(m, cur), 0) : -ETIMEDOUT;
	jf_spin_lock(&m->lock);
	for (;;) {
		uint32_t s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
		if (s == 0) {
			if (try_acquire(m)) {
				jf_spin_unlock(&m->lock);
				owned(m, cur);
				return 0;
			}
			continue;
		}
		if ((s & MX_WAITERS) ||
		    __atomic_compare_exchange_n(&m->state, &s, s | MX_WAITERS, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	waitq_push(&m->waiters, &m->lock, cur);
	jf_wait_note(cur, "mutex", m);
	if (!timed) {
		jf_sched_block(&m->lock);
		r = 0;
	} else {
		r = jf_block_wait(&m->lock, deadline, mutex_wait_over, &mw);
	}
	if (r == 0)
		owned(m, cur); /* handed over by jf_mutex_unlock(), which set the owner already */
	return r;
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
	if (!try_acquire(m))
		return -EBUSY;
	owned(m, cur);
	return 0;
}

static int jf_mutex_unlock_in_runtime(jf_mutex_t *m)
{
	struct jf_thread *cur = jf_current(), *next;
	uint32_t expected = MX_LOCKED;

	if (!cur || __atomic_load_n(&m->owner, __ATOMIC_RELAXED) != cur ||
	    __atomic_load_n(&m->state, __ATOMIC_RELAXED) == 0)
		return -EPERM;
	/* owner_run stays: a spinner that sees the mutex free takes it; one that sees a new holder
	 * reads that holder's run once it has stored it (owned()). */
	__atomic_store_n(&m->owner, NULL, __ATOMIC_RELAXED);
	holder_released(cur);
	if (JF_LIKELY(__atomic_compare_exchange_n(&m->state, &expected, 0, false, __ATOMIC_RELEASE,
						  __ATOMIC_RELAXED)))
		return 0;
	jf_spin_lock(&m->lock);
	next = waitq_pop(&m->waiters, &m->lock);
	if (!next) {
		/* The last waiter timed out (mutex_wait_over cleared WAITERS) after our CAS saw it. */
		__atomic_store_n(&m->state, 0, __ATOMIC_RELEASE);
		jf_spin_unlock(&m->lock);
		return 0;
	}
	if (!m->waiters.head)
		__atomic_store_n(&m->state, MX_LOCKED, __ATOMIC_RELAXED);
	__atomic_store_n(&m->owner, next, __ATOMIC_RELAXED);
	/* The new owner's run is not known until it runs: no spinning on it meanwhile. */
	jf_spin_unlock(&m->lock);
	jf_sched_make_runnable(cur->worker, next, JF_ENQ_WOKEN);
	return 0;
}

void jf_mutex_lock(jf_mutex_t *m)
{
	JF_RUNTIME_ENTER();
	(void)lock_common(m, UINT64_MAX, false, "jf_mutex_lock");
	JF_RUNTIME_LEAVE();
}

int jf_mutex_lock_until(jf_mutex_t *m, uint64_t deadline_ns)
{
	int r;

	JF_RUNTIME_ENTER();
	r = lock_common(m, deadline_ns, true, "jf_mutex_lock_until");
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_mutex_trylock(jf_mutex_t *m)
{
	int r;

	JF_RUNTIME_ENTER();
	r = jf_mutex_trylock_in_runtime(m);
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_mutex_unlock(jf_mutex_t *m)
{
	int r;

	JF_RUNTIME_ENTER();
	r = jf_mutex_unlock_in_runtime(m);
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_mutex_destroy(jf_mutex_t *m)
{
	if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != 0 ||
	    __atomic_load_n(&m->waiters.head, __ATOMIC_RELAXED) != NULL)
		return -EBUSY;
	return 0;
}
