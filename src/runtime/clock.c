/*
 * clock.c - jf_now_ns(): the one clock of the runtime.
 *
 * Owns: choosing the clock source and calibrating it. With an invariant TSC (CPUID
 * 0x80000007:EDX[8], "constant_tsc nonstop_tsc" in /proc/cpuinfo) the TSC is read with rdtsc
 * (ordered by lfence, as the kernel's vDSO does) and scaled to nanoseconds on the
 * CLOCK_MONOTONIC time base, calibrated against CLOCK_MONOTONIC the first time it is chosen;
 * otherwise CLOCK_MONOTONIC is read directly. jf_run() chooses with its configuration's
 * jf_config.clock (JIFFY_CLOCK=monotonic forces CLOCK_MONOTONIC); before the first jf_run(), the
 * first call chooses the default, the TSC when invariant. Nothing here reads the environment.
 * Never the wall clock, never an assumed frequency.
 *
 * Invariant: clk.state is written under clk_lock, and only after the calibration it names is
 * complete (release); readers load it with acquire, so a reader that sees CLK_TSC sees the
 * calibration. Both sources count nanoseconds on the CLOCK_MONOTONIC base, so a choice changed
 * between two runtimes moves no time backwards by more than the calibration's error.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <time.h>
#include <x86intrin.h>

#include "runtime.h"

enum { CLK_UNSET = 0, CLK_MONOTONIC, CLK_TSC };

static struct {
	int state;   /* CLK_*: what jf_now_ns() reads (acquire) */
	bool tsc_ok; /* invariant TSC, calibrated (set once, by tsc_calibrate) */
	uint64_t hz;
	uint64_t tsc0, ns0;
	uint64_t mult;     /* ns = ((tsc - tsc0) * mult) >> 32 */
	uint64_t tsc_mult; /* ticks = (ns * tsc_mult) >> 32 */
} clk;

static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t clk_lock = PTHREAD_MUTEX_INITIALIZER;

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

static void tsc_calibrate(void)
{
	uint64_t t1 = 0, n1 = 0, t2 = 0, n2 = 0;

	if (!cpu_has_invariant_tsc())
		return;
	sample(&t1, &n1);
	do {
		sample(&t2, &n2);
	} while (n2 - n1 < 10000000u); /* 10 ms: ~5 ppm error from 25 ns brackets */
	clk.hz = (uint64_t)((unsigned __int128)(t2 - t1) * 1000000000u / (n2 - n1));
	clk.mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / clk.hz);
	clk.tsc_mult = (uint64_t)(((unsigned __int128)clk.hz << 32) / 1000000000u);
	jf__tsc_mult = clk.tsc_mult;
	clk.tsc0 = t2;
	clk.ns0 = n2;
	clk.tsc_ok = true;
}

/* Choose @kind's source (the TSC only when invariant); with @if_unset, only if none is yet. */
static void clock_choose(enum jf_clock_kind kind, bool if_unset)
{
	int state = CLK_MONOTONIC;

	pthread_mutex_lock(&clk_lock);
	if (!if_unset || clk.state == CLK_UNSET) {
		if (kind == JF_CLOCK_TSC) {
			pthread_once(&tsc_once, tsc_calibrate); /* 10 ms, the first time only */
			if (clk.tsc_ok)
				state = CLK_TSC;
		}
		__atomic_store_n(&clk.state, state, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&clk_lock);
}

void jf_clock_select(enum jf_clock_kind kind)
{
	clock_choose(kind, false);
}

void jf_clock_init(void)
{
	if (__atomic_load_n(&clk.state, __ATOMIC_ACQUIRE) == CLK_UNSET)
		clock_choose(JF_CLOCK_TSC, true);
}

/* A TSC value as jf_now_ns() time. Signed: another CPU's TSC may read a hair below tsc0. */
static inline uint64_t tsc_ns(uint64_t tsc)
{
	int64_t d = (int64_t)(tsc - clk.tsc0);
	return clk.ns0 + (uint64_t)(((__int128)d * (__int128)clk.mult) >> 32);
}

uint64_t jf_now_ns(void)
{
	int state = __atomic_load_n(&clk.state, __ATOMIC_ACQUIRE);

	if (JF_UNLIKELY(state == CLK_UNSET)) {
		jf_clock_init();
		state = __atomic_load_n(&clk.state, __ATOMIC_ACQUIRE);
	}
	if (JF_LIKELY(state == CLK_TSC)) {
		/*
		 * lfence first: a bare rdtsc may execute before earlier loads complete, and then a
		 * time read after observing another thread's timestamp can be ~2 us older than it
		 * (measured across vCPUs here).
		 */
		_mm_lfence();
		return tsc_ns(__rdtsc());
	}
	return mono_ns();
}

const char *jf_clock_source(void)
{
	jf_clock_init();
	return __atomic_load_n(&clk.state, __ATOMIC_ACQUIRE) == CLK_TSC ? "tsc" : "clock_monotonic";
}

uint64_t jf_tsc_hz(void)
{
	jf_clock_init();
	return __atomic_load_n(&clk.state, __ATOMIC_ACQUIRE) == CLK_TSC ? clk.hz : 0;
}

/*
 * Without jf_now_ns()'s lfence: it waits for every older instruction to finish, and at a switch
 * (the saved registers, the queue's stores in flight) that was 9-10 ns of a 42 ns yield on the
 * project's AMD EPYC guest (an rdtsc alone: 2-3 ns; bench/jiffy_bench, docs/performance.md). The
 * price: the stamp may be taken up to the out-of-order window before the instructions that
 * precede it (a VM exit in between can make that microseconds). Every use of the switch's stamp
 * tolerates an early one: a delay against another thread's stamp is clamped at 0 (ns_since), a
 * run that seems to have started a little earlier is preempted that much earlier, the word is
 * armed from the same raw TSC value (consistent with run_start_ns), and a mechanism's timer that
 * fired meanwhile is known fired from its signal (auto_on_signal), not from the clock.
 */
uint64_t jf_now_ns_tsc(uint64_t *tsc)
{
	if (JF_LIKELY(__atomic_load_n(&clk.state, __ATOMIC_ACQUIRE) == CLK_TSC)) {
		*tsc = __rdtsc();
		return tsc_ns(*tsc);
	}
	*tsc = 0;
	return jf_now_ns();
}

uint64_t jf__tsc_mult; /* clk.tsc_mult, for jf_ns_to_tsc_ticks_inline() (runtime.h) */

uint64_t jf_ns_to_tsc_ticks(uint64_t ns)
{
	return jf_ns_to_tsc_ticks_inline(ns);
}
