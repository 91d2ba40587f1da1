/*
 * central.c - "central": one centralized run queue (SQ) or one per request type (MQ), served by
 * whichever worker becomes free, with preemption after a quantum whenever work waits.
 *
 * Follows Shinjuku (Kaffes et al., NSDI '19) §3.4, the c-PRE policies:
 *   SQ: every runnable task waits in one FCFS queue; a free worker takes its head.
 *   MQ: one FCFS queue per request type (attr.type); a free worker takes the head of the
 *       non-empty queue whose head has the largest queueing-time / SLO ratio, BVT-style: short
 *       SLOs win at first, but a long-SLO request that has waited long enough wins in its turn.
 *   Both: a task that has used its quantum is preempted if anything is queued (tick), and goes
 *   back to its queue, at the tail (approximates processor sharing; Shinjuku's rule of thumb for
 *   heavy-tailed or multi-modal work) or at the head (approximates c-FCFS; light-tailed work).
 *   With head placement tick skips the preemptions that would pick the same task again (SQ:
 *   all of them; MQ: those where no other type's queue holds work). New, woken and yielding
 *   tasks go to the tail.
 *
 * Parameters (central_params[] below), and the runtime's quantum:
 *   queues         sq (default) or mq.                 JIFFY_CENTRAL_QUEUES or JIFFY_CENTRAL=sq|mq
 *   preempted      preempted tasks to the tail (default) or the head.
 *                                                                 JIFFY_CENTRAL_PREEMPTED=tail|head
 *   slo_us         MQ: SLO of a task whose attr.slo_ns is 0 (default 50 us; at least 1 us: a
 *                  ratio needs a positive SLO).                            JIFFY_CENTRAL_SLO_US
 *   quantum_ns     the runtime's quantum: when tick is asked.              JIFFY_QUANTUM_US
 * Request types: CENTRAL_NR_TYPES (64) queues; a type outside 0..63 maps to queue
 * (uint32_t)type % 64, so types 64 and 0 share a queue and type -1 uses queue 63. The SLO is the
 * task's own (attr.slo_ns, else slo_us), read when it is enqueued: Shinjuku's per-queue SLO
 * is the special case where all tasks of a type carry the same one. The queueing time of a head is
 * now - runnable_ns, i.e. since it last became runnable (a preempted task starts again from 0,
 * which is what lets the other types in under head placement). Ties go to the lower queue index.
 * attr.worker is ignored: any free worker serves any task.
 * Pinned tasks (jf_task_pin()) are the exception: the central queues are popped by every worker,
 * so a pinned task waits in its worker's own FIFO (@pinq, its own lock, always at the tail:
 * the preempted=head placement is for the central queues) and enqueue returns that worker. A
 * worker that picks compares the head of its pinned queue with the central choice by the same
 * rule (SQ: whichever became runnable first; MQ: the larger wait / SLO) and takes the winner.
 *
 * Design note: Jiffy runs no dedicated dispatcher core (on small machines that would cost a
 * worker). The dispatcher's decision is made, under the central lock, by the worker that becomes
 * free, at the moment it becomes free (pick_next), which is when Shinjuku's dispatcher would
 * assign it a request. Workers have no queues of their own: every task is placed only by that
 * decision. Hence no dispatch op, and no JF_POLICY_CENTRAL flag, whose documented meaning is
 * "placed by a dispatch op" (a runtime that ran a dispatcher for flagged policies would call a
 * NULL op here); no balance op either: there is nothing to steal, an idle worker already takes
 * from the central queue in pick_next. enqueue always returns -1 (no particular worker), so the
 * runtime wakes a parked worker and tells every busy worker's mechanism that work waits.
 *
 * Invariants: every queue, the non-empty mask and @queued change only under @lock; @queued (the
 * number of tasks in all queues) and the mask are also read without it, by has_work and tick,
 * which may run in a signal handler and so only ever load them. Nothing is allocated after init.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "taskq.h"
#include "registry.h"

#define CENTRAL_NR_TYPES 64

/* Per-task data (jf_task.policy_data): the queue link first (taskq.h), then the SLO in force. */
struct central_task {
	struct taskq_link link;
	uint64_t slo_ns; /* set at enqueue, from attr.slo_ns or the default */
};
_Static_assert(sizeof(struct central_task) <= JF_TASK_POLICY_DATA, "policy_data too small");
_Static_assert(offsetof(struct central_task, link) == 0, "taskq link must come first");
_Static_assert(CENTRAL_NR_TYPES <= 64, "the non-empty mask is one uint64_t");

