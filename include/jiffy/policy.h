/*
 * jiffy/policy.h - the scheduling-policy interface.
 *
 * Owns: the contract between the runtime (src/runtime) and a scheduling policy (src/sched), after
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
 *
 * Pinned tasks (jf_task_pin() >= 0: jf_thread_pin(), struct jf_attr.pin): a pinned task runs only
 * on its worker, under every policy. Its enqueue, whatever the reason and whichever worker calls
 * it, puts it where only that worker takes it and returns that worker; no other worker's
 * pick_next or balance may ever return it (no stealing it, no shared queue another worker pops);
 * has_work(w) must count it for its worker (and should not for the others). The pin changes only
 * while the task runs (it is in no queue then), so a policy may read it at enqueue and trust it
 * until the task is picked. tests/sched (sched.ops.<policy>) checks this for every policy.
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
 * @pin_worker:   with @pinned: the only worker it may run on (read it with jf_task_pin()).
 * @pinned:       nonzero while it is pinned (zero-initialized tasks are not).
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
	int32_t pin_worker;
	uint32_t pinned;
	struct jf_sched_attr attr;
	uint64_t runnable_ns;
	uint64_t started_ns;
	uint64_t ran_ns;
	JF_ALIGNAS(16) unsigned char policy_data[JF_TASK_POLICY_DATA];
};

/**
 * jf_task_pin() - the worker @t is pinned to (it may run nowhere else), or -1 if it is not.
 */
static inline int jf_task_pin(const struct jf_task *t)
{
	return t->pinned ? (int)t->pin_worker : -1;
}

/* Policy flags. */
#define JF_POLICY_NEEDS_TIME 0x1u /* pass real times to ops and keep the *_ns fields above
				   * (without it: now = 0, except for slice and tick) */
#define JF_POLICY_CENTRAL 0x2u    /* tasks are placed by a dispatch op, not per-worker enqueue */

struct jf_policy;

/**
 * enum jf_param_type - how a policy parameter is written, and what the policy reads.
 *
 * A duration may always be written with a unit instead ("50us", "0.05ms", "12500ns"); without
 * one it is in the unit its type names. Every duration is read by the policy in nanoseconds,
 * and its min, max and def in struct jf_policy_param are nanoseconds too.
 */
enum jf_param_type {
	JF_PARAM_US = 0, /* a duration written in microseconds ("50", "12.5"); read in ns */
	JF_PARAM_NS,     /* a duration written in nanoseconds; read in ns */
	JF_PARAM_UINT,   /* an unsigned integer */
	JF_PARAM_BOOL,   /* 0/1, yes/no, on/off, true/false; read as 0 or 1 */
	JF_PARAM_ENUM,   /* one of the names in choices; read as its index */
	JF_PARAM_NR_TYPES
};

/** JF_POLICY_PARAMS_MAX - the most parameters one policy may declare. */
#define JF_POLICY_PARAMS_MAX 16
/** JF_POLICY_QUANTUM_DEFAULT_NS - jf_policy_params_default()'s quantum: the papers' 100 us. */
#define JF_POLICY_QUANTUM_DEFAULT_NS 100000u

/**
 * struct jf_policy_param - one parameter a policy declares (an entry of jf_policy_ops.params).
 * @name:      lower-case letters, digits and '_', at most JF_PARAM_NAME_MAX - 1 of them, ending
 *             in its unit where it has one ("slice_us"). It is set by the environment variable
 *             JIFFY_<POLICY>_<NAME> (upper case; other characters of the policy's name become
 *             '_'), by jf_config_set_param() and by jiffy-sim's --param NAME=VALUE.
 * @type:      how it is written and read (enum jf_param_type).
 * @min, @max: the range allowed, as the policy reads it (ns for durations); ignored for
 *             JF_PARAM_BOOL (0..1) and JF_PARAM_ENUM (0..number of choices - 1).
 * @def:       the default, as the policy reads it; within the range.
 * @choices:   JF_PARAM_ENUM only: the names, NULL-terminated; the value is the index.
 * @env_alias: another environment variable accepted for it (a name kept for compatibility), or
 *             NULL.
 * @doc:       one line on what it does, for people (jf_config_print(), docs/policies.md).
 */
struct jf_policy_param {
	const char *name;
	enum jf_param_type type;
	uint64_t min;
	uint64_t max;
	uint64_t def;
	const char *const *choices;
	const char *env_alias;
	const char *doc;
};

/**
 * struct jf_policy_params - what a policy is configured with at init.
 * @nworkers:   number of workers (worker indices are 0..nworkers-1).
 * @seed:       seed for any randomness (victim choice), so the simulator is deterministic.
 * @quantum_ns: the runtime's quantum (jf_config.quantum_ns, JIFFY_QUANTUM_US): the slice of a
 *              task when the slice op says 0 or is absent. Not a policy parameter: it belongs
 *              to the mechanism, and every policy gets it.
 * @value:      the policy's parameters, in the order of its jf_policy_ops.params table:
 *              @value[i] is params[i]'s value (ns for a duration, 0/1, an enum's index), already
 *              checked against its range. Entries past nparams are 0.
 */
