/*
 * lcbe.c - "lcbe": latency-critical (LC) work co-located with best-effort (BE) work. LC tasks
 * have per-worker queues with work stealing; BE tasks share one round-robin queue and get a
 * worker only when no LC work is available to it anywhere; LC work preempts BE work at once.
 *
 * Follows Skyloft (paper 004, §5.2, "Multiple workloads"): a latency-critical application shares
 * the machine with a batch application; cores run the batch work while the LC application does
 * not need them and are taken back at once when it does. Skyloft decides core shares in a
 * dispatcher from queueing delay; here the same goal is reached per scheduling decision, with
 * strict priority of LC over BE and wakeup preemption instead of a congestion detector.
 *
 * Classes: attr.klass 0 is LC, anything else BE (read at every enqueue, so
 * jf_thread_set_sched_attr() takes effect at the next one).
 * LC placement (NEW, WOKEN): attr.worker if it names one; else the caller's worker unless that
 * one is running LC; then the first worker (from the caller's next) that is idle, else the first
 * that runs BE (which is then preempted: an LC task never waits behind LC work while a BE task
 * holds a worker), else the caller's worker. YIELDED and PREEMPTED LC tasks go to the tail of the
 * caller's worker's queue.
 * BE placement: the tail of the one shared BE queue, whatever the reason (attr.worker is
 * ignored); a shared queue makes BE round-robin global and needs no BE stealing.
 * Pinned tasks (jf_task_pin()): a pinned LC task goes to its worker's LC queue (NEW and WOKEN
 * too: placement by idleness does not apply) and is never stolen; a pinned BE task cannot go to
 * the shared BE queue, which every worker pops: it waits in its worker's own pinned-BE queue,
 * which that worker serves in turn with the shared one (alternately while both hold work), so
 * pinned and unpinned BE work share the worker round-robin.
 * Picking on worker w: w's LC queue; else half of another worker's LC queue (stolen); else the
 * head of the BE queue. balance does the same without w's own queue.
 * Slices: the runtime's quantum for LC tasks, be_quantum_us for BE tasks.
 * Preemption: an LC task that used its quantum is preempted when LC work waits in its worker's
 * queue (as ws: other workers' queues are theirs, or stolen by idle and BE-running workers); it
 * never gives way to BE work. A BE task that used its BE quantum is preempted when LC work is
 * available to its worker (any LC queue) or other BE work waits. An LC task queued (NEW or WOKEN)
 * on a worker that runs BE preempts it at once (wakeup_preempt). A preempted BE task goes to the
 * tail of the BE queue even when LC work cut its quantum short. Priority is strict: an LC task
 * that yields while only BE work waits runs on, so LC code must block, not spin, on BE work.
 *
 * Parameters (lcbe_params[] below), and the runtime's quantum:
 *   quantum_ns     LC quantum (the runtime's)                            JIFFY_QUANTUM_US
 *   be_quantum_us  BE quantum before round-robin (0: 4 x quantum)      JIFFY_LCBE_BE_QUANTUM_US
 *
 * Concurrency: every queue has its own spinlock, never held while another is taken (stealing
 * trylocks the victim and releases it first). Each worker publishes the class of what it was
 * last handed (@running, relaxed atomic, written by that worker only); other workers read it to
 * place LC work and in wakeup_preempt, never touching another worker's running task. tick and
 * has_work read only atomic counts and @running: lock-free, safe in a signal handler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "taskq.h"
#include "registry.h"

enum lcbe_running {
	LCBE_IDLE = 0,
	LCBE_LC,
	LCBE_BE,
};

struct lcbe_worker {
	struct taskq lc;
	struct taskq be_pinned; /* BE tasks pinned to this worker (the shared queue cannot hold them) */
	uint64_t rng; /* victim choice; this worker only */
	uint32_t be_turn; /* alternates between be_pinned and the shared BE queue; this worker only */
	/* enum lcbe_running of what we last handed this worker (atomic; own line: read by others) */
	uint32_t running __attribute__((aligned(JF_CACHELINE)));
} __attribute__((aligned(JF_CACHELINE)));

struct lcbe {
	struct taskq be; /* shared by all workers */
	int nworkers;
	uint64_t quantum_ns;
	uint64_t be_quantum_ns;
	struct lcbe_worker *w;
};

static inline struct lcbe *lcbe_of(struct jf_policy *p)
{
	return (struct lcbe *)p->priv;
}