struct central {
	/* The central lock and what is read beside it, on one line. */
	uint32_t lock;
	uint32_t queued;   /* tasks in all queues; loaded lock-free by has_work/tick */
	uint64_t nonempty; /* bit i set iff q[i] holds a task; loaded lock-free by tick */
	bool mq;
	bool preempted_to_head;
	uint64_t default_slo_ns;
	/* SQ uses q[0] only. Each taskq's own lock is unused: @lock covers them all. */
	struct taskq q[CENTRAL_NR_TYPES];
	/* Per worker, the tasks pinned to it (each with its own lock; only that worker pops). */
	int nworkers;
	struct taskq *pinq;
};

static struct central *central_of(struct jf_policy *p)
{
	return (struct central *)p->priv;
}

static struct central_task *ctask(struct jf_task *t)
{
	return (struct central_task *)(void *)t->policy_data;
}

enum { CENTRAL_QUEUES, CENTRAL_PREEMPTED, CENTRAL_SLO, CENTRAL_NPARAMS };
enum { CENTRAL_SQ, CENTRAL_MQ };        /* CENTRAL_QUEUES' choices */
enum { CENTRAL_TAIL, CENTRAL_HEAD };    /* CENTRAL_PREEMPTED's */

static const struct jf_policy_param central_params[CENTRAL_NPARAMS] = {
	[CENTRAL_QUEUES] = {.name = "queues", .type = JF_PARAM_ENUM, .def = CENTRAL_SQ,
			    .choices = (const char *const[]){"sq", "mq", NULL},
			    .env_alias = "JIFFY_CENTRAL",
			    .doc = "sq: one queue; mq: one per request type (attr.type)"},
	[CENTRAL_PREEMPTED] = {.name = "preempted", .type = JF_PARAM_ENUM, .def = CENTRAL_TAIL,
			       .choices = (const char *const[]){"tail", "head", NULL},
			       .doc = "where a preempted task goes back in its queue (tail: "
				      "Shinjuku's default)"},
	[CENTRAL_SLO] = {.name = "slo_us", .type = JF_PARAM_US, .min = 1000,
			 .max = 1000000000000ull, .def = 50000,
			 .doc = "MQ: the SLO of a task whose attr.slo_ns is 0"},
};

static int central_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	struct central *c;

	if (params->value[CENTRAL_SLO] == 0) /* a zeroed struct, not a checked one */
		return -EINVAL;
	c = aligned_alloc(JF_CACHELINE, sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->mq = params->value[CENTRAL_QUEUES] == CENTRAL_MQ;
	c->preempted_to_head = params->value[CENTRAL_PREEMPTED] == CENTRAL_HEAD;
	c->default_slo_ns = params->value[CENTRAL_SLO];
	c->nworkers = params->nworkers;
	c->pinq = aligned_alloc(JF_CACHELINE, sizeof(*c->pinq) * (size_t)params->nworkers);
	if (!c->pinq) {
		free(c);
		return -ENOMEM;
	}
	memset(c->pinq, 0, sizeof(*c->pinq) * (size_t)params->nworkers);
	p->priv = c;
	return 0;
}

static void central_destroy(struct jf_policy *p)
{
	struct central *c = central_of(p);

	if (c)
		free(c->pinq);
	free(p->priv);
	p->priv = NULL;
}

