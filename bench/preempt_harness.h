/*
 * bench/preempt_harness.h - the workload and measurements shared by bench/preempt_bench.c and
 * tools/jiffy-calibrate.c: what a preemption costs, measured on the machine they run on.
 *
 * Owns: the compute kernel (ph_spin) and its calibration, the raw signal measurements that are
 * the floor of the signal mechanisms (signal to self, cross-CPU signal, per-thread POSIX timer,
 * timer_settime), one runtime run (ph_run) isolated in a child process, and small helpers
 * (machine description, load, statistics, least squares).
 *
 * Invariants: a run of the runtime always happens in a forked child (ph_run), so a mechanism that
 * crashes or hangs costs one table cell, not the whole benchmark, and every run starts a fresh
 * runtime. The parent must therefore have no other threads when ph_run() is called (the raw
 * measurements join theirs before they return). Results come back through MAP_SHARED memory.
 */
#ifndef JIFFY_PREEMPT_HARNESS_H
#define JIFFY_PREEMPT_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jiffy/jiffy.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- machine ------------------------------------------------------------------------------ */

/**
 * struct ph_machine - what the numbers were measured on.
 * @ncpus:      CPUs in the affinity mask; @cpu_first, @cpu_second the first two of them
 *              (@cpu_second = -1 with one CPU).
 */
struct ph_machine {
	int ncpus;
	int cpu_first, cpu_second;
	char cpu_model[128];
	char kernel[160];
	char hypervisor[16]; /* "KVMKVMKVM", "none", ... (CPUID leaf 0x40000000) */
	const char *clock;   /* jf_clock_source() */
	uint64_t tsc_hz;
	double loadavg1;
};

void ph_machine_describe(struct ph_machine *m);
/** ph_busy_cpus() - how many CPUs' worth of work the whole machine did during @ms ms. */
double ph_busy_cpus(unsigned ms);

/* ---- the compute kernel -------------------------------------------------------------------- */

/**
 * ph_spin() - @iters steps of a dependent multiply-add chain in registers (a compute-bound loop
 * whose speed does not depend on the caches, so runs compare to < 1 %). Returns the new chain
 * value (keep it, or the work is dead code).
 */
uint64_t ph_spin(uint64_t x, uint64_t iters);

/** ph_calibrate() - measure ph_spin's speed (best of several runs); call once, before forking. */
void ph_calibrate(void);
/** ph_ns_per_iter() - calibrated nanoseconds per ph_spin iteration. */
double ph_ns_per_iter(void);
/** ph_iters_for_ns() - iterations that take about @ns nanoseconds (at least 1). */
uint64_t ph_iters_for_ns(double ns);

/* ---- raw signal costs (no runtime; plain kernel threads) ---------------------------------- */

/**
 * ph_set_time_base() - how the raw receivers (ph_raw_xcpu_signal, ph_raw_posix_timer) time their
 * work: the receiving thread's CPU time (@wall = 0, the default: what other processes on the
 * machine take does not count) or the wall clock (@wall = 1).
 */
void ph_set_time_base(int wall);
int ph_time_base_wall(void);

/** ph_signal_from_env() - the preemption signal the runtime will use (JIFFY_PREEMPT_SIGNAL). */
int ph_signal_from_env(void);

/** ph_raw_self_signal_ns() - tgkill() to the calling thread + empty handler + sigreturn, ns. */
double ph_raw_self_signal_ns(int sig, unsigned iters);
/** ph_raw_getpid_ns() - a bare system call (syscall(SYS_getpid)), ns: the kernel-entry floor. */
double ph_raw_getpid_ns(unsigned iters);
/** ph_raw_settime_ns() - timer_settime() arming a one-shot per-thread timer 1 s ahead, ns. */
double ph_raw_settime_ns(int sig, unsigned iters);
/**
 * ph_raw_settime_at_ns() - the same, armed @ahead_ns ahead (re-armed before it fires). An expiry
 * before the CPU's next timer event (the scheduler tick) reprograms the local APIC timer: on a
 * KVM guest a VM exit, which is what "auto" pays to move its timer (src/runtime/preempt/auto.c).
 */
