/*
 * timer.c - per-worker one-shot timers, sleeping, and blocking with a timeout.
 *
 * Owns: each worker's binary min-heap of struct jf_timer, the firing protocol, and
 * jf_block_wait() on which sleeps, timed and cancellable waits and the netpoller are built.
 * Timers fire on scheduling paths (a uthread switching, a worker's idle loop; an idle worker also
 * fires due timers of busy workers), never in a signal handler (a preemption's handler leaves due
 * timers to the scheduler loop: jf_sched_finish_preempt). A timer that becomes a heap's
 * earliest kicks a parked worker sleeping past it (timer_armed_kick), so a busy worker's timers
 * fire on time although idle workers park without a periodic wake-up.
 * Invariant: a timer's memory may be released by its owner once jf_timer_cancel() returned; the
 * firing side writes TIMER_DONE last and touches the timer no more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "runtime.h"

enum timer_state {
	TIMER_IDLE = 0,
	TIMER_PENDING,
	TIMER_FIRING,
	TIMER_DONE,
	TIMER_CANCELLED,
};

void jf_timers_init(struct worker *w)
{
	w->timers.lock = 0;
	w->timers.n = 0;
	w->timers.cap = 0;
	w->timers.a = NULL;
	w->timers.min_deadline = UINT64_MAX;
}

void jf_timers_fini(struct worker *w)
{
	free(w->timers.a);
	w->timers.a = NULL;
	w->timers.n = w->timers.cap = 0;
}

static void heap_set(struct timer_heap *h, uint32_t i, struct jf_timer *t)
{
	h->a[i] = t;
	t->heap_idx = (int32_t)i;
}

static void sift_up(struct timer_heap *h, uint32_t i)
{
	struct jf_timer *t = h->a[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (h->a[parent]->deadline <= t->deadline)
			break;
		heap_set(h, i, h->a[parent]);
		i = parent;
	}
	heap_set(h, i, t);
}

static void sift_down(struct timer_heap *h, uint32_t i)
{
	struct jf_timer *t = h->a[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1]->deadline < h->a[c]->deadline)
			c++;
		if (t->deadline <= h->a[c]->deadline)
			break;
		heap_set(h, i, h->a[c]);
		i = c;
	}
	heap_set(h, i, t);
}

static void heap_remove(struct timer_heap *h, uint32_t i)
{
	h->n--;
	if (i != h->n) {
		heap_set(h, i, h->a[h->n]);
		sift_down(h, i);
		sift_up(h, (uint32_t)h->a[i]->heap_idx);
	}
}

static void publish_min(struct timer_heap *h)
{
	__atomic_store_n(&h->min_deadline, h->n ? h->a[0]->deadline : UINT64_MAX,
			 __ATOMIC_RELAXED);
}

/*
 * A timer now due earlier than @w's heap was: a parked worker may be asleep until a later deadline
 * (or without one), computed before this timer existed, while @w is busy and cannot fire it. Kick
 * one such worker unless a parked one already sleeps no later than @deadline; it parks again with
 * this deadline. The fence pairs with worker_park()'s: it sees the heap's new minimum, or we see
 * it parked. A park_until of 0 (deciding) counts as too late: a spare wake-up, never a lost one.
 */
static void timer_armed_kick(struct worker *w, uint64_t deadline)
{
	struct runtime *rt = jf_rt;
	struct worker *later = NULL;

	if (!rt || rt->nworkers == 1)
		return;
	jf_smp_mb();
	if (atomic_load_explicit(&rt->nr_parked, memory_order_relaxed) == 0)
		return;
	for (int i = 0; i < rt->nworkers; i++) {
		struct worker *k = &rt->workers[i];
		if (k == w || __atomic_load_n(&k->idle.park_state, __ATOMIC_SEQ_CST) == WK_RUNNING)
			continue;
		uint64_t until = __atomic_load_n(&k->idle.park_until, __ATOMIC_RELAXED);
		if (until != 0 && until <= deadline)
			return; /* it wakes in time and fires every worker's due timers */
		if (!later)
			later = k;
	}
	if (later)
		jf_worker_kick(jf_this_worker(), later);
}

