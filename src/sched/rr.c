/*
 * rr.c - "rr": per-worker round robin with a time slice (Skyloft §5.1, Linux SCHED_RR).
 *
 * Each worker serves its own FIFO queue; a task runs until it blocks, yields or has used its time
 * slice while another task waits in that worker's queue, and a yielded or preempted task goes to
 * the tail. A slice counts from the task's last pick (jf_task.started_ns): a task picked again
 * after a yield starts a fresh one. New and woken tasks go to attr.worker if set, else to the
 * caller's worker (the spawner or waker). An idle worker takes the oldest waiting task of another
 * worker (victims tried from a pseudo-random start), so no worker idles while a task waits
 * anywhere. A pinned task (jf_task_pin()) is queued on its worker only and never taken.
 *
 * Parameters (rr_params[] below): slice_us, the time slice (default 50 us, Skyloft Table 5;
 * JIFFY_RR_SLICE_US).
 *
 * The queues are ws's (pwq.h: one locked FIFO per worker, never two locks held together); rr
 * differs in its slice, its tick and in taking one task, not half a queue, when idle. tick and
 * slice read only the running task's started_ns and a queue count: no lock (tick may run in a
 * signal handler).
 */
#include "pwq.h"
#include "registry.h"

struct rr {
	struct pwq q; /* first: the pwq_* ops take the policy's priv as a struct pwq */
	uint64_t slice_ns;
};

static struct rr *rr_of(struct jf_policy *p)
{
	return (struct rr *)p->priv;
}

enum { RR_SLICE, RR_NPARAMS };

static const struct jf_policy_param rr_params[RR_NPARAMS] = {
	/* from 1 ns: the simulator models slices far below what a mechanism delivers (which
	 * interrupts no more often than every few us whatever the slice) */
	[RR_SLICE] = {.name = "slice_us", .type = JF_PARAM_US, .min = 1, .max = 1000000000,
		      .def = 50000, .doc = "time slice (Skyloft Table 5)"},
};

static int rr_init(struct jf_policy *p, const struct jf_policy_params *params)
{
	int rc = pwq_init_sized(p, params, sizeof(struct rr));

	if (rc == 0)
		rr_of(p)->slice_ns = params->value[RR_SLICE];
	return rc;
}

/*
 * Take the oldest waiting task of another worker. Victims are locked only with trylock and only
 * when they look non-empty, so an idle worker spinning here never makes a busy one wait.
 */
static struct jf_task *rr_balance(struct jf_policy *p, int worker, uint64_t now)
{
	struct pwq *s = pwq_of(p);
	int v;

	(void)now;
	if (s->nworkers < 2)
		return NULL;
	v = (int)(sched_next_rand(&s->w[worker].rng) % (uint64_t)s->nworkers);
	for (int i = 0; i < s->nworkers; i++, v = v + 1 == s->nworkers ? 0 : v + 1) {
		struct taskq *vq = &s->w[v].q;
		struct jf_task *t;

		if (v == worker || taskq_stealable(vq) == 0 || !jf_spin_trylock(&vq->lock))
			continue;
		t = taskq_pop_unpinned_locked(vq); /* a pinned task stays with its worker */
		jf_spin_unlock(&vq->lock);
		if (t)
			return t;
	}
	return NULL;
}

/* What is left of @cur's slice (a full one once it is used). */
static uint64_t rr_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	uint64_t slice = rr_of(p)->slice_ns, ran = now - cur->started_ns;

	(void)worker;
	return ran < slice ? slice - ran : slice;
}

/*
 * Preempt once the slice is used and a task waits in this worker's own queue. Tasks queued
 * elsewhere belong to their own workers' turns (an idle worker takes them); preempting for them
 * would only pick @cur again.
 */
static bool rr_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	return pwq_has_local_work(p, worker) && now - cur->started_ns >= rr_of(p)->slice_ns;
}

const struct jf_policy_ops jf_policy_rr = {
	.name = "rr",
	.summary = "per-worker round robin with a time slice (JIFFY_RR_SLICE_US), idle stealing",
	.flags = JF_POLICY_NEEDS_TIME,
	.task_data_size = sizeof(struct taskq_link),
	.init = rr_init,
	.destroy = pwq_destroy,
	.enqueue = pwq_enqueue,
	.pick_next = pwq_pick_next,
	.enqueue_pick = pwq_enqueue_pick,
	.balance = rr_balance,
	.has_work = pwq_has_work,
	.slice = rr_slice,
	.tick = rr_tick,
	.params = rr_params,
	.nparams = RR_NPARAMS,
};
