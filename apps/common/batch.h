/*
 * apps/common/batch.h - best-effort batch work co-located with a server (--be N): the BE side of
 * Skyloft's LC/BE experiment (issue 12 §4; docs/performance.md, "LC/BE co-location").
 *
 * Owns: the batch loop (the calibrated SPIN loop of spin.h in units of JP_BATCH_UNIT_NS of CPU,
 * counted as done), the window it is measured over, and the report. The window opens at the
 * first latency-critical request the server receives (jp_batch_lc_seen) and closes at
 * jp_batch_stop, so the batch work reported is what was done while the LC load ran:
 * be_work_s (CPU seconds of batch work, at the calibrated speed) over be_window_s. Work counted
 * at the calibrated speed, not CPU time: batch work slowed by a cold cache counts as less.
 * Shared by jiffy-synth (BE uthreads) and synth-pthread (BE kernel threads at SCHED_IDLE or
 * nice 19), so both report the same quantity.
 */
#ifndef JIFFY_APPS_BATCH_H
#define JIFFY_APPS_BATCH_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define JP_BATCH_UNIT_NS 20000u /* one unit of batch work: 20 us of CPU */

struct jp_batch {
	atomic_ullong units;        /* units done since start */
	atomic_int stop;
	atomic_int seen;            /* the window is open */
	unsigned long long units0;  /* units at the window's start */
	uint64_t t0_ns, t1_ns;      /* the window, CLOCK_MONOTONIC */
	unsigned long long units1;
};

/* The batch loop: units of work until @b->stop; @check (may be NULL) every ~1 us of work. */
void jp_batch_run(struct jp_batch *b, void (*check)(void));
/* The first LC request: open the window (idempotent, cheap after the first call). */
void jp_batch_lc_seen(struct jp_batch *b);
/* Stop the loops and close the window (call once, then wait for the loops to return). */
void jp_batch_stop(struct jp_batch *b);
/* " be_work_s=W be_window_s=T be_share=S" (S = W / T) for the statistics line. */
void jp_batch_report(const struct jp_batch *b, char *out, size_t len);

#endif /* JIFFY_APPS_BATCH_H */
