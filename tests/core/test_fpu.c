/*
 * core/test_fpu.c - proves that the floating-point control state is per uthread: each uthread
 * sets its own MXCSR rounding mode and flush-to-zero bit and its own x87 control word (rounding
 * and precision), and after thousands of yields, sleeps and blocking mutex acquisitions amid
 * uthreads using other modes it still reads back exactly those values and computes bit-identical
 * results (1/3 in SSE double and in x87 long double, a denormal product), on 2 workers and on 1.
 */
#include <float.h>
#include <stdatomic.h>

#include "jf_test.h"

#if defined(__x86_64__)

#define NTHREADS 16
#define MXCSR_FLAGS 0x3fu /* sticky exception flags: change with the arithmetic itself */
#define MXCSR_RC_SHIFT 13
#define MXCSR_FTZ (1u << 15)
#define X87_PC_SHIFT 8
#define X87_RC_SHIFT 10

static long iters;
static uint32_t default_mxcsr;
static uint16_t default_cw;
static jf_mutex_t m = JF_MUTEX_INITIALIZER;
static atomic_int distinct_results_seen;

struct fp_results {
	double sse_third;
	long double x87_third;
	double denormal;
};

static volatile double v_one = 1.0, v_three = 3.0, v_half = 0.5;
static volatile long double v_lone = 1.0L, v_lthree = 3.0L;

static void compute(struct fp_results *r)
{
	volatile double min_normal = DBL_MIN;

	memset(r, 0, sizeof(*r));
	r->sse_third = v_one / v_three;
	r->x87_third = v_lone / v_lthree;
	r->denormal = min_normal * v_half;
}

static int same_results(const struct fp_results *a, const struct fp_results *b)
{
	/* Bitwise; the x87 value has 10 significant bytes. */
	return memcmp(&a->sse_third, &b->sse_third, sizeof(double)) == 0 &&
	       memcmp(&a->x87_third, &b->x87_third, 10) == 0 &&
	       memcmp(&a->denormal, &b->denormal, sizeof(double)) == 0;
}

static void check_state(int who, long k, uint32_t mxcsr, uint16_t cw,
			const struct fp_results *want, const char *after)
{
	struct fp_results now;
	uint32_t got_mxcsr = jft_get_mxcsr();
	uint16_t got_cw = jft_get_x87_cw();

	if ((got_mxcsr & ~MXCSR_FLAGS) != (mxcsr & ~MXCSR_FLAGS) || got_cw != cw) {
		fprintf(stderr,
			"uthread %d, iteration %ld, after %s: MXCSR %#x (want %#x), x87 CW %#x "
			"(want %#x)\n",
			who, k, after, got_mxcsr, mxcsr, got_cw, cw);
		CHECK(!"floating-point control state lost");
	}
	compute(&now);
	if (!same_results(&now, want)) {
		fprintf(stderr, "uthread %d, iteration %ld, after %s: results changed\n", who, k,
			after);
		CHECK(!"floating-point results changed");
	}
}

static void *fpu_fn(void *arg)
{
	static const unsigned pcs[3] = {0, 2, 3}; /* 24-, 53-, 64-bit precision */
	int who = (int)(intptr_t)arg;
	unsigned sse_rc = (unsigned)who % 4, x87_rc = ((unsigned)who / 4) % 4;
	unsigned ftz = ((unsigned)who / 2) % 2;
	uint32_t mxcsr = (default_mxcsr & ~(3u << MXCSR_RC_SHIFT) & ~MXCSR_FTZ & ~MXCSR_FLAGS) |
			 (sse_rc << MXCSR_RC_SHIFT) | (ftz ? MXCSR_FTZ : 0);
	uint16_t cw = (uint16_t)((default_cw & ~0x0f00u) | (pcs[who % 3] << X87_PC_SHIFT) |
				 (x87_rc << X87_RC_SHIFT));
	struct fp_results want;
	long k;

	jft_set_mxcsr(mxcsr);
	jft_set_x87_cw(cw);
	compute(&want);
	/* The mode really took effect. */
	CHECK_EQ(want.denormal == 0.0, ftz != 0);

	for (k = 0; k < iters; k++) {
		if (k % 50 == 0) {
			CHECK_EQ(jf_sleep_ns(2000), 0);
			check_state(who, k, mxcsr, cw, &want, "sleep");
		} else if (k % 25 == 0) {
			jf_mutex_lock(&m);
			check_state(who, k, mxcsr, cw, &want, "mutex_lock");
			jf_yield();
			CHECK_EQ(jf_mutex_unlock(&m), 0);
		} else {
			jf_yield();
		}
		check_state(who, k, mxcsr, cw, &want, "yield");
	}
	/* Report what this mode computed, so main can see the modes differ. */
	return (void *)(uintptr_t)(want.sse_third > 0.33333333333333331 ? 2 : 1);
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[NTHREADS];
	struct fp_results want;
	uint32_t mxcsr = jft_get_mxcsr();
	uint16_t cw = jft_get_x87_cw();
	int i, seen = 0;

	(void)arg;
	/* main keeps the state it started with while the others change theirs. */
	compute(&want);
	for (i = 0; i < NTHREADS; i++)
		t[i] = jft_spawn_on(i % jf_nworkers(), fpu_fn, (void *)(intptr_t)i);
	for (i = 0; i < NTHREADS; i++) {
		seen |= (int)(uintptr_t)jft_join(t[i]);
		check_state(-1, i, mxcsr, cw, &want, "join");
	}
	atomic_store(&distinct_results_seen, seen);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	unsigned workers;

	iters = JFT_SCALE(2000L, 500L);
	default_mxcsr = jft_get_mxcsr();
	default_cw = jft_get_x87_cw();
	printf("default MXCSR %#x, x87 CW %#x\n", default_mxcsr, default_cw);
	for (workers = 2; workers >= 1; workers--) {
		jft_config(&cfg, workers);
		cfg.workers = workers;
		jft_run(&cfg, main_fn, NULL);
		/* Rounding up and rounding down of 1/3 both happened. */
		CHECK_EQ(atomic_load(&distinct_results_seen), 3);
	}
	jft_ok("core.fpu");
	return 0;
}

#else
int main(void)
{
	printf("core.fpu: x86-64 only\n");
	jft_ok("core.fpu");
	return 0;
}
#endif
