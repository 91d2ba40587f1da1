/*
 * jiffy/stats.h - per-worker counters and histograms.
 *
 * Owns: the counters and histograms each worker keeps about itself. Each counter is written only by its worker
 * and read here without stopping it, so a snapshot taken while the runtime runs is approximate
 * (each counter is exact and monotonic; counters are not a consistent cut).
 */
#ifndef JIFFY_STATS_H
#define JIFFY_STATS_H

#include <jiffy/export.h>

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct jf_worker_stats - what one worker counted.
 * @switches:   context switches into a uthread.
 * @spawns:     uthreads created on this worker.
 * @tasks_done: uthreads that finished on this worker.
 * @yields:     jf_yield() calls.
 * @blocks:     uthreads that blocked (mutex, condvar, join, sleep, ...).
 * @wakeups:    uthreads made runnable again by this worker.
 * @steals:     uthreads taken from another worker's queue.
 * @parks:      times the worker parked on its futex after spinning.
 * @unparks:    futex wakes this worker sent to parked workers.
 * @timers:     timers that fired on this worker.
 * @idle_ns:    time spent spinning or parked with nothing to run.
 * @preempt_requests: preemption requests aimed at this worker (signals, timer expiries,
 *              safepoint flags) by its mechanism.
 * @preempts:   uthreads preempted on this worker.
 * @preempt_skipped:  requests that found nothing else to run or the quantum not used up.
 * @preempt_deferred: requests that arrived in a non-preemptible region (runtime, libc,
 *              jf_preempt_disable()) and were taken later.
 * @wakeup_preempts: wakeup preemptions this worker asked for (a task it queued should run
 *              before the one running on the target; counted on the asking worker).
 * @netpolls:   epoll polls this worker made for the netpoller (busy, or parked in epoll).
 * @preempts_safepoint: of @preempts, those requested at a jf_safepoint() (a probe: "safepoint",
 *              "deadline", "hybrid" and "auto" when the code cooperates).
 * @preempts_signal: of @preempts, those requested by the preemption signal (or a user
 *              interrupt): code that reached no safepoint in time. A request of either kind that
 *              lands in a non-preemptible region is taken at its end and still counted by the
 *              path it came in by. The rest of @preempts are wakeup preemptions and requests
 *              that came from elsewhere.
 * @preempt_lock_deferred: preemptions deferred because the uthread held a Jiffy lock
 *                 (jf_config.lock_defer_ns; jiffy/sync.h).
 * @netpoll_irqs: of @netpolls, those the netpoller's interrupt thread asked for
 *              (JIFFY_NETPOLL_IRQ=1: readiness delivered as a kick; docs/netpoll-irq.md).
 * @netpoll_irq_wakeups: uthreads those polls made runnable.
 */
struct jf_worker_stats {
	uint64_t switches;
	uint64_t spawns;
	uint64_t tasks_done;
	uint64_t yields;
	uint64_t blocks;
	uint64_t wakeups;
	uint64_t steals;
	uint64_t parks;
	uint64_t unparks;
	uint64_t timers;
	uint64_t idle_ns;
	uint64_t preempt_requests;
	uint64_t preempts;
	uint64_t preempt_skipped;
	uint64_t preempt_deferred;
	uint64_t wakeup_preempts;
	uint64_t netpolls;
	uint64_t preempts_safepoint;
	uint64_t preempts_signal;
	uint64_t preempt_lock_deferred;
	uint64_t netpoll_irqs;
	uint64_t netpoll_irq_wakeups;
};

/*
 * Histograms. Each worker keeps HDR-style log-linear histograms of nanosecond durations: exact
 * below 16 ns, then 16 buckets per power of two (a bucket is at most 1/16 = 6.25 % wide) up to
 * 2^40 ns (18 minutes); longer values land in the last bucket.
 */
/** JF_HIST_SUB_BITS - log2 of the buckets per power of two (16). */
#define JF_HIST_SUB_BITS 4
/** JF_HIST_MAX_BITS - log2 of the largest value a bucket of its own holds (2^40 ns). */
#define JF_HIST_MAX_BITS 40
/** JF_HIST_BUCKETS - the buckets of one histogram (struct jf_hist.buckets). */
#define JF_HIST_BUCKETS (((JF_HIST_MAX_BITS - JF_HIST_SUB_BITS) + 1) << JF_HIST_SUB_BITS)

