/*
 * fifo.c - "fifo": per-worker FIFO queues, run to completion, no stealing (d-FCFS).
 *
 * The decentralized first-come-first-served baseline of the Shinjuku paper (§2): each worker
 * serves its own queue in arrival order and never takes work from another, so a long task delays
 * everything queued behind it on that worker even while other workers idle.
 * Placement: a new task goes to its attr.worker if set, else to the spawning worker; a woken task
 * returns to the worker it last ran on (requests keep their core); a yielding task goes to the
 * tail of its own worker's queue.
 * Parameters: none.
 */
#include "pwq.h"

static int fifo_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
			enum jf_enqueue_reason reason, uint64_t now)
{
	struct pwq *s = pwq_of(p);
	int target = pwq_hinted_worker(s, t);

	(void)now;
	if (target < 0) {
		if (reason == JF_ENQ_WOKEN && t->last_worker >= 0)
			target = t->last_worker;
		else
			target = worker;
	}
	taskq_push_tail(&s->w[target].q, t);
	return target;
}

const struct jf_policy_ops jf_policy_fifo = {
	.name = "fifo",
	.summary = "per-worker FIFO, run to completion, no stealing (d-FCFS)",
	.flags = 0,
	.task_data_size = sizeof(struct taskq_link),
	.init = pwq_init,
	.destroy = pwq_destroy,
	.enqueue = fifo_enqueue,
	.pick_next = pwq_pick_next,
	.has_work = pwq_has_local_work,
};
