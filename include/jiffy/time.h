/*
 * jiffy/time.h - the runtime's clock and sleeping.
 *
 * Owns: jf_now_ns() (calibrated TSC when the CPU reports constant and nonstop TSC, otherwise
 * CLOCK_MONOTONIC; never the wall clock) and the uthread sleep calls, served by per-worker timers.
 */
#ifndef JIFFY_TIME_H
#define JIFFY_TIME_H

#include <jiffy/export.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * jf_now_ns() - monotonic nanoseconds on the CLOCK_MONOTONIC time base. Callable anywhere, also
 * outside the runtime and from signal handlers. ~8 ns with the TSC, ~25 ns without.
 */
JF_API uint64_t jf_now_ns(void);

/** jf_clock_source() - "tsc" or "clock_monotonic". */
JF_API const char *jf_clock_source(void);

/** jf_tsc_hz() - calibrated TSC frequency in Hz, 0 when the TSC is not used. */
JF_API uint64_t jf_tsc_hz(void);

/**
 * jf_sleep_ns() - block the calling uthread (not its worker) for at least @ns nanoseconds.
 * Wakes no earlier than asked; how much later depends on what else runs on the worker (without
 * preemption a uthread computing for 1 ms delays the wakeup by up to 1 ms).
 * Return: 0; -EPERM outside the runtime.
 */
JF_API int jf_sleep_ns(uint64_t ns);

/** jf_sleep_until() - like jf_sleep_ns() until jf_now_ns() >= @deadline_ns. */
JF_API int jf_sleep_until(uint64_t deadline_ns);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_TIME_H */
