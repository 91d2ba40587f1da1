/*
 * probe_bench.c - what the compiler-inserted probes cost, and how regularly they preempt.
 *
 * Owns: the driver of the probe measurements in docs/probes.md. The kernels (kernels.c) are
 * compiled once per variant (no plugin; the plugin with its defaults; with -jiffy-probe-* options)
 * and linked into this one program, so every variant runs in the same process, in rotating
 * order, on the same data. Runs inside jf_run(), in one uthread, so the probes read a worker's
 * real jf__preempt word.
 *   probe_bench overhead [reps]           each kernel x variant, reps rounds (default 11):
 *                                         median, min, max ms and the median's change vs plain.
 *                                         Nothing else runs, so no probe ever fires: run it with
 *                                         JIFFY_PREEMPT=none or deadline (idle: the word is 0).
 *   probe_bench interval <kernel> [ms] [variant]  under JIFFY_PREEMPT=deadline, JIFFY_WORKERS=1:
 *                                         the kernel (variant: default probed) alone for ms
 *                                         (default 300), then again
 *                                         with a second uthread that notes the time and yields;
 *                                         prints the intervals between its runs (= between
 *                                         preemptions of the kernel) and the kernel's slowdown.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

#include "kernels.h"

#define PROBE_BENCH_ADDR(v) &kernels_##v,
static const struct kernel_set *const variants[] = {PROBE_BENCH_VARIANTS(PROBE_BENCH_ADDR)};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))
static const char *const kernel_names[NKERNELS] = {"matmul", "hashbuild", "strloop", "recursive"};

static struct kernel_data data;

static void setup(void)
{
	uint64_t x = 88172645463325252ull;
	data.n = 256;
	data.a = malloc(data.n * data.n * sizeof(double));
	data.b = malloc(data.n * data.n * sizeof(double));
	data.c = malloc(data.n * data.n * sizeof(double));
	for (size_t i = 0; i < data.n * data.n; i++) {
		data.a[i] = (double)(i % 17) * 0.25;
		data.b[i] = (double)(i % 13) * 0.5;
	}
	data.nkeys = 400000;
	data.slots = 1 << 21;
	data.keys = malloc(data.nkeys * sizeof(uint64_t));
	data.table = malloc(data.slots * sizeof(uint64_t));
	for (size_t i = 0; i < data.nkeys; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		data.keys[i] = (x | 2) & ~1ull; /* even, non-zero: key ^ 1 is never a key */
	}
	size_t len = 4 << 20;
	char *t = malloc(len + 1);
	static const char words[] = "The quick Brown fox jumps over the lazy DOG, again and again. ";
	for (size_t i = 0; i < len; i++)
		t[i] = words[i % (sizeof(words) - 1)];
	t[len] = 0;
	data.text = t;
	data.fib_n = 30;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int overhead(int reps)
{
	static double t[NVARIANTS][101];
	printf("# probe overhead: %s preemption, %d rounds, variants in rotating order\n",
	       jf_preempt_mechanism(), reps);
	printf("%-10s %-11s %9s %9s %9s %8s\n", "kernel", "variant", "median_ms", "min_ms", "max_ms",
	       "vs_plain");
	for (int k = 0; k < NKERNELS; k++) {
		uint64_t want = variants[0]->run[k](&data);
		for (size_t v = 1; v < NVARIANTS; v++) {
			uint64_t got = variants[v]->run[k](&data);
			if (got != want) {
				fprintf(stderr, "probe_bench: %s/%s checksum %" PRIx64 " != %" PRIx64 "\n",
					kernel_names[k], variants[v]->variant, got, want);
				return 1;
			}
		}
		for (int r = 0; r < reps; r++)
			for (size_t j = 0; j < NVARIANTS; j++) {
				size_t v = (j + (size_t)r) % NVARIANTS;
				uint64_t t0 = jf_now_ns();
				variants[v]->run[k](&data);
				t[v][r] = (jf_now_ns() - t0) / 1e6;
			}
		double base = 0;
		for (size_t v = 0; v < NVARIANTS; v++) {
			double lo = t[v][0], hi = t[v][0];
			for (int r = 0; r < reps; r++) {
				lo = t[v][r] < lo ? t[v][r] : lo;
				hi = t[v][r] > hi ? t[v][r] : hi;
			}
			double med = median(t[v], reps);
			if (v == 0)
				base = med;
			printf("%-10s %-11s %9.3f %9.3f %9.3f %+7.1f%%\n", kernel_names[k],
			       variants[v]->variant, med, lo, hi, (med / base - 1) * 100);
		}
	}
	return 0;
}

