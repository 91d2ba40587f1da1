/*
 * cfs.c - "cfs": per-worker weighted fair queueing after Linux's Completely Fair Scheduler
 * (the algorithm published in Documentation/scheduler/sched-design-CFS; Skyloft §5.1).
 *
 * Each task has a virtual runtime: the CPU time it used, scaled by 1024 / weight (attr.weight,
 * 0 meaning 1024; weights above 2^20 count as 2^20). Each worker runs the queued task with the
 * smallest vruntime, for a slice of max(min_gran, latency * weight / total weight), where the
 * total is that of its queue plus the running task; when the slice is used and a task waits in
 * the worker's queue, the running task is preempted and queued again by its vruntime.
 *   - min_vruntime, per worker, follows the smallest vruntime there (running or queued) and never
 *     goes back. A new task starts at the min_vruntime of the worker that spawns it; a woken task
 *     keeps its vruntime, but no less than min_vruntime - latency / 2: sleeping earns a credit
 *     of at most half a period (Linux's sleeper fairness, GENTLE_FAIR_SLEEPERS).
 *   - A vruntime is measured against one worker's min_vruntime; a task that moves to another
 *     worker keeps its distance from min_vruntime (vruntime - min[from] + min[to]).
 *   - A woken (or new) task preempts the running one at once when its vruntime is smaller by
 *     more than wakeup_gran (not scaled by weight).
 *   - A yielding task goes behind every task queued on its worker (its vruntime is raised to the
 *     largest queued one, ties in queue order): Linux's old sched_compat_yield. It gives up any
 *     lead, so a loop of trylock + jf_yield() cannot starve a lock holder with a larger vruntime
 *     (with only a skip of one pick, such spinners took turns among themselves for seconds).
 * Placement: attr.worker if set, else the caller's worker; an idle worker takes the task with the
 * smallest vruntime of another worker (victims tried from a pseudo-random start). There is no
 * periodic load balancing: tasks spread only through placement and idle stealing. A pinned task
 * (jf_task_pin()) is queued on its worker only; a steal takes the smallest-vruntime unpinned task.
 *
 * Parameters (cfs_params[] below):
 *   latency_us     sched_latency, the period (default 50 us, Skyloft Table 5) JIFFY_CFS_LATENCY_US
 *   min_gran_us    min_granularity, the shortest slice (12.5 us)             JIFFY_CFS_MIN_GRAN_US
 *   wakeup_gran_us wakeup preemption margin (12.5 us)                     JIFFY_CFS_WAKEUP_GRAN_US
 *
 * Data structure: per worker, a treap of the queued tasks ordered by vruntime (vtree.h, linked
 * through jf_task.policy_data): insert, remove, first and last O(log n) expected, iterative, no
 * allocation.
 *
 * Invariants: everything in a struct cfs_rq is protected by its spinlock, and no two run-queue
 * locks are ever held together; nr_queued, load and min_vruntime are also read without it
 * (relaxed atomics: has_work, tick, slice, moving vruntimes). A running task's policy_data is
 * written only by its worker; other workers look at the cur_* copies in that worker's cfs_rq.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/policy.h>

#include "../common/spinlock.h"
#include "sched_util.h"
#include "vtree.h"
#include "registry.h"


/* Per task, in jf_task.policy_data: vt.key is its vruntime. */
struct cfs_node {
	struct vt_node vt; /* run-queue links, ordered by vruntime */
	uint64_t acct_ns;  /* CPU time is charged to vruntime up to here */
	uint32_t weight;   /* the weight it was queued or picked with */
	int32_t rq;        /* the worker whose min_vruntime its vruntime is measured against */
};
_Static_assert(sizeof(struct cfs_node) <= JF_TASK_POLICY_DATA, "cfs_node too large");

