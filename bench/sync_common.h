/*
 * bench/sync_common.h - the synchronization-primitive benchmarks' op list and harness, shared by
 * jiffy_sync_bench.c, pthread_sync_bench.c and fiber_sync_bench.cpp (bench/go/sync.go mirrors it
 * in Go: `go_bench sync [OP...]`).
 *
 * Owns: the sync op names and their order, the shape of the contended ops (how many threads on how
 * many workers, the channel capacity), argument checking, and bench_sync_run(): the calibration of
 * bench_common.h (~100 ms a run, 20 ms with BENCH_QUICK=1), then BENCH_SYNC_REPS timed runs and one
 * line "<runtime>\t<op>\t<min_ns>\t<median_ns>\t<max_ns>" (ns per op; "n/a" three times for an op
 * the runtime has no primitive for). bench/run_sync.sh turns the lines into tables.
 *
 * What each op measures, identically in the four programs (change them together):
 *   mutex_uncontended     lock+unlock by one thread, nobody else around          per lock+unlock
 *   mutex_contended       BENCH_SYNC_THREADS threads on 2 workers lock, ++counter, unlock
 *                         in a loop (throughput: total time / total critical sections)
 *   rwlock_rd_uncontended rdlock+unlock by one thread                             per lock+unlock
 *   rwlock_read90         BENCH_SYNC_THREADS threads on 2 workers, 9 reads (read the counter)
 *                         to 1 write (++counter) per 10 critical sections      per critical section
 *   rwlock_write90        the same with 1 read to 9 writes                     per critical section
 *   sem_uncontended       wait+post on a semaphore at 1 by one thread               per wait+post
 *   sem_pingpong          two threads on one worker: A posts B's semaphore and waits on its own,
 *                         B the reverse                                   per one-way handoff
 *   barrier_round         BENCH_SYNC_THREADS parties on 2 workers pass one barrier  per round
 *   once_fast             once(&o, fn) after o ran fn: the fast path                 per call
 *   waitgroup_round       add(1), done(), wait() (returns at once) by one thread     per round
 *   chan_buffered         send then receive one 8-byte value on a buffered channel of capacity
 *                         BENCH_SYNC_CHAN_CAP, one thread                        per send+recv
 *   chan_unbuffered_pingpong  two threads on one worker, two unbuffered channels: A sends on
 *                         ping and receives on pong, B the reverse            per one-way handoff
 *   chan_mpmc             2 producers and 2 consumers on 2 workers (one of each per worker), one
 *                         buffered channel of capacity BENCH_SYNC_CHAN_CAP             per item
 *
 * "One thread"/"one worker": one uthread on a 1-worker runtime, one fiber on one pinned thread, a
 * goroutine with GOMAXPROCS=1, a kernel thread (the ping-pongs: two threads pinned to one CPU).
 * "On 2 workers": uthreads placed alternately on workers 0 and 1; fibers split over two pinned
 * threads; GOMAXPROCS=2; kernel threads pinned alternately to the first two CPUs. The contended
 * ops time from the start barrier to the last thread's end; the lock and barrier ones stop early
 * at bench_sync_cap_ns() (below) and count the operations they did.
 */
#ifndef JIFFY_BENCH_SYNC_COMMON_H
#define JIFFY_BENCH_SYNC_COMMON_H

#include "bench_common.h"

#define BENCH_SYNC_REPS 5
#define BENCH_SYNC_THREADS 4 /* threads of the contended ops (mutex, rwlock, barrier, chan_mpmc) */
#define BENCH_SYNC_WORKERS 2 /* ... spread over this many workers / CPUs */
#define BENCH_SYNC_CHAN_CAP 64 /* a power of two: Boost's buffered_channel requires one */
/*
 * The contended lock and barrier ops stop early once a run has lasted BENCH_SYNC_CAP_FACTOR times
 * bench_target_ns() (checked every BENCH_SYNC_CHECK_EVERY iterations) and count what they did: a
 * runtime whose contended cost is bimodal (Jiffy under ws: the uthreads either end up on one worker,
 * running one after the other at the uncontended cost, or convoy on the lock at ~100x that) would
 * otherwise be calibrated in the fast mode and take minutes per run in the slow one.
 */
#define BENCH_SYNC_CAP_FACTOR 3
#define BENCH_SYNC_CHECK_EVERY 64

#define BENCH_SYNC_NOPS 13
static const char *const bench_sync_op_names[BENCH_SYNC_NOPS] = {
	"mutex_uncontended", "mutex_contended",   "rwlock_rd_uncontended",
	"rwlock_read90",     "rwlock_write90",    "sem_uncontended",
	"sem_pingpong",      "barrier_round",     "once_fast",
	"waitgroup_round",   "chan_buffered",     "chan_unbuffered_pingpong",
	"chan_mpmc",
};

/** bench_sync_check_args() - 0 if every argument names a sync op, else prints usage, -1. */
static inline int bench_sync_check_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int known = 0;
		for (int k = 0; k < BENCH_SYNC_NOPS; k++)
			known |= strcmp(argv[i], bench_sync_op_names[k]) == 0;
		if (!known) {
			fprintf(stderr, "%s: unknown op '%s'; ops:", argv[0], argv[i]);
			for (int k = 0; k < BENCH_SYNC_NOPS; k++)
				fprintf(stderr, " %s", bench_sync_op_names[k]);
			fprintf(stderr, "\n");
			return -1;
		}
	}
	return 0;
}

/** bench_sync_print_na() - the line of an op this runtime has no primitive for; @why to stderr. */
static inline void bench_sync_print_na(const char *runtime, const char *op, const char *why)
{
	printf("%s\t%s\tn/a\tn/a\tn/a\n", runtime, op);
	fflush(stdout);
	if (why)
		fprintf(stderr, "%s: %s: n/a: %s\n", runtime, op, why);
}

/**
 * bench_sync_run() - calibrate and time @fn like bench_run(), print min, median and max.
 * Return: 0, or -1 if the op reported no operations (it then prints "n/a").
 */
static inline int bench_sync_run(const char *runtime, const char *op, bench_fn fn, void *ctx)
{
	double ns_per_op[BENCH_SYNC_REPS];

	if (bench_measure(fn, ctx, ns_per_op, BENCH_SYNC_REPS) != 0) {
		bench_sync_print_na(runtime, op, "the op reported no operations");
		return -1;
	}
	printf("%s\t%s\t%.1f\t%.1f\t%.1f\n", runtime, op, ns_per_op[0],
	       ns_per_op[BENCH_SYNC_REPS / 2], ns_per_op[BENCH_SYNC_REPS - 1]);
	fflush(stdout);
	return 0;
}

/* bench_sync_cap_ns() - how long a run of a capped op may last (see BENCH_SYNC_CAP_FACTOR). */
static inline uint64_t bench_sync_cap_ns(void)
{
	return BENCH_SYNC_CAP_FACTOR * bench_target_ns();
}

/* bench_sync_per_thread() - iterations per thread when @threads share @iters (at least 1). */
static inline uint64_t bench_sync_per_thread(uint64_t iters, unsigned threads)
{
	uint64_t per = (iters + threads - 1) / threads;
	return per ? per : 1;
}

#endif /* JIFFY_BENCH_SYNC_COMMON_H */
