/*
 * driver.h - the policy driver: the one runtime side of the contract in include/jiffy/policy.h.
 *
 * Owns: every call into a policy's struct jf_policy_ops, and the bookkeeping the contract
 * promises around those calls: the time an op is given, the JF_POLICY_NEEDS_TIME stamps of
 * struct jf_task (runnable_ns, started_ns, ran_ns, and last_worker), the order of pick_next and
 * balance, enqueue_pick or its two-call equivalent, the slice fallback and the tick decision.
 * Three callers drive policies and all three go through here: the runtime (src/runtime/thread.c,
 * src/runtime/runtime.c, src/runtime/preempt/), the conformance harness
 * (tests/sched/policy_harness.h) and the simulator (sim/engine.c). They used to do it each their
 * own way and drifted (the harness gave real times to policies that had not asked for them; the
 * runtime asked tick() without has_work() first); a rule written once here cannot drift. Not
 * installed: internal to Jiffy, and linked into the tests and the simulator through the static
 * library.
 *
 * What the driver does not know: clocks, workers, threads, locks. A caller passes its own idea
 * of "now" (the runtime's clock, or virtual time) and the worker index; the driver decides what
 * the policy sees. That is what lets the same code run in virtual time.
 *
 * Invariants a caller must keep:
 *  - Time: every op that places or moves tasks (task_init, enqueue, enqueue_pick, pick_next,
 *    balance, blocked, task_exit, wakeup_preempt) gets @now only with JF_POLICY_NEEDS_TIME and 0
 *    otherwise, whatever the caller passed (so the runtime may pass 0 and skip its clock read:
 *    jf_policy_now()). slice and tick always get the caller's time: they measure a run against
 *    the mechanism's clock.
 *  - A run: jf_drv_run_start() when a task starts running on a worker, jf_drv_run_end() when it
 *    stops (yield, preemption, block, exit), before the op that hands it back.
 *  - The tick decision: has_work() first; only if other work may wait is tick() asked (or,
 *    without a tick op, the answer is yes). A policy's tick never runs on a worker with nothing
 *    else to run.
 *
 * Pending attributes (jf_thread_set_sched_attr()) are not the driver's: the runtime applies them
 * to t->attr in its ready_for_policy() and account_run() before calling in here. They are runtime
 * state guarded by a per-uthread lock, due at every hand-over (enqueue, but also blocked and
 * task_exit, through account_run), and the harness and the simulator have no such thing: taking
 * them in jf_drv_enqueue() would have covered one hand-over of three and put a runtime lock in
 * policy-side code. One place applies them: the runtime, before any op sees the task.
 *
 * init and destroy are here too (jf_drv_init(), jf_drv_fini()), so that the flags and the
 * stealing rule are derived once, from the same table that is called.
 *
 * Cost: everything on the switch path is static inline and makes the indirect calls the runtime
 * made before, no more; only jf_drv_init() and jf_drv_fini() are out of line.
 */
#ifndef JIFFY_SCHED_DRIVER_H
#define JIFFY_SCHED_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jiffy/policy.h>

/**
 * struct jf_driver - one policy instance and what is derived from its table once.
 * @policy:     the instance (ops, priv, params); ops is NULL until jf_drv_init() succeeds.
 * @flags:      @policy.ops->flags (JF_POLICY_NEEDS_TIME, JF_POLICY_CENTRAL).
 * @can_steal:  the policy has balance and there are other workers to take work from.
 * @quantum_ns: the runtime's quantum (@policy.params.quantum_ns): the slice without a
 *              slice op, or when it answers 0.
 */
struct jf_driver {
	struct jf_policy policy;
	unsigned flags;
	bool can_steal;
	uint64_t quantum_ns;
};

/**
 * jf_drv_init() - set up @d to drive @ops with @params (copied into @d->policy.params, where
 * ops may read them later) and call the policy's init.
 * Return: 0, or init's negative errno; then @d holds no policy and jf_drv_fini() does nothing.
 */
int jf_drv_init(struct jf_driver *d, const struct jf_policy_ops *ops,
		const struct jf_policy_params *params);

/** jf_drv_fini() - the policy's destroy, if jf_drv_init() succeeded; @d holds none after. */
void jf_drv_fini(struct jf_driver *d);

