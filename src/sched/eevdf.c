/*
 * eevdf.c - "eevdf": per-worker Earliest Eligible Virtual Deadline First, after Stoica and
 * Abdel-Wahab (1995) and the lag / eligibility / virtual-deadline scheme of Linux 6.6
 * (Skyloft §5.1).
 *
 * Each task has a virtual runtime v (CPU time scaled by 1024 / weight; attr.weight, 0 meaning
 * 1024, weights above 2^20 count as 2^20) and makes requests of base_slice of CPU time: a request
 * starting at v has the virtual deadline d = v + base_slice * 1024 / weight. Per worker:
 *   - V is the weighted average of v over the queued tasks and the running one. A task is
 *     eligible when v <= V (its lag V - v is not negative: it has received no more than its
 *     share). The worker runs the eligible task with the earliest deadline.
 *   - The running task is preempted when its request is used up (v >= d) and a task waits on
 *     this worker; slice() returns what is left of the request. A used-up request is renewed
 *     (d = v + base_slice * 1024 / weight) when the task stops running.
 *   - A yielding task goes behind every task queued on its worker: its v is raised to the
 *     largest queued v (giving up any positive lag) and its deadline moves one request later
 *     (Linux 6.6 only moves the deadline; then a loop of trylock + jf_yield() can starve a lock
 *     holder that is not eligible, as V moves only by the spinners' tiny run times).
 *   - A woken (or new) task preempts the running one at once if it is eligible and its deadline
 *     is earlier than the running one's.
 * Placement of waking tasks, kept simple: when a task blocks its lag V - v is saved, clamped to
 * +-max(2 * base_slice, quantum) in its virtual time (Linux 6.6's bound, with the runtime's
 * quantum for the tick); when it wakes it is put at v = V - lag on its new worker with a new
 * request (a new task: lag 0, so v = V). Linux 6.6 also scales the lag by (W + w) / W so that
 * adding the task does not shift V; this file does not, so a woken task keeps slightly less than
 * its lag. A task moved between workers by stealing keeps its lag and what is left of its
 * request the same way.
 * A task's weight is read when it is spawned or wakes; a change while it runs or waits takes
 * effect then (changing it in place would move V).
 * Placement: attr.worker if set, else the caller's worker; an idle worker takes the task another
 * worker would run next. No periodic load balancing. A pinned task (jf_task_pin()) is queued on
 * its worker only; when it is the one a steal would take, the steal takes the smallest-vruntime
 * unpinned task instead.
 *
 * Parameters (ev_params[] below): slice_us, base_slice (default 12.5 us, Skyloft Table 5;
 * JIFFY_EEVDF_SLICE_US); the runtime's quantum (JIFFY_QUANTUM_US) only bounds the lag.
 *
 * Data structure: per worker, a treap of the queued tasks ordered by v (vtree.h: a binary search
 * tree balanced by random priorities, Seidel & Aragon), each node augmented with the earliest
 * deadline in its subtree: the augmented tree of Linux 6.6, with a treap for the red-black tree.
 * The eligible tasks are a prefix in v order, so one walk from the root finds the subtree holding
 * the earliest eligible deadline and a second walk finds the task. Insert, remove and pick are
 * O(log n) expected (O(n) worst case with vanishing probability), iterative, with no allocation.
 * V is kept as sum w * (v - v0) and sum w, with v0 a reference point moved forward to the
 * smallest v (a 128-bit sum: no overflow).
 *
 * Invariants: everything in a struct ev_rq is protected by its spinlock, and no two run-queue
 * locks are ever held together; nr_queued is also read without it (has_work, tick). A running
 * task's policy_data is written only by its worker; other workers look at the cur_* copies.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/policy.h>

#include "../common/spinlock.h"
#include "sched_util.h"
#include "vtree.h"
#include "registry.h"

#define EV_DEFAULT_QUANTUM_NS 100000u
#define EV_HAS_LAG 0x1u /* blocked: vt.aux holds its lag for placement */

/*
 * Per task, in jf_task.policy_data: vt.key is its vruntime v, vt.val its deadline; while it is
 * blocked (EV_HAS_LAG), vt.aux keeps its lag V - v.
 */
struct ev_node {
	struct vt_node vt; /* run-queue links: by vruntime, with the subtree's earliest deadline */
	uint64_t acct_ns;  /* CPU time is charged to vruntime up to here */
	uint32_t weight;   /* the weight it was queued or picked with */
	uint32_t flags;
};
_Static_assert(sizeof(struct ev_node) <= JF_TASK_POLICY_DATA, "ev_node too large");

