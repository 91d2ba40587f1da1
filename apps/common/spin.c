/*
 * apps/common/spin.c - the calibrated compute loop of the synthetic workload (see spin.h).
 * The loop is a dependent 64-bit multiply-add chain (an LCG step): ~1 iteration per few cycles,
 * no memory traffic, nothing a compiler can fold away because the result is consumed.
 */
#define _GNU_SOURCE
#include "spin.h"

#include <time.h>

static double iters_per_ns = 0.0;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t jp_spin_iters(uint64_t iters, uint64_t seed)
{
	uint64_t x = seed | 1;
	for (uint64_t i = 0; i < iters; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x)); /* keep each step: no vectorising, no closed form */
	}
	return x;
}

static volatile uint64_t sink;

double jp_spin_calibrate(void)
{
	const uint64_t n = 2000000; /* ~1 ms per trial */
	double best = 0.0;

	for (int trial = 0; trial < 25; trial++) {
		uint64_t t0 = now_ns();
		sink = jp_spin_iters(n, t0);
		uint64_t dt = now_ns() - t0;
		double r = (double)n / (double)(dt ? dt : 1);
		if (r > best)
			best = r; /* the fastest trial is the one not interrupted */
	}
	iters_per_ns = best;
	return best * 1000.0;
}

void jp_spin_ns(uint64_t ns, void (*check)(void))
{
	if (iters_per_ns == 0.0)
		jp_spin_calibrate();
	uint64_t total = (uint64_t)((double)ns * iters_per_ns + 0.5);
	uint64_t chunk = (uint64_t)(1000.0 * iters_per_ns) + 1; /* ~1 µs */
	uint64_t x = ns;
	while (total) {
		uint64_t k = total < chunk ? total : chunk;
		x = jp_spin_iters(k, x);
		total -= k;
		if (check)
			check();
	}
	sink = x;
}
