/*
 * spinlock.h - a test-and-test-and-set spinlock on a plain uint32_t.
 *
 * Owns: the only lock the runtime and the policies use for their own short critical sections.
 * Pure atomics, no system call, so policy code that uses it still runs in the simulator.
 * Invariant: hold it only for a few hundred instructions and never across a context switch
 * (the one exception, handing a lock to the next context, is spelled out where it happens).
 */
#ifndef JIFFY_SPINLOCK_H
#define JIFFY_SPINLOCK_H

#include <stdbool.h>
#include <stdint.h>

static inline void jf_cpu_relax(void)
{
	__builtin_ia32_pause();
}

static inline bool jf_spin_trylock(uint32_t *l)
{
	return __atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
	       __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0;
}

static inline void jf_spin_lock(uint32_t *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) != 0) {
		while (__atomic_load_n(l, __ATOMIC_RELAXED) != 0)
			jf_cpu_relax();
	}
}

static inline void jf_spin_unlock(uint32_t *l)
{
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
#define JF_CACHELINE 64

#endif /* JIFFY_SPINLOCK_H */
