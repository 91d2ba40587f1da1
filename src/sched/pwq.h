/*
 * pwq.h - per-worker FIFO run queues, the state shared by the per-worker policies (ws, rr).
 *
 * Owns: one struct taskq per worker and the ops that do not differ between those policies
 * (init, destroy, pick_next, a local has_work). Each policy decides placement and stealing.
 */
#ifndef JIFFY_PWQ_H
#define JIFFY_PWQ_H

#include <jiffy/policy.h>

#include "taskq.h"

struct pwq_worker {
	struct taskq q;
	uint64_t rng; /* written only by this worker (victim choice) */
} __attribute__((aligned(JF_CACHELINE)));

struct pwq {
	int nworkers;
	struct pwq_worker *w; /* nworkers entries */
};

static inline struct pwq *pwq_of(struct jf_policy *p)
{
	return (struct pwq *)p->priv;
}

int pwq_init(struct jf_policy *p, const struct jf_policy_params *params);
/* The same for a policy whose state (@priv_size bytes, zeroed) begins with a struct pwq. */
int pwq_init_sized(struct jf_policy *p, const struct jf_policy_params *params, size_t priv_size);
void pwq_destroy(struct jf_policy *p);
struct jf_task *pwq_pick_next(struct jf_policy *p, int worker, uint64_t now);
bool pwq_has_local_work(struct jf_policy *p, int worker);
/* Work for @worker: its own queue, or any queue it could steal from. */
bool pwq_has_work(struct jf_policy *p, int worker);
/* Push @t on @target's queue and pop @worker's head; one lock round trip when they are equal. */
struct jf_task *pwq_push_pop(struct pwq *s, int worker, int target, struct jf_task *t);

/* The worker a task names in its attributes, or -1. */
static inline int pwq_hinted_worker(const struct pwq *s, const struct jf_task *t)
{
	return t->attr.worker >= 0 && t->attr.worker < s->nworkers ? t->attr.worker : -1;
}

/* Where a task made runnable by @worker goes: its pinned worker, else its attr.worker if set,
 * else @worker. */
int pwq_target(const struct pwq *s, int worker, const struct jf_task *t);
/* enqueue / enqueue_pick ops: to the tail of pwq_target()'s queue (ws, rr). */
int pwq_enqueue(struct jf_policy *p, int worker, struct jf_task *t, enum jf_enqueue_reason reason,
		uint64_t now);
struct jf_task *pwq_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
				 enum jf_enqueue_reason reason, uint64_t now, int *target);

#endif /* JIFFY_PWQ_H */