static inline bool jf_drv_needs_time(const struct jf_driver *d)
{
	return (d->flags & JF_POLICY_NEEDS_TIME) != 0;
}

/* The time a placing op is given for the caller's @now: @now with NEEDS_TIME, else 0. */
static inline uint64_t jf_drv_time(const struct jf_driver *d, uint64_t now)
{
	return jf_drv_needs_time(d) ? now : 0;
}

/* A task @t was created on @worker (its id, home_worker and attr set by the caller). */
static inline void jf_drv_task_init(struct jf_driver *d, int worker, struct jf_task *t,
				    uint64_t now)
{
	struct jf_policy *p = &d->policy;

	if (p->ops->task_init)
		p->ops->task_init(p, worker, t, jf_drv_time(d, now));
}

/*
 * Make @t runnable for @reason from @worker (the caller's). Return: enqueue's answer, the worker
 * whose queue received @t, or -1 (the caller wakes or tells that worker: after_enqueue).
 */
static inline int jf_drv_enqueue(struct jf_driver *d, int worker, struct jf_task *t,
				 enum jf_enqueue_reason reason, uint64_t now)
{
	struct jf_policy *p = &d->policy;

	now = jf_drv_time(d, now);
	t->runnable_ns = now;
	return p->ops->enqueue(p, worker, t, reason, now);
}

/* pick_next found nothing on @worker: balance, where the policy steals. */
static inline struct jf_task *jf_drv__steal(struct jf_driver *d, int worker, uint64_t ptime,
					    bool *stolen)
{
	struct jf_task *t = NULL;

	if (d->can_steal)
		t = d->policy.ops->balance(&d->policy, worker, ptime);
	*stolen = t != NULL;
	return t;
}

/*
 * What @worker runs next: pick_next, then balance when stealing is possible. Return: the task,
 * removed from its queue, or NULL; *@stolen says whether balance found it.
 */
static inline struct jf_task *jf_drv_pick(struct jf_driver *d, int worker, uint64_t now,
					  bool *stolen)
{
	struct jf_policy *p = &d->policy;
	struct jf_task *t;

	now = jf_drv_time(d, now);
	t = p->ops->pick_next(p, worker, now);
	if (t) {
		*stolen = false;
		return t;
	}
	return jf_drv__steal(d, worker, now, stolen);
}

/*
 * @t, which was running on @worker (yield, preemption) or is woken by the task leaving it (the
 * joiner of an exiting one), goes back to the policy for @reason and @worker picks: enqueue_pick
 * when the policy has it (one queue lock), else enqueue then pick_next; then balance. @t may be
 * the task picked ("keep running it"). *@target: enqueue's answer (see jf_drv_enqueue()).
 */
static inline struct jf_task *jf_drv_requeue_pick(struct jf_driver *d, int worker,
						  struct jf_task *t, enum jf_enqueue_reason reason,
						  uint64_t now, int *target, bool *stolen)
{
	struct jf_policy *p = &d->policy;
	struct jf_task *next;

	now = jf_drv_time(d, now);
	t->runnable_ns = now;
	if (p->ops->enqueue_pick) {
		next = p->ops->enqueue_pick(p, worker, t, reason, now, target);
	} else {
		*target = p->ops->enqueue(p, worker, t, reason, now);
		next = p->ops->pick_next(p, worker, now);
	}
	if (next) {
		*stolen = false;
		return next;
	}
	return jf_drv__steal(d, worker, now, stolen);
}

/* @t starts (or, picked again, goes on with a new) run on @worker at @now. */
static inline void jf_drv_run_start(struct jf_driver *d, int worker, struct jf_task *t,
				    uint64_t now)
{
	__atomic_store_n(&t->last_worker, worker, __ATOMIC_RELAXED); /* jf_dump_threads() reads it */
	if (jf_drv_needs_time(d))
		t->started_ns = now;
}

/* @t's run ends at @now (it yields, is preempted, blocks or exits): account it in ran_ns. */
static inline void jf_drv_run_end(struct jf_driver *d, struct jf_task *t, uint64_t now)
{
	if (jf_drv_needs_time(d))
		t->ran_ns += now - t->started_ns;
}

/* The task @t that ran on @worker blocks: it is not runnable until a jf_drv_enqueue(WOKEN). */
static inline void jf_drv_blocked(struct jf_driver *d, int worker, struct jf_task *t,
				  uint64_t now)
{
	struct jf_policy *p = &d->policy;

	if (p->ops->blocked)
		p->ops->blocked(p, worker, t, jf_drv_time(d, now));
}

