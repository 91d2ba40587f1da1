/*
 * twoq.c - "twoq": Aspen-KB's two-queue policy. Per worker a new queue and a preempted queue;
 * new work runs first, preempted work runs with a longer quantum, and stealing prefers new work.
 *
 * Follows Aspen (paper 000, §3.2, "Head-of-line blocking"): a simplified multi-level feedback
 * queue that needs no a-priori knowledge of service times. A task that finishes (or blocks)
 * within one quantum never leaves the new queue and so never waits behind long work; a task that
 * used a whole quantum is demoted to the preempted queue and from then on runs in longer slices
 * whenever no new work exists.
 *
 * Placement (enqueue):
 *   NEW, WOKEN  -> tail of the new queue of attr.worker if it names one, else of the caller's
 *                  worker (the spawner or waker: cache-warm, idle workers steal the rest).
 *   PREEMPTED   -> tail of the preempted queue of the caller's worker (where it ran).
 *   YIELDED     -> tail of the queue it was last taken from: yielding neither promotes a
 *                  preempted task nor demotes a new one (a new-queue task that yields while
 *                  only preempted work waits runs on; the end of its quantum demotes it),
 *                  except that a new-queue task's demote_yields-th yield in a row (no block or
 *                  wake between) sends it to the preempted queue. Each yield starts a new run,
 *                  so a task that keeps yielding never ends a quantum: without this rule a few
 *                  tasks yield-looping for a mutex held by a preempted-queue task kept the
 *                  new queue busy for ever, and the holder never ran (core.storm.twoq hung in
 *                  3 runs of 30 beside a busy CPU, before and after issue 26's changes).
 * Picking on worker w: w's new queue; else new work stolen from another worker; else w's
 * preempted queue. When idle (balance): steal new work from any worker, and preempted work only
 * when no worker has new work. A steal takes half of the victim's queue (at least one task).
 * Pinned tasks (jf_task_pin()): queued on their worker, in the queue the rules above choose,
 * whatever the caller's worker; steals leave them, and only the unpinned tasks of other workers
 * count as work for a worker (has_work, tick, the idle pass).
 * Slices: the runtime's quantum for a task taken from a new queue, long_us for one taken
 * from a preempted queue.
 * Preemption: at the end of its slice a task is preempted if its worker has queued work of either
 * kind, or new work waits on any worker (this worker would steal it: new work first, everywhere).
 * A NEW or WOKEN task queued on a worker that runs a task from its preempted queue preempts that
 * task at once (wakeup_preempt), since Aspen never lets preempted work delay new work. A
 * preempted task preempted again, early or not, goes to the tail of the preempted queue.
 *
 * Parameters (twoq_params[] below), and the runtime's quantum:
 *   quantum_ns    the quantum of new-queue tasks (the runtime's)         JIFFY_QUANTUM_US
 *   long_us       the quantum of preempted-queue tasks (0: 4 x quantum)  JIFFY_TWOQ_LONG_US
 *   demote_yields yields in a row that demote a new-queue task (16)     JIFFY_TWOQ_DEMOTE_YIELDS
 *
 * Concurrency: each queue has its own spinlock, and no lock is held while another is taken
 * (stealing uses trylock, then releases the victim before touching its own queue). Each worker
 * publishes which queue its current task came from (@running) with a relaxed atomic: written by
 * that worker only, read by the others in wakeup_preempt, since another worker's running task
 * must not be dereferenced. tick and has_work read only atomic counts and @running: lock-free,
 * safe in a signal handler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "taskq.h"
#include "registry.h"

enum twoq_origin {
	TWOQ_IDLE = 0, /* the worker was handed nothing (only in twoq_worker.running) */
	TWOQ_NEW,
	TWOQ_PRE,
};

/* Per-task data: the taskq link must come first (taskq.h links through policy_data). */
struct twoq_task {
	struct taskq_link link;
	uint32_t origin; /* the queue it was last taken from; owned by whoever holds the task */
	uint32_t yields; /* yields in a row from the new queue, since it was last new or woken */
};
_Static_assert(sizeof(struct twoq_task) <= JF_TASK_POLICY_DATA, "twoq task data too large");
_Static_assert(offsetof(struct twoq_task, link) == 0, "taskq link must be first");

struct twoq_worker {
	struct taskq newq;
	struct taskq preq;
	uint64_t rng; /* victim choice; this worker only */
	/* enum twoq_origin of what we last handed this worker (atomic; own line: read by others) */
	uint32_t running __attribute__((aligned(JF_CACHELINE)));
} __attribute__((aligned(JF_CACHELINE)));

struct twoq {
	int nworkers;
	uint64_t quantum_ns;
	uint64_t long_ns;
	uint32_t demote_yields; /* a new-queue task that yields this many times in a row is demoted */
	struct twoq_worker *w;
};

