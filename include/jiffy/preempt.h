/*
 * jiffy/preempt.h - preemption of running uthreads: non-preemptible regions and safepoints.
 *
 * Owns: the calls uthread code uses to cooperate with preemption. The mechanism that preempts is
 * chosen at start-up (jf_config.preempt / JIFFY_PREEMPT): "none", "timer" (a per-worker POSIX
 * timer signal), "dispatcher" (one thread watching all workers, tgkill only when a uthread has
 * run a full quantum and other work waits), "safepoint" (that thread sets a flag that
 * jf_safepoint() polls), "deadline" (no timer thread: jf_safepoint() compares the TSC with its
 * worker's own due time), "hybrid" (the flag first, a signal after a grace period), "auto" (the
 * default: deadline's safepoints, and the worker's own timer signal a grace period later for code
 * that reaches none) and "uintr" (Intel user interrupts, where the CPU and kernel have them).
 * docs/preemption.md explains how to choose one and its quantum.
 *
 * Guarantees under every mechanism: a preempted uthread resumes with every register the CPU has
 * (the whole XCR0 state: x87, SSE, AVX, AVX-512), its errno and the signal mask it had, on
 * whichever worker (voluntary switches do not save masks: see jiffy/thread.h); a uthread is never preempted inside a jf_preempt_disable() region, inside the runtime,
 * or while it executes code in libc, the dynamic loader, libstdc++, libgcc_s or a sanitizer
 * runtime (so malloc and stdio are never interrupted mid-call). Such a preemption is deferred:
 * at the end of a jf_preempt_disable() region or runtime call it is taken at once; when it was
 * deferred because the uthread was in libc (or a library like it), the mechanism asks again one
 * quantum later, so code that spends most of its time inside libc is preempted late.
 */
#ifndef JIFFY_PREEMPT_H
#define JIFFY_PREEMPT_H

#include <jiffy/export.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Private: per-kernel-thread preemption state, read by the inline functions below. */
struct jf__preempt_tls {
	int32_t count;   /* jf_preempt_disable() nesting (the runtime's own sections too) */
	int32_t pending; /* a preemption was deferred while count > 0 (nonzero; the value is the
			  * runtime's: how the request came in, for the statistics) */
	uint64_t poll;   /* jf_safepoint() enters the runtime once the TSC reaches this; 0: never.
			  * The timer thread's flag is 1 (due at once); "deadline" stores its
			  * worker's own due time, in TSC ticks. */
	/* Compiler probes (tools/probe-pass), while @poll is armed: a probe decrements @probe_left
	 * (offset 16, in the probe's inline asm) and reads the TSC only when it reaches 0, in
	 * jf__probe_armed(), which sets the next count from the rate probes ran at, so a tight
	 * loop reads the TSC a few times per quantum instead of at every iteration. */
	int64_t probe_left;
	uint64_t probe_tsc;  /* when jf__probe_armed() last read the TSC (0: not since arming) */
	int64_t probe_span;  /* the count it set then */
	int32_t spins_held;  /* unused since 2026-11-29 (spinlock.c counts them); kept: ABI */
};
/* The offsets the inline asm below and the probe pass (tools/probe-pass/JiffyProbes.cpp) use. */
#ifdef __cplusplus
#define JF__STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define JF__STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
JF__STATIC_ASSERT(offsetof(struct jf__preempt_tls, count) == 0, "jf_preempt_disable's asm: count at 0");
JF__STATIC_ASSERT(offsetof(struct jf__preempt_tls, pending) == 4, "jf_preempt_enable's asm: pending at 4");
JF__STATIC_ASSERT(offsetof(struct jf__preempt_tls, poll) == 8, "jf_safepoint's asm: poll at 8");
JF__STATIC_ASSERT(offsetof(struct jf__preempt_tls, probe_left) == 16,
		  "the probe pass's asm: probe_left at 16");
extern JF_API __thread struct jf__preempt_tls jf__preempt
	__attribute__((tls_model("initial-exec")));
JF_API void jf__preempt_enable_slow(void);
JF_API void jf__safepoint_slow(void);
JF_API void jf__probe_armed(void);

/*
 * The TLS accesses are asm volatile: the compiler must not reuse an address computed on the
 * kernel thread a uthread ran on before a scheduling point (see jiffy/thread.h on errno).
 */