struct jf_policy_params {
	int nworkers;
	uint64_t seed;
	uint64_t quantum_ns;
	uint64_t value[JF_POLICY_PARAMS_MAX];
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
 * @params:      the parameters the policy takes (see struct jf_policy_param), or NULL. init
 *               reads their values from params->value[i], in this order: index the table with
 *               an enum, as src/sched/rr.c does, and read params->value[RR_SLICE].
 * @nparams:     entries in @params (at most JF_POLICY_PARAMS_MAX).
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
	const struct jf_policy_param *params;
	size_t nparams;
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
 * jf_policy_register() - add a policy the runtime can select by name (before jf_run(), and
 * before jf_config_apply_env() if its parameters are to be read from the environment).
 * Return: 0; -EEXIST if the name is taken; -EINVAL if a required op is missing,
 * task_data_size > JF_TASK_POLICY_DATA, or its parameter table is malformed (more than
 * JF_POLICY_PARAMS_MAX entries, a name that is not [a-z0-9_] or is used twice, an unknown type,
 * a default outside [min, max], an enum without choices); -ENOSPC if the table is full.
 */
JF_API int jf_policy_register(const struct jf_policy_ops *ops);

/** jf_policy_names() - write the available names, comma separated, into @buf. */
JF_API void jf_policy_names(char *buf, size_t len);

/**
 * jf_policy_params_default() - give @params the defaults of @ops's parameter table.
 * @ops:    the policy.
 * @params: value[i] is set to ops->params[i].def (0 past nparams) and quantum_ns to
 *          JF_POLICY_QUANTUM_DEFAULT_NS; nworkers and seed are left as they are.
 *
 * For whoever drives a policy without the runtime (the simulator, a test); the runtime fills
 * @params from struct jf_config.
 */
JF_API void jf_policy_params_default(const struct jf_policy_ops *ops,
				     struct jf_policy_params *params);

/**
 * jf_policy_param_index() - the index of a policy's parameter.
 * @ops:  the policy.
 * @name: the parameter's name.
 * Return: the index in ops->params (and params->value), or -ENOENT.
 */
JF_API int jf_policy_param_index(const struct jf_policy_ops *ops, const char *name);

/**
 * jf_policy_param_parse() - read a value for @param from its written form @text.
 * @param:  the parameter.
 * @text:   a number in the unit of its type, or a duration with a unit ("50", "12.5",
 *          "50us", "1ms"), 0/1/yes/no/on/off/true/false, or a choice's name.
 * @value:  receives the value as the policy reads it (ns, 0/1, the choice's index).
 * @err, @errlen: on failure, a message that quotes @text and says what is allowed ("'0':
 *          expected microseconds from 1 to 1000000"); may be NULL.
 *
 * Return: 0, or -EINVAL (malformed, out of range, not a whole number of nanoseconds).
 */
JF_API int jf_policy_param_parse(const struct jf_policy_param *param, const char *text,
				 uint64_t *value, char *err, size_t errlen);

/**
 * jf_policy_param_set() - set a policy's parameter in @params from its written form.
 * @ops:    the policy.
 * @params: its parameters (jf_policy_params_default() first).
 * @name:   the parameter's name in @ops's table.
 * @text:   its written form (jf_policy_param_parse()).
 * @err, @errlen: receive a message on failure (may be NULL).
 * Return: 0; -ENOENT if @ops has no parameter @name; -EINVAL if @text is not a value for it.
 * Either way on failure @params is unchanged and @err names the policy, the parameter and the
 * text ("rr.slice_us='0': expected microseconds from 1 to 1000000").
 */
JF_API int jf_policy_param_set(const struct jf_policy_ops *ops, struct jf_policy_params *params,
			       const char *name, const char *text, char *err, size_t errlen);

/**
 * jf_policy_param_env() - write the environment variable that sets a policy's parameter:
 * "JIFFY_" + the policy's name + "_" + the parameter's name, in upper case, with any character
 * other than a letter or a digit as '_' ("JIFFY_CFS_LATENCY_US").
 * @policy:    the policy's name.
 * @param:     the parameter (an entry of that policy's table).
 * @buf, @len: where to write it.
 * Return: what snprintf() returns.
 */
JF_API int jf_policy_param_env(const char *policy, const struct jf_policy_param *param,
			       char *buf, size_t len);

/**
 * jf_policy_param_format() - write a value as it would be written (the inverse of
 * jf_policy_param_parse(): "12.5" for 12500 ns of a JF_PARAM_US, "mq", "1").
 * @param:     the parameter.
 * @value:     the value, as the policy reads it.
 * @buf, @len: where to write it.
 * Return: what snprintf() returns.
 */
JF_API int jf_policy_param_format(const struct jf_policy_param *param, uint64_t value,
				  char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_POLICY_H */