struct ev_rq {
	__int128 vsum;      /* sum of w * (v - v0) over the queued tasks and cur */
	uint32_t lock;
	uint32_t nr_queued; /* atomic stores */
	uint32_t nr_pinned; /* how many queued tasks are pinned here (atomic stores) */
	uint64_t load;      /* sum of w over the queued tasks and cur */
	uint64_t v0;        /* reference point of vsum, never moves back */
	struct jf_task *root;
	/* What pick_next/balance last handed this worker (NULL once it stopped): identity only. */
	struct jf_task *cur;
	uint64_t cur_vruntime, cur_deadline; /* when picked (counted in vsum with this v) */
	uint64_t cur_start_ns;               /* when it was picked */
	uint32_t cur_weight;
	struct jf_task *woken; /* last task made runnable here (for wakeup_preempt) */
	uint64_t woken_vruntime, woken_deadline;
	uint64_t rng; /* victim choice; this worker only */
} __attribute__((aligned(JF_CACHELINE)));

struct eevdf {
	int nworkers;
	uint64_t slice_ns;
	uint64_t lag_limit_ns; /* max(2 * slice, quantum), in CPU time */
	struct ev_rq *rq;
};

/* What another worker may take from @rq: its queued tasks that are not pinned (a hint). */
static inline uint32_t rq_stealable(const struct ev_rq *rq)
{
	uint32_t n = __atomic_load_n(&rq->nr_queued, __ATOMIC_RELAXED);
	uint32_t pinned = __atomic_load_n(&rq->nr_pinned, __ATOMIC_RELAXED);

	return n > pinned ? n - pinned : 0;
}

static inline struct eevdf *ev_of(struct jf_policy *p)
{
	return (struct eevdf *)p->priv;
}

static inline struct ev_node *node_of(struct jf_task *t)
{
	return (struct ev_node *)(void *)t->policy_data;
}

/* The virtual length of one request of @weight. */
static inline uint64_t vslice(const struct eevdf *s, uint32_t weight)
{
	return sched_vdelta(s->slice_ns, weight);
}

/* --- the weighted average V (lock held) ------------------------------------------------------ */

static void avg_add(struct ev_rq *rq, uint64_t v, uint32_t w)
{
	rq->vsum += (__int128)w * (int64_t)(v - rq->v0);
	rq->load += w;
}

static void avg_sub(struct ev_rq *rq, uint64_t v, uint32_t w)
{
	rq->vsum -= (__int128)w * (int64_t)(v - rq->v0);
	rq->load -= w;
}

/* V, rounded down. */
static uint64_t avg_vruntime(const struct ev_rq *rq)
{
	__int128 q;

	if (rq->load == 0)
		return rq->v0;
	q = rq->vsum / rq->load;
	if (rq->vsum < 0 && q * rq->load != rq->vsum)
		q--;
	return rq->v0 + (uint64_t)(int64_t)q;
}

/* v <= V, exactly: w_total * (v - v0) <= sum w * (v - v0). */
static bool eligible(const struct ev_rq *rq, __int128 vsum, uint64_t load, uint64_t v)
{
	return (__int128)(int64_t)(v - rq->v0) * load <= vsum;
}

/* Move v0 forward to the smallest v, keeping the numbers in vsum small. */
static void avg_rebase(struct ev_rq *rq)
{
	struct jf_task *left = vt_first(rq->root);
	uint64_t m;

	if (rq->cur)
		m = rq->cur_vruntime;
	else if (left)
		m = node_of(left)->vt.key;
	else
		return;
	if (rq->cur && left && vt_before(node_of(left)->vt.key, m))
		m = node_of(left)->vt.key;
	if (vt_before(rq->v0, m)) {
		rq->vsum -= (__int128)rq->load * (int64_t)(m - rq->v0);
		rq->v0 = m;
	}
}

/*
 * The eligible queued task with the earliest deadline; among equal deadlines the first in tree
 * order (smallest v, then queue order), never one chosen by the tree's shape: the shape follows
 * the random priorities, and a pick that depended on it would skew which tasks stay queued and
 * with them the priorities along the tree, unbalancing it (and starving some tasks on ties).
 * The eligible tasks are a prefix of the tree order; walking down it meets, in that order, the
 * left subtree of each eligible node and then the node. NULL only if none is queued.
 */
static struct jf_task *pick_eevdf(struct ev_rq *rq)
{
	struct jf_task *t = rq->root, *best = NULL;
	bool best_is_subtree = false;
	uint64_t best_d = 0;

