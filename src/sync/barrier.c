/*
 * barrier.c - jf_barrier_t: @count parties wait for each other, round after round.
 *
 * Owns: the barrier protocol, all under b->lock: the last party of a round resets the count for
 * the next round and wakes the others, taking them off the queue first, so a party that hurries
 * into the next round queues for that round, never joins the old one. Waits are not cancellable:
 * a party that left would hold every other party of its round for good.
 */
#include <errno.h>

#include "waitq.h"

int jf_barrier_init(jf_barrier_t *b, unsigned count)
{
	int r = 0;

	if (count == 0)
		return -EINVAL;
	JF_RUNTIME_ENTER();
	jf_spin_lock(&b->lock);
	if (b->waiters.head) {
		r = -EBUSY;
	} else {
		b->count = count;
		b->arrived = 0;
	}
	jf_spin_unlock(&b->lock);
	JF_RUNTIME_LEAVE();
	return r;
}

static int wait_in_runtime(jf_barrier_t *b)
{
	struct jf_thread *cur = jf_current(), *head;

	if (!cur)
		return -EPERM;
	jf_spin_lock(&b->lock);
	if (b->count == 0) {
		jf_spin_unlock(&b->lock);
		return -EINVAL;
	}
	if (++b->arrived < b->count) {
		waitq_push(&b->waiters, &b->lock, cur);
		jf_wait_note(cur, "barrier", b);
		jf_sched_block(&b->lock);
		return 0;
	}
	b->arrived = 0;
	head = waitq_take_all(&b->waiters, &b->lock, NULL);
	jf_spin_unlock(&b->lock);
	waitq_wake_list(cur->worker, head);
	return JF_BARRIER_SERIAL;
}

int jf_barrier_wait(jf_barrier_t *b)
{
	return JF_IN_RUNTIME(wait_in_runtime(b));
}

int jf_barrier_destroy(jf_barrier_t *b)
{
	int r = 0;

	JF_RUNTIME_ENTER();
	jf_spin_lock(&b->lock);
	if (b->waiters.head || b->arrived)
		r = -EBUSY;
	else
		b->count = 0;
	jf_spin_unlock(&b->lock);
	JF_RUNTIME_LEAVE();
	return r;
}
