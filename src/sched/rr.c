/*
 * rr.c - "rr": per-worker round robin with a time slice (Skyloft §5.1, Linux SCHED_RR).
 *
 * Each worker serves its own FIFO queue; a task runs until it blocks, yields or has used its time
 * slice while another task waits in that worker's queue, and a yielded or preempted task goes to
 * the tail. A yield ends the slice: a task picked again starts a fresh one. New and woken tasks
 * go to attr.worker if set, else to the caller's worker (the spawner or waker). An idle worker
 * takes the oldest waiting task of another worker (victims tried from a pseudo-random start), so
 * no worker idles while a task waits anywhere.
 *
 * Parameters: rr_slice_ns, the time slice (default 50 us, Skyloft Table 5; JIFFY_RR_SLICE_US).
 *
 * Invariants: a worker's queue is protected by its own spinlock (taskq.h), never held together
 * with another; run_start_ns is written only by its worker (pick_next/balance) and read by that
 * worker's tick, which may be a signal handler, so tick and slice take no lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "taskq.h"

#define RR_DEFAULT_SLICE_NS 50000u

struct rr_worker {
	struct taskq q;
	uint64_t run_start_ns; /* when the task last handed to this worker was picked */
	uint64_t rng;          /* victim choice; this worker only */
} __attribute__((aligned(JF_CACHELINE)));

struct rr {
	int nworkers;
	uint64_t slice_ns;
	struct rr_worker *w;
};

static struct rr *rr_of(struct jf_policy *p)
{
	return (struct rr *)p->priv;
}

static int rr_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	struct rr *s = calloc(1, sizeof(*s));
	size_t size = sizeof(struct rr_worker) * (size_t)params->nworkers;

	if (!s)
		return -ENOMEM;
	s->nworkers = params->nworkers;
	s->slice_ns = params->tun.rr_slice_ns ? params->tun.rr_slice_ns : RR_DEFAULT_SLICE_NS;
	s->w = aligned_alloc(JF_CACHELINE, size);
	if (!s->w) {
		free(s);
		return -ENOMEM;
	}
	memset(s->w, 0, size);
	for (int i = 0; i < s->nworkers; i++)
		s->w[i].rng = (params->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1))) | 1;
	p->priv = s;
	return 0;
}

static void rr_destroy(struct jf_policy *p)
{
	struct rr *s = rr_of(p);

	if (!s)
		return;
	free(s->w);
	free(s);
	p->priv = NULL;
}

static int rr_target(const struct rr *s, int worker, const struct jf_task *t)
{
	return t->attr.worker >= 0 && t->attr.worker < s->nworkers ? t->attr.worker : worker;
}

static int rr_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
		      enum jf_enqueue_reason reason, uint64_t now)
{
	struct rr *s = rr_of(p);
	int target = rr_target(s, worker, t);

	(void)reason, (void)now;
	taskq_push_tail(&s->w[target].q, t);
	return target;
}

static struct jf_task *rr_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct rr_worker *me = &rr_of(p)->w[worker];
	struct jf_task *t = taskq_pop_head(&me->q);

	if (t)
		me->run_start_ns = now;
	return t;
}

static struct jf_task *rr_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
				       enum jf_enqueue_reason reason, uint64_t now, int *target)
{
	struct rr *s = rr_of(p);
	struct rr_worker *me = &s->w[worker];
	struct jf_task *next;

	*target = rr_target(s, worker, t);
	if (*target != worker) {
		rr_enqueue(p, worker, t, reason, now);
		return rr_pick_next(p, worker, now);
	}
	jf_spin_lock(&me->q.lock);
	taskq_push_tail_locked(&me->q, t);
	next = taskq_pop_head_locked(&me->q);
	jf_spin_unlock(&me->q.lock);
	me->run_start_ns = now;
	return next;
}

static uint64_t rr_next_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1Dull;
}

/*
 * Take the oldest waiting task of another worker. Victims are locked only with trylock and only
 * when they look non-empty, so an idle worker spinning here never makes a busy one wait.
 */
static struct jf_task *rr_balance(struct jf_policy *p, int worker, uint64_t now)
{
	struct rr *s = rr_of(p);
	struct rr_worker *me = &s->w[worker];
	int v;

	if (s->nworkers < 2)
		return NULL;
	v = (int)(rr_next_rand(&me->rng) % (uint64_t)s->nworkers);
	for (int i = 0; i < s->nworkers; i++, v = v + 1 == s->nworkers ? 0 : v + 1) {
		struct taskq *vq = &s->w[v].q;
		struct jf_task *t;

		if (v == worker || taskq_count(vq) == 0 || !jf_spin_trylock(&vq->lock))
			continue;
		t = taskq_pop_head_locked(vq);
		jf_spin_unlock(&vq->lock);
		if (t) {
			me->run_start_ns = now;
			return t;
		}
	}
	return NULL;
}

/* Work for @worker: its own queue or any queue it could take a task from. */
static bool rr_has_work(struct jf_policy *p, int worker)
{
	struct rr *s = rr_of(p);

	if (taskq_count(&s->w[worker].q) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++)
		if (taskq_count(&s->w[i].q) != 0)
			return true;
	return false;
}

/* What is left of the slice of the task picked last on @worker (a full one once it is used). */
static uint64_t rr_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct rr *s = rr_of(p);
	uint64_t ran = now - s->w[worker].run_start_ns;

	(void)cur;
	return ran < s->slice_ns ? s->slice_ns - ran : s->slice_ns;
}

/*
 * Preempt once the slice is used and a task waits in this worker's own queue. Tasks queued
 * elsewhere belong to their own workers' turns (an idle worker takes them); preempting for them
 * would only pick @cur again.
 */
static bool rr_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct rr *s = rr_of(p);
	struct rr_worker *me = &s->w[worker];

	(void)cur;
	return taskq_count(&me->q) != 0 && now - me->run_start_ns >= s->slice_ns;
}

const struct jf_policy_ops jf_policy_rr = {
	.name = "rr",
	.summary = "per-worker round robin with a time slice (JIFFY_RR_SLICE_US), idle stealing",
	.flags = JF_POLICY_NEEDS_TIME,
	.task_data_size = sizeof(struct taskq_link),
	.init = rr_init,
	.destroy = rr_destroy,
	.enqueue = rr_enqueue,
	.pick_next = rr_pick_next,
	.enqueue_pick = rr_enqueue_pick,
	.balance = rr_balance,
	.has_work = rr_has_work,
	.slice = rr_slice,
	.tick = rr_tick,
};
