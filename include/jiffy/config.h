/*
 * jiffy/config.h - the one configuration struct of the runtime.
 *
 * Owns: struct jf_config, its defaults, and the JIFFY_* environment overrides. Every knob of the
 * runtime lives here and is parsed in one place (src/runtime/config.c); an invalid value is
 * rejected with a message that names the variable and the value, never ignored. A policy's
 * parameters are the policy's own (declared in its ops table: struct jf_policy_param in
 * jiffy/policy.h); a struct jf_config only holds the values set for them, by name
 * (jf_config_set_param(), JIFFY_<POLICY>_<NAME>).
 */
#ifndef JIFFY_CONFIG_H
#define JIFFY_CONFIG_H

#include <jiffy/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** JF_POLICY_NAME_MAX - bytes of struct jf_config's policy name, its terminating NUL included. */
#define JF_POLICY_NAME_MAX 32
/** JF_GRACE_DEFAULT - jf_config.grace_ns: leave the grace period to the mechanism (see there). */
#define JF_GRACE_DEFAULT UINT64_MAX
/** JF_LOCK_DEFER_DEFAULT_NS - jf_config.lock_defer_ns's default (docs/sync.md has the numbers). */
#define JF_LOCK_DEFER_DEFAULT_NS 50000u
/** JF_LOCK_SPIN_DEFAULT_NS - jf_config.lock_spin_ns's default (docs/sync.md has the numbers). */
#define JF_LOCK_SPIN_DEFAULT_NS 2000u
/** JF_QUANTUM_DEFAULT - jf_config.quantum_ns: the mechanism's own (jf_config_default() sets it). */
#define JF_QUANTUM_DEFAULT UINT64_MAX
/** JF_MAX_WORKERS - the most workers a runtime may have (jf_config.workers, JIFFY_WORKERS). */
#define JF_MAX_WORKERS 256
/** JF_PARAM_NAME_MAX - bytes of a policy parameter's name, its terminating NUL included. */
#define JF_PARAM_NAME_MAX 32
/** JF_CONFIG_PARAMS_MAX - the most policy parameters one struct jf_config can set. */
#define JF_CONFIG_PARAMS_MAX 32

/**
 * enum jf_clock_kind - the runtime's clock (jf_config.clock, JIFFY_CLOCK; jiffy/time.h).
 */
enum jf_clock_kind {
	JF_CLOCK_TSC = 0,   /* "tsc": the TSC when it is invariant, else CLOCK_MONOTONIC (default) */
	JF_CLOCK_MONOTONIC, /* "monotonic": CLOCK_MONOTONIC, always */
	JF_CLOCK_NR_KINDS
};

/**
 * struct jf_config_param - one policy parameter set in a struct jf_config (by
 * jf_config_set_param() or a JIFFY_<POLICY>_<NAME> variable); fill it through those.
 * @policy: the policy's name.
 * @name:   the parameter's name in that policy's table (struct jf_policy_param).
 * @value:  its value as the policy reads it (ns for a duration, 0/1, an enum's index).
 */
struct jf_config_param {
	char policy[JF_POLICY_NAME_MAX];
	char name[JF_PARAM_NAME_MAX];
	uint64_t value;
};

