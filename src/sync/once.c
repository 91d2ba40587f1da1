/*
 * once.c - jf_once_t: run a function exactly once (pthread_once, Go's sync.Once).
 *
 * Owns: the once protocol. state: ONCE_NEW, ONCE_RUNNING (one caller runs the function),
 * ONCE_DONE. After the first run the fast path is one acquire load. A uthread that finds it
 * running queues on o->waiters and blocks (its worker goes on with other uthreads); the runner
 * wakes the queue when it is done. Two cases cannot block a uthread: a runner that is not a
 * uthread (it cannot wake one, having no worker; o->runner says which, set under o->lock, and a
 * waiter that does not see a uthread there yet does not queue) and a caller that is not one;
 * those wait by
 * sleeping in short steps (jf_sleep_ns for a uthread, sched_yield for a kernel thread). A
 * function that calls jf_once() on its own once gets -EDEADLK, on a uthread and on a kernel
 * thread alike (once_here: the onces this kernel thread runs outside any uthread, innermost
 * first).
 */
#include <errno.h>
#include <sched.h>

#include <jiffy/time.h>

#include "waitq.h"

#define ONCE_NEW 0u
#define ONCE_RUNNING 1u
#define ONCE_DONE 2u
/* o->runner of a run that is not on a uthread. */
#define FOREIGN_RUNNER ((struct jf_thread *)1)

struct once_frame {
	jf_once_t *once;
	struct once_frame *up;
};
static __thread struct once_frame *once_here;

static bool running_here(jf_once_t *o)
{
	for (struct once_frame *f = once_here; f; f = f->up)
		if (f->once == o)
			return true;
	return false;
}

static void run(jf_once_t *o, void (*fn)(void))
{
	struct jf_thread *cur = jf_self(), *head;
	struct once_frame frame = {o, once_here};

	/* Under the lock: a waiter queues only once it sees a uthread here (wait_done). */
	JF_RUNTIME_ENTER();
	jf_spin_lock(&o->lock);
	__atomic_store_n(&o->runner, cur ? cur : FOREIGN_RUNNER, __ATOMIC_RELAXED);
	jf_spin_unlock(&o->lock);
	JF_RUNTIME_LEAVE();
	if (!cur)
		once_here = &frame;
	fn();
	if (!cur)
		once_here = frame.up;
	JF_RUNTIME_ENTER();
	jf_spin_lock(&o->lock);
	__atomic_store_n(&o->state, ONCE_DONE, __ATOMIC_RELEASE);
	__atomic_store_n(&o->runner, NULL, __ATOMIC_RELAXED);
	head = waitq_take_all(&o->waiters, &o->lock, NULL);
	jf_spin_unlock(&o->lock);
	/* Waiters queue only while the runner is a uthread: then this is a worker. */
	waitq_wake_list(jf_this_worker(), head);
	JF_RUNTIME_LEAVE();
}

/* Someone else runs it: wait until it is done. */
static int wait_done(jf_once_t *o)
{
	struct jf_thread *cur = jf_self();
	struct jf_thread *runner = __atomic_load_n(&o->runner, __ATOMIC_RELAXED);

	if ((cur && runner == cur) || (!cur && running_here(o)))
		return -EDEADLK;
	if (cur) {
		JF_RUNTIME_ENTER();
		jf_spin_lock(&o->lock);
		runner = __atomic_load_n(&o->runner, __ATOMIC_RELAXED);
		if (__atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == ONCE_DONE) {
			jf_spin_unlock(&o->lock);
		} else if (runner && runner != FOREIGN_RUNNER) {
			waitq_push(&o->waiters, &o->lock, cur);
			jf_wait_note(cur, "once", o);
			jf_sched_block(&o->lock);
		} else {
			jf_spin_unlock(&o->lock);
		}
		JF_RUNTIME_LEAVE();
	}
	while (__atomic_load_n(&o->state, __ATOMIC_ACQUIRE) != ONCE_DONE) {
		if (cur)
			jf_sleep_ns(20000);
		else
			sched_yield();
	}
	return 0;
}

int jf_once(jf_once_t *o, void (*fn)(void))
{
	uint32_t expected = ONCE_NEW;

	if (!o || !fn)
		return -EINVAL;
	if (JF_LIKELY(__atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == ONCE_DONE))
		return 0;
	if (__atomic_compare_exchange_n(&o->state, &expected, ONCE_RUNNING, false,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		run(o, fn);
		return 0;
	}
	return wait_done(o);
}
