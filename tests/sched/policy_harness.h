/*
 * tests/sched/policy_harness.h - drive a scheduling policy's ops in virtual time, without the
 * runtime: the conformance suite's model of the runtime (and the simulator's, issue 6).
 *
 * Owns: struct ph_sim (a policy instance, N simulated workers, a task table with the state the
 * runtime would know for each task) and the runtime's events in virtual time: spawn, wake, yield,
 * preemption at the due time, block, exit, an idle worker's look. The calls into the policy, and
 * the stamps and times that go with them, are not done here but by the policy driver the runtime
 * and the simulator use too (src/sched/driver.h): the harness tests the policy as the runtime
 * drives it, not as a copy of the runtime would. Every pick is checked against the model: a
 * picked task must be queued (not running elsewhere, not blocked, not finished, not picked twice),
 * which is what "no lost or duplicated task" means; and a pinned task (jf_task_pin()) must be
 * picked by its own worker only.
 * Single-threaded and deterministic: the same seed gives the same run.
 */
#ifndef JIFFY_TESTS_POLICY_HARNESS_H
#define JIFFY_TESTS_POLICY_HARNESS_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

#include "../../src/sched/driver.h"

enum ph_state { PH_UNBORN, PH_QUEUED, PH_RUNNING, PH_BLOCKED, PH_DONE };

struct ph_task {
	struct jf_task t; /* what the policy sees */
	enum ph_state state;
	int worker;       /* PH_RUNNING: where */
	uint64_t cpu_ns;  /* CPU time received (virtual) */
	uint64_t run_from; /* PH_RUNNING: when its run began (started_ns is the driver's) */
	uint64_t picks;
	uint64_t first_run_ns, enq_ns;
};

struct ph_sim {
	struct jf_driver d; /* the policy, driven as the runtime drives it */
	int nworkers;
	uint64_t now;
	int *cur;         /* per worker: task index running, or -1 */
	uint64_t *due;    /* per worker: when the policy is asked (tick) next */
	struct ph_task *tasks;
	int ntasks;
	uint64_t rng;
	int nqueued;      /* tasks in PH_QUEUED */
	int npinq;        /* of those, the pinned ones */
	int *pinq;        /* per worker: queued tasks pinned to it */
	const char *why;  /* the first violation found, or NULL */
	char whybuf[256];
	uint64_t wakeup_preempts;
};