	while (t) {
		struct ev_node *n = node_of(t);
		struct jf_task *l = n->vt.left;

		if (!eligible(rq, rq->vsum, rq->load, n->vt.key)) {
			t = l;
			continue;
		}
		if (l && (!best || vt_before(node_of(l)->vt.min_val, best_d))) {
			best = l;
			best_is_subtree = true;
			best_d = node_of(l)->vt.min_val;
		}
		if (!best || vt_before(n->vt.val, best_d)) {
			best = t;
			best_is_subtree = false;
			best_d = n->vt.val;
		}
		t = n->vt.right;
	}
	/* The first task in @best's subtree whose deadline is best_d. */
	for (t = best; t && best_is_subtree;) {
		struct jf_task *l = node_of(t)->vt.left;
		if (l && node_of(l)->vt.min_val == best_d)
			t = l;
		else if (node_of(t)->vt.val == best_d)
			break;
		else
			t = node_of(t)->vt.right;
	}
	return t ? t : vt_first(rq->root); /* the leftmost is always eligible */
}

/* --- run queue (lock held) ------------------------------------------------------------------ */

static void rq_insert(struct ev_rq *rq, struct jf_task *t)
{
	vt_insert(&rq->root, t);
	__atomic_store_n(&rq->nr_queued, rq->nr_queued + 1, __ATOMIC_RELAXED);
	if (JF_UNLIKELY(t->pinned))
		__atomic_store_n(&rq->nr_pinned, rq->nr_pinned + 1, __ATOMIC_RELAXED);
}

static void rq_remove(struct ev_rq *rq, struct jf_task *t)
{
	vt_remove(&rq->root, t);
	__atomic_store_n(&rq->nr_queued, rq->nr_queued - 1, __ATOMIC_RELAXED);
	if (JF_UNLIKELY(t->pinned))
		__atomic_store_n(&rq->nr_pinned, rq->nr_pinned - 1, __ATOMIC_RELAXED);
	if (rq->woken == t)
		rq->woken = NULL;
}

static int64_t clamp_lag(const struct eevdf *s, int64_t lag, uint32_t weight)
{
	int64_t limit = (int64_t)sched_vdelta(s->lag_limit_ns, weight);
	return lag > limit ? limit : lag < -limit ? -limit : lag;
}

/* Charge @t, which ran on @rq's worker, for its CPU time up to @now. */
static void rq_charge(struct ev_rq *rq, struct jf_task *t, uint64_t now)
{
	struct ev_node *n = node_of(t);
	uint64_t from = t->started_ns > n->acct_ns ? t->started_ns : n->acct_ns;
	uint64_t dv;

	if (now <= from)
		return;
	dv = sched_vdelta(now - from, n->weight);
	n->vt.key += dv;
	n->acct_ns = now;
	if (rq->cur == t) {
		rq->vsum += (__int128)n->weight * (int64_t)dv;
		rq->cur_vruntime = n->vt.key;
	}
}

/*
 * @t, running on @rq's worker, stops running there: charged, its request renewed if used up.
 * Return whether it was counted in @rq's average (it was what this worker ran).
 */
static bool rq_stop_running(const struct eevdf *s, struct ev_rq *rq, struct jf_task *t,
			    uint64_t now)
{
	struct ev_node *n = node_of(t);
	bool counted = rq->cur == t;

	rq_charge(rq, t, now);
	if (!vt_before(n->vt.key, n->vt.val))
		n->vt.val = n->vt.key + vslice(s, n->weight);
	if (counted)
		rq->cur = NULL;
	return counted;
}

/*
 * @t, stopped running on @rq's worker, yields: it goes behind every task queued there (v raised
 * to the largest queued v, giving up any positive lag) with a new request after its current one.
 * @counted: @t is in @rq's average.
 */
static void rq_yield(const struct eevdf *s, struct ev_rq *rq, struct jf_task *t, bool counted)
{
	struct ev_node *n = node_of(t);
	struct jf_task *last = vt_last(rq->root);

	if (last && vt_before(n->vt.key, node_of(last)->vt.key)) {
		uint64_t v = node_of(last)->vt.key;
		if (counted)
			rq->vsum += (__int128)n->weight * (int64_t)(v - n->vt.key);
		n->vt.key = v;
	}
	n->vt.val = (vt_before(n->vt.val, n->vt.key) ? n->vt.key : n->vt.val) + vslice(s, n->weight);
}