/* --- interval ------------------------------------------------------------------------------- */

static int ikernel;
static const struct kernel_set *ivariant = &kernels_probed;
static uint64_t duration_ns;
static volatile int spinning_done;
static uint64_t *stamps;
static size_t nstamps, maxstamps;

/* Runs of the probed kernel that fit in duration_ns. */
static void *spin_main(void *arg)
{
	const struct kernel_set *ks = ivariant;
	(void)arg;
	uint64_t end = jf_now_ns() + duration_ns, runs = 0;
	while (jf_now_ns() < end) {
		ks->run[ikernel](&data);
		runs++;
	}
	spinning_done = 1;
	return (void *)(uintptr_t)runs;
}

static void *stamp_main(void *arg)
{
	while (!spinning_done) {
		if (nstamps < maxstamps)
			stamps[nstamps++] = jf_now_ns();
		jf_yield();
	}
	return arg;
}

static uint64_t run_spin(int with_stamper)
{
	jf_thread_t *a, *b = NULL;
	void *runs;
	spinning_done = 0;
	jf_spawn(&a, NULL, spin_main, NULL);
	if (with_stamper)
		jf_spawn(&b, NULL, stamp_main, NULL);
	jf_join(a, &runs);
	if (b)
		jf_join(b, NULL);
	return (uint64_t)(uintptr_t)runs;
}

static int interval(void)
{
	struct jf_worker_stats s0, s1;
	maxstamps = 4000000;
	stamps = malloc(maxstamps * sizeof(*stamps));
	uint64_t alone = run_spin(0);
	jf_stats_total(&s0);
	uint64_t shared = run_spin(1);
	jf_stats_total(&s1);
	if (nstamps < 3) {
		printf("interval %s: %zu runs of the second uthread: the kernel was not preempted\n",
		       kernel_names[ikernel], nstamps);
		return 1;
	}
	size_t n = nstamps - 1;
	double *iv = malloc(n * sizeof(double)), sum = 0, sq = 0;
	for (size_t i = 0; i < n; i++) {
		iv[i] = (stamps[i + 1] - stamps[i]) / 1e3;
		sum += iv[i];
		sq += iv[i] * iv[i];
	}
	double mean = sum / n, sd = sqrt(sq / n - mean * mean);
	qsort(iv, n, sizeof(*iv), cmp_double);
	printf("interval %-10s %-10s mech=%s preempts=%" PRIu64 " n=%zu us: p10 %.1f p50 %.1f p90 %.1f "
	       "p99 %.1f max %.1f mean %.1f sd %.1f  slowdown %+.1f%%\n",
	       kernel_names[ikernel], ivariant->variant, jf_preempt_mechanism(), s1.preempts - s0.preempts, n,
	       iv[n / 10], iv[n / 2], iv[n * 9 / 10], iv[n * 99 / 100], iv[n - 1], mean, sd,
	       ((double)alone / (double)shared - 1) * 100);
	return 0;
}

static int mode_interval;
static int reps = 11;

static void *app_main(void *arg)
{
	(void)arg;
	setup();
	return (void *)(intptr_t)(mode_interval ? interval() : overhead(reps));
}

int main(int argc, char **argv)
{
	void *ret = NULL;
	if (argc >= 2 && !strcmp(argv[1], "overhead")) {
		if (argc > 2)
			reps = atoi(argv[2]);
		if (reps < 1 || reps > 101) {
			fprintf(stderr, "probe_bench: reps must be 1..101\n");
			return 2;
		}
	} else if (argc >= 3 && !strcmp(argv[1], "interval")) {
		mode_interval = 1;
		ikernel = -1;
		for (int k = 0; k < NKERNELS; k++)
			if (!strcmp(argv[2], kernel_names[k]))
				ikernel = k;
		duration_ns = (argc > 3 ? strtoull(argv[3], NULL, 0) : 300) * 1000000ull;
		for (size_t v = 0; argc > 4 && v < NVARIANTS; v++)
			if (!strcmp(argv[4], variants[v]->variant))
				ivariant = variants[v];
		if (ikernel < 0) {
			fprintf(stderr, "probe_bench: unknown kernel %s\n", argv[2]);
			return 2;
		}
	} else {
		fprintf(stderr, "usage: %s overhead [reps] | interval "
				"matmul|hashbuild|strloop|recursive [ms] [variant]\n", argv[0]);
		return 2;
	}
	if (jf_run(NULL, app_main, NULL, &ret) != 0) {
		fprintf(stderr, "probe_bench: jf_run failed\n");
		return 1;
	}
	return ret ? 1 : 0;
}
