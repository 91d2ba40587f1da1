/*
 * pwq.c - per-worker FIFO run queues shared by the fifo and ws policies (see pwq.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pwq.h"

int pwq_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	struct pwq *s = calloc(1, sizeof(*s));
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
		s->w[i].rng = (params->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1))) | 1;
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