double ph_raw_settime_at_ns(int sig, unsigned iters, uint64_t ahead_ns);

/**
 * struct ph_xcpu - a spinning thread on the second CPU receiving signals (tgkill) from a thread
 * on the first CPU every @interval_ns.
 * @rx_cost_ns: extra receiver time per signal = (work time with - without) / signals, best of
 *              the runs; @rx_cost_med_ns the median over runs.
 * @tx_cost_ns: sender time inside tgkill(), median over the calls.
 * @signals:    signals received in the best run; @interval_ns as asked.
 */
struct ph_xcpu {
	int ok;
	char why[128];
	double rx_cost_ns, rx_cost_med_ns, tx_cost_ns;
	uint64_t signals;
	uint64_t interval_ns;
	double work_ns;
};
int ph_raw_xcpu_signal(int sig, uint64_t interval_ns, uint64_t work_ns, int reps,
		       struct ph_xcpu *out);

/**
 * struct ph_ptimer - a per-thread periodic POSIX timer (timer_create(CLOCK_MONOTONIC,
 * SIGEV_THREAD_ID)) firing every @period_ns on a thread spinning on the second CPU.
 * @cost_ns:      extra receiver time per delivered signal (best run); @cost_med_ns median.
 * @delivered:    handler runs in the best run; @overruns expiries merged into them
 *                (si_overrun); @rate_per_s delivered signals per wall-clock second.
 */
struct ph_ptimer {
	int ok;
	char why[128];
	double cost_ns, cost_med_ns;
	uint64_t delivered, overruns;
	double rate_per_s;
	uint64_t period_ns;
};
int ph_raw_posix_timer(int sig, uint64_t period_ns, uint64_t work_ns, int reps,
		       struct ph_ptimer *out);

/**
 * struct ph_sleeper - a thread that sleeps @period_ns at a time (nanosleep, 1 ns timer slack) on
 * the CPU where another thread spins: what a sleeping timer thread costs a worker it shares a
 * CPU with (dispatcher, safepoint, hybrid when no CPU is free for it). Timed by the wall clock:
 * the sleeper's own run time, the two context switches and the timer interrupt are the cost, and
 * none of them is the spinner's CPU time.
 * @cost_ns:  extra wall time of the spinner's work per wake-up (best run); @cost_med_ns median.
 * @wakes:    wake-ups in the best run; @wake_every_ns the wall time between them (the period
 *            plus how late the kernel wakes it).
 */
struct ph_sleeper {
	int ok;
	char why[128];
	double cost_ns, cost_med_ns, wake_every_ns;
	uint64_t wakes, period_ns;
};
int ph_raw_colocated_sleeper(uint64_t period_ns, uint64_t work_ns, int reps,
			     struct ph_sleeper *out);

/* ---- one runtime run, in a child process --------------------------------------------------- */

#define PH_MAX_THREADS 64
#define PH_MAX_SLICES (1u << 20)

/**
 * struct ph_run_cfg - what ph_run() runs.
 * @mech, @quantum_ns:  preemption mechanism and quantum (the rest of jf_config comes from the
 *                      defaults and the JIFFY_* environment; @grace_ns overrides if non-zero).
 *                      @mech may name a variant "<mechanism>+spin": the timer thread then spins
 *                      (jf_config.timer_spin); otherwise @timer_spin says, overriding the
 *                      environment.
 * @safepoints:         call jf_safepoint() after every chunk.
 * Batch mode (@workers == 1, @duration_ns == 0): @nthreads uthreads on one pinned worker, each
 *                      running @chunks chunks of @chunk_iters ph_spin iterations; wall time
 *                      from before the spawns to after the joins.
 * @timeliness:         batch mode only: each uthread timestamps every chunk and records the
 *                      slices it ran between two switches (gaps > @gap_ns during which the
 *                      other uthread made progress).
 * Scale mode (@duration_ns > 0): @workers unpinned workers, policy fifo, @per_worker uthreads
 *                      placed on each that compute until stopped; counters are taken over
 *                      @duration_ns after a warm-up.
 * @timeout_s:          the child is killed after this long (0: 60 s).
 * @retries:            batch mode: how often a contended run is repeated (0: 3; -1: never). A
 *                      run is contended when the worker lost its CPU to other threads (wall
 *                      time > 1.03 x its CPU time + 0.3 ms) or a spinning timer thread got less
 *                      than 80 % of a CPU: other processes were running on the machine.
 */
