/*
 * jiffy/policy.h - the scheduling-policy interface.
 *
 * Owns: the contract between the runtime (src/core) and a scheduling policy (src/sched), after
 * Skyloft's scheduling operations and Linux's sched_class. A policy is data-structure logic only:
 * the worker index and the current time are passed in; a policy makes no system call, reads no
 * clock, never sleeps and never switches stacks. That is what lets sim/ run the very same file
 * with virtual time and lets one conformance suite test every policy.
 *
 * Concurrency: the runtime calls ops from any worker, concurrently. A policy protects its own
 * queues (spinlocks from src/common/spinlock.h are fine). Every op is called with preemption
 * disabled and must be short and bounded.
 *
 * The task life cycle the runtime drives (through an internal driver, src/sched/driver.h, that
 * the conformance tests and the simulator use too: a policy sees the same calls from all three):
 *   task_init -> enqueue(NEW) -> pick_next/balance -> [running] -> one of
 *       enqueue(YIELDED) | enqueue(PREEMPTED) | blocked -> ... enqueue(WOKEN) ... | task_exit.
 * A task is in at most one policy queue at a time; pick_next/balance remove it from there.
 */
#ifndef JIFFY_POLICY_H
#define JIFFY_POLICY_H

#include <jiffy/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jiffy/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Why a task is being made runnable. */
enum jf_enqueue_reason {
	JF_ENQ_NEW = 0,   /* just spawned */
	JF_ENQ_YIELDED,   /* the running task called jf_yield() */
	JF_ENQ_WOKEN,     /* it was blocked and is runnable again */
	JF_ENQ_PREEMPTED, /* it was interrupted at the end of its quantum */
	JF_ENQ_NR_REASONS
};

/** JF_TASK_POLICY_DATA - bytes of per-task storage a policy may use (links, vruntime, ...). */
#define JF_TASK_POLICY_DATA 64

/**
 * struct jf_task - what a policy sees of a uthread. The runtime owns the fields above
 * @policy_data; the policy owns @policy_data.
 * @id:           unique id of the uthread.
 * @last_worker:  worker it last ran on (-1 before its first run).
 * @home_worker:  worker it was spawned on.
 * @attr:         the policy attributes given at spawn (worker hint, class, type, weight, SLO).
 * @runnable_ns:  when it last became runnable (only with JF_POLICY_NEEDS_TIME).
 * @started_ns:   when it started its current run (only with JF_POLICY_NEEDS_TIME).
 * @ran_ns:       CPU time used so far (only with JF_POLICY_NEEDS_TIME).
 * @policy_data:  the policy's own per-task storage (task_data_size bytes of it are used).
 */
struct jf_task {
	uint64_t id;
	int32_t last_worker;
	int32_t home_worker;
	struct jf_sched_attr attr;
	uint64_t runnable_ns;
	uint64_t started_ns;
	uint64_t ran_ns;
	JF_ALIGNAS(16) unsigned char policy_data[JF_TASK_POLICY_DATA];
};

/* Policy flags. */
#define JF_POLICY_NEEDS_TIME 0x1u /* pass real times to ops and keep the *_ns fields above
				   * (without it: now = 0, except for slice and tick) */
#define JF_POLICY_CENTRAL 0x2u    /* tasks are placed by a dispatch op, not per-worker enqueue */

struct jf_policy;

/**
 * struct jf_policy_params - what a policy is configured with at init.
 * @nworkers: number of workers (worker indices are 0..nworkers-1).
 * @seed:     seed for any randomness (victim choice), so the simulator is deterministic.
 * @tun:      parameters (see above).
 */
struct jf_policy_params {
	int nworkers;
	uint64_t seed;
	struct jf_policy_tunables tun;
};