static inline bool is_lc(const struct jf_task *t)
{
	return t->attr.klass == 0;
}

/*
 * Per task (policy_data): the taskq link first (taskq.h), then the class it was last queued
 * with, for wakeup_preempt: that op runs after enqueue returned, when the task may already run
 * on another worker and be changing its attributes (jf_thread_set_sched_attr() applies them at
 * its next hand-over), so it must not read woken->attr. Atomic: a later enqueue of the same
 * task may store it meanwhile (either value is a class the task had).
 */
struct lcbe_task {
	struct taskq_link link;
	uint32_t queued_lc;
};
_Static_assert(sizeof(struct lcbe_task) <= JF_TASK_POLICY_DATA, "lcbe task data too large");
_Static_assert(offsetof(struct lcbe_task, link) == 0, "taskq link must be first");

static inline uint32_t *queued_lc(struct jf_task *t)
{
	return &((struct lcbe_task *)(void *)t->policy_data)->queued_lc;
}

static inline uint32_t running_on(const struct lcbe *s, int worker)
{
	return __atomic_load_n(&s->w[worker].running, __ATOMIC_RELAXED);
}

enum { LCBE_BE_QUANTUM, LCBE_NPARAMS };

static const struct jf_policy_param lcbe_params[LCBE_NPARAMS] = {
	[LCBE_BE_QUANTUM] = {.name = "be_quantum_us", .type = JF_PARAM_US, .min = 0,
			     .max = 1000000000, .def = 0,
			     .doc = "slice of a best-effort task among best-effort work; 0: 4 x "
				    "quantum"},
};

static int lcbe_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	size_t size = sizeof(struct lcbe_worker) * (size_t)params->nworkers;
	struct lcbe *s = aligned_alloc(JF_CACHELINE, sizeof(*s));

	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->w = aligned_alloc(JF_CACHELINE, size);
	if (!s->w) {
		free(s);
		return -ENOMEM;
	}
	memset(s->w, 0, size);
	s->nworkers = params->nworkers;
	s->quantum_ns = params->quantum_ns;
	s->be_quantum_ns = params->value[LCBE_BE_QUANTUM] ? params->value[LCBE_BE_QUANTUM]
							  : 4 * s->quantum_ns;
	for (int i = 0; i < s->nworkers; i++)
		s->w[i].rng = sched_rng_seed(params->seed, i);
	p->priv = s;
	return 0;
}

static void lcbe_destroy(struct jf_policy *p)
{
	struct lcbe *s = lcbe_of(p);

	if (!s)
		return;
	free(s->w);
	free(s);
	p->priv = NULL;
}

/* Where new or woken LC work goes: a worker that runs no LC task if there is one (see above). */
static int lc_target(const struct lcbe *s, int worker, const struct jf_task *t)
{
	int be = -1;

	if (JF_UNLIKELY(jf_task_pin(t) >= 0))
		return jf_task_pin(t);
	if (t->attr.worker >= 0 && t->attr.worker < s->nworkers)
		return t->attr.worker;
	if (running_on(s, worker) != LCBE_LC)
		return worker;
	for (int i = 1, v = worker; i < s->nworkers; i++) {
		v = v + 1 == s->nworkers ? 0 : v + 1;
		switch (running_on(s, v)) {
		case LCBE_IDLE:
			return v;
		case LCBE_BE:
			if (be < 0)
				be = v;
			break;
		default:
			break;
		}
	}
	return be >= 0 ? be : worker;
}

static int lcbe_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
			enum jf_enqueue_reason reason, uint64_t now)
{
	struct lcbe *s = lcbe_of(p);
	int target = worker;

	(void)now;
	__atomic_store_n(queued_lc(t), is_lc(t), __ATOMIC_RELAXED); /* before it is queued */
	if (!is_lc(t)) {
		if (JF_UNLIKELY(jf_task_pin(t) >= 0)) {
			target = jf_task_pin(t);
			taskq_push_tail(&s->w[target].be_pinned, t);
			return target;
		}
		taskq_push_tail(&s->be, t);
		return -1; /* any worker may run it */
	}
	if (reason == JF_ENQ_NEW || reason == JF_ENQ_WOKEN || JF_UNLIKELY(jf_task_pin(t) >= 0))
		target = lc_target(s, worker, t);
	taskq_push_tail(&s->w[target].lc, t);
	return target;
}