void jf_timer_arm(struct worker *w, struct jf_timer *t, uint64_t deadline,
		  void (*fn)(struct jf_timer *))
{
	struct timer_heap *h = &w->timers;
	uint64_t old_min;

	t->deadline = deadline;
	t->fn = fn;
	t->owner = w;
	jf_spin_lock(&h->lock);
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 64;
		struct jf_timer **a = realloc(h->a, cap * sizeof(*a));
		if (!a) {
			jf_spin_unlock(&h->lock);
			jf_die("out of memory growing the timer heap of worker %d", w->id);
		}
		h->a = a;
		h->cap = cap;
	}
	__atomic_store_n(&t->state, TIMER_PENDING, __ATOMIC_RELAXED);
	h->a[h->n] = t;
	t->heap_idx = (int32_t)h->n;
	h->n++;
	old_min = h->min_deadline;
	sift_up(h, h->n - 1);
	publish_min(h);
	jf_spin_unlock(&h->lock);
	if (deadline < old_min)
		timer_armed_kick(w, deadline);
}

bool jf_timer_cancel(struct jf_timer *t)
{
	struct timer_heap *h = &t->owner->timers;

	jf_spin_lock(&h->lock);
	if (__atomic_load_n(&t->state, __ATOMIC_RELAXED) == TIMER_PENDING) {
		heap_remove(h, (uint32_t)t->heap_idx);
		publish_min(h);
		__atomic_store_n(&t->state, TIMER_CANCELLED, __ATOMIC_RELAXED);
		jf_spin_unlock(&h->lock);
		return true;
	}
	jf_spin_unlock(&h->lock);
	while (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == TIMER_FIRING)
		jf_cpu_relax();
	return false;
}

unsigned jf_timers_run(struct worker *owner, uint64_t now)
{
	struct timer_heap *h = &owner->timers;
	unsigned fired = 0;

	for (;;) {
		struct jf_timer *t;

		jf_spin_lock(&h->lock);
		if (h->n == 0 || h->a[0]->deadline > now) {
			jf_spin_unlock(&h->lock);
			break;
		}
		t = h->a[0];
		heap_remove(h, 0);
		publish_min(h);
		__atomic_store_n(&t->state, TIMER_FIRING, __ATOMIC_RELAXED);
		jf_spin_unlock(&h->lock);

		t->fn(t);
		__atomic_store_n(&t->state, TIMER_DONE, __ATOMIC_RELEASE);
		fired++;
	}
	return fired;
}

/* --- blocking with a deadline, or until cancelled ------------------------------------------- */

/*
 * struct jf_cwait - one blocked uthread's wait (jf_block_wait): on its stack, found by a
 * canceller through jf_thread.cw (under cw_lock). The timer and the canceller may both try to
 * end the wait: @claimed lets one of them call @on_timeout, exactly once. The blocked uthread
 * clears cw after it woke and, if a cancellation was requested, takes cw_lock once, so a
 * canceller that found it finishes with it first.
 */
struct jf_cwait {
	struct jf_timer timer; /* first: timeout_fire() converts back */
	struct jf_thread *t;
	bool (*on_timeout)(void *arg);
	void *arg;
	uint64_t deadline;
	uint32_t claimed;
	bool armed;
	bool cancel_first; /* a cancellation was pending when it blocked: the timer ends it at once */
	int result;        /* 0, -ETIMEDOUT, -ECANCELED */
};

/* End @cw's wait with @result unless someone did: take it off its queue, wake it. */
static void cwait_end(struct jf_cwait *cw, int result)
{
	if (__atomic_exchange_n(&cw->claimed, 1, __ATOMIC_ACQ_REL))
		return;
	if (cw->on_timeout(cw->arg)) {
		cw->result = result;
		jf_sched_wake(cw->t);
	}
}