/**
 * enum jf_hist_kind - what a histogram measures.
 * @JF_HIST_RUNNABLE_DELAY: from being made runnable (spawned, woken, yielded, preempted) to
 *                          running, recorded by the worker that runs it.
 * @JF_HIST_RUN_LENGTH:     how long a uthread ran before it left its worker (yield, preemption,
 *                          block, exit); a yield that found nothing else to run ends a run too.
 * @JF_HIST_LATENESS_SAFEPOINT: preemptions at the end of a quantum taken at a jf_safepoint()
 *                          (a probe): when it was taken minus when the quantum ended.
 * @JF_HIST_LATENESS_SIGNAL: the same, for preemptions the signal (or user interrupt) took.
 * @JF_HIST_LATENESS_OTHER:  the same, for quantum preemptions that came in another way.
 * @JF_HIST_NR:             the number of kinds.
 */
enum jf_hist_kind {
	JF_HIST_RUNNABLE_DELAY = 0,
	JF_HIST_RUN_LENGTH,
	JF_HIST_LATENESS_SAFEPOINT,
	JF_HIST_LATENESS_SIGNAL,
	JF_HIST_LATENESS_OTHER,
	JF_HIST_NR
};

/**
 * struct jf_hist - one histogram.
 * @count:   values recorded (the sum of @buckets).
 * @sum_ns:  their sum, counting each value as its bucket's midpoint (within 3.2 %; the mean is
 *           @sum_ns / @count). Workers record buckets only: one store per value.
 * @buckets: counts per bucket; jf_hist_bucket_low() gives a bucket's lowest value.
 */
struct jf_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t buckets[JF_HIST_BUCKETS];
};

/**
 * jf_stats_hist() - histogram @kind of worker @w, or the sum over all workers if @w is -1.
 * @w:    a worker index, or -1.
 * @kind: which histogram.
 * @out:  receives it (about 5 KiB).
 *
 * Like the counters, a histogram read while the runtime runs is approximate (each bucket is
 * exact and monotonic; the buckets are not a consistent cut).
 * JF_HIST_RUNNABLE_DELAY and JF_HIST_RUN_LENGTH are recorded at every switch, and only when
 * asked for (jf_config.histograms, JIFFY_HIST=1; or JIFFY_STATS, JIFFY_SCHEDTRACE).
 * Return: 0; -EINVAL bad worker or kind; -ESRCH if no runtime runs; -ENODATA for those two
 * when this runtime does not record them.
 */
JF_API int jf_stats_hist(int w, enum jf_hist_kind kind, struct jf_hist *out);
/**
 * jf_hist_percentile() - the value at percentile @pct of @h.
 * @h:   a histogram.
 * @pct: from 0 to 100.
 *
 * Return: the highest value of the bucket holding that percentile (within 6.25 % of the true
 * value), or 0 if @h is empty.
 */
JF_API uint64_t jf_hist_percentile(const struct jf_hist *h, double pct);
/** jf_hist_bucket_low() - the lowest value (ns) bucket @i holds. Return: it, or 0 if out of range. */
JF_API uint64_t jf_hist_bucket_low(unsigned i);
/** jf_hist_name() - a short name for @kind ("runnable_delay", ...). Return: it, or "?". */
JF_API const char *jf_hist_name(enum jf_hist_kind kind);
/**
 * jf_stats_reset() - start the counters and histograms again from zero: what jf_stats_worker(),
 * jf_stats_total(), jf_stats_hist() and jf_stats_print() report from now on counts from this
 * call. Workers keep running; values recorded while it runs may land on either side.
 * Return: 0; -ESRCH if no runtime runs.
 */
JF_API int jf_stats_reset(void);

/** jf_stats_worker() - counters of worker @w. Return: 0; -EINVAL bad index; -ESRCH no runtime. */
JF_API int jf_stats_worker(int w, struct jf_worker_stats *out);
/** jf_stats_total() - the sum over all workers. Return: 0; -ESRCH if no runtime runs. */
JF_API int jf_stats_total(struct jf_worker_stats *out);
/** jf_stats_print() - configuration, a table of the counters of every worker, and the
 * percentiles of each histogram per worker. */
JF_API void jf_stats_print(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_STATS_H */
