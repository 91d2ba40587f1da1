/*
 * sem.c - jf_sem_t: a counting semaphore for uthreads, with timeouts.
 *
 * Owns: the semaphore protocol. state: the count (SEM_COUNT bits) and SEM_WAITERS. A count above
 * 0 means nobody waits: wait and post are then one compare-and-swap each. With waiters, post does
 * not add to the count: it hands its unit straight to the oldest waiter (FIFO, no barging), which
 * wakes up owning it. The waiter list and SEM_WAITERS change only under s->lock; a waiter that
 * times out or is cancelled leaves under s->lock and clears SEM_WAITERS if it was the last, so
 * the unit a post would have handed it stays counted.
 */
#include <errno.h>
#include <string.h>

#include "waitq.h"

#define SEM_WAITERS (1ull << 63)
#define SEM_COUNT (SEM_WAITERS - 1)

int jf_sem_init(jf_sem_t *s, uint64_t value)
{
	if (value > JF_SEM_VALUE_MAX)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->state = value;
	return 0;
}

static bool try_take(jf_sem_t *s)
{
	uint64_t v = __atomic_load_n(&s->state, __ATOMIC_RELAXED);

	while ((v & SEM_COUNT) && !(v & SEM_WAITERS))
		if (__atomic_compare_exchange_n(&s->state, &v, v - 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

struct sem_wait {
	jf_sem_t *s;
	struct jf_thread *t;
};

static bool sem_wait_over(void *arg)
{
	struct sem_wait *sw = arg;
	jf_sem_t *s = sw->s;
	bool removed;

	jf_spin_lock(&s->lock);
	removed = waitq_remove(&s->waiters, &s->lock, sw->t);
	if (removed && !s->waiters.head)
		__atomic_fetch_and(&s->state, ~SEM_WAITERS, __ATOMIC_RELAXED);
	jf_spin_unlock(&s->lock);
	return removed;
}

static int wait_common(jf_sem_t *s, uint64_t deadline)
{
	struct jf_thread *cur = jf_current();
	struct sem_wait sw = {s, cur};
	bool over;

	if (!cur)
		return -EPERM;
	if (JF_LIKELY(try_take(s)))
		return 0;
	if (jf_cancel_due(cur))
		return -ECANCELED;
	over = deadline != UINT64_MAX && jf_now_ns() >= deadline;
	jf_spin_lock(&s->lock);
	for (;;) {
		uint64_t v = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
		if (v & SEM_COUNT) {
			if (__atomic_compare_exchange_n(&s->state, &v, v - 1, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				jf_spin_unlock(&s->lock);
				return 0;
			}
			continue;
		}
		if (over) { /* a deadline already past takes only a free unit: no queueing */
			jf_spin_unlock(&s->lock);
			return -ETIMEDOUT;
		}
		if ((v & SEM_WAITERS) ||
		    __atomic_compare_exchange_n(&s->state, &v, v | SEM_WAITERS, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	waitq_push(&s->waiters, &s->lock, cur);
	jf_wait_note(cur, "sem", s);
	/* 0: a post handed it a unit; a timeout or jf_cancel() took it off the queue first */
	return jf_block_wait(&s->lock, deadline, sem_wait_over, &sw);
}

static int post_in_runtime(jf_sem_t *s)
{
	uint64_t v = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
	struct jf_thread *t;

	while (!(v & SEM_WAITERS)) {
		if ((v & SEM_COUNT) >= JF_SEM_VALUE_MAX)
			return -EOVERFLOW;
		if (__atomic_compare_exchange_n(&s->state, &v, v + 1, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	}
	if (!jf_this_worker())
		return -EPERM; /* a waiter can be handed the unit only from a worker */
	jf_spin_lock(&s->lock);
	t = waitq_pop(&s->waiters, &s->lock);
	if (!s->waiters.head)
		__atomic_fetch_and(&s->state, ~SEM_WAITERS, __ATOMIC_RELEASE);
	if (!t) {
		/* The last waiter left (timed out) between our look and the lock: count the unit. */
		__atomic_fetch_add(&s->state, 1, __ATOMIC_RELEASE);
		jf_spin_unlock(&s->lock);
		return 0;
	}
	jf_spin_unlock(&s->lock);
	jf_sched_make_runnable(jf_this_worker(), t, JF_ENQ_WOKEN);
	return 0;
}

int jf_sem_wait(jf_sem_t *s)
{
	return jf_sem_wait_until(s, UINT64_MAX);
}

int jf_sem_wait_until(jf_sem_t *s, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(wait_common(s, deadline_ns));
}

int jf_sem_trywait(jf_sem_t *s)
{
	return try_take(s) ? 0 : -EAGAIN;
}

int jf_sem_post(jf_sem_t *s)
{
	return JF_IN_RUNTIME(post_in_runtime(s));
}

uint64_t jf_sem_value(jf_sem_t *s)
{
	return __atomic_load_n(&s->state, __ATOMIC_RELAXED) & SEM_COUNT;
}

int jf_sem_destroy(jf_sem_t *s)
{
	return (__atomic_load_n(&s->state, __ATOMIC_RELAXED) & SEM_WAITERS) ? -EBUSY : 0;
}
