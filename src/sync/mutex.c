/*
 * mutex.c - jf_mutex_t: a blocking mutex with FIFO handoff.
 *
 * Owns: the mutex protocol. state: 0 free, MX_LOCKED, MX_LOCKED|MX_WAITERS. The uncontended
 * lock and unlock are one compare-and-swap each. With waiters, unlock does not release the mutex:
 * it hands ownership straight to the oldest waiter (no barging, no starvation), which wakes up
 * owning it. The waiter list and the WAITERS bit change only under m->lock.
 */
#include <errno.h>
#include <string.h>

#include "waitq.h"

#define MX_LOCKED 1u
#define MX_WAITERS 2u

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

static void jf_mutex_lock_in_runtime(jf_mutex_t *m)
{
	struct jf_thread *cur = sync_current("jf_mutex_lock");

	if (JF_LIKELY(try_acquire(m))) {
		m->owner = cur;
		return;
	}
	jf_spin_lock(&m->lock);
	for (;;) {
		uint32_t s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
		if (s == 0) {
			if (try_acquire(m)) {
				jf_spin_unlock(&m->lock);
				m->owner = cur;
				return;
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
	jf_sched_block(&m->lock);
	/* Handed over by jf_mutex_unlock(): we own it, and m->owner was set for us. */
}

static int jf_mutex_trylock_in_runtime(jf_mutex_t *m)
{
	struct jf_thread *cur = sync_current("jf_mutex_trylock");
	if (!try_acquire(m))
		return -EBUSY;
	m->owner = cur;
	return 0;
}

static int jf_mutex_unlock_in_runtime(jf_mutex_t *m)
{
	struct jf_thread *cur = jf_current(), *next;
	uint32_t expected = MX_LOCKED;

	if (!cur || m->owner != cur || __atomic_load_n(&m->state, __ATOMIC_RELAXED) == 0)
		return -EPERM;
	m->owner = NULL;
	if (JF_LIKELY(__atomic_compare_exchange_n(&m->state, &expected, 0, false, __ATOMIC_RELEASE,
						  __ATOMIC_RELAXED)))
		return 0;
	jf_spin_lock(&m->lock);
	next = waitq_pop(&m->waiters, &m->lock);
	/* WAITERS is set only with a waiter queued (under m->lock): a broken mutex, not a case. */
	JF_BUG_ON(!next, "mutex %p: state says a uthread waits, its queue is empty", (void *)m);
	if (!m->waiters.head)
		__atomic_store_n(&m->state, MX_LOCKED, __ATOMIC_RELAXED);
	m->owner = next;
	jf_spin_unlock(&m->lock);
	jf_sched_make_runnable(cur->worker, next, JF_ENQ_WOKEN);
	return 0;
}

void jf_mutex_lock(jf_mutex_t *m)
{
	JF_RUNTIME_ENTER();
	jf_mutex_lock_in_runtime(m);
	JF_RUNTIME_LEAVE();
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