/* The task @t that ran on @worker has finished for good. */
static inline void jf_drv_task_exit(struct jf_driver *d, int worker, struct jf_task *t,
				    uint64_t now)
{
	struct jf_policy *p = &d->policy;

	if (p->ops->task_exit)
		p->ops->task_exit(p, worker, t, jf_drv_time(d, now));
}

/* How long @cur (NULL: none) may run on @worker from @now before the tick decision: the slice
 * op's answer, or the quantum when it has none or answers 0. */
static inline uint64_t jf_drv_slice(struct jf_driver *d, int worker, struct jf_task *cur,
				    uint64_t now)
{
	struct jf_policy *p = &d->policy;
	uint64_t s = cur && p->ops->slice ? p->ops->slice(p, worker, cur, now) : 0;

	return s ? s : d->quantum_ns;
}

/* Might @worker find a task (pick_next or balance)? Lock-free; safe in a signal handler. */
static inline bool jf_drv_has_work(struct jf_driver *d, int worker)
{
	return d->policy.ops->has_work(&d->policy, worker);
}

/*
 * @cur, running on @worker, has used its slice: preempt it now? No when nothing else may run
 * there (has_work); else the policy's tick, or yes without one. May run in a signal handler.
 */
static inline bool jf_drv_tick(struct jf_driver *d, int worker, struct jf_task *cur,
			       uint64_t now)
{
	struct jf_policy *p = &d->policy;

	if (!p->ops->has_work(p, worker))
		return false;
	return p->ops->tick ? p->ops->tick(p, worker, cur, now) : true;
}

/*
 * The skip rule (Aspen's), written once for every mechanism of the runtime and for the
 * simulator: a running task's due time is worth interrupting it only if other work waits on its
 * worker; with @skip_rule false (JIFFY_PREEMPT_SKIP=0) always. (The runtime adds a reason of its
 * own: a busy worker that must poll descriptors.)
 */
static inline bool jf_drv_due_worth_interrupt(struct jf_driver *d, int worker, bool skip_rule)
{
	return !skip_rule || jf_drv_has_work(d, worker);
}

/*
 * enqueue(@reason) answered @target: which busy workers must the preemption mechanism be told
 * that work waits (a run that began with nothing else to run was not armed: the skip rule)?
 * JF_DRV_TELL_ALL for a shared queue (@target -1: it concerns every worker, whatever the reason),
 * @target for a new or woken task queued for a particular worker, JF_DRV_TELL_NONE for a
 * yielded or preempted one (its own worker's next pick). The runtime's after_enqueue and the
 * simulator's ask this, so they cannot drift (they used to test "not yielded and not preempted"
 * and "new or woken": equal only while there are four reasons).
 */
#define JF_DRV_TELL_ALL (-1)
#define JF_DRV_TELL_NONE (-2)
static inline int jf_drv_work_to_tell(int target, enum jf_enqueue_reason reason)
{
	if (target < 0)
		return JF_DRV_TELL_ALL;
	return reason == JF_ENQ_NEW || reason == JF_ENQ_WOKEN ? target : JF_DRV_TELL_NONE;
}

/*
 * Is wakeup preemption to be considered after enqueue(@reason) answered @target? Only for new
 * and woken tasks queued for a particular worker, and only if the policy has the op. Cheap: the
 * caller checks it before looking at @target's state.
 */
static inline bool jf_drv_may_wakeup_preempt(const struct jf_driver *d, int target,
					     enum jf_enqueue_reason reason)
{
	return d->policy.ops->wakeup_preempt && target >= 0 &&
	       (reason == JF_ENQ_NEW || reason == JF_ENQ_WOKEN);
}

/* @woken was just queued for @target, which runs a task: should that one be preempted now?
 * Call only where jf_drv_may_wakeup_preempt() said yes. */
static inline bool jf_drv_wakeup_preempt(struct jf_driver *d, int target, struct jf_task *woken,
					 uint64_t now)
{
	struct jf_policy *p = &d->policy;

	return p->ops->wakeup_preempt(p, target, woken, jf_drv_time(d, now));
}

#endif /* JIFFY_SCHED_DRIVER_H */
