/*
 * bench/bench_common.h - the measurement harness shared by jiffy_bench.c, pthread_bench.c and
 * fiber_bench.cpp (bench/go/main.go mirrors it in Go).
 *
 * Owns: choosing the iteration count, the timed repetitions, min/median, the op names and the one
 * output line per op ("<runtime>\t<op>\t<min_ns>\t<median_ns>", or "n/a" twice).
 *
 * How an op is measured: an op is a function that runs @iters iterations of its loop and returns
 * the nanoseconds its timed loop took and how many operations (yields, handoffs, round trips,
 * spawn+join pairs) happened in that time. The harness first grows @iters until one run takes at
 * least BENCH_CALIB_NS, scales it so that a run takes about BENCH_TARGET_NS (20 ms with
 * BENCH_QUICK=1; re-scaling after one warm-up run of that length), then runs the op BENCH_REPS
 * times and prints the best (minimum) and the median nanoseconds per operation. The minimum is
 * the number to compare (noise only ever adds time); the median shows how stable it is.
 *
 * Everything here is static inline so that C and C++ files can include it; it has no state.
 */
#ifndef JIFFY_BENCH_COMMON_H
#define JIFFY_BENCH_COMMON_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* make perfcheck counts instructions of the op's run alone (BENCH_ITERS): start-up, the clock's
 * calibration and the exit are outside Callgrind's instrumentation. No-ops outside Valgrind. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_CG_START() CALLGRIND_START_INSTRUMENTATION
#define BENCH_CG_STOP() CALLGRIND_STOP_INSTRUMENTATION
#endif
#endif
#ifndef BENCH_CG_START
#define BENCH_CG_START() ((void)0)
#define BENCH_CG_STOP() ((void)0)
#endif

#define BENCH_REPS 5
#define BENCH_CALIB_NS 10000000ULL   /* a calibration run must last 10 ms to be trusted */
#define BENCH_TARGET_NS 100000000ULL /* each timed repetition lasts about 100 ms */
#define BENCH_QUICK_TARGET_NS 20000000ULL /* ... or 20 ms with BENCH_QUICK=1 (a quick look) */
#define BENCH_MAX_ITERS (1ULL << 34)

/* The ops, in the order every bench binary runs and prints them. */
#define BENCH_NOPS 6
static const char *const bench_op_names[BENCH_NOPS] = {
	"yield",          "spawn_join",     "ctx_switch",
	"wakeup_xworker", "mutex_pingpong", "condvar_pingpong",
};

/** struct bench_sample - what one run of an op measured: @ops operations in @elapsed_ns. */
struct bench_sample {
	uint64_t elapsed_ns;
	uint64_t ops;
};

/* Runs @iters iterations of an op; @ctx is the op's own state. */
typedef struct bench_sample (*bench_fn)(void *ctx, uint64_t iters);

/**
 * bench_selected() - whether @op was asked for: every op when no argument names one.
 * Unknown names in @argv are reported by bench_check_args().
 */
static inline int bench_selected(int argc, char **argv, const char *op)
{
	if (argc <= 1)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], op) == 0)
			return 1;
	return 0;
}

/** bench_check_args() - 0 if every argument names an op, else prints usage and returns -1. */
static inline int bench_check_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int known = 0;
		for (int k = 0; k < BENCH_NOPS; k++)
			known |= strcmp(argv[i], bench_op_names[k]) == 0;
		if (!known) {
			fprintf(stderr, "%s: unknown op '%s'; ops:", argv[0], argv[i]);
			for (int k = 0; k < BENCH_NOPS; k++)
				fprintf(stderr, " %s", bench_op_names[k]);
			fprintf(stderr, "\n");
			return -1;
		}
	}
	return 0;
}

/** bench_print_na() - the line for an op this runtime cannot run. */
static inline void bench_print_na(const char *runtime, const char *op)
{
	printf("%s\t%s\tn/a\tn/a\n", runtime, op);
	fflush(stdout);
}

static inline void bench_sort(double *v, int n)
{
	for (int i = 1; i < n; i++) {
		double x = v[i];
		int j = i - 1;
		for (; j >= 0 && v[j] > x; j--)
			v[j + 1] = v[j];
		v[j + 1] = x;
	}
}

