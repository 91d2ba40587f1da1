/*
 * waitq.h - FIFO wait queues of blocked uthreads, linked through jf_thread.wq_next.
 *
 * Owns: the queue operations every blocking primitive uses, the removal its timeouts and
 * cancellations share (waitq_wait_over), and the release of a whole queue at once (waitq_take_all
 * under the lock, waitq_wake_list after it). The caller holds the spinlock that
 * protects the queue and passes it (@lock), which JF_ASSERT checks is held; wq_queued tells a
 * timeout callback whether the uthread is still queued.
 */
#ifndef JIFFY_WAITQ_H
#define JIFFY_WAITQ_H

#include <jiffy/sync.h>

#include "../runtime/runtime.h"

static inline void waitq_push(struct jf_waitq *q, const uint32_t *lock, struct jf_thread *t)
{
	JF_ASSERT(jf_spin_is_locked(lock), "wait queue %p pushed without its lock", (void *)q);
	JF_ASSERT(!t->wq_queued, "uthread %llu queued twice", (unsigned long long)t->task.id);
	t->wq_next = NULL;
	t->wq_queued = 1;
	if (q->tail)
		q->tail->wq_next = t;
	else
		__atomic_store_n(&q->head, t, __ATOMIC_RELAXED); /* read unlocked by cond_wake */
	q->tail = t;
}

/* Put @t first (a woken waiter that lost the race for a lock goes back to the front). */
static inline void waitq_push_front(struct jf_waitq *q, const uint32_t *lock, struct jf_thread *t)
{
	JF_ASSERT(jf_spin_is_locked(lock), "wait queue %p pushed without its lock", (void *)q);
	JF_ASSERT(!t->wq_queued, "uthread %llu queued twice", (unsigned long long)t->task.id);
	t->wq_queued = 1;
	t->wq_next = q->head;
	if (!q->tail)
		q->tail = t;
	__atomic_store_n(&q->head, t, __ATOMIC_RELAXED);
}

static inline struct jf_thread *waitq_pop(struct jf_waitq *q, const uint32_t *lock)
{
	JF_ASSERT(jf_spin_is_locked(lock), "wait queue %p popped without its lock", (void *)q);
	struct jf_thread *t = q->head;
	if (!t)
		return NULL;
	__atomic_store_n(&q->head, t->wq_next, __ATOMIC_RELAXED);
	if (!q->head)
		q->tail = NULL;
	t->wq_next = NULL;
	t->wq_queued = 0;
	return t;
}

/* Empty @q, returning its uthreads still linked through wq_next (for waitq_wake_list() after the
 * lock is released), and their number in *@n (may be NULL). */
static inline struct jf_thread *waitq_take_all(struct jf_waitq *q, const uint32_t *lock,
					       unsigned *n)
{
	struct jf_thread *head = q->head;
	unsigned count = 0;

	JF_ASSERT(jf_spin_is_locked(lock), "wait queue %p emptied without its lock", (void *)q);
	for (struct jf_thread *t = head; t; t = t->wq_next) {
		t->wq_queued = 0;
		count++;
	}
	__atomic_store_n(&q->head, NULL, __ATOMIC_RELAXED);
	q->tail = NULL;
	if (n)
		*n = count;
	return head;
}

/* Make every uthread of a list from waitq_take_all() runnable, from worker @w. */
static inline void waitq_wake_list(struct worker *w, struct jf_thread *head)
{
	while (head) {
		struct jf_thread *t = head;
		head = t->wq_next; /* read before the wake: the uthread may run and queue again */
		t->wq_next = NULL;
		jf_sched_make_runnable(w, t, JF_ENQ_WOKEN);
	}
}

/* Remove @t from anywhere in @q. Return: false if it was not queued. */
static inline bool waitq_remove(struct jf_waitq *q, const uint32_t *lock, struct jf_thread *t)
{
	struct jf_thread *prev = NULL, *it;

	JF_ASSERT(jf_spin_is_locked(lock), "wait queue %p changed without its lock", (void *)q);

	if (!t->wq_queued)
		return false;
	for (it = q->head; it && it != t; it = it->wq_next)
		prev = it;
	if (!it)
		return false;
	if (prev)
		prev->wq_next = t->wq_next;
	else
		__atomic_store_n(&q->head, t->wq_next, __ATOMIC_RELAXED);
	if (q->tail == t)
		q->tail = prev;
	t->wq_next = NULL;
	t->wq_queued = 0;
	return true;
}

/*
 * struct waitq_wait - a uthread in @q (protected by @lock) waiting in jf_block_wait(), with
 * waitq_wait_over() as its on_timeout: a timeout or a jf_cancel() takes it off the queue unless
 * the ordinary wake-up did first.
 */
struct waitq_wait {
	struct jf_waitq *q;
	uint32_t *lock;
	struct jf_thread *t;
};

static inline bool waitq_wait_over(void *arg)
{
	struct waitq_wait *ww = arg;
	bool removed;

	jf_spin_lock(ww->lock);
	removed = waitq_remove(ww->q, ww->lock, ww->t);
	jf_spin_unlock(ww->lock);
	return removed;
}

/* The calling uthread, or a clear death for API misuse outside the runtime. */
static inline struct jf_thread *sync_current(const char *fn)
{
	struct jf_thread *cur = jf_current();
	if (!cur)
		jf_die("%s() called outside a uthread", fn);
	return cur;
}

#endif /* JIFFY_WAITQ_H */
