/*
 * jiffy/config.h - the one configuration struct of the runtime.
 *
 * Owns: struct jf_config, its defaults, and the JIFFY_* environment overrides. Every knob of the
 * runtime lives here and is parsed in one place (src/core/config.c); an invalid value is rejected
 * with a message that names the variable and the value, never ignored.
 */
#ifndef JIFFY_CONFIG_H
#define JIFFY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JF_POLICY_NAME_MAX 32
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
 * @stats:        print configuration and per-worker counters when
 *                jf_run() returns.                                     JIFFY_STATS=0|1
 * @preempt:      preemption mechanism: none, timer, dispatcher,
 *                safepoint, hybrid, uintr (see jiffy/preempt.h).       JIFFY_PREEMPT
 * @quantum_ns:   run time after which a uthread is preempted when
 *                other work waits.                                     JIFFY_QUANTUM_US
 * @grace_ns:     hybrid: how long a safepoint request may go
 *                unanswered before a signal is sent.                   JIFFY_GRACE_US
 * @preempt_signal: the signal the signal mechanisms use (default
 *                SIGURG, as Go does); a name or a number.              JIFFY_PREEMPT_SIGNAL
 * @timer_spin:   the timer thread (dispatcher, safepoint, hybrid) spins
 *                on a CPU of its own instead of sleeping.              JIFFY_TIMER_SPIN=0|1
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
};

/** jf_config_default() - fill @cfg with the defaults (no environment). */
void jf_config_default(struct jf_config *cfg);

/**
 * jf_config_apply_env() - override fields of @cfg from JIFFY_* environment variables.
 * @err, @errlen: receive a message naming the bad variable and value on failure (may be NULL).
 *
 * Return: 0, or -EINVAL if a variable is set to a value that cannot be used; @cfg is then left
 * unchanged. Unknown JIFFY_* variables are reported as errors too (a typo must not pass silently).
 */
int jf_config_apply_env(struct jf_config *cfg, char *err, size_t errlen);

/**
 * jf_config_validate() - check @cfg for values the runtime cannot use.
 * Return: 0 or -EINVAL with a message in @err.
 */
int jf_config_validate(const struct jf_config *cfg, char *err, size_t errlen);

/** jf_config_print() - write @cfg in "key = value" lines to @out. */
void jf_config_print(const struct jf_config *cfg, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_CONFIG_H */