static inline uint64_t ph_rand(struct ph_sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static inline void ph_violation(struct ph_sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void ph_violation(struct ph_sim *s, const char *fmt, ...)
{
	va_list ap;
	if (s->why)
		return;
	va_start(ap, fmt);
	vsnprintf(s->whybuf, sizeof(s->whybuf), fmt, ap);
	va_end(ap);
	s->why = s->whybuf;
}

static inline int ph_index(struct ph_sim *s, struct jf_task *t)
{
	return (int)((struct ph_task *)((char *)t - offsetof(struct ph_task, t)) - s->tasks);
}

/* Set up @ntasks (unborn) tasks and the policy @name with quantum and values of @tun (NULL:
 * defaults, jf_policy_params_default()). */
static inline int ph_init(struct ph_sim *s, const char *name, int nworkers, int ntasks,
			  const struct jf_policy_params *tun, uint64_t seed)
{
	const struct jf_policy_ops *ops = jf_policy_find(name);
	struct jf_policy_params params;

	memset(s, 0, sizeof(*s));
	if (!ops)
		return -1;
	s->nworkers = nworkers;
	s->ntasks = ntasks;
	s->rng = seed | 1;
	s->now = 1000000; /* never 0: 0 means "not running" in the runtime */
	s->cur = malloc(sizeof(int) * (size_t)nworkers);
	s->due = calloc((size_t)nworkers, sizeof(uint64_t));
	s->pinq = calloc((size_t)nworkers, sizeof(int));
	/* aligned_alloc wants a size that is a multiple of the alignment */
	s->tasks = aligned_alloc(64, (sizeof(struct ph_task) * (size_t)ntasks + 63) & ~(size_t)63);
	if (!s->cur || !s->due || !s->pinq || !s->tasks)
		return -1;
	memset(s->tasks, 0, sizeof(struct ph_task) * (size_t)ntasks);
	for (int i = 0; i < nworkers; i++)
		s->cur[i] = -1;
	for (int i = 0; i < ntasks; i++) {
		s->tasks[i].t.id = (uint64_t)i + 1;
		s->tasks[i].t.last_worker = -1;
		s->tasks[i].t.attr.worker = -1;
	}
	memset(&params, 0, sizeof(params));
	params.nworkers = nworkers;
	params.seed = seed;
	if (tun) {
		params.quantum_ns = tun->quantum_ns;
		memcpy(params.value, tun->value, sizeof(params.value));
	} else {
		jf_policy_params_default(ops, &params);
	}
	return jf_drv_init(&s->d, ops, &params);
}

static inline void ph_fini(struct ph_sim *s)
{
	jf_drv_fini(&s->d);
	free(s->cur);
	free(s->due);
	free(s->pinq);
	free(s->tasks);
}

static inline uint64_t ph_slice(struct ph_sim *s, int w, struct jf_task *t)
{
	return jf_drv_slice(&s->d, w, t, s->now);
}

/* A pick on @w returned @t (or NULL): check it against the model and start running it. */
static inline void ph_start(struct ph_sim *s, int w, struct jf_task *t)
{
	int i;

	if (!t) {
		s->cur[w] = -1;
		return;
	}
	i = ph_index(s, t);
	if (i < 0 || i >= s->ntasks) {
		ph_violation(s, "worker %d picked a task the runtime never gave the policy", w);
		s->cur[w] = -1;
		return;
	}
	if (s->tasks[i].state != PH_QUEUED) {
		ph_violation(s, "worker %d picked task %d which is %s", w, i,
			     s->tasks[i].state == PH_RUNNING	? "running (duplicated)"
			     : s->tasks[i].state == PH_BLOCKED ? "blocked"
			     : s->tasks[i].state == PH_DONE	? "finished"
							       : "not spawned");
		s->cur[w] = -1;
		return;
	}
	if (jf_task_pin(t) >= 0 && jf_task_pin(t) != w)
		ph_violation(s, "worker %d picked task %d, which is pinned to worker %d", w, i,
			     jf_task_pin(t));
	s->tasks[i].state = PH_RUNNING;
	s->nqueued--;
	if (jf_task_pin(t) >= 0 && jf_task_pin(t) < s->nworkers) {
		s->npinq--;
		s->pinq[jf_task_pin(t)]--;
	}
	s->tasks[i].worker = w;
	s->tasks[i].picks++;
	if (!s->tasks[i].first_run_ns)
		s->tasks[i].first_run_ns = s->now;
	s->tasks[i].run_from = s->now;
	jf_drv_run_start(&s->d, w, t, s->now);
	s->cur[w] = i;
	s->due[w] = s->now + ph_slice(s, w, t);
}

/* What the runtime does when @w needs a task: the driver's pick (pick_next, then balance). */
static inline struct jf_task *ph_pick(struct ph_sim *s, int w)
{
	bool stolen;

	return jf_drv_pick(&s->d, w, s->now, &stolen);
}

static inline void ph_preempt(struct ph_sim *s, int w);

/* The runtime's after_enqueue: wakeup preemption of the target's running task. */
static inline void ph_after_enqueue(struct ph_sim *s, int target, struct jf_task *t,
				    enum jf_enqueue_reason r)
{
	if (target < -1 || target >= s->nworkers) {
		ph_violation(s, "enqueue returned worker %d (nworkers %d)", target, s->nworkers);
		return;
	}
	if (jf_drv_may_wakeup_preempt(&s->d, target, r) && s->cur[target] >= 0 &&
	    jf_drv_wakeup_preempt(&s->d, target, t, s->now)) {
		s->wakeup_preempts++;
		ph_preempt(s, target);
	}
}

/* Task @i becomes queued in the model (the caller hands it to the policy). */
static inline void ph_queued(struct ph_sim *s, int i)
{
	s->tasks[i].state = PH_QUEUED;
	s->nqueued++;
	if (jf_task_pin(&s->tasks[i].t) >= 0 && jf_task_pin(&s->tasks[i].t) < s->nworkers) {
		s->npinq++; /* a pin changes only while its task runs: stable until picked */
		s->pinq[jf_task_pin(&s->tasks[i].t)]++;
	}
	s->tasks[i].enq_ns = s->now;
}

static inline int ph_enqueue(struct ph_sim *s, int from, int i, enum jf_enqueue_reason r)
{
	ph_queued(s, i);
	return jf_drv_enqueue(&s->d, from, &s->tasks[i].t, r, s->now);
}

/* A new task @i, spawned by a uthread on worker @from. */
static inline void ph_spawn(struct ph_sim *s, int from, int i)
{
	struct jf_task *t = &s->tasks[i].t;

	t->home_worker = from;
	jf_drv_task_init(&s->d, from, t, s->now);
	ph_after_enqueue(s, ph_enqueue(s, from, i, JF_ENQ_NEW), t, JF_ENQ_NEW);
}

/* Blocked task @i is woken by a uthread (or timer) on worker @from. */
static inline void ph_wake(struct ph_sim *s, int from, int i)
{
	ph_after_enqueue(s, ph_enqueue(s, from, i, JF_ENQ_WOKEN), &s->tasks[i].t, JF_ENQ_WOKEN);
}

/* The running task of @w stops running: account its CPU time (runtime: account_run). */
static inline int ph_stop(struct ph_sim *s, int w)
{
	int i = s->cur[w];

	jf_drv_run_end(&s->d, &s->tasks[i].t, s->now);
	s->tasks[i].cpu_ns += s->now - s->tasks[i].run_from;
	s->cur[w] = -1;
	return i;
}

/*
 * The running task of @w yields (or is preempted, @r): the driver's requeue-and-pick, as the
 * runtime does. Half of the time, for a policy with enqueue_pick, the driver's enqueue then its
 * pick instead (what the driver does for a policy without enqueue_pick): enqueue_pick must
 * behave as the two ops it stands for.
 */
static inline void ph_requeue(struct ph_sim *s, int w, enum jf_enqueue_reason r)
{
	int i = ph_stop(s, w), target;
	struct jf_task *t;
	bool stolen;

	if (!s->d.policy.ops->enqueue_pick || !(ph_rand(s) & 1)) {
		ph_queued(s, i);
		t = jf_drv_requeue_pick(&s->d, w, &s->tasks[i].t, r, s->now, &target, &stolen);
		if (target < -1 || target >= s->nworkers)
			ph_violation(s, "enqueue(%s) returned worker %d",
				     r == JF_ENQ_YIELDED ? "YIELDED" : "PREEMPTED", target);
	} else {
		target = ph_enqueue(s, w, i, r);
		t = ph_pick(s, w);
	}
	/* It may have gone to another worker (its attr.worker hint): then this one may idle. */
	if (!t && target == w)
		ph_violation(s, "worker %d: task %d was re-queued (%s) here but nothing could be picked",
			     w, i, r == JF_ENQ_YIELDED ? "yield" : "preempt");
	ph_start(s, w, t);
}

static inline void ph_preempt(struct ph_sim *s, int w)
{
	ph_requeue(s, w, JF_ENQ_PREEMPTED);
}

/* The running task of @w blocks (@exit: finishes); @w then picks, or goes idle. */
static inline void ph_block(struct ph_sim *s, int w, bool exit)
{
	int i = ph_stop(s, w);

	if (exit) {
		s->tasks[i].state = PH_DONE;
		jf_drv_task_exit(&s->d, w, &s->tasks[i].t, s->now);
	} else {
		s->tasks[i].state = PH_BLOCKED;
		jf_drv_blocked(&s->d, w, &s->tasks[i].t, s->now);
	}
	ph_start(s, w, ph_pick(s, w));
}

/*
 * The mechanism fires on @w at its due time, and the runtime decides (decide_and_preempt): the
 * driver's tick decision, then preempt or a new slice.
 */
static inline void ph_tick(struct ph_sim *s, int w)
{
	struct jf_task *t = &s->tasks[s->cur[w]].t;

	if (!jf_drv_has_work(&s->d, w))
		return; /* the skip rule: the mechanism does not interrupt a worker with nothing
			 * else to run (the due time stays; work that arrives makes it fire) */
	if (jf_drv_tick(&s->d, w, t, s->now))
		ph_preempt(s, w);
	else
		s->due[w] = s->now + ph_slice(s, w, t);
}

/* An idle worker looks for work the way the idle loop does: has_work, then pick/balance. */
static inline bool ph_idle_look(struct ph_sim *s, int w)
{
	if (!jf_drv_has_work(&s->d, w))
		return false;
	ph_start(s, w, ph_pick(s, w));
	return s->cur[w] >= 0;
}

/* The running task of @w pins itself there (jf_thread_pin()), or unpins itself (@on false): a
 * pin changes only while its task runs, as in the runtime. */
static inline void ph_pin(struct ph_sim *s, int w, bool on)
{
	struct jf_task *t = &s->tasks[s->cur[w]].t;

	t->pin_worker = w;
	t->pinned = on;
}

/* Queued tasks worker @w may run (not pinned elsewhere). */
static inline int ph_queued_for(const struct ph_sim *s, int w)
{
	return s->nqueued - (s->npinq - s->pinq[w]);
}

static inline int ph_count(const struct ph_sim *s, enum ph_state st)
{
	int n = 0;
	for (int i = 0; i < s->ntasks; i++)
		n += s->tasks[i].state == st;
	return n;
}

#endif /* JIFFY_TESTS_POLICY_HARNESS_H */