#define JF__PREEMPT_TLS_ASM(insn, field)                                                          \
	"movq jf__preempt@gottpoff(%%rip), %%rax\n\t" insn " %%fs:" #field "(%%rax)"

/**
 * jf_preempt_disable() - start a region in which the calling uthread is not preempted (~1 ns).
 * Nests. A preemption that falls due inside is deferred to the matching jf_preempt_enable().
 * The region must not contain a scheduling point (yield, blocking jf_ call).
 */
static inline void jf_preempt_disable(void)
{
	__asm__ volatile(JF__PREEMPT_TLS_ASM("incl", 0) ::: "rax", "memory", "cc");
}

/** jf_preempt_enable() - end a region; takes a deferred preemption when the nesting reaches 0
 * (errno is kept across it). */
static inline void jf_preempt_enable(void)
{
	int32_t count, pending;
	__asm__ volatile(JF__PREEMPT_TLS_ASM("decl", 0) "\n\t"
			 "movl %%fs:0(%%rax), %0\n\t"
			 "movl %%fs:4(%%rax), %1"
			 : "=r"(count), "=r"(pending)
			 :
			 : "rax", "memory", "cc");
	if (__builtin_expect(count == 0 && pending, 0))
		jf__preempt_enable_slow();
}

/**
 * jf_safepoint() - a cooperative preemption point (an inline load and branch, ~1 ns).
 * Under the "safepoint" and "hybrid" mechanisms the timer thread sets a flag when the calling
 * uthread has run its quantum and other work waits; this call then yields. Under "deadline" and
 * "auto" (the default) there is no timer thread: the worker's due time is armed here and this call
 * also reads the TSC (rdtsc, ~10 ns) to compare, during a run's first slice and while other work
 * waits (the first call of each run enters the runtime once, to start the run's slice: the switch
 * reads no clock); once a run has outlasted its slice with nothing waiting it is the same load
 * and branch.
 * Call it in long loops (every ~1 us of work is plenty). Under other mechanisms it costs the load
 * and branch and does nothing.
 */
static inline void jf_safepoint(void)
{
	uint64_t when;
	__asm__ volatile(JF__PREEMPT_TLS_ASM("movq", 8) ", %0" : "=r"(when) : : "rax");
	if (__builtin_expect(when != 0, 0)) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		if (((uint64_t)hi << 32 | lo) >= when)
			jf__safepoint_slow();
	}
}

/** jf_preempt_mechanism() - name of the mechanism in use ("none" outside the runtime). */
JF_API const char *jf_preempt_mechanism(void);

/**
 * jf_preempt_available() - whether mechanism @name can run on this machine and kernel.
 * @name: a JIFFY_PREEMPT value ("timer", "deadline", ...).
 * @why, @len: receive the reason when it cannot (e.g. uintr: "the CPU has no UINTR feature").
 * Return: 1 available, 0 unavailable, -EINVAL unknown name.
 */
JF_API int jf_preempt_available(const char *name, char *why, unsigned long len);

/**
 * struct jf_preempt_stats - the sender side of preemption (the timer thread, if the mechanism
 * has one: dispatcher, safepoint, hybrid, uintr). Per-worker receiver counters are in
 * struct jf_worker_stats (preempt_requests, preempts, preempt_skipped, preempt_deferred).
 * @mechanism:       name of the mechanism.
 * @quantum_ns:      configured quantum.
 * @grace_ns:        the grace period in use (hybrid, auto; the mechanism's own unless configured).
 * @scans:           passes of the timer thread over all workers.
 * @signals_sent:    tgkill()/SENDUIPI calls made by the timer thread.
 * @flags_set:       safepoint flags raised.
 * @timer_cpu_ns:    CPU time the timer thread has used (0 without one).
 */
struct jf_preempt_stats {
	const char *mechanism;
	uint64_t quantum_ns;
	uint64_t scans;
	uint64_t signals_sent;
	uint64_t flags_set;
	uint64_t timer_cpu_ns;
	uint64_t grace_ns;
};

/** jf_preempt_stats() - Return: 0, or -ESRCH when no runtime runs. */
JF_API int jf_preempt_stats(struct jf_preempt_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_PREEMPT_H */