static unsigned queue_index(const struct central *c, const struct jf_task *t)
{
	return c->mq ? (uint32_t)t->attr.type % CENTRAL_NR_TYPES : 0;
}

static uint64_t slo_of(const struct jf_task *t)
{
	return ((const struct central_task *)(const void *)t->policy_data)->slo_ns;
}

static void set_slo(const struct central *c, struct jf_task *t)
{
	ctask(t)->slo_ns = t->attr.slo_ns ? t->attr.slo_ns : c->default_slo_ns;
}

/* Caller holds c->lock. */
static void push_locked(struct central *c, struct jf_task *t, enum jf_enqueue_reason reason)
{
	unsigned i = queue_index(c, t);

	set_slo(c, t);
	if (reason == JF_ENQ_PREEMPTED && c->preempted_to_head)
		taskq_push_head_locked(&c->q[i], t);
	else
		taskq_push_tail_locked(&c->q[i], t);
	__atomic_store_n(&c->nonempty, c->nonempty | 1ull << i, __ATOMIC_RELAXED);
	__atomic_store_n(&c->queued, c->queued + 1, __ATOMIC_RELAXED);
}

/*
 * Does head @a, which has waited @wait_a, have a larger wait / SLO ratio than head @b? Compared
 * as wait_a * slo_b > wait_b * slo_a in 128 bits: no division, no overflow, no rounding.
 */
static bool ratio_greater(uint64_t wait_a, uint64_t slo_a, uint64_t wait_b, uint64_t slo_b)
{
	return (unsigned __int128)wait_a * slo_b > (unsigned __int128)wait_b * slo_a;
}

static uint64_t waited(const struct jf_task *t, uint64_t now)
{
	/* Another worker may have stamped runnable_ns after our caller read @now. */
	return now > t->runnable_ns ? now - t->runnable_ns : 0;
}

/* Caller holds c->lock: the queue a free worker serves now (Shinjuku's selection), or -1. */
static int select_queue_locked(const struct central *c, uint64_t now)
{
	uint64_t mask = c->nonempty, best_wait = 0, best_slo = 1;
	int best = -1;

	if (!c->mq)
		return c->q[0].head ? 0 : -1;
	while (mask) {
		int i = __builtin_ctzll(mask);
		struct jf_task *h = c->q[i].head;
		uint64_t w = waited(h, now), slo = ctask(h)->slo_ns;

		mask &= mask - 1;
		if (best < 0 || ratio_greater(w, slo, best_wait, best_slo)) {
			best = i;
			best_wait = w;
			best_slo = slo;
		}
	}
	return best;
}

/*
 * Caller holds c->lock: pop the head a free worker serves now, or NULL; with @pinned (the head of
 * that worker's pinned queue) NULL too when @pinned goes first: it became runnable earlier (SQ)
 * or has the larger wait / SLO (MQ; ties to the central queue).
 */
static struct jf_task *pop_locked(struct central *c, uint64_t now, const struct jf_task *pinned)
{
	int i = select_queue_locked(c, now);
	struct jf_task *t;

	if (i < 0)
		return NULL;
	if (JF_UNLIKELY(pinned != NULL)) {
		const struct jf_task *h = c->q[i].head;
		bool pinned_first =
			c->mq ? ratio_greater(waited(pinned, now), slo_of(pinned), waited(h, now), slo_of(h))
			      : (int64_t)(pinned->runnable_ns - h->runnable_ns) < 0;
		if (pinned_first)
			return NULL;
	}
	t = taskq_pop_head_locked(&c->q[i]);
	if (!c->q[i].head)
		__atomic_store_n(&c->nonempty, c->nonempty & ~(1ull << i), __ATOMIC_RELAXED);
	__atomic_store_n(&c->queued, c->queued - 1, __ATOMIC_RELAXED);
	return t;
}

static int central_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
			   enum jf_enqueue_reason reason, uint64_t now)
{
	struct central *c = central_of(p);
	int pin = jf_task_pin(t);