struct cfs_rq {
	uint32_t lock;
	uint32_t nr_queued;    /* atomic stores */
	uint32_t nr_pinned;    /* how many queued tasks are pinned here (atomic stores) */
	uint64_t load;         /* sum of the queued tasks' weights; atomic stores */
	uint64_t min_vruntime; /* atomic stores */
	struct jf_task *root;
	/* What pick_next/balance last handed this worker (NULL once it stopped): identity only. */
	struct jf_task *cur;
	uint64_t cur_vruntime; /* its vruntime when picked or last charged */
	uint64_t cur_start_ns; /* when it was picked */
	uint32_t cur_weight;
	struct jf_task *woken; /* last task made runnable here (for wakeup_preempt) */
	uint64_t woken_vruntime;
	uint64_t rng; /* victim choice; this worker only */
} __attribute__((aligned(JF_CACHELINE)));

struct cfs {
	int nworkers;
	uint64_t latency_ns, min_gran_ns, wakeup_gran_ns;
	struct cfs_rq *rq;
};

/* What another worker may take from @rq: its queued tasks that are not pinned (a hint). */
static inline uint32_t rq_stealable(const struct cfs_rq *rq)
{
	uint32_t n = __atomic_load_n(&rq->nr_queued, __ATOMIC_RELAXED);
	uint32_t pinned = __atomic_load_n(&rq->nr_pinned, __ATOMIC_RELAXED);

	return n > pinned ? n - pinned : 0;
}

static inline struct cfs *cfs_of(struct jf_policy *p)
{
	return (struct cfs *)p->priv;
}

static inline struct cfs_node *node_of(struct jf_task *t)
{
	return (struct cfs_node *)(void *)t->policy_data;
}

static inline uint64_t *vruntime_of(struct jf_task *t)
{
	return &node_of(t)->vt.key;
}

/* --- run queue (lock held) ------------------------------------------------------------------ */

static void rq_update_min(struct cfs_rq *rq)
{
	struct jf_task *first = vt_first(rq->root);
	uint64_t m;

	if (rq->cur)
		m = rq->cur_vruntime;
	else if (first)
		m = *vruntime_of(first);
	else
		return;
	if (rq->cur && first && vt_before(*vruntime_of(first), m))
		m = *vruntime_of(first);
	if (vt_before(rq->min_vruntime, m))
		__atomic_store_n(&rq->min_vruntime, m, __ATOMIC_RELAXED);
}

static void rq_insert(struct cfs_rq *rq, struct jf_task *t)
{
	struct cfs_node *n = node_of(t);

	n->vt.val = n->vt.key; /* the tree's second order is unused here */
	vt_insert(&rq->root, t);
	__atomic_store_n(&rq->nr_queued, rq->nr_queued + 1, __ATOMIC_RELAXED);
	if (JF_UNLIKELY(t->pinned))
		__atomic_store_n(&rq->nr_pinned, rq->nr_pinned + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&rq->load, rq->load + n->weight, __ATOMIC_RELAXED);
}

static void rq_remove(struct cfs_rq *rq, struct jf_task *t)
{
	vt_remove(&rq->root, t);
	__atomic_store_n(&rq->nr_queued, rq->nr_queued - 1, __ATOMIC_RELAXED);
	if (JF_UNLIKELY(t->pinned))
		__atomic_store_n(&rq->nr_pinned, rq->nr_pinned - 1, __ATOMIC_RELAXED);
	__atomic_store_n(&rq->load, rq->load - node_of(t)->weight, __ATOMIC_RELAXED);
	if (rq->woken == t)
		rq->woken = NULL;
}

/* Charge @t, which ran on @rq's worker, for its CPU time up to @now. */
static void rq_charge(struct cfs_rq *rq, struct jf_task *t, uint64_t now)
{
	struct cfs_node *n = node_of(t);
	uint64_t from = t->started_ns > n->acct_ns ? t->started_ns : n->acct_ns;

	if (now > from) {
		n->vt.key += sched_vdelta(now - from, n->weight);
		n->acct_ns = now;
	}
	if (rq->cur == t)
		rq->cur_vruntime = n->vt.key;
}

/* @t, running on @rq's worker, stops running there (yield, preemption, block, exit). */
static void rq_stop_running(struct cfs_rq *rq, struct jf_task *t, uint64_t now)
{
	rq_charge(rq, t, now);
	rq_update_min(rq);
	if (rq->cur == t)
		rq->cur = NULL;
}