/* Record the class of what @me is handed (@t of class @klass, or nothing) and return @t. */
static struct jf_task *hand(struct lcbe_worker *me, struct jf_task *t, uint32_t klass)
{
	if (!t)
		klass = LCBE_IDLE;
	if (__atomic_load_n(&me->running, __ATOMIC_RELAXED) != klass)
		__atomic_store_n(&me->running, klass, __ATOMIC_RELAXED);
	return t;
}

/* LC work @worker could run: its own, or another worker's that is not pinned there. */
static bool any_lc_work(const struct lcbe *s, int worker)
{
	if (taskq_count(&s->w[worker].lc) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++)
		if (taskq_stealable(&s->w[i].lc) != 0)
			return true;
	return false;
}

/* BE work for @me: its pinned BE tasks and the shared queue's head, in turn while both wait. */
static struct jf_task *take_be(struct lcbe *s, struct lcbe_worker *me)
{
	struct jf_task *t = NULL;

	if (JF_LIKELY(taskq_count(&me->be_pinned) == 0))
		return taskq_pop_head(&s->be);
	me->be_turn ^= 1;
	if (me->be_turn)
		t = taskq_pop_head(&me->be_pinned);
	if (!t)
		t = taskq_pop_head(&s->be);
	if (!t)
		t = taskq_pop_head(&me->be_pinned);
	return t;
}

/* Work for @worker from elsewhere: LC work of other workers first, BE work only without it. */
static struct jf_task *take_elsewhere(struct lcbe *s, int worker)
{
	struct lcbe_worker *me = &s->w[worker];
	struct jf_task *t;

	t = taskq_steal_any(&s->w[0].lc, sizeof(s->w[0]), s->nworkers, worker, &me->rng, &me->lc);
	if (t)
		return hand(me, t, LCBE_LC);
	if (s->nworkers > 1 && any_lc_work(s, worker)) /* LC work whose queue was busy: again */
		return hand(me, NULL, LCBE_IDLE);
	return hand(me, take_be(s, me), LCBE_BE);
}

static struct jf_task *lcbe_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct lcbe *s = lcbe_of(p);
	struct lcbe_worker *me = &s->w[worker];
	struct jf_task *t;

	(void)now;
	if ((t = taskq_pop_head(&me->lc)) != NULL)
		return hand(me, t, LCBE_LC);
	return take_elsewhere(s, worker);
}

static struct jf_task *lcbe_balance(struct jf_policy *p, int worker, uint64_t now)
{
	(void)now;
	return take_elsewhere(lcbe_of(p), worker);
}

static bool lcbe_has_work(struct jf_policy *p, int worker)
{
	struct lcbe *s = lcbe_of(p);

	return taskq_count(&s->w[worker].lc) != 0 || taskq_count(&s->be) != 0 ||
	       taskq_count(&s->w[worker].be_pinned) != 0 || any_lc_work(s, worker);
}

static uint64_t lcbe_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct lcbe *s = lcbe_of(p);

	(void)cur, (void)now;
	return running_on(s, worker) == LCBE_BE ? s->be_quantum_ns : s->quantum_ns;
}

static bool lcbe_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct lcbe *s = lcbe_of(p);

	(void)cur, (void)now;
	if (running_on(s, worker) != LCBE_BE)
		return taskq_count(&s->w[worker].lc) != 0;
	return taskq_count(&s->be) != 0 || taskq_count(&s->w[worker].be_pinned) != 0 ||
	       any_lc_work(s, worker);
}

/* LC work takes a worker from BE work at once. */
static bool lcbe_wakeup_preempt(struct jf_policy *p, int target, struct jf_task *woken,
				uint64_t now)
{
	(void)now;
	return __atomic_load_n(queued_lc(woken), __ATOMIC_RELAXED) &&
	       running_on(lcbe_of(p), target) == LCBE_BE;
}

const struct jf_policy_ops jf_policy_lcbe = {
	.name = "lcbe",
	.summary = "latency-critical work stealing over round-robin best-effort work",
	.flags = 0,
	.task_data_size = sizeof(struct lcbe_task),
	.init = lcbe_init,
	.destroy = lcbe_destroy,
	.enqueue = lcbe_enqueue,
	.pick_next = lcbe_pick_next,
	.balance = lcbe_balance,
	.has_work = lcbe_has_work,
	.slice = lcbe_slice,
	.tick = lcbe_tick,
	.wakeup_preempt = lcbe_wakeup_preempt,
	.params = lcbe_params,
	.nparams = LCBE_NPARAMS,
};