	(void)worker, (void)now;
	if (JF_UNLIKELY(pin >= 0)) { /* its worker's own queue: no other worker pops it */
		set_slo(c, t);
		taskq_push_tail(&c->pinq[pin], t);
		return pin;
	}
	jf_spin_lock(&c->lock);
	push_locked(c, t, reason);
	jf_spin_unlock(&c->lock);
	return -1;
}

static struct jf_task *central_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct central *c = central_of(p);
	struct taskq *pq = &c->pinq[worker];
	struct jf_task *t, *pinned = NULL;

	if (JF_UNLIKELY(taskq_count(pq) != 0)) {
		/* Only this worker pops @pq: its head stays until we take it. */
		jf_spin_lock(&pq->lock);
		pinned = pq->head;
		jf_spin_unlock(&pq->lock);
	}
	if (__atomic_load_n(&c->queued, __ATOMIC_RELAXED) == 0)
		return pinned ? taskq_pop_head(pq) : NULL;
	jf_spin_lock(&c->lock);
	t = pop_locked(c, now, pinned);
	jf_spin_unlock(&c->lock);
	if (!t && pinned)
		t = taskq_pop_head(pq);
	return t;
}

/* The yield and preemption path: requeue @t and make the dispatch decision in one lock hold. */
static struct jf_task *central_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
					    enum jf_enqueue_reason reason, uint64_t now,
					    int *target)
{
	struct central *c = central_of(p);
	struct jf_task *next;

	if (JF_UNLIKELY(jf_task_pin(t) >= 0 || taskq_count(&c->pinq[worker]) != 0)) {
		*target = central_enqueue(p, worker, t, reason, now);
		return central_pick_next(p, worker, now);
	}
	*target = -1;
	jf_spin_lock(&c->lock);
	push_locked(c, t, reason);
	next = pop_locked(c, now, NULL);
	jf_spin_unlock(&c->lock);
	return next;
}

/* Any worker may take any centrally queued task: is anything queued there, or pinned here? */
static bool central_has_work(struct jf_policy *p, int worker)
{
	struct central *c = central_of(p);

	return __atomic_load_n(&c->queued, __ATOMIC_RELAXED) != 0 ||
	       taskq_count(&c->pinq[worker]) != 0;
}

/*
 * Shinjuku's rule: a task that has used its quantum is preempted if work is queued. Under head
 * placement that rule is narrowed to the cases where the preemption can change what runs:
 * pushed back to the head of its own queue with a queueing time of 0, @cur is picked again at
 * once unless another type's queue is non-empty (SQ: never), so the preemption would be a no-op
 * costing a switch. Worse, after such a re-pick the runtime (decide_and_preempt) re-arms the
 * mechanism for the run's already expired due time: under JIFFY_PREEMPT=timer the next signal
 * comes within microseconds and the requests nest until the uthread's stack overflows.
 */
static bool central_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct central *c = central_of(p);
	uint64_t others;

	(void)now;
	if (!c->preempted_to_head)
		return central_has_work(p, worker);
	if (taskq_count(&c->pinq[worker]) != 0) /* a pinned task waits: never re-picked at once */
		return true;
	if (!c->mq)
		return false;
	others = __atomic_load_n(&c->nonempty, __ATOMIC_RELAXED) & ~(1ull << queue_index(c, cur));
	return others != 0;
}

const struct jf_policy_ops jf_policy_central = {
	.name = "central",
	.summary = "Shinjuku c-PRE: one central queue (SQ) or per-type queues by wait/SLO (MQ)",
	.flags = JF_POLICY_NEEDS_TIME,
	.task_data_size = sizeof(struct central_task),
	.init = central_init,
	.destroy = central_destroy,
	.enqueue = central_enqueue,
	.pick_next = central_pick_next,
	.enqueue_pick = central_enqueue_pick,
	.has_work = central_has_work,
	.tick = central_tick,
	.params = central_params,
	.nparams = CENTRAL_NPARAMS,
};