/* bench_target_ns() - how long one timed run should last: BENCH_QUICK=1 shortens it. */
static inline uint64_t bench_target_ns(void)
{
	const char *quick = getenv("BENCH_QUICK");
	return quick && strcmp(quick, "1") == 0 ? BENCH_QUICK_TARGET_NS : BENCH_TARGET_NS;
}

/* bench_scale() - the iteration count that makes a run that took @elapsed_ns for @iters last
 * about bench_target_ns(). */
static inline uint64_t bench_scale(uint64_t iters, uint64_t elapsed_ns)
{
	double scaled = (double)iters * (double)bench_target_ns() /
			(double)(elapsed_ns ? elapsed_ns : 1);
	if (scaled < 1.0)
		return 1;
	if (scaled > (double)BENCH_MAX_ITERS)
		return BENCH_MAX_ITERS;
	return (uint64_t)scaled;
}

/**
 * bench_measure() - calibrate @fn to the target run time, then time it @reps times into
 * @ns_per_op, sorted (ns per operation). Return: 0, or -1 if the op reported no operations.
 */
static inline int bench_measure(bench_fn fn, void *ctx, double *ns_per_op, int reps)
{
	uint64_t iters = 16;
	struct bench_sample s;

	for (;;) {
		s = fn(ctx, iters);
		if (s.ops == 0)
			return -1;
		if (s.elapsed_ns >= BENCH_CALIB_NS || iters >= BENCH_MAX_ITERS)
			break;
		/* Aim the next calibration run at twice the threshold, growing at most 100x. */
		uint64_t grow = s.elapsed_ns ? 2 * BENCH_CALIB_NS / s.elapsed_ns + 1 : 100;
		if (grow > 100)
			grow = 100;
		if (grow < 2)
			grow = 2;
		iters *= grow;
	}
	/* Scale to the target, then once more after a full-length warm-up run: short runs are often
	 * slower per op (cold caches, stacks not yet cached), which would make the timed runs short. */
	iters = bench_scale(iters, s.elapsed_ns);
	s = fn(ctx, iters);
	iters = bench_scale(iters, s.elapsed_ns);

	for (int r = 0; r < reps; r++) {
		s = fn(ctx, iters);
		ns_per_op[r] = s.ops ? (double)s.elapsed_ns / (double)s.ops : 0.0;
	}
	bench_sort(ns_per_op, reps);
	return 0;
}

/**
 * bench_run() - calibrate and time @fn, then print its line for @runtime and @op.
 * Return: 0, or -1 if the op reported no operations (it then prints "n/a").
 */
static inline int bench_run(const char *runtime, const char *op, bench_fn fn, void *ctx)
{
	double ns_per_op[BENCH_REPS];
	const char *fixed = getenv("BENCH_ITERS");

	/* BENCH_ITERS=N: one untimed run of exactly N iterations, printing the operations it made
	 * ("<runtime>\t<op>\tops\t<count>"): what make perfcheck counts instructions over. */
	if (fixed && *fixed) {
		char *end;
		unsigned long long n = strtoull(fixed, &end, 10);
		if (*end || n == 0 || n > BENCH_MAX_ITERS) {
			fprintf(stderr, "%s: BENCH_ITERS='%s' is not a count from 1 to %llu\n", runtime,
				fixed, (unsigned long long)BENCH_MAX_ITERS);
			exit(2);
		}
		BENCH_CG_START();
		struct bench_sample s = fn(ctx, n);
		BENCH_CG_STOP();
		printf("%s\t%s\tops\t%" PRIu64 "\n", runtime, op, s.ops);
		fflush(stdout);
		return 0;
	}

	if (bench_measure(fn, ctx, ns_per_op, BENCH_REPS) != 0) {
		fprintf(stderr, "%s: %s: the op reported no operations\n", runtime, op);
		bench_print_na(runtime, op);
		return -1;
	}
	printf("%s\t%s\t%.1f\t%.1f\n", runtime, op, ns_per_op[0], ns_per_op[BENCH_REPS / 2]);
	fflush(stdout);
	return 0;
}

#endif /* JIFFY_BENCH_COMMON_H */