/* @t, counted in @rq's average and out of the tree, now runs on @rq's worker. */
static void rq_set_running(struct ev_rq *rq, struct jf_task *t, uint64_t now)
{
	struct ev_node *n = node_of(t);

	n->acct_ns = now;
	rq->cur = t;
	rq->cur_vruntime = n->vt.key;
	rq->cur_deadline = n->vt.val;
	rq->cur_weight = n->weight;
	rq->cur_start_ns = now;
	avg_rebase(rq);
}

/* Put @t, counted nowhere, on @rq at v = V - @lag with a request of @request virtual time. */
static void rq_place(struct ev_rq *rq, struct jf_task *t, int64_t lag, uint64_t request)
{
	struct ev_node *n = node_of(t);

	n->vt.key = avg_vruntime(rq) - (uint64_t)lag;
	n->vt.val = n->vt.key + request;
	avg_add(rq, n->vt.key, n->weight);
}

/* Queue @t, made runnable for @reason, on @rq; @counted: already in @rq's average. */
static void rq_enqueue(struct eevdf *s, struct ev_rq *rq, struct jf_task *t,
		       enum jf_enqueue_reason reason, bool counted, int64_t lag)
{
	struct ev_node *n = node_of(t);

	if (!counted) {
		if (reason == JF_ENQ_NEW || reason == JF_ENQ_WOKEN) {
			lag = (n->flags & EV_HAS_LAG) ? n->vt.aux : 0;
			n->flags &= ~EV_HAS_LAG;
			n->weight = sched_weight(t);
			rq_place(rq, t, clamp_lag(s, lag, n->weight), vslice(s, n->weight));
			rq->woken = t;
			rq->woken_vruntime = n->vt.key;
			rq->woken_deadline = n->vt.val;
		} else {
			/* Yielded or preempted, queued on another worker: keep lag and request. */
			rq_place(rq, t, clamp_lag(s, lag, n->weight), n->vt.val - n->vt.key);
		}
	}
	rq_insert(rq, t);
}

/* Take @t, counted in @rq's average, out of it; return its lag there. */
static int64_t rq_leave(struct ev_rq *rq, struct jf_task *t)
{
	struct ev_node *n = node_of(t);
	int64_t lag = (int64_t)(avg_vruntime(rq) - n->vt.key);

	avg_sub(rq, n->vt.key, n->weight);
	return lag;
}

static struct jf_task *rq_pick(struct ev_rq *rq, uint64_t now)
{
	struct jf_task *t;

	if (rq->cur) {
		/* Not expected: the last task handed out never said it stopped. Forget it. */
		avg_sub(rq, rq->cur_vruntime, rq->cur_weight);
		rq->cur = NULL;
	}
	t = rq->root ? pick_eevdf(rq) : NULL;
	if (t) {
		rq_remove(rq, t);
		rq_set_running(rq, t, now);
	}
	return t;
}

/* --- ops ------------------------------------------------------------------------------------ */

enum { EV_SLICE, EV_NPARAMS };

static const struct jf_policy_param ev_params[EV_NPARAMS] = {
	[EV_SLICE] = {.name = "slice_us", .type = JF_PARAM_US, .min = 1000, .max = 1000000000,
		      .def = 12500, .doc = "base_slice: the request size (Skyloft Table 5)"},
};

static int ev_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	struct eevdf *s = calloc(1, sizeof(*s));
	size_t size = sizeof(struct ev_rq) * (size_t)params->nworkers;
	uint64_t quantum = params->quantum_ns ? params->quantum_ns : EV_DEFAULT_QUANTUM_NS;

	if (!s)
		return -ENOMEM;
	s->nworkers = params->nworkers;
	s->slice_ns = params->value[EV_SLICE];
	s->lag_limit_ns = 2 * s->slice_ns > quantum ? 2 * s->slice_ns : quantum;
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

static void ev_destroy(struct jf_policy *p)
{
	struct eevdf *s = ev_of(p);

	if (!s)
		return;
	free(s->rq);
	free(s);
	p->priv = NULL;
}

static void ev_task_init(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	struct ev_node *n = node_of(t);

	(void)p, (void)worker, (void)now;
	memset(n, 0, sizeof(*n));
	n->weight = sched_weight(t);
	n->flags = EV_HAS_LAG; /* lag 0: starts at V */
}

static int ev_target(const struct eevdf *s, int worker, const struct jf_task *t)
{
	if (JF_UNLIKELY(jf_task_pin(t) >= 0))
		return jf_task_pin(t);
	return t->attr.worker >= 0 && t->attr.worker < s->nworkers ? t->attr.worker : worker;
}

