/*
 * kernels.h - what probe_bench.c shares with kernels.c (compiled once per variant).
 *
 * Owns: the kernels' input (struct kernel_data, filled once by the driver) and the table each
 * compiled copy of kernels.c exports (struct kernel_set kernels_<variant>).
 */
#ifndef JIFFY_PROBE_BENCH_KERNELS_H
#define JIFFY_PROBE_BENCH_KERNELS_H

#include <stddef.h>
#include <stdint.h>

struct kernel_data {
	size_t n; /* matmul: n x n */
	double *a, *b, *c;
	size_t nkeys, slots; /* hashbuild: slots is a power of two */
	uint64_t *keys, *table;
	const char *text; /* strloop: NUL-terminated */
	unsigned fib_n;   /* recursive */
};

enum { K_MATMUL, K_HASHBUILD, K_STRLOOP, K_RECURSIVE, NKERNELS };

struct kernel_set {
	const char *variant;
	uint64_t (*run[NKERNELS])(struct kernel_data *d);
};

/* Variants: the list is the CMake one (PROBE_BENCH_VARIANTS), in the same order. */
#define PROBE_BENCH_VARIANTS(X) X(plain) X(probed) X(every16) X(smalltrip0) X(entryall) X(entrynone) X(latchend)
#define PROBE_BENCH_DECLARE(v) extern const struct kernel_set kernels_##v;
PROBE_BENCH_VARIANTS(PROBE_BENCH_DECLARE)

#endif