/* @t, out of any queue, now runs on @rq's worker. */
static void rq_set_running(struct cfs_rq *rq, struct jf_task *t, uint64_t now)
{
	struct cfs_node *n = node_of(t);

	n->acct_ns = now;
	rq->cur = t;
	rq->cur_vruntime = n->vt.key;
	rq->cur_weight = n->weight;
	rq->cur_start_ns = now;
	rq_update_min(rq);
}

/* Measure @t's vruntime against worker @to's min_vruntime instead of its current one's. */
static void move_vruntime(struct cfs *s, struct jf_task *t, int to)
{
	struct cfs_node *n = node_of(t);
	int from = n->rq;

	if (from != to && from >= 0 && from < s->nworkers)
		n->vt.key = n->vt.key -
			    __atomic_load_n(&s->rq[from].min_vruntime, __ATOMIC_RELAXED) +
			    __atomic_load_n(&s->rq[to].min_vruntime, __ATOMIC_RELAXED);
	n->rq = to;
}

/* Queue @t on worker @target (its lock held) for @reason. */
static void rq_enqueue(struct cfs *s, int target, struct jf_task *t, enum jf_enqueue_reason reason)
{
	struct cfs_rq *rq = &s->rq[target];
	struct cfs_node *n = node_of(t);

	n->weight = sched_weight(t);
	move_vruntime(s, t, target);
	if (reason == JF_ENQ_NEW || reason == JF_ENQ_WOKEN) {
		uint64_t floor = rq->min_vruntime - s->latency_ns / 2;
		if (vt_before(n->vt.key, floor))
			n->vt.key = floor;
		rq->woken = t;
		rq->woken_vruntime = n->vt.key;
	} else if (reason == JF_ENQ_YIELDED) {
		/* Behind every queued task: yielding gives up any lead it had. */
		struct jf_task *last = vt_last(rq->root);
		if (last && vt_before(n->vt.key, *vruntime_of(last)))
			n->vt.key = *vruntime_of(last);
	}
	rq_insert(rq, t);
}

static struct jf_task *rq_pick(struct cfs_rq *rq, uint64_t now)
{
	struct jf_task *t = vt_first(rq->root);

	if (t) {
		rq_remove(rq, t);
		rq_set_running(rq, t, now);
	}
	return t;
}

/* --- ops ------------------------------------------------------------------------------------ */

enum { CFS_LATENCY, CFS_MIN_GRAN, CFS_WAKEUP_GRAN, CFS_NPARAMS };

static const struct jf_policy_param cfs_params[CFS_NPARAMS] = {
	[CFS_LATENCY] = {.name = "latency_us", .type = JF_PARAM_US, .min = 1000, .max = 1000000000,
			 .def = 50000, .doc = "sched_latency: every runnable task runs once per "
					      "period (Skyloft Table 5)"},
	[CFS_MIN_GRAN] = {.name = "min_gran_us", .type = JF_PARAM_US, .min = 1000,
			  .max = 1000000000, .def = 12500,
			  .doc = "min_granularity: the shortest slice (Skyloft Table 5)"},
	[CFS_WAKEUP_GRAN] = {.name = "wakeup_gran_us", .type = JF_PARAM_US, .min = 0,
			     .max = 1000000000, .def = 12500,
			     .doc = "a woken task preempts the running one only if its vruntime "
				    "is smaller by more than this"},
};

static int cfs_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	struct cfs *s = calloc(1, sizeof(*s));
	size_t size = sizeof(struct cfs_rq) * (size_t)params->nworkers;

	if (!s)
		return -ENOMEM;
	s->nworkers = params->nworkers;
	s->latency_ns = params->value[CFS_LATENCY];
	s->min_gran_ns = params->value[CFS_MIN_GRAN];
	s->wakeup_gran_ns = params->value[CFS_WAKEUP_GRAN];
	s->rq = aligned_alloc(JF_CACHELINE, size);
	if (!s->rq) {
		free(s);
		return -ENOMEM;
	}
	memset(s->rq, 0, size);
	for (int i = 0; i < s->nworkers; i++)
		s->rq[i].rng = sched_rng_seed(params->seed, i);
	p->priv = s;
	return 0;
}

static void cfs_destroy(struct jf_policy *p)
{
	struct cfs *s = cfs_of(p);

	if (!s)
		return;
	free(s->rq);
	free(s);
	p->priv = NULL;
}