static void timeout_fire(struct jf_timer *tm)
{
	struct jf_cwait *cw = (struct jf_cwait *)(void *)tm;
	cwait_end(cw, cw->cancel_first ? -ECANCELED : -ETIMEDOUT);
}

/*
 * Run once the policy knows the uthread blocked (jf_sched_block_then), with the queue's lock
 * still held: the timer may fire at once on an idle worker, and its wake-up must not race with
 * the policy's blocked(). A cancellation already pending cannot take the uthread off its queue
 * here (that needs the lock held now): a timer due at once does it, once the lock is free.
 */
static void arm_wait(void *arg)
{
	struct jf_cwait *cw = arg;
	uint64_t deadline = cw->deadline;

	__atomic_store_n(&cw->t->cw, cw, __ATOMIC_SEQ_CST); /* pairs with jf_cancel_wake() */
	if (jf_cancel_due(cw->t)) {
		cw->cancel_first = true;
		deadline = 0;
	}
	if (deadline != UINT64_MAX) {
		cw->armed = true;
		jf_timer_arm(cw->t->worker, &cw->timer, deadline, timeout_fire);
	}
}

int jf_block_wait(uint32_t *unlock, uint64_t deadline_ns, bool (*on_timeout)(void *arg), void *arg)
{
	struct jf_thread *cur = jf_current();
	struct jf_cwait cw = {
		.t = cur,
		.on_timeout = on_timeout,
		.arg = arg,
		.deadline = deadline_ns,
	};

	jf_sched_block_then(unlock, arm_wait, &cw);
	if (cw.armed)
		jf_timer_cancel(&cw.timer); /* also waits for a callback still finishing */
	/*
	 * Unpublish @cw, then look for a canceller (the same Dekker pairing as arm_wait()'s: it
	 * stores cancel_req before it looks at cw). None: nobody can reach @cw any more, and this
	 * wait (every sleep, condition or socket wait) costs no lock. One: it may be using @cw
	 * under cw_lock; taking the lock waits for it to finish.
	 */
	__atomic_store_n(&cur->cw, NULL, __ATOMIC_SEQ_CST);
	if (JF_UNLIKELY(__atomic_load_n(&cur->cancel_req, __ATOMIC_SEQ_CST))) {
		jf_spin_lock(&cur->cw_lock);
		jf_spin_unlock(&cur->cw_lock);
	}
	return cw.result;
}

void jf_cancel_wake(struct jf_thread *t)
{
	struct jf_cwait *cw;

	jf_smp_mb(); /* the request before the look at t->cw: pairs with arm_wait() */
	jf_spin_lock(&t->cw_lock);
	cw = __atomic_load_n(&t->cw, __ATOMIC_ACQUIRE);
	if (cw && __atomic_load_n(&t->cancel_mode, __ATOMIC_RELAXED) != JF_CANCEL_DISABLE)
		cwait_end(cw, -ECANCELED);
	jf_spin_unlock(&t->cw_lock);
}

static bool sleep_over(void *arg)
{
	(void)arg;
	return true;
}

static int jf_sleep_until_in_runtime(uint64_t deadline_ns)
{
	struct jf_thread *cur = jf_current();

	if (!cur)
		return -EPERM;
	if (jf_cancel_due(cur))
		return -ECANCELED; /* before the clock: a sleep already over is cancelled too */
	if (jf_now_ns() >= deadline_ns)
		return 0;
	jf_wait_note(cur, "sleep", NULL);
	return jf_block_wait(NULL, deadline_ns, sleep_over, NULL) == -ECANCELED ? -ECANCELED : 0;
}

int jf_sleep_ns(uint64_t ns)
{
	uint64_t now = jf_now_ns();
	uint64_t deadline = ns > UINT64_MAX - now ? UINT64_MAX - 1 : now + ns;
	return jf_sleep_until(deadline);
}

int jf_sleep_until(uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(jf_sleep_until_in_runtime(deadline_ns));
}