/*
 * A yielded or preempted task is charged on the worker it ran on; if it is queued elsewhere
 * (attr.worker changed) it leaves that worker's average with its lag, and that lock is dropped
 * before the target's is taken.
 */
static int ev_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
		      enum jf_enqueue_reason reason, uint64_t now)
{
	struct eevdf *s = ev_of(p);
	int target = ev_target(s, worker, t);
	struct ev_rq *rq = &s->rq[worker];
	bool counted = false;
	int64_t lag = 0;

	if (reason == JF_ENQ_YIELDED || reason == JF_ENQ_PREEMPTED) {
		jf_spin_lock(&rq->lock);
		counted = rq_stop_running(s, rq, t, now);
		if (reason == JF_ENQ_YIELDED)
			rq_yield(s, rq, t, counted);
		if (target == worker) {
			rq_enqueue(s, rq, t, reason, counted, 0);
			jf_spin_unlock(&rq->lock);
			return target;
		}
		if (counted)
			lag = rq_leave(rq, t);
		counted = false;
		jf_spin_unlock(&rq->lock);
	}
	rq = &s->rq[target];
	jf_spin_lock(&rq->lock);
	rq_enqueue(s, rq, t, reason, counted, lag);
	jf_spin_unlock(&rq->lock);
	return target;
}

static struct jf_task *ev_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct ev_rq *rq = &ev_of(p)->rq[worker];
	struct jf_task *t;

	if (__atomic_load_n(&rq->nr_queued, __ATOMIC_RELAXED) == 0)
		return NULL;
	jf_spin_lock(&rq->lock);
	t = rq_pick(rq, now);
	jf_spin_unlock(&rq->lock);
	return t;
}

static struct jf_task *ev_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
				       enum jf_enqueue_reason reason, uint64_t now, int *target)
{
	struct eevdf *s = ev_of(p);
	struct ev_rq *rq = &s->rq[worker];
	struct jf_task *next;
	bool counted = false;

	*target = ev_target(s, worker, t);
	if (*target != worker) {
		ev_enqueue(p, worker, t, reason, now);
		return ev_pick_next(p, worker, now);
	}
	jf_spin_lock(&rq->lock);
	if (reason == JF_ENQ_YIELDED || reason == JF_ENQ_PREEMPTED) {
		counted = rq_stop_running(s, rq, t, now);
		if (reason == JF_ENQ_YIELDED)
			rq_yield(s, rq, t, counted);
	}
	rq_enqueue(s, rq, t, reason, counted, 0);
	next = rq_pick(rq, now);
	jf_spin_unlock(&rq->lock);
	return next;
}

/* The running task blocks: it leaves the average, its lag kept for when it wakes. */
static void ev_blocked(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	struct eevdf *s = ev_of(p);
	struct ev_rq *rq = &s->rq[worker];
	struct ev_node *n = node_of(t);
	int64_t lag = 0;

	jf_spin_lock(&rq->lock);
	if (rq_stop_running(s, rq, t, now))
		lag = rq_leave(rq, t);
	avg_rebase(rq);
	n->vt.aux = clamp_lag(s, lag, n->weight);
	n->flags |= EV_HAS_LAG;
	jf_spin_unlock(&rq->lock);
}

static void ev_task_exit(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	struct ev_rq *rq = &ev_of(p)->rq[worker];

	(void)now;
	jf_spin_lock(&rq->lock);
	if (rq->cur == t) {
		avg_sub(rq, rq->cur_vruntime, rq->cur_weight);
		rq->cur = NULL;
		avg_rebase(rq);
	}
	jf_spin_unlock(&rq->lock);
}

/*
 * Take the task another worker would run next, with its lag and what is left of its request.
 * Victims are locked with trylock only when they look non-empty, and released before our own
 * lock is taken.
 */
static struct jf_task *ev_balance(struct jf_policy *p, int worker, uint64_t now)
{
	struct eevdf *s = ev_of(p);
	struct ev_rq *me = &s->rq[worker];
	int v;

