/*
 * zero.h - zeroing a small object on a hot path with plain 16-byte stores.
 *
 * Owns: jf_zero16(). gcc 12 compiles memset() of a fixed 100-200 bytes (a uthread's task, a
 * preemptible function's record) to `rep stos`, whose start-up cost ~12 ns per call on the
 * 2-vCPU AMD EPYC guest: spawn + join took 116-119 ns with it and 104-105 ns with this
 * (docs/performance.md). The loop below is unrolled into stores (the size is a constant at every
 * caller), which gcc and clang leave as they are.
 */
#ifndef JIFFY_COMMON_ZERO_H
#define JIFFY_COMMON_ZERO_H

#include <stddef.h>
#include <stdint.h>

/* Zero @n bytes at @p: @p 16-byte aligned, @n a multiple of 16 (a constant, to be unrolled). */
static inline void jf_zero16(void *p, size_t n)
{
	typedef uint64_t jf_v2 __attribute__((vector_size(16), may_alias));
	jf_v2 *v = (jf_v2 *)p;
#pragma GCC unroll 32
	for (size_t i = 0; i < n / 16; i++)
		v[i] = (jf_v2){0, 0};
}

#endif /* JIFFY_COMMON_ZERO_H */
