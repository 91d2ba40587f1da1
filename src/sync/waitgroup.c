/*
 * waitgroup.c - jf_waitgroup_t: wait until a counter of outstanding work reaches zero.
 *
 * Owns: the counter and its waiters, both under wg->lock (a waitgroup is not a hot path); a
 * timed-out or cancelled waiter leaves the queue under it too (waitq_wait_over).
 */
#include <errno.h>
#include <string.h>

#include "waitq.h"

void jf_waitgroup_init(jf_waitgroup_t *wg)
{
	memset(wg, 0, sizeof(*wg));
}

static int jf_waitgroup_add_in_runtime(jf_waitgroup_t *wg, int64_t n)
{
	struct jf_thread *waiters;

	jf_spin_lock(&wg->lock);
	if (wg->count + n < 0) {
		jf_spin_unlock(&wg->lock);
		return -EINVAL;
	}
	wg->count += n;
	waiters = wg->count == 0 ? waitq_take_all(&wg->waiters, &wg->lock, NULL) : NULL;
	jf_spin_unlock(&wg->lock);
	if (waiters) {
		struct worker *w = jf_this_worker();
		if (!w)
			jf_die("jf_waitgroup_add() released waiters from outside the runtime");
		waitq_wake_list(w, waiters);
	}
	return 0;
}

int jf_waitgroup_done(jf_waitgroup_t *wg)
{
	return jf_waitgroup_add(wg, -1);
}

static int jf_waitgroup_wait_in_runtime(jf_waitgroup_t *wg, uint64_t deadline)
{
	struct jf_thread *cur = jf_current();
	struct waitq_wait ww = {&wg->waiters, &wg->lock, cur};

	if (!cur)
		return -EPERM;
	if (jf_cancel_due(cur))
		return -ECANCELED;
	jf_spin_lock(&wg->lock);
	if (wg->count == 0) {
		jf_spin_unlock(&wg->lock);
		return 0;
	}
	if (deadline != UINT64_MAX && jf_now_ns() >= deadline) {
		jf_spin_unlock(&wg->lock);
		return -ETIMEDOUT;
	}
	waitq_push(&wg->waiters, &wg->lock, cur);
	jf_wait_note(cur, "waitgroup", wg);
	/* a timeout or a jf_cancel() takes it off the queue unless the count reached 0 first */
	return jf_block_wait(&wg->lock, deadline, waitq_wait_over, &ww);
}

int jf_waitgroup_add(jf_waitgroup_t *wg, int64_t n)
{
	return JF_IN_RUNTIME(jf_waitgroup_add_in_runtime(wg, n));
}

int jf_waitgroup_wait(jf_waitgroup_t *wg)
{
	return jf_waitgroup_wait_until(wg, UINT64_MAX);
}

int jf_waitgroup_wait_until(jf_waitgroup_t *wg, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(jf_waitgroup_wait_in_runtime(wg, deadline_ns));
}

int jf_waitgroup_destroy(jf_waitgroup_t *wg)
{
	return __atomic_load_n(&wg->waiters.head, __ATOMIC_RELAXED) ? -EBUSY : 0;
}