	if (s->nworkers < 2)
		return NULL;
	v = (int)(sched_next_rand(&me->rng) % (uint64_t)s->nworkers);
	for (int i = 0; i < s->nworkers; i++, v = v + 1 == s->nworkers ? 0 : v + 1) {
		struct ev_rq *vq = &s->rq[v];
		struct jf_task *t = NULL;
		uint64_t request = 0;
		int64_t lag = 0;

		if (v == worker || rq_stealable(vq) == 0 || !jf_spin_trylock(&vq->lock))
			continue;
		if (vq->root) {
			t = pick_eevdf(vq);
			if (JF_UNLIKELY(t->pinned)) /* it stays: the smallest-vruntime unpinned one */
				t = vt_unpinned_from(vt_first(vq->root));
		}
		if (t) {
			rq_remove(vq, t);
			lag = rq_leave(vq, t);
			request = node_of(t)->vt.val - node_of(t)->vt.key;
			avg_rebase(vq);
		}
		jf_spin_unlock(&vq->lock);
		if (!t)
			continue;
		jf_spin_lock(&me->lock);
		rq_place(me, t, clamp_lag(s, lag, node_of(t)->weight), request);
		rq_set_running(me, t, now);
		jf_spin_unlock(&me->lock);
		return t;
	}
	return NULL;
}

/* Work for @worker: its own queue or any queue it could take a task from. */
static bool ev_has_work(struct jf_policy *p, int worker)
{
	struct eevdf *s = ev_of(p);

	if (__atomic_load_n(&s->rq[worker].nr_queued, __ATOMIC_RELAXED) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++) /* pinned tasks are their worker's only */
		if (rq_stealable(&s->rq[i]) != 0)
			return true;
	return false;
}

/* Virtual time @cur still has on its request at @now (negative: used up). */
static int64_t request_left(struct jf_task *cur, uint64_t now)
{
	struct ev_node *n = node_of(cur);
	uint64_t from = cur->started_ns > n->acct_ns ? cur->started_ns : n->acct_ns;
	uint64_t v = n->vt.key + (now > from ? sched_vdelta(now - from, n->weight) : 0);

	return (int64_t)(n->vt.val - v);
}

/* What is left of the running task's request, in CPU time (rounded up); a whole one if none. */
static uint64_t ev_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct eevdf *s = ev_of(p);
	int64_t left = request_left(cur, now);
	uint32_t w = node_of(cur)->weight;

	(void)worker;
	if (left <= 0)
		return s->slice_ns;
	return ((uint64_t)left * w + SCHED_NICE0_WEIGHT - 1) / SCHED_NICE0_WEIGHT;
}

/* Lock-free (may be a signal handler): preempt once the request is used and a task waits here. */
static bool ev_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct ev_rq *rq = &ev_of(p)->rq[worker];

	return __atomic_load_n(&rq->nr_queued, __ATOMIC_RELAXED) != 0 &&
	       request_left(cur, now) <= 0;
}

/*
 * The task just queued on @target preempts what runs there if it is eligible (against V with the
 * running task's progress up to @now) and its deadline is earlier. Only the last task made
 * runnable on @target is known (copied under the lock, so @woken is never dereferenced); if
 * another came since, say no.
 */
static bool ev_wakeup_preempt(struct jf_policy *p, int target, struct jf_task *woken,
			      uint64_t now)
{
	struct ev_rq *rq = &ev_of(p)->rq[target];
	bool preempt = false;

	jf_spin_lock(&rq->lock);
	if (rq->cur && rq->woken == woken) {
		uint64_t ran = now > rq->cur_start_ns ? now - rq->cur_start_ns : 0;
		__int128 vsum = rq->vsum + (__int128)rq->cur_weight * sched_vdelta(ran, rq->cur_weight);
		preempt = eligible(rq, vsum, rq->load, rq->woken_vruntime) &&
			  vt_before(rq->woken_deadline, rq->cur_deadline);
	}
	jf_spin_unlock(&rq->lock);
	return preempt;
}

const struct jf_policy_ops jf_policy_eevdf = {
	.name = "eevdf",
	.summary = "per-worker EEVDF: lag-based eligibility, earliest virtual deadline first",
	.flags = JF_POLICY_NEEDS_TIME,
	.task_data_size = sizeof(struct ev_node),
	.init = ev_init,
	.destroy = ev_destroy,
	.task_init = ev_task_init,
	.task_exit = ev_task_exit,
	.enqueue = ev_enqueue,
	.pick_next = ev_pick_next,
	.enqueue_pick = ev_enqueue_pick,
	.blocked = ev_blocked,
	.balance = ev_balance,
	.has_work = ev_has_work,
	.slice = ev_slice,
	.tick = ev_tick,
	.wakeup_preempt = ev_wakeup_preempt,
	.params = ev_params,
	.nparams = EV_NPARAMS,
};
