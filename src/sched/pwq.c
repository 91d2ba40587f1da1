/*
 * pwq.c - per-worker FIFO run queues shared by the ws and rr policies (see pwq.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pwq.h"

int pwq_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	return pwq_init_sized(p, params, sizeof(struct pwq));
}

int pwq_init_sized(struct jf_policy *p, const struct jf_policy_params *params, size_t priv_size)
{
	struct pwq *s = calloc(1, priv_size);
	if (!s)
		return -ENOMEM;
	s->nworkers = params->nworkers;
	s->w = aligned_alloc(JF_CACHELINE, sizeof(struct pwq_worker) * (size_t)params->nworkers);
	if (!s->w) {
		free(s);
		return -ENOMEM;
	}
	memset(s->w, 0, sizeof(struct pwq_worker) * (size_t)params->nworkers);
	for (int i = 0; i < s->nworkers; i++)
		s->w[i].rng = sched_rng_seed(params->seed, i);
	p->priv = s;
	return 0;
}

void pwq_destroy(struct jf_policy *p)
{
	struct pwq *s = pwq_of(p);
	if (!s)
		return;
	free(s->w);
	free(s);
	p->priv = NULL;
}

struct jf_task *pwq_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	(void)now;
	return taskq_pop_head(&pwq_of(p)->w[worker].q);
}

bool pwq_has_local_work(struct jf_policy *p, int worker)
{
	return taskq_count(&pwq_of(p)->w[worker].q) != 0;
}

bool pwq_has_work(struct jf_policy *p, int worker)
{
	struct pwq *s = pwq_of(p);

	if (taskq_count(&s->w[worker].q) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++) /* no modulo: an idiv costs more than this loop */
		if (taskq_stealable(&s->w[i].q) != 0) /* pinned tasks are their worker's only */
			return true;
	return false;
}

int pwq_target(const struct pwq *s, int worker, const struct jf_task *t)
{
	int target = jf_task_pin(t);

	if (JF_LIKELY(target < 0))
		target = pwq_hinted_worker(s, t);
	return target >= 0 ? target : worker;
}

int pwq_enqueue(struct jf_policy *p, int worker, struct jf_task *t, enum jf_enqueue_reason reason,
		uint64_t now)
{
	struct pwq *s = pwq_of(p);
	int target = pwq_target(s, worker, t);

	(void)reason, (void)now;
	taskq_push_tail(&s->w[target].q, t);
	return target;
}

struct jf_task *pwq_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
				 enum jf_enqueue_reason reason, uint64_t now, int *target)
{
	struct pwq *s = pwq_of(p);

	(void)reason, (void)now;
	*target = pwq_target(s, worker, t);
	return pwq_push_pop(s, worker, *target, t);
}

struct jf_task *pwq_push_pop(struct pwq *s, int worker, int target, struct jf_task *t)
{
	struct taskq *q = &s->w[worker].q;
	struct jf_task *next;

	if (target != worker) {
		taskq_push_tail(&s->w[target].q, t);
		return taskq_pop_head(q);
	}
	jf_spin_lock(&q->lock);
	taskq_push_tail_locked(q, t);
	next = taskq_pop_head_locked(q);
	jf_spin_unlock(&q->lock);
	return next;
}