/**
 * struct jf_policy_ops - one table per policy. Optional ops may be NULL.
 *
 * @name:        (required) what JIFFY_POLICY and jf_policy_find() select it by.
 * @summary:     one line on what it does, for people (optional).
 * @flags:       JF_POLICY_NEEDS_TIME, JF_POLICY_CENTRAL.
 * @task_data_size: bytes of struct jf_task's policy_data it uses (at most JF_TASK_POLICY_DATA).
 * @init:        (required) allocate state in p->priv. Return 0 or -errno. Called once, before any
 *               worker runs; the only op allowed to allocate memory besides destroy's freeing.
 * @destroy:     (required) free p->priv. No task is queued any more, or the queued ones are being
 *               discarded at shutdown (the policy must not touch them).
 * @task_init:   (optional) a task is created on @worker; set up policy_data.
 * @task_exit:   (optional) a task has finished running for good on @worker.
 * @enqueue:     (required) make @t runnable, for @reason, from @worker (the caller's worker: the
 *               spawner, yielder, waker). Return the index of the worker whose queue received @t
 *               (the runtime wakes it if parked), or -1 if no particular worker should be woken.
 * @pick_next:   (required) remove and return the next task for @worker, or NULL if it has none.
 *               Called after enqueue(YIELDED) of the running task too: returning it again means
 *               "keep running it".
 * @enqueue_pick: (optional) enqueue(@t, @reason) then pick_next(@worker) as one step, storing
 *               enqueue's return value in *@target. Lets a policy take its queue lock once on
 *               the yield path; without it the runtime calls the two ops.
 * @blocked:     (optional) the task running on @worker stops being runnable (it blocks).
 * @balance:     (optional) @worker is idle: take a task from elsewhere (work stealing) and return
 *               it, or NULL. Called repeatedly while the worker spins, so make failure cheap.
 * @has_work:    (required) cheap, lock-free hint: might pick_next or balance on @worker return a
 *               task? A false "true" costs a spin; a false "false" may delay work until the next
 *               enqueue wakes the worker, so it must not be false while work waits for @worker.
 * @slice:       (optional) @cur starts (or goes on) running on @worker at @now: how long may it
 *               run before tick() is asked? 0 or no op: the runtime's quantum. The mechanism
 *               interrupts at max(slice, a few us), only while has_work(@worker).
 * @tick:        (optional) the task @cur has used its slice on @worker: should it be
 *               preempted now? Asked only after has_work(@worker) said yes; without it, that
 *               yes is the answer. May be called from a signal handler: lock-free, no
 *               allocation. If it says no, the runtime asks slice() again for when to look next.
 *               (cur->started_ns is set when the policy has JF_POLICY_NEEDS_TIME.)
 * @wakeup_preempt: (optional) @woken was just enqueued to worker @target, which is running a
 *               uthread: should that one be preempted for it now? The policy compares with
 *               what it last handed @target (it keeps that itself: another worker's running
 *               task is not safe to touch). Yes: the runtime preempts it at once, directly when
 *               @target is the caller's worker, else through the mechanism's kick (a signal or
 *               a safepoint flag; nothing under "none"). Lock-free or briefly locked; no
 *               allocation.
 * @dispatch:    (optional, JF_POLICY_CENTRAL) run by a dispatcher: place queued tasks on workers.
 */
struct jf_policy_ops {
	const char *name;
	const char *summary;
	unsigned flags;
	size_t task_data_size;

	int (*init)(struct jf_policy *p, const struct jf_policy_params *params);
	void (*destroy)(struct jf_policy *p);
	void (*task_init)(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now);
	void (*task_exit)(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now);
	int (*enqueue)(struct jf_policy *p, int worker, struct jf_task *t,
		       enum jf_enqueue_reason reason, uint64_t now);
	struct jf_task *(*pick_next)(struct jf_policy *p, int worker, uint64_t now);
	struct jf_task *(*enqueue_pick)(struct jf_policy *p, int worker, struct jf_task *t,
					enum jf_enqueue_reason reason, uint64_t now, int *target);
	void (*blocked)(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now);
	struct jf_task *(*balance)(struct jf_policy *p, int worker, uint64_t now);
	bool (*has_work)(struct jf_policy *p, int worker);
	uint64_t (*slice)(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now);
	bool (*tick)(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now);
	bool (*wakeup_preempt)(struct jf_policy *p, int target, struct jf_task *woken, uint64_t now);
	void (*dispatch)(struct jf_policy *p, uint64_t now);
};

/**
 * struct jf_policy - an instance: its ops, its private state, its parameters.
 * @ops:    the policy's table.
 * @priv:   its state (set by init, freed by destroy).
 * @params: what it was configured with.
 */
struct jf_policy {
	const struct jf_policy_ops *ops;
	void *priv;
	struct jf_policy_params params;
};

/**
 * jf_policy_find() - the built-in or registered policy called @name, or NULL.
 */
JF_API const struct jf_policy_ops *jf_policy_find(const char *name);

/**
 * jf_policy_register() - add a policy the runtime can select by name (before jf_run()).
 * Return: 0; -EEXIST if the name is taken; -EINVAL if a required op is missing or
 * task_data_size > JF_TASK_POLICY_DATA; -ENOSPC if the table is full.
 */
JF_API int jf_policy_register(const struct jf_policy_ops *ops);

/** jf_policy_names() - write the available names, comma separated, into @buf. */
JF_API void jf_policy_names(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_POLICY_H */
