/*
 * jiffy/config.h - the one configuration struct of the runtime.
 *
 * Owns: struct jf_config, its defaults, and the JIFFY_* environment overrides. Every knob of the
 * runtime lives here and is parsed in one place (src/core/config.c); an invalid value is rejected
 * with a message that names the variable and the value, never ignored.
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

/**
 * struct jf_policy_tunables - every policy's parameters, with the papers' defaults (filled by
 * jf_policy_tunables_default(); set from the environment through struct jf_config). Times in ns.
 * @quantum_ns:        the runtime's quantum (JIFFY_QUANTUM_US): the tick of the mechanism.
 * @rr_slice_ns:       rr: time slice (Skyloft Table 5: 50 us).                   JIFFY_RR_SLICE_US
 * @twoq_long_ns:      twoq: quantum of a task taken from the preempted queue (Aspen §3.2:
 *                     "a longer quantum, e.g. 100 us"; 0: 4 x quantum).           JIFFY_TWOQ_LONG_US
 * @cfs_latency_ns:    cfs: sched_latency, the period in which every runnable task runs once
 *                     (Skyloft Table 5: 50 us).                                  JIFFY_CFS_LATENCY_US
 * @cfs_min_gran_ns:   cfs: min_granularity, the shortest slice (Table 5: 12.5 us). JIFFY_CFS_MIN_GRAN_US
 * @cfs_wakeup_gran_ns: cfs: a woken task preempts the running one only if its vruntime is
 *                     smaller by more than this (Linux: 1 ms scaled; here 12.5 us). JIFFY_CFS_WAKEUP_GRAN_US
 * @eevdf_slice_ns:    eevdf: base_slice, the request size (Table 5: 12.5 us).    JIFFY_EEVDF_SLICE_US
 * @central_mq:        central: one queue per request type (MQ) instead of one (SQ). JIFFY_CENTRAL=sq|mq
 * @central_head:      central: a preempted task goes back to the head of its queue
 *                     (true) or the tail (false, Shinjuku's default).            JIFFY_CENTRAL_PREEMPTED=head|tail
 * @central_slo_ns:    central MQ: the SLO of a type whose tasks set no attr.slo_ns. JIFFY_CENTRAL_SLO_US
 * @lcbe_be_quantum_ns: lcbe: how long a best-effort task runs before it is asked to
 *                     yield to other best-effort work (0: 4 x quantum).          JIFFY_LCBE_BE_QUANTUM_US
 */
struct jf_policy_tunables {
	uint64_t quantum_ns;
	uint64_t rr_slice_ns;
	uint64_t twoq_long_ns;
	uint64_t cfs_latency_ns;
	uint64_t cfs_min_gran_ns;
	uint64_t cfs_wakeup_gran_ns;
	uint64_t eevdf_slice_ns;
	bool central_mq;
	bool central_head;
	uint64_t central_slo_ns;
	uint64_t lcbe_be_quantum_ns;
};

/** jf_policy_tunables_default() - the papers' defaults (quantum 100 us). */
JF_API void jf_policy_tunables_default(struct jf_policy_tunables *t);

/** JF_POLICY_NAME_MAX - bytes of struct jf_config's policy name, its terminating NUL included. */
#define JF_POLICY_NAME_MAX 32
/** JF_GRACE_DEFAULT - jf_config.grace_ns: leave the grace period to the mechanism (see there). */
#define JF_GRACE_DEFAULT UINT64_MAX
/** JF_QUANTUM_DEFAULT - jf_config.quantum_ns: the mechanism's own (jf_config_default() sets it). */
#define JF_QUANTUM_DEFAULT UINT64_MAX
/** JF_MAX_WORKERS - the most workers a runtime may have (jf_config.workers, JIFFY_WORKERS). */
#define JF_MAX_WORKERS 256

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
 *                the mechanism's own, hybrid 50 us, auto 1000 us
 *                (docs/preemption.md says why they differ).            JIFFY_GRACE_US
 * @preempt_signal: the signal the signal mechanisms use (default
 *                SIGURG, as Go does); a name or a number.              JIFFY_PREEMPT_SIGNAL
 * @preempt_skip: Aspen's skip rule: interrupt a worker at the quantum only
 *                when other work waits (default). false: at every
 *                quantum, for the ablation of Aspen Fig. 10.          JIFFY_PREEMPT_SKIP=0|1
 * @pthread_shim: a uthread holding a pthread mutex, rwlock or spin lock is
 *                not preempted until it releases it (default), so library
 *                code that takes pthread locks cannot deadlock its worker
 *                (docs/preemption.md). false: measurement only.         JIFFY_PTHREAD_SHIM=0|1
 * @timer_spin:   the timer thread (dispatcher, safepoint, hybrid) spins
 *                on a CPU of its own instead of sleeping.              JIFFY_TIMER_SPIN=0|1
 * @sched:        the policies' parameters (struct jf_policy_tunables above; its quantum_ns
 *                is ignored here: @quantum_ns is copied into it at start-up).
 * @netpoll_ns:   while uthreads wait on descriptors, a busy worker polls epoll at
 *                scheduling points at most this often (JIFFY_NETPOLL_US, default 5;
 *                0 polls at every scheduling point). See docs/netpoll.md.
 * @schedtrace_ns: print one line of scheduler state per period to stderr
 *                (Go's schedtrace; 0: off, the default).              JIFFY_SCHEDTRACE=<ms>
 * @stall_report: report, with a backtrace, a uthread that keeps its worker
 *                for more than this many quanta while other work waits
 *                (0: off, the default; at most once per uthread per second; uses
 *                the signal SIGRTMIN+2). See docs/observability.md.  JIFFY_STALL_REPORT=<n>
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
	bool timer_spin;
	struct jf_policy_tunables sched;
	uint64_t netpoll_ns;
	uint64_t spin_max_ns;
	bool preempt_skip;
	bool pthread_shim;
	uint64_t schedtrace_ns;
	unsigned stall_report;
};

/** jf_config_default() - fill @cfg with the defaults (no environment). */
JF_API void jf_config_default(struct jf_config *cfg);

/**
 * jf_config_apply_env() - override fields of @cfg from JIFFY_* environment variables.
 * @cfg: the configuration to change (jf_config_default()'s, or one the caller filled).
 * @err, @errlen: receive a message naming the bad variable and value on failure (may be NULL).
 *
 * Return: 0, or -EINVAL if a variable is set to a value that cannot be used; @cfg is then left
 * unchanged. Unknown JIFFY_* variables are reported as errors too (a typo must not pass silently).
 */
JF_API int jf_config_apply_env(struct jf_config *cfg, char *err, size_t errlen);

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
