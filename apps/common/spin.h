/*
 * apps/common/spin.h - the synthetic workload's unit of work: a calibrated compute loop.
 *
 * A SPIN request of N ns must cost N ns of *CPU*, not of wall-clock time: a preempted handler
 * that watched the clock would finish while it was not running. So servers calibrate a fixed
 * loop at start-up (iterations per ns, best of several trials) and run N * rate iterations.
 * The Go and Tokio peers implement the same loop (docs/protocol.md) and calibrate their own.
 */
#ifndef JIFFY_APPS_SPIN_H
#define JIFFY_APPS_SPIN_H

#include <stdint.h>

/* Measure the loop's speed on this CPU (~50 ms). Return iterations per microsecond. */
double jp_spin_calibrate(void);
/* Compute for @ns of CPU. @check, if not NULL, is called every ~1 µs of work (a safepoint). */
void jp_spin_ns(uint64_t ns, void (*check)(void));
/* The raw loop: @iters iterations of a dependent multiply-add chain; returns its value. */
uint64_t jp_spin_iters(uint64_t iters, uint64_t seed);

#endif /* JIFFY_APPS_SPIN_H */
