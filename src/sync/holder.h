/*
 * holder.h - lock-holder preemption: what the Jiffy locks tell the preemption path.
 *
 * Owns: the per-uthread count of Jiffy locks held (jf_thread.locks_held) and the hand-back of a
 * preemption deferred because of it. A uthread preempted while it holds a lock makes every
 * waiter wait a quantum or more (Aspen-Go disables preemption inside Lock() for this reason);
 * here a quantum's preemption of a holder is deferred for up to jf_config.lock_defer_ns
 * (decide_and_preempt -> lock_holder_defer, src/runtime/preempt/preempt.c), and the release of its
 * last lock takes it at once. Called inside the runtime (JF_RUNTIME_ENTER), so the uthread is
 * not moved while it runs.
 */
#ifndef JIFFY_SYNC_HOLDER_H
#define JIFFY_SYNC_HOLDER_H

#include "../runtime/runtime.h"

static inline void holder_acquired(struct jf_thread *cur)
{
	cur->locks_held++;
}

/* The caller released a lock; after its last one, a deferred preemption is taken by the
 * runtime section's end (JF_RUNTIME_LEAVE -> jf__preempt_enable_slow). */
static inline void holder_released(struct jf_thread *cur)
{
	if (cur->locks_held && --cur->locks_held == 0) {
		cur->lock_defer_until = 0;
		if (JF_UNLIKELY(cur->lock_owed)) {
			cur->lock_owed = 0;
			jf_lock_holder_owed(cur);
		}
	}
}

#endif /* JIFFY_SYNC_HOLDER_H */
