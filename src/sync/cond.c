/*
 * cond.c - jf_cond_t: condition variables, with timed waits.
 *
 * Owns: the wait/signal protocol. A waiter queues itself under c->lock before releasing the mutex,
 * so a signal sent after the mutex is released always finds it. A timed waiter also arms a timer;
 * whichever of signal and timer takes it off the queue (under c->lock) wakes it, exactly once.
 */
#include <errno.h>
#include <string.h>

#include "waitq.h"

void jf_cond_init(jf_cond_t *c)
{
	memset(c, 0, sizeof(*c));
}

static JF_HOT_INLINE int cond_wait_common(jf_cond_t *c, jf_mutex_t *m, uint64_t deadline,
					    bool timed)
{
	struct jf_thread *cur = sync_current("jf_cond_wait");
	struct waitq_wait ww = {&c->waiters, &c->lock, cur};
	int r;

	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) != cur)
		return -EPERM;
	if (jf_cancel_due(cur))
		return -ECANCELED;
	if (timed && jf_now_ns() >= deadline)
		return -ETIMEDOUT;
	jf_spin_lock(&c->lock);
	waitq_push(&c->waiters, &c->lock, cur);
	jf_wait_note(cur, "cond", c);
	jf_mutex_unlock(m);
	/* a timeout or a jf_cancel() takes it off the queue (waitq_wait_over) */
	r = jf_block_wait(&c->lock, timed ? deadline : UINT64_MAX, waitq_wait_over, &ww);
	jf_mutex_lock(m);
	return r;
}

static int jf_cond_wait_in_runtime(jf_cond_t *c, jf_mutex_t *m)
{
	return cond_wait_common(c, m, 0, false);
}

static int jf_cond_timedwait_in_runtime(jf_cond_t *c, jf_mutex_t *m, uint64_t deadline_ns)
{
	return cond_wait_common(c, m, deadline_ns, true);
}

static JF_HOT_INLINE void cond_wake(jf_cond_t *c, bool all)
{
	struct jf_thread *cur = sync_current("jf_cond_signal"), *head;

	if (!__atomic_load_n(&c->waiters.head, __ATOMIC_RELAXED))
		return; /* no waiter was queued before the caller's (mutex-ordered) state change */
	jf_spin_lock(&c->lock);
	head = all ? waitq_take_all(&c->waiters, &c->lock, NULL) : waitq_pop(&c->waiters, &c->lock);
	jf_spin_unlock(&c->lock);
	waitq_wake_list(cur->worker, head);
}

static void jf_cond_signal_in_runtime(jf_cond_t *c)
{
	cond_wake(c, false);
}

static void jf_cond_broadcast_in_runtime(jf_cond_t *c)
{
	cond_wake(c, true);
}

int jf_cond_wait(jf_cond_t *c, jf_mutex_t *m)
{
	return JF_IN_RUNTIME(jf_cond_wait_in_runtime(c, m));
}

int jf_cond_timedwait(jf_cond_t *c, jf_mutex_t *m, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(jf_cond_timedwait_in_runtime(c, m, deadline_ns));
}

void jf_cond_signal(jf_cond_t *c)
{
	JF_IN_RUNTIME_DO(jf_cond_signal_in_runtime(c));
}

int jf_cond_destroy(jf_cond_t *c)
{
	return __atomic_load_n(&c->waiters.head, __ATOMIC_RELAXED) ? -EBUSY : 0;
}

void jf_cond_broadcast(jf_cond_t *c)
{
	JF_IN_RUNTIME_DO(jf_cond_broadcast_in_runtime(c));
}
