/*
 * fifo.c - "fifo": per-worker FIFO queues, run to completion, no stealing (d-FCFS).
 *
 * The decentralized first-come-first-served baseline of the Shinjuku paper (§2): each worker
 * serves its own queue in arrival order and never takes work from another, so a long task delays
 * everything queued behind it on that worker even while other workers idle.
 * Placement: a new task goes to its attr.worker if set, else to the spawning worker; a woken task
 * returns to the worker it last ran on (requests keep their core); a yielding task goes to the
 * tail of its own worker's queue. A pinned task (jf_task_pin()) always goes to its worker.
 * Parameters: none.
 *
 * Data structure: since nobody steals, a worker's queue has one consumer, the worker itself.
 * Its own enqueues (spawn, yield, local wakeups) go to an owner-private list with no atomic
 * instruction at all; enqueues from other workers go to a lock-free inbox (a Treiber stack) that
 * the owner takes whole with one exchange, reverses and appends when it next picks. The
 * runtime only calls enqueue(..., worker, ...) for worker == the caller's own worker, and
 * has_work/pick_next for the caller's own worker, which is what makes the private list safe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "taskq.h"
#include "registry.h"

struct fifo_worker {
	struct jf_task *head, *tail; /* private: owner only */
	uint32_t count;              /* written by the owner only; has_work reads it anywhere */
	struct jf_task *inbox;       /* pushed by other workers, LIFO; owner takes all */
} __attribute__((aligned(JF_CACHELINE)));

struct fifo {
	int nworkers;
	struct fifo_worker *w;
};

static struct fifo *fifo_of(struct jf_policy *p)
{
	return (struct fifo *)p->priv;
}

static int fifo_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	struct fifo *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->nworkers = params->nworkers;
	s->w = aligned_alloc(JF_CACHELINE, sizeof(*s->w) * (size_t)params->nworkers);
	if (!s->w) {
		free(s);
		return -ENOMEM;
	}
	memset(s->w, 0, sizeof(*s->w) * (size_t)params->nworkers);
	p->priv = s;
	return 0;
}

static void fifo_destroy(struct jf_policy *p)
{
	struct fifo *s = fifo_of(p);
	free(s->w);
	free(s);
	p->priv = NULL;
}

static void private_push(struct fifo_worker *fw, struct jf_task *t)
{
	taskq_link(t)->next = NULL;
	if (fw->tail)
		taskq_link(fw->tail)->next = t;
	else
		fw->head = t;
	fw->tail = t;
	__atomic_store_n(&fw->count, fw->count + 1, __ATOMIC_RELAXED);
}

static void inbox_push(struct fifo_worker *fw, struct jf_task *t)
{
	struct jf_task *old = __atomic_load_n(&fw->inbox, __ATOMIC_RELAXED);
	do {
		taskq_link(t)->next = old;
	} while (!__atomic_compare_exchange_n(&fw->inbox, &old, t, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

/* Owner: move everything other workers pushed to the private list, oldest first. */
static void inbox_drain(struct fifo_worker *fw)
{
	struct jf_task *lifo, *fifo = NULL;

	if (__atomic_load_n(&fw->inbox, __ATOMIC_RELAXED) == NULL)
		return;
	lifo = __atomic_exchange_n(&fw->inbox, NULL, __ATOMIC_ACQUIRE);
	while (lifo) {
		struct jf_task *next = taskq_link(lifo)->next;
		taskq_link(lifo)->next = fifo;
		fifo = lifo;
		lifo = next;
	}
	while (fifo) {
		struct jf_task *next = taskq_link(fifo)->next;
		private_push(fw, fifo);
		fifo = next;
	}
}

static int fifo_target(struct fifo *s, int worker, const struct jf_task *t,
		       enum jf_enqueue_reason reason)
{
	int pin = jf_task_pin(t);

	if (JF_UNLIKELY(pin >= 0))
		return pin;
	if (t->attr.worker >= 0 && t->attr.worker < s->nworkers)
		return t->attr.worker;
	if (reason == JF_ENQ_WOKEN && t->last_worker >= 0)
		return t->last_worker;
	return worker;
}

static void place(struct fifo *s, int worker, int target, struct jf_task *t)
{
	if (target == worker)
		private_push(&s->w[worker], t);
	else
		inbox_push(&s->w[target], t);
}

static int fifo_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
			enum jf_enqueue_reason reason, uint64_t now)
{
	struct fifo *s = fifo_of(p);
	int target = fifo_target(s, worker, t, reason);

	(void)now;
	place(s, worker, target, t);
	return target;
}

static struct jf_task *fifo_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct fifo_worker *fw = &fifo_of(p)->w[worker];
	struct jf_task *t;

	(void)now;
	inbox_drain(fw);
	t = fw->head;
	if (t) {
		fw->head = taskq_link(t)->next;
		if (!fw->head)
			fw->tail = NULL;
		__atomic_store_n(&fw->count, fw->count - 1, __ATOMIC_RELAXED);
	}
	return t;
}

static struct jf_task *fifo_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
					 enum jf_enqueue_reason reason, uint64_t now, int *target)
{
	struct fifo *s = fifo_of(p);

	*target = fifo_target(s, worker, t, reason);
	place(s, worker, *target, t);
	return fifo_pick_next(p, worker, now);
}

static bool fifo_has_work(struct jf_policy *p, int worker)
{
	struct fifo_worker *fw = &fifo_of(p)->w[worker];
	return __atomic_load_n(&fw->count, __ATOMIC_RELAXED) != 0 ||
	       __atomic_load_n(&fw->inbox, __ATOMIC_RELAXED) != NULL;
}

const struct jf_policy_ops jf_policy_fifo = {
	.name = "fifo",
	.summary = "per-worker FIFO, run to completion, no stealing (d-FCFS)",
	.flags = 0,
	.task_data_size = sizeof(struct taskq_link),
	.init = fifo_init,
	.destroy = fifo_destroy,
	.enqueue = fifo_enqueue,
	.pick_next = fifo_pick_next,
	.enqueue_pick = fifo_enqueue_pick,
	.has_work = fifo_has_work,
};
