/*
 * spinlock.h - a test-and-test-and-set spinlock on a plain uint32_t.
 *
 * Owns: the only lock the runtime and the policies use for their own short critical sections.
 * Pure atomics, no system call, so policy code that uses it still runs in the simulator.
 * Invariant: hold it only for a few hundred instructions and never across a context switch
 * (checked at every switch where JF_ASSERT is on: jf_spins_held()).
 */
#ifndef JIFFY_SPINLOCK_H
#define JIFFY_SPINLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "assert.h"

/*
 * JF_ASSERT builds count the spinlocks this kernel thread holds (jf__spins_held, spinlock.c), so
 * that a switch with one held is caught (thread.c). One %fs-relative instruction: a uthread
 * moved to another worker between computing the address and using it would count on the old.
 */
#define JF__SPINS_HELD_ASM(insn)                                                                   \
	"movq jf__spins_held@gottpoff(%%rip), %%rax\n\t" insn " %%fs:(%%rax)"

static inline void jf__spins_held_add(int32_t d)
{
#if JF_ASSERTS
	__asm__ volatile(JF__SPINS_HELD_ASM("addl %0,") : : "r"(d) : "rax", "memory", "cc");
#else
	(void)d;
#endif
}

/* How many runtime spinlocks this kernel thread holds (0 where JF_ASSERTS is 0). */
static inline int32_t jf_spins_held(void)
{
	int32_t n = 0;
#if JF_ASSERTS
	__asm__ volatile(JF__SPINS_HELD_ASM("movl") ", %0" : "=r"(n) : : "rax", "memory");
#endif
	return n;
}

static inline void jf_cpu_relax(void)
{
	__builtin_ia32_pause();
}

static inline bool jf_spin_trylock(uint32_t *l)
{
	bool got = __atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
		   __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0;
	if (got)
		jf__spins_held_add(1);
	return got;
}

static inline void jf_spin_lock(uint32_t *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) != 0) {
		while (__atomic_load_n(l, __ATOMIC_RELAXED) != 0)
			jf_cpu_relax();
	}
	jf__spins_held_add(1);
}

static inline void jf_spin_unlock(uint32_t *l)
{
	jf__spins_held_add(-1);
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static inline bool jf_spin_is_locked(const uint32_t *l)
{
	return __atomic_load_n(l, __ATOMIC_RELAXED) != 0;
}

/*
 * jf_smp_mb() - a full barrier (StoreLoad), for Dekker-style handshakes such as parking.
 * ThreadSanitizer does not model atomic_thread_fence (GCC refuses it under -fsanitize=thread),
 * so there a seq_cst read-modify-write stands in; on x86 both are one locked instruction.
 */
#if defined(__SANITIZE_THREAD__)
static inline void jf_smp_mb(void)
{
	static uint32_t dummy;
	__atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
}
#else
static inline void jf_smp_mb(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

#define JF_LIKELY(x) __builtin_expect(!!(x), 1)
#define JF_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A step of the switch path that the compiler must not leave as a call (make perfcheck counts
 * the prologue, the epilogue and the spills of each one it kept out of line). */
#define JF_HOT_INLINE inline __attribute__((always_inline))
#define JF_CACHELINE 64

#endif /* JIFFY_SPINLOCK_H */