/**
 * struct jf_config - runtime configuration.
 * @workers:      kernel threads (one per CPU by default).              JIFFY_WORKERS
 * @pin_workers:  pin worker i to the i-th CPU of the affinity mask.    JIFFY_PIN=0|1
 * @policy:       scheduling policy by name ("fifo", "ws", ...).         JIFFY_POLICY
 * @stack_size:   default uthread stack size in bytes (K/M suffixes in
 *                the environment); rounded up to whole pages.          JIFFY_STACK_SIZE
 * @stack_cache:  free stacks kept per worker for reuse.                JIFFY_STACK_CACHE
 * @spin_ns:      how long an idle worker spins looking for work before
 *                it parks on a futex (waking a parked worker costs
 *                ~20 us on a KVM guest, see docs/performance.md).      JIFFY_SPIN_US
 * @spin_max_ns:  0: always spin @spin_ns. Otherwise the spin adapts to
 *                the gaps between arrivals, between @spin_ns and this
 *                (Linux haltpoll's rule; docs/design.md, "Idle
 *                workers").                                            JIFFY_SPIN_MAX_US
 * @stats:        print configuration and per-worker counters when
 *                jf_run() returns.                                     JIFFY_STATS=0|1
 * @preempt:      preemption mechanism: none, timer, dispatcher,
 *                safepoint, deadline, hybrid, auto (the default),
 *                uintr (jiffy/preempt.h). "none" runs uthreads to
 *                completion.                                           JIFFY_PREEMPT
 * @quantum_ns:   run time after which a uthread is preempted when
 *                other work waits. JF_QUANTUM_DEFAULT (what
 *                jf_config_default() sets): the mechanism's own, 20 us
 *                for auto, deadline and uintr, 100 us for the ones a
 *                signal or a timer thread drives per quantum (timer,
 *                dispatcher, safepoint, hybrid: they need 200 us-1 ms
 *                on a KVM guest; docs/preemption.md).                  JIFFY_QUANTUM_US
 * @grace_ns:     hybrid and auto: how long after the quantum a uthread
 *                that reached no jf_safepoint() is sent the signal.
 *                JF_GRACE_DEFAULT (what jf_config_default() sets):
 *                the mechanism's own, hybrid 50 us, auto 5000 us
 *                (docs/preemption.md says why they differ).            JIFFY_GRACE_US
 * @preempt_signal: the signal the signal mechanisms use (default
 *                SIGURG, as Go does); a name or a number.              JIFFY_PREEMPT_SIGNAL
 * @pfn_signal:   the signal of preemptible functions' budget timers and of
 *                jf_cancel() (jiffy/pfn.h; default SIGRTMIN+3): not the
 *                mechanism's, so that neither source's signal can hide the
 *                other's.                                              JIFFY_PFN_SIGNAL
 * @preempt_skip: Aspen's skip rule: interrupt a worker at the quantum only
 *                when other work waits (default). false: at every
 *                quantum, for the ablation of Aspen Fig. 10.          JIFFY_PREEMPT_SKIP=0|1
 * @pthread_shim: a uthread holding a pthread mutex, rwlock or spin lock is
 *                not preempted until it releases it (default), so library
 *                code that takes pthread locks cannot deadlock its worker
 *                (docs/preemption.md). false: measurement only.         JIFFY_PTHREAD_SHIM=0|1
 * @timer_spin:   the timer thread (dispatcher, safepoint, hybrid) spins
 *                on a CPU of its own instead of sleeping.              JIFFY_TIMER_SPIN=0|1
 * @netpoll_ns:   while uthreads wait on descriptors, a busy worker polls epoll at
 *                scheduling points at most this often (JIFFY_NETPOLL_US, default 5;
 *                0 polls at every scheduling point). See docs/netpoll.md.
 * @netpoll_irq:  readiness as an interrupt: a thread waits in epoll and kicks a
 *                busy worker through the preemption mechanism, which then need
 *                not interrupt busy workers each quantum to poll (default
 *                false; not with preempt "none"). See docs/netpoll-irq.md.
 *                                                                      JIFFY_NETPOLL_IRQ=0|1
 * @histograms:   keep the per-worker histograms of runnable delay and run length
 *                (jf_stats_hist(), JF_HIST_RUNNABLE_DELAY and JF_HIST_RUN_LENGTH):
 *                two records per switch, so off by default; on by itself
 *                with @stats or @schedtrace_ns, which print them.       JIFFY_HIST=0|1
 * @schedtrace_ns: print one line of scheduler state per period to stderr
 *                (Go's schedtrace; 0: off, the default).              JIFFY_SCHEDTRACE=<ms>
 * @stall_report: report, with a backtrace, a uthread that keeps its worker
 *                for more than this many quanta while other work waits
 *                (0: off, the default; at most once per uthread per second; uses
 *                the signal SIGRTMIN+2). See docs/observability.md.  JIFFY_STALL_REPORT=<n>
 * @clock:        the clock jf_run() runs on (enum jf_clock_kind).     JIFFY_CLOCK=tsc|monotonic
 * @blocking_threads: the most kernel threads of the blocking pool (jiffy/blocking.h:
 *                jf_run_blocking(), jf_file_*, jf_getaddrinfo), 1 to 1024, default 8;
 *                started on demand.                                    JIFFY_BLOCKING_THREADS
 * @blocking_queue: the most calls waiting for a pool thread, 1 to 1048576, default 256;
 *                beyond it callers wait for room (jf_try_run_blocking(): -EAGAIN).
 *                                                                      JIFFY_BLOCKING_QUEUE
 * @blocking_idle_ns: a pool thread without work for this long exits (at most 1 h;
 *                default 10 s).                                        JIFFY_BLOCKING_IDLE_MS
 * @blocking_spin_ns: a pool thread out of work spins this long for more before it
 *                sleeps (at most 10 ms; default in docs/blocking.md). JIFFY_BLOCKING_SPIN_US
 * @lock_defer_ns: a uthread holding a jf_mutex_t or a jf_rwlock_t for writing
 *                is preempted at most this long after its quantum ends (it is
 *                preempted when it releases the lock, if that is sooner);
 *                0: holders are preempted like anyone (jiffy/sync.h, docs/sync.md).
 *                                                                      JIFFY_LOCK_DEFER_US
 * @lock_handoff: jf_mutex_t releases hand the mutex to the oldest waiter
 *                (strict FIFO) instead of freeing it for whoever asks first,
 *                with a handoff only for a waiter starved 1 ms (Go's rule,
 *                the default: docs/sync.md says why).               JIFFY_LOCK_HANDOFF=0|1
 * @lock_spin_ns: a uthread that finds a jf_mutex_t held by a uthread running on
 *                another worker spins up to this long for it before blocking
 *                (0: blocks at once).                                  JIFFY_LOCK_SPIN_US
 * @nparams:      entries of @params in use.
 * @params:       policy parameters that differ from their policy's defaults (struct
 *                jf_policy_param), for the selected policy or another one; only the selected
 *                policy's are used. Set them with jf_config_set_param().
 *                                                          JIFFY_<POLICY>_<NAME> (docs/policies.md)
 */
