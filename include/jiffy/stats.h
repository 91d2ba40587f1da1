/*
 * jiffy/stats.h - per-worker counters.
 *
 * Owns: the counters each worker keeps about itself. Each counter is written only by its worker
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
};

/** jf_stats_worker() - counters of worker @w. Return: 0; -EINVAL bad index; -ESRCH no runtime. */
JF_API int jf_stats_worker(int w, struct jf_worker_stats *out);
/** jf_stats_total() - the sum over all workers. Return: 0; -ESRCH if no runtime runs. */
JF_API int jf_stats_total(struct jf_worker_stats *out);
/** jf_stats_print() - configuration and a table of the counters of every worker. */
JF_API void jf_stats_print(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_STATS_H */
