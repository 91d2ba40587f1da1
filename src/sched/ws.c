/*
 * ws.c - "ws": per-worker FIFO queues with work stealing (Caladan/ZygOS-style c-FCFS
 * approximation).
 *
 * Each worker serves its own queue in FIFO order; a worker with nothing to run steals half of the
 * queue of another worker (victims tried from a pseudo-random start), so no worker idles while
 * work waits anywhere. New and woken tasks go to the caller's worker (cache-warm, no cross-core
 * traffic) unless attr.worker names one; the runtime wakes a parked worker to steal them. A
 * pinned task (jf_task_pin()) is queued on its worker only, and steals leave it there.
 * Parameters: none (the victim order is seeded from jf_policy_params.seed).
 */
#include "pwq.h"
#include "registry.h"

/*
 * Steal up to half of a victim's queue; return the first stolen task to run now and put the rest
 * in our own queue. The victim's lock is taken only when its queue looks non-empty and only with
 * trylock, so spinning idle workers never make a busy worker wait, and it is released before our
 * own lock is taken (two workers stealing from each other cannot deadlock).
 */
static struct jf_task *ws_balance(struct jf_policy *p, int worker, uint64_t now)
{
	struct pwq *s = pwq_of(p);

	(void)now;
	return taskq_steal_any(&s->w[0].q, sizeof(s->w[0]), s->nworkers, worker, &s->w[worker].rng,
			       &s->w[worker].q);
}

/*
 * Preempt @cur (which has used its quantum) only if work waits in this worker's own queue:
 * other workers' queues are theirs to serve (their own quanta) and idle workers steal from
 * them; preempting here would only pick @cur again.
 */
static bool ws_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	(void)cur, (void)now;
	return pwq_has_local_work(p, worker);
}

const struct jf_policy_ops jf_policy_ws = {
	.name = "ws",
	.summary = "per-worker FIFO queues with work stealing (c-FCFS approximation)",
	.flags = 0,
	.task_data_size = sizeof(struct taskq_link),
	.init = pwq_init,
	.destroy = pwq_destroy,
	.enqueue = pwq_enqueue,
	.pick_next = pwq_pick_next,
	.enqueue_pick = pwq_enqueue_pick,
	.balance = ws_balance,
	.has_work = pwq_has_work,
	.tick = ws_tick,
};
