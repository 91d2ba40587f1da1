/*
 * taskq.h - a locked FIFO of policy tasks, linked through jf_task.policy_data.
 *
 * Owns: the run queue building block of the per-worker policies (fifo, ws, ...). The link lives in
 * the first bytes of policy_data, so a policy that uses a taskq must keep its own per-task fields
 * after struct taskq_link. @count is readable without the lock (a hint for has_work/steal).
 * Pinned tasks (jf_task_pin(), include/jiffy/policy.h): @pinned counts those queued, and the
 * steal helpers never take one; taskq_stealable() is what another worker could take.
 */
#ifndef JIFFY_TASKQ_H
#define JIFFY_TASKQ_H

#include <stddef.h>
#include <stdint.h>

#include <jiffy/policy.h>

#include "../common/spinlock.h"
#include "sched_util.h"

struct taskq_link {
	struct jf_task *next;
};

struct taskq {
	uint32_t lock;
	uint32_t count;
	uint32_t pinned; /* how many of @count are pinned (atomic stores, like @count) */
	struct jf_task *head;
	struct jf_task *tail;
} __attribute__((aligned(JF_CACHELINE)));

static inline struct taskq_link *taskq_link(struct jf_task *t)
{
	return (struct taskq_link *)(void *)t->policy_data;
}

static inline uint32_t taskq_count(const struct taskq *q)
{
	return __atomic_load_n(&q->count, __ATOMIC_RELAXED);
}

/* The caller holds q->lock. */
/* What another worker may take from @q (its unpinned tasks); a lock-free hint like @count. */
static inline uint32_t taskq_stealable(const struct taskq *q)
{
	uint32_t n = taskq_count(q), pinned = __atomic_load_n(&q->pinned, __ATOMIC_RELAXED);

	return n > pinned ? n - pinned : 0; /* two loads: a push or pop may fall between them */
}

/* @q's pinned count goes up (@d = 1) or down (@d = -1) if @t is pinned; lock held. */
static inline void taskq_pin_account(struct taskq *q, const struct jf_task *t, uint32_t d)
{
	if (JF_UNLIKELY(t->pinned))
		__atomic_store_n(&q->pinned, q->pinned + d, __ATOMIC_RELAXED);
}

static inline void taskq_push_tail_locked(struct taskq *q, struct jf_task *t)
{
	taskq_pin_account(q, t, 1);
	taskq_link(t)->next = NULL;
	if (q->tail)
		taskq_link(q->tail)->next = t;
	else
		q->head = t;
	q->tail = t;
	__atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELAXED);
}

static inline void taskq_push_head_locked(struct taskq *q, struct jf_task *t)
{
	taskq_pin_account(q, t, 1);
	taskq_link(t)->next = q->head;
	q->head = t;
	if (!q->tail)
		q->tail = t;
	__atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELAXED);
}

static inline struct jf_task *taskq_pop_head_locked(struct taskq *q)
{
	struct jf_task *t = q->head;
	if (!t)
		return NULL;
	q->head = taskq_link(t)->next;
	if (!q->head)
		q->tail = NULL;
	__atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELAXED);
	taskq_pin_account(q, t, (uint32_t)-1);
	return t;
}

/* Unlink @t, which follows @prev (NULL: @t is the head); lock held. */
static inline void taskq_unlink_locked(struct taskq *q, struct jf_task *prev, struct jf_task *t)
{
	struct jf_task *next = taskq_link(t)->next;

	if (prev)
		taskq_link(prev)->next = next;
	else
		q->head = next;
	if (q->tail == t)
		q->tail = prev;
	__atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELAXED);
	taskq_pin_account(q, t, (uint32_t)-1);
}

/* The first task of @q that is not pinned, removed, or NULL; lock held. What another worker
 * takes: the head unless pinned tasks are queued. */
static inline struct jf_task *taskq_pop_unpinned_locked(struct taskq *q)
{
	struct jf_task *prev = NULL, *t;

	if (JF_LIKELY(q->pinned == 0))
		return taskq_pop_head_locked(q);
	for (t = q->head; t && t->pinned; t = taskq_link(t)->next)
		prev = t;
	if (t)
		taskq_unlink_locked(q, prev, t);
	return t;
}

static inline void taskq_push_tail(struct taskq *q, struct jf_task *t)
{
	jf_spin_lock(&q->lock);
	taskq_push_tail_locked(q, t);
	jf_spin_unlock(&q->lock);
}

static inline struct jf_task *taskq_pop_head(struct taskq *q)
{
	struct jf_task *t;
	if (taskq_count(q) == 0)
		return NULL;
	jf_spin_lock(&q->lock);
	t = taskq_pop_head_locked(q);
	jf_spin_unlock(&q->lock);
	return t;
}

/*
 * Take the head and up to half of the rest of @vq; return the head and append the rest to @into.
 * The victim is only trylocked (a busy worker never waits for a thief) and released before
 * @into is locked, so two workers stealing from each other cannot deadlock.
 */
/*
 * Take half of @vq's unpinned tasks (at least one, if it has any; its trylock only): return the
 * first (oldest) to run now and append the others to @into. Pinned tasks stay where they are, in
 * their order.
 */
static inline struct jf_task *taskq_steal_half(struct taskq *vq, struct taskq *into)
{
	struct jf_task *first, *batch = NULL, *last = NULL;
	uint32_t take;

	if (taskq_stealable(vq) == 0 || !jf_spin_trylock(&vq->lock))
		return NULL;
	first = taskq_pop_unpinned_locked(vq);
	take = first ? (vq->count - vq->pinned) / 2 : 0;
	while (take--) {
		struct jf_task *t = taskq_pop_unpinned_locked(vq);
		taskq_link(t)->next = NULL;
		if (last)
			taskq_link(last)->next = t;
		else
			batch = t;
		last = t;
	}
	jf_spin_unlock(&vq->lock);
	if (batch) {
		jf_spin_lock(&into->lock);
		while (batch) {
			struct jf_task *next = taskq_link(batch)->next;
			taskq_push_tail_locked(into, batch);
			batch = next;
		}
		jf_spin_unlock(&into->lock);
	}
	return first;
}

static inline struct jf_task *taskq_steal_any(struct taskq *first, size_t stride, int n, int self,
					      uint64_t *rng, struct taskq *into)
{
	int v;

	if (n < 2)
		return NULL;
	v = (int)(sched_next_rand(rng) % (uint64_t)n);
	for (int i = 0; i < n; i++, v = v + 1 == n ? 0 : v + 1) {
		struct taskq *vq = (struct taskq *)((char *)first + stride * (size_t)v);
		struct jf_task *t;

		/* the count first, here: most queues are empty, and the steal is not inlined */
		if (v != self && taskq_stealable(vq) != 0 && (t = taskq_steal_half(vq, into)) != NULL)
			return t;
	}
	return NULL;
}

#endif /* JIFFY_TASKQ_H */