struct ph_run_cfg {
	const char *mech;
	int timer_spin;
	uint64_t quantum_ns;
	uint64_t grace_ns;
	int safepoints;
	unsigned nthreads;
	uint64_t chunks;
	uint64_t chunk_iters;
	int timeliness;
	uint64_t gap_ns;
	unsigned workers;
	unsigned per_worker;
	uint64_t duration_ns;
	unsigned timeout_s;
	int retries;
};

/**
 * struct ph_run_res - what one run measured (counters are deltas over the measured interval).
 * @wall_ns:       wall time of the measured interval.
 * @worker_cpu_ns: batch mode: CPU time of the (only) worker's kernel thread over it: the
 *                 computing, the signal handling and the switches, but not the time other
 *                 processes took the CPU (nor hypervisor steal time).
 * @ok:     0 when the run failed; @why then says how (jf_run error, signal, time-out).
 * @slices: timeliness runs: @nslices slice lengths in ns (valid until the next ph_run()).
 * @noswitch, @noswitch_ns: gaps > gap_ns in a uthread's timestamps during which no other uthread
 *          ran (a signal that did not switch, a hypervisor or kernel interruption).
 * @contended: the result is still contended after the retries; @attempts runs were made.
 */
struct ph_run_res {
	int ok;
	char why[200];
	char mech[16];
	uint64_t wall_ns, worker_cpu_ns;
	struct jf_worker_stats st;
	uint64_t scans, signals_sent, flags_set, timer_cpu_ns;
	uint64_t grace_ns; /* the grace period the run used (jf_preempt_stats) */
	uint64_t nslices, noswitch, noswitch_ns;
	int contended, attempts;
	uint64_t *slices;
};

int ph_run(const struct ph_run_cfg *cfg, struct ph_run_res *res);

/**
 * struct ph_contention - how often runs found the machine busy, since the start: @runs batch
 * runs and raw receiver runs, @repeated of them repeated, @left contended even after retries.
 */
struct ph_contention {
	uint64_t runs, repeated, left;
};
void ph_contention(struct ph_contention *out);

/** ph_grace_ns() - the grace period runs are configured with (defaults + environment):
 * JF_GRACE_DEFAULT when each mechanism uses its own (a run's ph_run_res.grace_ns says which). */
uint64_t ph_grace_ns(void);

/**
 * ph_mech_available() - jf_preempt_available() with the reason; 1 available, 0 not (reason in
 * @why), and 0 with "unknown to this library" for -EINVAL. A "+spin" variant is available when
 * its mechanism is.
 */
int ph_mech_available(const char *name, char *why, size_t len);

/* ---- statistics ---------------------------------------------------------------------------- */

void ph_sort_u64(uint64_t *v, size_t n);
void ph_sort_double(double *v, size_t n);
/** ph_pct_u64() - the @p-th percentile (0..100) of sorted @v (nearest rank). */
uint64_t ph_pct_u64(const uint64_t *v, size_t n, double p);
double ph_median(double *v, size_t n); /* sorts @v */

/**
 * ph_lsq() - least squares: the @k coefficients c minimising sum_i (y_i - sum_j c_j x_ij)^2 over
 * @n rows (x row-major, n x k, k <= 4). Return: 0, or -1 when the system is singular.
 */
int ph_lsq(const double *x, const double *y, int n, int k, double *c);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_PREEMPT_HARNESS_H */