static inline struct twoq *twoq_of(struct jf_policy *p)
{
	return (struct twoq *)p->priv;
}

static inline struct twoq_task *twoq_task(struct jf_task *t)
{
	return (struct twoq_task *)(void *)t->policy_data;
}

enum { TWOQ_LONG, TWOQ_DEMOTE_YIELDS, TWOQ_NPARAMS };

static const struct jf_policy_param twoq_params[TWOQ_NPARAMS] = {
	[TWOQ_LONG] = {.name = "long_us", .type = JF_PARAM_US, .min = 0, .max = 1000000000,
		       .def = 0, .doc = "slice of a task taken from the preempted queue (Aspen: "
					"\"e.g. 100 us\"); 0: 4 x quantum"},
	[TWOQ_DEMOTE_YIELDS] = {.name = "demote_yields", .type = JF_PARAM_UINT, .min = 1,
				.max = 1000000, .def = 16,
				.doc = "a new-queue task that yields this many times in a row (no "
				       "block in between) goes to the preempted queue"},
};

static int twoq_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	size_t size = sizeof(struct twoq_worker) * (size_t)params->nworkers;
	struct twoq *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->w = aligned_alloc(JF_CACHELINE, size);
	if (!s->w) {
		free(s);
		return -ENOMEM;
	}
	memset(s->w, 0, size);
	s->nworkers = params->nworkers;
	s->quantum_ns = params->quantum_ns;
	s->long_ns = params->value[TWOQ_LONG] ? params->value[TWOQ_LONG] : 4 * s->quantum_ns;
	s->demote_yields = (uint32_t)params->value[TWOQ_DEMOTE_YIELDS];
	for (int i = 0; i < s->nworkers; i++)
		s->w[i].rng = sched_rng_seed(params->seed, i);
	p->priv = s;
	return 0;
}

static void twoq_destroy(struct jf_policy *p)
{
	struct twoq *s = twoq_of(p);

	if (!s)
		return;
	free(s->w);
	free(s);
	p->priv = NULL;
}

static void twoq_task_init(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	(void)p, (void)worker, (void)now;
	twoq_task(t)->origin = TWOQ_NEW;
	twoq_task(t)->yields = 0;
}

static int twoq_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
			enum jf_enqueue_reason reason, uint64_t now)
{
	struct twoq *s = twoq_of(p);
	struct twoq_worker *tw;
	int target = worker;

	(void)now;
	if (JF_UNLIKELY(jf_task_pin(t) >= 0))
		target = jf_task_pin(t);
	else if ((reason == JF_ENQ_NEW || reason == JF_ENQ_WOKEN) && t->attr.worker >= 0 &&
		 t->attr.worker < s->nworkers)
		target = t->attr.worker;
	tw = &s->w[target];
	if (reason == JF_ENQ_YIELDED && twoq_task(t)->origin == TWOQ_NEW &&
	    ++twoq_task(t)->yields >= s->demote_yields) {
		/* It keeps yielding: it is not work that finishes within a quantum (see above). */
		twoq_task(t)->yields = 0;
		taskq_push_tail(&tw->preq, t);
	} else if (reason == JF_ENQ_PREEMPTED ||
		   (reason == JF_ENQ_YIELDED && twoq_task(t)->origin == TWOQ_PRE)) {
		taskq_push_tail(&tw->preq, t);
	} else {
		if (reason != JF_ENQ_YIELDED)
			twoq_task(t)->yields = 0;
		taskq_push_tail(&tw->newq, t);
	}
	return target;
}

/* Record what @worker is handed (@t from the queue @origin, or nothing) and return @t. */
static struct jf_task *hand(struct twoq_worker *me, struct jf_task *t, uint32_t origin)
{
	if (t)
		twoq_task(t)->origin = origin;
	else
		origin = TWOQ_IDLE;
	if (__atomic_load_n(&me->running, __ATOMIC_RELAXED) != origin)
		__atomic_store_n(&me->running, origin, __ATOMIC_RELAXED);
	return t;
}

/* Steal from the new (@pre false) or preempted queues of the other workers. */
static struct jf_task *steal(struct twoq *s, int worker, bool pre)
{
	struct twoq_worker *me = &s->w[worker];

	if (pre)
		return taskq_steal_any(&s->w[0].preq, sizeof(s->w[0]), s->nworkers, worker, &me->rng,
				       &me->preq);
	return taskq_steal_any(&s->w[0].newq, sizeof(s->w[0]), s->nworkers, worker, &me->rng,
			       &me->newq);
}

