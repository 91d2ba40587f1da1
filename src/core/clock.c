/*
 * clock.c - jf_now_ns(): the one clock of the runtime.
 *
 * Owns: choosing the clock source and calibrating it. With an invariant TSC (CPUID
 * 0x80000007:EDX[8], "constant_tsc nonstop_tsc" in /proc/cpuinfo) the TSC is read with rdtsc and
 * (ordered by lfence, as the kernel's vDSO does) scaled to nanoseconds on the CLOCK_MONOTONIC time base, calibrated against CLOCK_MONOTONIC at
 * first use; otherwise CLOCK_MONOTONIC is read directly. JIFFY_CLOCK=monotonic forces the latter.
 * Never the wall clock, never an assumed frequency.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "runtime.h"

static struct {
	int ready; /* read with acquire */
	bool use_tsc;
	uint64_t hz;
	uint64_t tsc0, ns0;
	uint64_t mult;     /* ns = ((tsc - tsc0) * mult) >> 32 */
	uint64_t tsc_mult; /* ticks = (ns * tsc_mult) >> 32 */
} clk;

static pthread_once_t clk_once = PTHREAD_ONCE_INIT;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool cpu_has_invariant_tsc(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid_max(0x80000000u, NULL) < 0x80000007u)
		return false;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1u;
}

/* A (tsc, ns) pair taken as close together as possible: the best of a few brackets. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	*tsc = *ns = 0;
	for (int i = 0; i < 5; i++) {
		uint64_t a = mono_ns(), t = __rdtsc(), b = mono_ns();
		if (b - a < best) {
			best = b - a;
			*tsc = t;
			*ns = a + (b - a) / 2;
		}
	}
}

static void clock_calibrate(void)
{
	const char *force = getenv("JIFFY_CLOCK");
	uint64_t t1 = 0, n1 = 0, t2 = 0, n2 = 0;

	clk.use_tsc = cpu_has_invariant_tsc() && !(force && strcmp(force, "monotonic") == 0);
	if (clk.use_tsc) {
		sample(&t1, &n1);
		do {
			sample(&t2, &n2);
		} while (n2 - n1 < 10000000u); /* 10 ms: ~5 ppm error from 25 ns brackets */
		clk.hz = (uint64_t)((unsigned __int128)(t2 - t1) * 1000000000u / (n2 - n1));
		clk.mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / clk.hz);
		clk.tsc_mult = (uint64_t)(((unsigned __int128)clk.hz << 32) / 1000000000u);
		clk.tsc0 = t2;
		clk.ns0 = n2;
	}
	__atomic_store_n(&clk.ready, 1, __ATOMIC_RELEASE);
}

void jf_clock_init(void)
{
	pthread_once(&clk_once, clock_calibrate);
}

uint64_t jf_now_ns(void)
{
	if (JF_UNLIKELY(!__atomic_load_n(&clk.ready, __ATOMIC_ACQUIRE)))
		jf_clock_init();
	if (JF_LIKELY(clk.use_tsc)) {
		/*
		 * lfence first: a bare rdtsc may execute before earlier loads complete, and then a
		 * time read after observing another thread's timestamp can be ~2 us older than it
		 * (measured across vCPUs here). Signed: another CPU's TSC may read a hair below tsc0.
		 */
		int64_t d;
		_mm_lfence();
		d = (int64_t)(__rdtsc() - clk.tsc0);
		return clk.ns0 + (uint64_t)(((__int128)d * (__int128)clk.mult) >> 32);
	}
	return mono_ns();
}

const char *jf_clock_source(void)
{
	jf_clock_init();
	return clk.use_tsc ? "tsc" : "clock_monotonic";
}

uint64_t jf_tsc_hz(void)
{
	jf_clock_init();
	return clk.use_tsc ? clk.hz : 0;
}

uint64_t jf_ns_to_tsc_ticks(uint64_t ns)
{
	return (uint64_t)(((unsigned __int128)ns * clk.tsc_mult) >> 32) + 1;
}
