/*
 * spinlock.c - the one variable of src/common/spinlock.h: how many runtime spinlocks this kernel
 * thread holds, counted in JF_ASSERT builds (the switch checks it is 0: jf_spins_held()).
 *
 * Owns: jf__spins_held. It is common's own, not a field of the preemption layer's per-thread
 * state (jiffy/preempt.h's jf__preempt, where it lived until 2026-11-29), so that the lock the
 * policies and the simulator use depends on nothing above src/common (issue 28). Initial-exec
 * TLS: spinlock.h updates it with one %fs-relative instruction.
 */
#include <stdint.h>

__attribute__((visibility("hidden"), tls_model("initial-exec"))) __thread int32_t jf__spins_held;