/* A new task starts at its spawning worker's min_vruntime (no sleeper credit). */
static void cfs_task_init(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	struct cfs *s = cfs_of(p);
	struct cfs_node *n = node_of(t);

	(void)now;
	memset(n, 0, sizeof(*n));
	n->rq = worker;
	n->vt.key = __atomic_load_n(&s->rq[worker].min_vruntime, __ATOMIC_RELAXED);
	n->weight = sched_weight(t);
}

static int cfs_target(const struct cfs *s, int worker, const struct jf_task *t)
{
	if (JF_UNLIKELY(jf_task_pin(t) >= 0))
		return jf_task_pin(t);
	return t->attr.worker >= 0 && t->attr.worker < s->nworkers ? t->attr.worker : worker;
}

/*
 * A yielded or preempted task is charged on the worker it ran on; if it is queued elsewhere
 * (attr.worker changed), that lock is dropped before the target's is taken.
 */
static int cfs_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
		       enum jf_enqueue_reason reason, uint64_t now)
{
	struct cfs *s = cfs_of(p);
	int target = cfs_target(s, worker, t);
	struct cfs_rq *rq = &s->rq[worker];

	if (reason == JF_ENQ_YIELDED || reason == JF_ENQ_PREEMPTED) {
		jf_spin_lock(&rq->lock);
		rq_stop_running(rq, t, now);
		if (target == worker) {
			rq_enqueue(s, target, t, reason);
			jf_spin_unlock(&rq->lock);
			return target;
		}
		jf_spin_unlock(&rq->lock);
	}
	rq = &s->rq[target];
	jf_spin_lock(&rq->lock);
	rq_enqueue(s, target, t, reason);
	jf_spin_unlock(&rq->lock);
	return target;
}

static struct jf_task *cfs_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct cfs_rq *rq = &cfs_of(p)->rq[worker];
	struct jf_task *t;

	if (__atomic_load_n(&rq->nr_queued, __ATOMIC_RELAXED) == 0)
		return NULL;
	jf_spin_lock(&rq->lock);
	t = rq_pick(rq, now);
	jf_spin_unlock(&rq->lock);
	return t;
}

static struct jf_task *cfs_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
					enum jf_enqueue_reason reason, uint64_t now, int *target)
{
	struct cfs *s = cfs_of(p);
	struct cfs_rq *rq = &s->rq[worker];
	struct jf_task *next;

	*target = cfs_target(s, worker, t);
	if (*target != worker) {
		cfs_enqueue(p, worker, t, reason, now);
		return cfs_pick_next(p, worker, now);
	}
	jf_spin_lock(&rq->lock);
	if (reason == JF_ENQ_YIELDED || reason == JF_ENQ_PREEMPTED)
		rq_stop_running(rq, t, now);
	rq_enqueue(s, worker, t, reason);
	next = rq_pick(rq, now);
	jf_spin_unlock(&rq->lock);
	return next;
}

static void cfs_blocked(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	struct cfs_rq *rq = &cfs_of(p)->rq[worker];

	jf_spin_lock(&rq->lock);
	rq_stop_running(rq, t, now);
	jf_spin_unlock(&rq->lock);
}

static void cfs_task_exit(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	cfs_blocked(p, worker, t, now);
}

/*
 * Take the smallest-vruntime task of another worker (the one it would run next). Victims are
 * locked with trylock only when they look non-empty, and released before our own lock is taken.
 */
static struct jf_task *cfs_balance(struct jf_policy *p, int worker, uint64_t now)
{
	struct cfs *s = cfs_of(p);
	struct cfs_rq *me = &s->rq[worker];
	int v;