/* New work @worker could run: its own, or another worker's that is not pinned there. */
static bool any_new_work(const struct twoq *s, int worker)
{
	if (taskq_count(&s->w[worker].newq) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++)
		if (taskq_stealable(&s->w[i].newq) != 0)
			return true;
	return false;
}

static struct jf_task *twoq_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	struct twoq *s = twoq_of(p);
	struct twoq_worker *me = &s->w[worker];
	struct jf_task *t;

	(void)now;
	if ((t = taskq_pop_head(&me->newq)) != NULL || (t = steal(s, worker, false)) != NULL)
		return hand(me, t, TWOQ_NEW);
	return hand(me, taskq_pop_head(&me->preq), TWOQ_PRE);
}

/*
 * Idle: new work from anywhere; preempted work only when no worker has new work. One pass over
 * the workers (from a pseudo-random start) tries each new queue that has work and notes the
 * first other worker with preempted work; only when no new queue had any is that one (or, if
 * it emptied meanwhile, any) preempted queue stolen from. Without the pass the idle path read
 * every worker's counts three times (steal new, any new, steal preempted).
 */
static struct jf_task *twoq_balance(struct jf_policy *p, int worker, uint64_t now)
{
	struct twoq *s = twoq_of(p);
	struct twoq_worker *me = &s->w[worker];
	int n = s->nworkers, v, pre_victim = -1;
	bool new_seen = false;
	struct jf_task *t;

	(void)now;
	if ((t = taskq_pop_head(&me->newq)) != NULL) /* queued here since pick_next looked */
		return hand(me, t, TWOQ_NEW);
	if (n < 2)
		return hand(me, NULL, TWOQ_IDLE);
	v = (int)(sched_next_rand(&me->rng) % (uint64_t)n);
	for (int i = 0; i < n; i++, v = v + 1 == n ? 0 : v + 1) {
		struct twoq_worker *vw = &s->w[v];

		if (v == worker)
			continue;
		if (taskq_stealable(&vw->newq) != 0) {
			if ((t = taskq_steal_half(&vw->newq, &me->newq)) != NULL)
				return hand(me, t, TWOQ_NEW);
			new_seen = true; /* its queue was busy (or just emptied) */
		} else if (pre_victim < 0 && taskq_stealable(&vw->preq) != 0) {
			pre_victim = v;
		}
	}
	if (new_seen || pre_victim < 0) /* new work, but its queue was busy: try again next call */
		return hand(me, NULL, TWOQ_IDLE);
	if ((t = taskq_steal_half(&s->w[pre_victim].preq, &me->preq)) == NULL)
		t = steal(s, worker, true);
	return hand(me, t, TWOQ_PRE);
}

static bool twoq_has_work(struct jf_policy *p, int worker)
{
	struct twoq *s = twoq_of(p);

	if (taskq_count(&s->w[worker].newq) != 0 || taskq_count(&s->w[worker].preq) != 0)
		return true;
	for (int i = 0; i < s->nworkers; i++)
		if (taskq_stealable(&s->w[i].newq) != 0 || taskq_stealable(&s->w[i].preq) != 0)
			return true;
	return false;
}

static uint64_t twoq_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct twoq *s = twoq_of(p);

	(void)cur, (void)now;
	return __atomic_load_n(&s->w[worker].running, __ATOMIC_RELAXED) == TWOQ_PRE ? s->long_ns
										     : s->quantum_ns;
}

/* @cur used its slice: give way to any work queued here, or to new work anywhere. */
static bool twoq_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	struct twoq *s = twoq_of(p);

	(void)cur, (void)now;
	if (taskq_count(&s->w[worker].newq) != 0 || taskq_count(&s->w[worker].preq) != 0)
		return true;
	return any_new_work(s, worker);
}

/* New work never waits behind a task from the preempted queue. */
static bool twoq_wakeup_preempt(struct jf_policy *p, int target, struct jf_task *woken,
				uint64_t now)
{
	struct twoq *s = twoq_of(p);

	(void)woken, (void)now;
	return __atomic_load_n(&s->w[target].running, __ATOMIC_RELAXED) == TWOQ_PRE;
}

const struct jf_policy_ops jf_policy_twoq = {
	.name = "twoq",
	.summary = "Aspen two queues: new work first, longer quantum for preempted work",
	.flags = 0,
	.task_data_size = sizeof(struct twoq_task),
	.init = twoq_init,
	.destroy = twoq_destroy,
	.task_init = twoq_task_init,
	.enqueue = twoq_enqueue,
	.pick_next = twoq_pick_next,
	.balance = twoq_balance,
	.has_work = twoq_has_work,
	.slice = twoq_slice,
	.tick = twoq_tick,
	.wakeup_preempt = twoq_wakeup_preempt,
	.params = twoq_params,
	.nparams = TWOQ_NPARAMS,
};