struct jf_config {
	unsigned workers;
	bool pin_workers;
	char policy[JF_POLICY_NAME_MAX];
	size_t stack_size;
	unsigned stack_cache;
	uint64_t spin_ns;
	bool stats;
	char preempt[16];
	uint64_t quantum_ns;
	uint64_t grace_ns;
	int preempt_signal;
	int pfn_signal;
	bool timer_spin;
	uint64_t netpoll_ns;
	bool netpoll_irq;
	uint64_t spin_max_ns;
	bool preempt_skip;
	bool pthread_shim;
	uint64_t schedtrace_ns;
	unsigned stall_report;
	enum jf_clock_kind clock;
	unsigned blocking_threads;
	unsigned blocking_queue;
	uint64_t blocking_idle_ns;
	uint64_t blocking_spin_ns;
	uint64_t lock_defer_ns;
	uint64_t lock_spin_ns;
	bool lock_handoff;
	bool histograms;
	unsigned nparams;
	struct jf_config_param params[JF_CONFIG_PARAMS_MAX];
};

/** jf_config_default() - fill @cfg with the defaults (no environment). */
JF_API void jf_config_default(struct jf_config *cfg);

/**
 * jf_config_apply_env() - override fields of @cfg from JIFFY_* environment variables.
 * @cfg: the configuration to change (jf_config_default()'s, or one the caller filled).
 * @err, @errlen: receive a message naming the bad variable and value on failure (may be NULL).
 *
 * A policy's parameters are read from JIFFY_<POLICY>_<NAME> for every policy known at the call
 * (built in, or registered before it), whether or not it is the one selected: a value for
 * another policy is checked and kept, and unused.
 *
 * Return: 0, or -EINVAL if a variable is set to a value that cannot be used; @cfg is then left
 * unchanged. Unknown JIFFY_* variables are reported as errors too (a typo must not pass
 * silently): a misspelt parameter of a known policy (JIFFY_CFS_LATENCYY_US) with the list of
 * that policy's variables.
 */
JF_API int jf_config_apply_env(struct jf_config *cfg, char *err, size_t errlen);

/**
 * jf_config_set_param() - set a parameter of a policy in @cfg, as JIFFY_<POLICY>_<NAME> would.
 * @cfg:    the configuration.
 * @policy: a policy's name (built in, or registered before this call); need not be
 *          @cfg->policy: parameters of a policy not selected are kept and unused.
 * @name:   the parameter's name in its table ("latency_us"; docs/policies.md).
 * @value:  its written form (jf_policy_param_parse(): "50", "12.5", "50us", "mq", "1").
 * @err, @errlen: receive a message naming the policy, the parameter and the value on failure
 *          (may be NULL).
 *
 * Setting a parameter again replaces its value. Example:
 *   jf_config_set_param(&cfg, "cfs", "latency_us", "200", err, sizeof(err));
 *
 * Return: 0; -EINVAL for an unknown policy or parameter (the message lists the policy's
 * parameters) or a value that is malformed or out of range (@cfg is then unchanged); -ENOSPC
 * if JF_CONFIG_PARAMS_MAX parameters are set already.
 */
JF_API int jf_config_set_param(struct jf_config *cfg, const char *policy, const char *name,
			       const char *value, char *err, size_t errlen);

/**
 * jf_config_get_param() - the value a policy's parameter will have under @cfg: the one set, or
 * its table's default.
 * @cfg:    the configuration.
 * @policy: the policy's name (built in or registered).
 * @name:   the parameter's name in its table.
 * @value:  receives it as the policy reads it (ns for a duration, 0/1, an enum's index).
 * Return: 0, or -ENOENT for an unknown policy or parameter.
 */
JF_API int jf_config_get_param(const struct jf_config *cfg, const char *policy, const char *name,
			       uint64_t *value);

/**
 * jf_config_validate() - check @cfg for values the runtime cannot use.
 * Return: 0 or -EINVAL with a message in @err.
 */
JF_API int jf_config_validate(const struct jf_config *cfg, char *err, size_t errlen);

/** jf_config_print() - write @cfg in "key = value" lines to @out. */
JF_API void jf_config_print(const struct jf_config *cfg, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_CONFIG_H */