	if (s->nworkers < 2)
		return NULL;
	v = (int)(sched_next_rand(&me->rng) % (uint64_t)s->nworkers);
	for (int i = 0; i < s->nworkers; i++, v = v + 1 == s->nworkers ? 0 : v + 1) {
		struct cfs_rq *vq = &s->rq[v];
		struct jf_task *t;

		if (v == worker || rq_stealable(vq) == 0 || !jf_spin_trylock(&vq->lock))
			continue;
		t = vt_first(vq->root);
		if (JF_UNLIKELY(vq->nr_pinned != 0))
			t = vt_unpinned_from(t); /* a pinned task stays with its worker */
		if (t) {
			rq_remove(vq, t);
			rq_update_min(vq);
		}
		jf_spin_unlock(&vq->lock);
		if (!t)
			continue;
		jf_spin_lock(&me->lock);
		node_of(t)->weight = sched_weight(t);
		move_vruntime(s, t, worker);
		rq_set_running(me, t, now);
		jf_spin_unlock(&me->lock);
		return t;
	}
	return NULL;
}

/* Work for @worker: its own queue or any queue it could take a task from. */
static bool cfs_has_work(struct jf_policy *p, int worker)
{
	struct cfs *s = cfs_of(p);

	if (__atomic_load_n(&s->rq[worker].nr_queued, __ATOMIC_RELAXED) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++) /* pinned tasks are their worker's only */
		if (rq_stealable(&s->rq[i]) != 0)
			return true;
	return false;
}

/* The running task's share of the period: max(min_gran, latency * w / total weight). */
static uint64_t ideal_slice(const struct cfs *s, const struct cfs_rq *rq, uint32_t weight)
{
	uint64_t total = __atomic_load_n(&rq->load, __ATOMIC_RELAXED) + weight;
	uint64_t slice = s->latency_ns * weight / total;

	return slice > s->min_gran_ns ? slice : s->min_gran_ns;
}

/* What is left of the running task's slice (a whole slice once it is used). */
static uint64_t cfs_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct cfs *s = cfs_of(p);
	struct cfs_rq *rq = &s->rq[worker];
	uint64_t ideal = ideal_slice(s, rq, node_of(cur)->weight);
	uint64_t ran = now - rq->cur_start_ns;

	return ran < ideal ? ideal - ran : ideal;
}

/* Lock-free (may be a signal handler): preempt once the slice is used and a task waits here. */
static bool cfs_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct cfs *s = cfs_of(p);
	struct cfs_rq *rq = &s->rq[worker];

	if (__atomic_load_n(&rq->nr_queued, __ATOMIC_RELAXED) == 0)
		return false;
	return now - rq->cur_start_ns >= ideal_slice(s, rq, node_of(cur)->weight);
}

/*
 * Compare the task just queued on @target with what runs there, its vruntime brought up to
 * @now. Only the last task made runnable on @target is known (its vruntime copied under the
 * lock, so @woken is never dereferenced); if another came since, say no.
 */
static bool cfs_wakeup_preempt(struct jf_policy *p, int target, struct jf_task *woken,
			       uint64_t now)
{
	struct cfs *s = cfs_of(p);
	struct cfs_rq *rq = &s->rq[target];
	bool preempt = false;

	jf_spin_lock(&rq->lock);
	if (rq->cur && rq->woken == woken) {
		uint64_t ran = now > rq->cur_start_ns ? now - rq->cur_start_ns : 0;
		uint64_t cur_vr = rq->cur_vruntime + sched_vdelta(ran, rq->cur_weight);
		preempt = vt_before(rq->woken_vruntime + s->wakeup_gran_ns, cur_vr);
	}
	jf_spin_unlock(&rq->lock);
	return preempt;
}

const struct jf_policy_ops jf_policy_cfs = {
	.name = "cfs",
	.summary = "per-worker CFS: weighted vruntime, latency/min_gran slices, wakeup preemption",
	.flags = JF_POLICY_NEEDS_TIME,
	.task_data_size = sizeof(struct cfs_node),
	.init = cfs_init,
	.destroy = cfs_destroy,
	.task_init = cfs_task_init,
	.task_exit = cfs_task_exit,
	.enqueue = cfs_enqueue,
	.pick_next = cfs_pick_next,
	.enqueue_pick = cfs_enqueue_pick,
	.blocked = cfs_blocked,
	.balance = cfs_balance,
	.has_work = cfs_has_work,
	.slice = cfs_slice,
	.tick = cfs_tick,
	.wakeup_preempt = cfs_wakeup_preempt,
	.params = cfs_params,
	.nparams = CFS_NPARAMS,
};
