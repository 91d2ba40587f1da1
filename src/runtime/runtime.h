/*
 * runtime.h - internal state of the runtime: uthreads, workers, the runtime singleton, and the
 * scheduling entry points its clients (src/sync, src/blocking, src/local, src/shim) share.
 *
 * Model (read this before changing anything below):
 *  - A worker is a kernel thread. It runs uthreads by switching stacks directly from one uthread
 *    to the next; its own pthread stack runs the scheduler loop (worker_loop) only when it has
 *    nothing to run, is stopping, or must free the stack it was running on.
 *  - A uthread is runnable (in exactly one policy queue), running (w->cur of exactly one worker),
 *    blocked (in at most one wait queue, or only referenced by a timer) or exited.
 *  - t->on_cpu is 1 from the moment a worker decides to switch to t until t's registers have been
 *    saved on its stack again (switch.S clears it). A worker that picks t waits for on_cpu == 0
 *    before switching to it. This is what allows a uthread to be put in a queue (yield) or woken
 *    (block) before it has left its worker, and picked by another worker at once.
 *  - Only a worker that runs no uthread may wait for on_cpu: a uthread that picks a next still on
 *    a CPU first switches to its worker's scheduler loop (w->handoff), which saves it. Otherwise
 *    two workers that picked each other's outgoing uthread would wait for each other forever.
 *  - After every switch the incoming context runs finish_switch(): it frees the stack of a
 *    detached uthread that just exited on this worker (its own stack cannot free itself).
 *  - Never keep a worker pointer across a switch: a uthread may resume on another worker. Code
 *    re-reads it from the current uthread (t->worker), which the switching worker sets.
 */
#ifndef JIFFY_RUNTIME_H
#define JIFFY_RUNTIME_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <jiffy/jiffy.h>

#include "../common/assert.h"
#include "../common/spinlock.h"
#include "preempt/preempt.h"
#include "../sched/driver.h"
#include "context.h"
#include "pfn.h"
#include "probes.h"

struct worker;

/* struct jf_thread.state. Transitions (jf_ut_set_state() checks them under JF_ASSERT):
 *   created RUNNABLE -> RUNNING (prepare_run, or picked again before it left);
 *   RUNNING -> RUNNABLE (yield, preemption), -> BLOCKED (jf_sched_block_then), -> EXITED;
 *   BLOCKED -> RUNNABLE (woken); RUNNABLE -> RUNNABLE only for a new uthread's first enqueue. */
enum uthread_state {
	UT_RUNNABLE = 0,
	UT_RUNNING,
	UT_BLOCKED,
	UT_EXITED,
};

/* What a uthread is doing, for people looking in (jf_dump_threads(), tools/gdb/jiffy-gdb.py):
 * struct jf_thread.vstate. Unlike @state it follows every switch. */
enum uthread_vstate {
	UV_RUNNABLE = 0, /* in a policy queue since @state_ns; @off_reason says why */
	UV_RUNNING,      /* on worker @worker since @state_ns */
	UV_BLOCKED,      /* on @wait_on (@wait_obj) since @state_ns */
	UV_EXITED,       /* finished at @state_ns, not yet joined */
	UV_FREE,         /* a cached stack, no uthread */
};

struct jf_thread {
	struct jf_ctx ctx;
	uint32_t on_cpu;       /* see the model above */
	int saved_errno;       /* errno while switched out */
	int32_t saved_pcount;  /* its preemption-disable nesting while switched out (preempt.h) */
	uint8_t resumed_in_place; /* left to the loop by a preemption signal and resumed without
				   * a requeue (jf_sched_preempt_to_loop's return value) */
	struct worker *worker; /* worker running it; valid while running */
	struct jf_task task;   /* what the policy sees */

	jf_thread_fn fn;
	void *arg;
	void *retval;

	uint32_t jlock;            /* protects the four fields below */
	uint8_t state;             /* enum uthread_state (join/exit protocol) */
	uint8_t detached;
	uint8_t is_main;
	struct jf_thread *joiner; /* uthread blocked in jf_join() on this one */

	/* jf_thread_set_sched_attr(): the new attributes wait here until the policy may see them
	 * (the next time the uthread is handed to the policy: enqueue, blocked, exit). */
	uint32_t attr_lock;
	uint32_t attr_pending;
	struct jf_sched_attr attr_next;

	struct jf_thread *wq_next; /* link in a struct jf_waitq */
	uint32_t wq_queued;        /* 1 while in a wait queue (protected by that queue's lock) */

	/* Lock-holder preemption (src/sync/holder.h): Jiffy locks it holds, whether a preemption
	 * was deferred for them, and until when a deferral may last (jf_now_ns(); 0: none yet). */
	uint32_t locks_held;
	uint8_t lock_owed;
	uint64_t lock_defer_until;

	/* Stack: [map_base, map_base+guard) is PROT_NONE, the stack grows down from this struct. */
	char *map_base;
	size_t map_size;
	size_t guard_size;
	struct jf_thread *reg_prev, *reg_next; /* every mapped stack, for shutdown */

	/* Introspection (enum uthread_vstate): relaxed stores on the paths that change them, read
	 * by other threads without a lock (a recent value, not a consistent cut). */
	uint8_t vstate;         /* enum uthread_vstate */
	uint8_t off_reason;     /* runnable: the enum jf_enqueue_reason it was queued for */
	const char *wait_on;    /* blocked: "mutex", "cond", "join", "sleep", "netpoll", ... */
	const void *wait_obj;   /* blocked: the object it waits on (NULL for sleep) */
	uint64_t state_ns;      /* jf_now_ns() when @vstate last changed */
	uint64_t stall_ns;      /* when a stall was last reported for it (monitor.c) */

	/* Preemptible functions and cancellation (pfn.c). */
	struct jf_pfn *pfn;            /* the innermost one it runs (NULL: none) */
	struct jf_cleanup *cleanup;    /* handlers pushed outside any preemptible function */
	uint32_t cancel_req;           /* jf_cancel() was called (sticky) */
	uint8_t cancel_mode;           /* enum jf_cancel_mode */
	uint32_t cw_lock;              /* protects @cw against a canceller using it */
	struct jf_cwait *cw;           /* blocked in a cancellable wait (timer.c) */

	/* Uthread-local storage and pinning (local.c, jiffy/local.h): the fast slots jf_local_get()
	 * reaches through the worker's jf_local_cur (prepare_run sets it); the key table, allocated
	 * at the first jf_setspecific() (NULL while it uses no key); jf_thread_pin()'s nesting (the
	 * worker is task.pin_worker). */
	void *local_fast[JF_LOCAL_FAST_SLOTS];
	struct jf_local_table *local;
	uint32_t pin_depth;

	void *asan_fake_stack;
	unsigned vg_stack_id; /* Valgrind's id for this stack (stack.c; 0 outside Valgrind) */
	void *tsan_fiber; /* ThreadSanitizer's fiber for this uthread (NULL otherwise) */
	char name[JF_THREAD_NAME_MAX];
};

/* Counters are written by their worker only (relaxed load+store, no lock prefix). */
#define STAT_INC(w, field) STAT_ADD(w, field, 1)
/* The same for a counter kept in struct worker itself (not in the public stats). */
#define WORKER_INC(w, field)                                                                     \
	__atomic_store_n(&(w)->field, __atomic_load_n(&(w)->field, __ATOMIC_RELAXED) + 1,         \
			 __ATOMIC_RELAXED)
#define STAT_ADD(w, field, n)                                                                    \
	__atomic_store_n(&(w)->stats.field,                                                      \
			 __atomic_load_n(&(w)->stats.field, __ATOMIC_RELAXED) + (n),             \
			 __ATOMIC_RELAXED)

struct timer_heap {
	uint32_t lock;         /* a spinlock: the owner worker arms and fires under it, and so do
				* other workers (a uthread's timer is armed on the worker it runs
				* on; idle workers fire busy workers' due timers: timer.c) */
	uint32_t n, cap;       /* under @lock */
	struct jf_timer **a;   /* under @lock */
	uint64_t min_deadline; /* UINT64_MAX when empty: stored under @lock (relaxed), read by any
				* thread without it (relaxed; a parking worker after its fence) */
};

enum worker_park_state {
	WK_RUNNING = 0,
	WK_PARKED = 1,      /* on its futex */
	WK_PARKED_POLL = 2, /* in epoll, the netpoller's one parked poller (src/runtime/net) */
};

/*
 * struct worker_idle - how a worker without work waits (runtime.c: worker_idle, worker_park; the
 * park/kick handshake is tools/model/park.pml). W: the worker's kernel thread; O: other workers
 * and any thread that makes work or a timer for it (jf_worker_kick, timer_armed_kick); M: the
 * monitor thread.
 */
struct worker_idle {
	uint32_t park_state; /* the futex word, enum worker_park_state: W stores PARKED/PARKED_POLL
			      * and RUNNING (seq_cst), O exchanges it to RUNNING to wake it (seq_cst),
			      * M reads it relaxed */
	uint64_t park_until; /* parked: the deadline it sleeps to (UINT64_MAX: none; 0: not yet
			      * decided). W stores it relaxed after its fence; timer_armed_kick()
			      * reads it relaxed after seeing park_state (a stale 0 or a later value
			      * only costs a spare kick) */
	uint64_t spin_window_ns; /* adaptive idle spin: the current window. W only */
	bool spinning;           /* W only (read by gdb) */
};

/*
 * struct worker - one worker: the runtime's shared core, with each area's state in its own
 * struct (the area's header says who writes and reads each field: @idle here, @timers timer.c's
 * in this header, @pre preempt/preempt.h, @pfn pfn.h). W: the worker's kernel thread; H: its
 * signal handlers; O: other workers; M: the monitor thread; T: timer threads.
 */
struct worker {
	int id;                     /* set before the worker starts; read-only after */
	pthread_t pthread;
	struct jf_thread *cur;      /* running uthread, NULL in the scheduler loop: W stores it
				     * relaxed; O reads it (src/sync/mutex.c's spinning, wakeup
				     * preemption), H and M read it */
	struct jf_thread *reap;     /* exited detached uthread whose stack must be freed: W only */
	int *errno_p;               /* errno of this worker's kernel thread (jf_set_this_worker):
				     * the switch saves and restores a uthread's errno through it */
	struct jf_thread *handoff;  /* picked, but still on another CPU: the loop runs it. W only */
	struct jf_ctx sched_ctx;    /* the scheduler loop on the pthread stack: W (and H, which
				     * switches to it: jf_sched_preempt_to_loop) */
	uint32_t sched_on_cpu;      /* dummy target for switch.S when leaving the loop */
	/* A preemption signal's handler decided and left its uthread to the loop, which finishes
	 * the preemption off the signal frame (jf_sched_preempt_to_loop, jf_sched_finish_preempt):
	 * @preempted, whether the handler found the preemption due (@preempt_decided: else only
	 * timers or the netpoller were), and the dummy on_cpu the switch clears instead of the
	 * uthread's, which stays 1 until the loop has requeued it. H writes, W reads and clears. */
	struct jf_thread *preempted;
	bool preempt_decided;
	uint32_t preempt_on_cpu;
	struct worker_idle idle;

	struct timer_heap timers; /* timer.c (struct timer_heap says how it is shared) */

	/* W only: stack.c's cache, the ids, the stacks of the worker's own kernel thread. */
	struct jf_thread **stack_cache; /* free default-size stacks */
	unsigned nr_cached;

	uint64_t next_id, id_end; /* block of uthread ids */
	uint64_t rng;

	void *altstack;
	size_t altstack_size;
	void *tsan_fiber;       /* the scheduler loop's fiber under ThreadSanitizer */
	void *pthread_stack_lo; /* for sanitizer fiber annotations */
	size_t pthread_stack_size;

	/* Preemption (preempt/preempt.h: who writes and reads each field) and preemptible
	 * functions' budgets (pfn.h). */
	struct jf_worker_preempt pre;
	struct jf_worker_budget pfn;

	/* Counters and histograms (stats.c, monitor.c): W writes them (relaxed load + store, no
	 * lock prefix: STAT_ADD); stats.c and M read them relaxed (a recent value, not a cut). */
	struct jf_worker_stats stats;
	/* The switch path's histograms (JF_HIST_RUNNABLE_DELAY, JF_HIST_RUN_LENGTH) are kept: set
	 * at start from jf_config.histograms, .stats, .schedtrace_ns; read-only after. */
	bool hist_on;
	bool switch_clock; /* rt->switch_clock, beside what the switch reads */
	/* Written by this worker only, like @stats (jf_hist_add()); read by stats.c and monitor.c. */
	uint64_t enqueues, picks; /* made runnable by / picked by this worker (runnable = sum diff) */
	uint64_t stall_seq;       /* monitor.c: the run (run_seq) a stall report was asked for */
	struct jf_hist hist[JF_HIST_NR];
	uint64_t hist_late[2];    /* jf_hist_defer(): the last delay and run length, not yet added */
} __attribute__((aligned(JF_CACHELINE)));

enum { JF_WORD_CALL, JF_WORD_PLAIN, JF_WORD_TIMER }; /* runtime.word_switch */

struct runtime {
	struct jf_config cfg;
	/* jf_stats_reset(): what the workers had counted then (stats.c). */
	struct jf_worker_stats *stats_base;
	struct jf_hist *hist_base; /* [worker * JF_HIST_NR + kind] */
	void *monitor;             /* monitor.c: schedtrace and stall reports, or NULL */
	struct jf_driver drv; /* the policy, and every call into it (src/sched/driver.h) */
	int nworkers;
	struct worker *workers;

	_Atomic int stopping;
	_Atomic int nr_parked;
	_Atomic int nr_spinning;

	/* Preemption (src/runtime/preempt). */
	const struct jf_preempt_mech *mech;
	/* mech->on_switch, or on_run where it has none: what prepare_run() calls (one load) */
	void (*mech_on_switch)(struct worker *w, uint64_t now);
	/* mech->on_work while preempting, else NULL: what after_enqueue() calls (one load) */
	void (*mech_on_work)(struct worker *self, struct worker *target);
	/* The word's mechanisms at a switch, inline (word_switch() in preempt/deadline_arm.h):
	 * JF_WORD_CALL: call mech_on_switch; JF_WORD_PLAIN: publish the due time (deadline);
	 * JF_WORD_TIMER: that, when the backstop timer fits the run (due - the worker's
	 * word_timer_lo <= word_window_ns: auto.c's expiry_record()), else mech_on_switch (auto). */
	uint8_t word_switch;
	uint64_t word_window_ns;
	bool preempting; /* a mechanism other than "none" */
	/* The switch reads the clock (set by jf_run()) only when something uses the time: a
	 * mechanism other than the word's (deadline and auto run lazy instead: JF_DUE_LAZY), a
	 * policy that asked for time, histograms, schedtrace, stall reports, the netpoller's
	 * interrupt thread. Otherwise no clock is read at a switch or a wake (~5 ns of a yield on
	 * AMD EPYC, where rdtsc takes ~10 ns), and the uthreads' state_ns (their age in
	 * jf_dump_threads() and gdb) is not stamped. */
	bool switch_clock;
	bool psig_installed;
	bool pfn_sig_installed; /* cfg.pfn_signal's handler (pfn.c, at the first budget) */
	sigset_t psig_set; /* just the preemption signal */
	pid_t pid;
	_Atomic int workers_ready; /* (the timer thread's own state is dispatcher.c's) */

	struct jf_thread *main_thread;
	void *main_retval;

	size_t stack_map_default;    /* the mapping of a stack of cfg.stack_size (stack.c) */
	uint32_t pool_lock;          /* second-level cache of free default-size stacks */
	unsigned pool_n, pool_max;
	struct jf_thread *pool_head; /* linked through wq_next */

	pthread_mutex_t reg_lock; /* the registry of mapped stacks */
	struct jf_thread *reg_head;
	uint64_t next_id_block;
};

extern struct runtime *jf_rt;

/* --- introspection (stats.c, monitor.c) ------------------------------------------------------ */

#define JF_VIEW_SET(t, field, v) __atomic_store_n(&(t)->field, (v), __ATOMIC_RELAXED)
#define JF_VIEW_GET(t, field) __atomic_load_n(&(t)->field, __ATOMIC_RELAXED)

/*
 * The bucket of value @v in a struct jf_hist (jiffy/stats.h has the layout), without branches:
 * with s = max(msb(v) - 4, 0), bucket = 16 s + (v >> s); values of 2^40 ns and more are clamped.
 */
static inline unsigned jf_hist_index(uint64_t v)
{
	const uint64_t max = (1ull << JF_HIST_MAX_BITS) - 1;
	unsigned s;

	v = v < max ? v : max;
	s = (unsigned)(63 - JF_HIST_SUB_BITS) - (unsigned)__builtin_clzll(v | ((2u << JF_HIST_SUB_BITS) - 1));
	return (s << JF_HIST_SUB_BITS) + (unsigned)(v >> s);
}

/* Record @v in @h, which only the calling worker writes (relaxed load+store, no lock prefix).
 * Only the bucket: count and sum are derived when read (stats.c), one store per value. */
static inline void jf_hist_add(struct jf_hist *h, uint64_t v)
{
	uint64_t *b = &h->buckets[jf_hist_index(v)];
	__atomic_store_n(b, __atomic_load_n(b, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/*
 * Record @v in @w's histogram @kind (JF_HIST_RUNNABLE_DELAY or JF_HIST_RUN_LENGTH) one value
 * late: add the value held back last time, hold this one. On the switch path @v comes from the
 * clock read (lfence; rdtsc) just taken; adding it at once made the switch wait for the read
 * (~2 ns per record here); the held-back value is long known. jf_hist_flush() adds what is held
 * (the scheduler loop calls it), so a value reaches the histogram at the worker's next switch or
 * when it next looks for work.
 */
static inline void jf_hist_defer(struct worker *w, unsigned kind, uint64_t v)
{
	uint64_t old = w->hist_late[kind];
	if (old != UINT64_MAX)
		jf_hist_add(&w->hist[kind], old);
	w->hist_late[kind] = v;
}

static inline void jf_hist_flush(struct worker *w)
{
	for (unsigned k = 0; k < 2; k++) {
		if (w->hist_late[k] != UINT64_MAX)
			jf_hist_add(&w->hist[k], w->hist_late[k]);
		w->hist_late[k] = UINT64_MAX;
	}
}

/* A uthread is about to block on @what (@obj): shown by jf_dump_threads() and gdb. */
static inline void jf_wait_note(struct jf_thread *t, const char *what, const void *obj)
{
	JF_VIEW_SET(t, wait_on, what);
	JF_VIEW_SET(t, wait_obj, obj);
}

/* monitor.c: JIFFY_SCHEDTRACE and JIFFY_STALL_REPORT (started by jf_run, stopped before the
 * workers are joined). */
int jf_monitor_start(struct runtime *rt);
void jf_monitor_stop(struct runtime *rt);

/* --- current context --------------------------------------------------------------------- */

extern __thread struct worker *jf_tls_worker __attribute__((tls_model("initial-exec")));

/*
 * The worker running the caller, NULL outside workers. The TLS read is an asm volatile so that
 * the compiler can never reuse a value read before a context switch (after which this code may
 * run on another kernel thread). Inline: the sync primitives ask it on every call.
 */
static inline struct worker *jf_this_worker(void)
{
	struct worker *w;
	__asm__ volatile("movq jf_tls_worker@gottpoff(%%rip), %0\n\t"
			 "movq %%fs:(%0), %0"
			 : "=r"(w));
	return w;
}

void jf_set_this_worker(struct worker *w);

/*
 * Move @t to @to, which must be allowed from its state (@from_mask: bits 1u << UT_*). Relaxed
 * atomics: the transitions are ordered by the queue or lock that hands @t over; join reads the
 * state under jlock.
 */
static inline void jf_ut_set_state(struct jf_thread *t, unsigned from_mask, enum uthread_state to)
{
	JF_ASSERT(from_mask & (1u << __atomic_load_n(&t->state, __ATOMIC_RELAXED)),
		  "uthread %llu: state %u -> %u is not a transition (allowed from 0x%x)",
		  (unsigned long long)t->task.id, (unsigned)__atomic_load_n(&t->state, __ATOMIC_RELAXED),
		  (unsigned)to, from_mask);
	__atomic_store_n(&t->state, (uint8_t)to, __ATOMIC_RELAXED);
}
#define UT_FROM(s) (1u << (s))

/* The running uthread, or NULL (not a uthread, or the scheduler loop). */
static inline struct jf_thread *jf_current(void)
{
	struct worker *w = jf_this_worker();
	return w ? w->cur : NULL;
}

/*
 * The shape of a public entry that acts on its calling uthread, written once: inside the runtime
 * (JF_RUNTIME_ENTER), @fn(the caller, @arg) and its result, or -EPERM outside a uthread. Inline,
 * with @fn a constant: the same code as the shape by hand.
 */
static inline int jf_on_current(int (*fn)(struct jf_thread *cur, void *arg), void *arg)
{
	struct jf_thread *cur;
	int r;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	r = cur ? fn(cur, arg) : -EPERM;
	JF_RUNTIME_LEAVE();
	return r;
}

/* How long @w's running uthread may run from @now before the policy is asked (thread.c). */
uint64_t jf_policy_slice(struct worker *w, uint64_t now);
/* A fault that is not a stack overflow: report it on stderr (monitor.c; stack.c's handler). */
void jf_crash_report_init(void);
void jf_crash_report(int sig, const siginfo_t *si, const void *uc);

/* The time to hand to the driver's placing calls: the clock for policies that asked for time,
 * else 0 without reading it (the driver would give them 0 anyway: driver.h). */
static inline uint64_t jf_policy_now(void)
{
	return jf_drv_needs_time(&jf_rt->drv) ? jf_now_ns() : 0;
}

/*
 * A lazy run (the word's mechanisms, when nothing else reads the clock at a switch: thread.c's
 * preempt_new_run, deadline_arm.h's word_lazy): the switch reads no clock and stores these
 * instead of the run's start and due time, and 1 in the safepoint word, so the run's first
 * safepoint enters the runtime, which reads the clock then and takes it as the run's start
 * (preempt.c's run_resolve_now). A request that finds a run lazy (a signal, the loop) does the
 * same.
 */
#define JF_DUE_LAZY (UINT64_MAX - 1)
#define JF_START_LAZY 1

/* --- scheduling (thread.c) ----------------------------------------------------------------- */

/* Make @t runnable for @reason from worker @w (the caller's), waking a worker if needed. */
void jf_sched_make_runnable(struct worker *w, struct jf_thread *t, enum jf_enqueue_reason reason);

/* The worker loop's side of thread.c (runtime.c). */
/* Finish the switch that brought this context in: free the stack of a uthread that exited. */
void jf_finish_switch(struct worker *w);
/* What @w runs next from its scheduler loop (NULL: nothing; steals where the policy allows). */
struct jf_thread *jf_sched_pick(struct worker *w);
/* Switch from @w's scheduler loop into @next until the loop is needed again. */
void jf_sched_run_from_loop(struct worker *w, struct jf_thread *next);
/* Abort unless errno sits at the same thread-pointer offset on this thread (jiffy/thread.h). */
void jf_errno_check(void);
/* Create a uthread on worker @w, not yet runnable (jf_spawn, and jf_run for main). */
int jf_thread_create(struct worker *w, const struct jf_attr *attr, jf_thread_fn fn, void *arg,
		     struct jf_thread **out);
/* The netpoller has a waiter and no worker in epoll: wake a parked worker to poll (netpoll.c). */
void jf_kick_parked_worker(struct worker *self);
/* Preempt the running uthread @cur (preempt.c decided, count raised): back to its queue. */
void jf_sched_preempt(struct jf_thread *cur);
/*
 * The signal path's preemption (preempt.c, count raised): @cur leaves its worker for the
 * scheduler loop, which fires the worker's due timers, polls the netpoller, decides again unless
 * @decided (jf_preempt_decide_in_loop) and requeues @cur and picks, or lets it go on. Returns when
 * @cur runs again: true if it was requeued (a new run began), false if it went on in place.
 */
bool jf_sched_preempt_to_loop(struct jf_thread *cur, bool decided);
/* The loop's half (runtime.c, when w->preempted is set): false if it ran nothing. */
bool jf_sched_finish_preempt(struct worker *w);
/* preempt.c: after timers and the netpoller ran in the loop, is @cur's preemption due now? */
bool jf_preempt_decide_in_loop(struct worker *w, struct jf_thread *cur, uint64_t now);
/* Stop the runtime with jf_run() returning @main_retval (main exited, or start-up failed): every
 * worker is kicked and leaves its loop (runtime.c). */
void jf_runtime_stop(void *main_retval);

/*
 * jf_sched_block() - the calling uthread stops running until someone makes it runnable with
 * jf_sched_make_runnable(..., JF_ENQ_WOKEN). If @unlock is not NULL the spinlock is released after
 * the uthread has been marked blocked and before it switches away: a waker may take it from a
 * wait queue at once (on_cpu makes that safe).
 */
void jf_sched_block(uint32_t *unlock);
/* The same, calling @publish(@arg) (e.g. arming a wake-up timer) after the policy was told
 * the uthread blocked and before @unlock: nothing may wake it before blocked() returned. */
void jf_sched_block_then(uint32_t *unlock, void (*publish)(void *arg), void *arg);

/* Wake @t, blocked, from the current context (a uthread, or a worker's timer code). */
void jf_sched_wake(struct jf_thread *t);

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define jf_tsan_acquire(p) __tsan_acquire(p)
#define jf_tsan_release(p) __tsan_release(p)
#else
#define jf_tsan_acquire(p) ((void)(p))
#define jf_tsan_release(p) ((void)(p))
#endif

/*
 * Wait until @t's context has been saved (its last switch-out completed). The release that
 * pairs with this acquire is the store in switch.S, which ThreadSanitizer cannot see: the
 * switching side announces it with jf_tsan_release(&t->on_cpu) just before switching.
 */
static inline void jf_wait_off_cpu(struct jf_thread *t)
{
	while (__atomic_load_n(&t->on_cpu, __ATOMIC_ACQUIRE))
		jf_cpu_relax();
	jf_tsan_acquire(&t->on_cpu);
}

static inline struct jf_thread *jf_thread_of_task(struct jf_task *task)
{
	return (struct jf_thread *)((char *)task - offsetof(struct jf_thread, task));
}

/* --- stacks (stack.c) ---------------------------------------------------------------------- */

struct jf_thread *jf_stack_alloc_slow(struct worker *w, size_t stack_size);
void jf_stack_free_slow(struct worker *w, struct jf_thread *t);
size_t jf_stack_map_size(size_t stack_size); /* a stack's whole mapping, guard page included */

/* Sanitizer builds (gcc defines __SANITIZE_*; clang 14 only answers __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define JF_RT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JF_RT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define JF_RT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define JF_RT_TSAN 1
#endif
#endif

/*
 * A stack (and its struct jf_thread at the top) for a uthread or a preemptible function, and its
 * return. The common case, a default-size stack from or back to the worker's own cache, is
 * inline: spawn + join pays no call for it. The sanitizer builds always take the full path
 * (stack.c: AddressSanitizer's shadow of a reused stack, ThreadSanitizer's fiber).
 */
static inline struct jf_thread *jf_stack_alloc(struct worker *w, size_t stack_size)
{
#if !defined(JF_RT_ASAN)
	if (JF_LIKELY(stack_size == jf_rt->cfg.stack_size && w->nr_cached > 0))
		return w->stack_cache[--w->nr_cached];
#endif
	return jf_stack_alloc_slow(w, stack_size);
}

static inline void jf_stack_free(struct worker *w, struct jf_thread *t)
{
#if !defined(JF_RT_TSAN)
	struct runtime *rt = jf_rt;
	if (JF_LIKELY(t->map_size == rt->stack_map_default && w->nr_cached < rt->cfg.stack_cache)) {
		t->tsan_fiber = NULL;
		JF_VIEW_SET(t, vstate, UV_FREE);
		w->stack_cache[w->nr_cached++] = t;
		return;
	}
#endif
	jf_stack_free_slow(w, t);
}
void jf_stack_free_all(void);                 /* shutdown: unmap every stack still mapped */
int jf_stack_worker_init(struct worker *w);   /* alternate signal stack, overflow handler */
void jf_stack_worker_fini(struct worker *w);
/* The top of @t's stack: the struct sits right above it. */
static inline void *jf_stack_top(struct jf_thread *t)
{
	return (void *)t;
}
int jf_overflow_handler_install(void);
void jf_overflow_handler_remove(void);

/* --- timers (timer.c) ---------------------------------------------------------------------- */

/*
 * A one-shot timer on a worker's heap. @fn runs on some worker's scheduling path (never in a
 * signal handler), with no runtime lock held; it must be short and must not block.
 */
struct jf_timer {
	uint64_t deadline;
	void (*fn)(struct jf_timer *t);
	struct worker *owner;
	int32_t heap_idx;
	uint32_t state; /* enum timer_state in timer.c */
};

void jf_timer_arm(struct worker *w, struct jf_timer *t, uint64_t deadline,
		  void (*fn)(struct jf_timer *));
/* Cancel @t, or wait until its callback has finished. Return: true if it never fired. */
bool jf_timer_cancel(struct jf_timer *t);
/* Fire the due timers of @owner's heap (may be another worker's). Return: how many fired. */
unsigned jf_timers_run(struct worker *owner, uint64_t now);
static inline uint64_t jf_timers_next(const struct worker *w)
{
	return __atomic_load_n(&w->timers.min_deadline, __ATOMIC_RELAXED);
}
void jf_timers_init(struct worker *w);
void jf_timers_fini(struct worker *w);

/* Wake worker @k if it is parked (thread.c); @self, when not NULL, counts the wakeup. */
void jf_worker_kick(struct worker *self, struct worker *k);

/*
 * jf_block_wait() - block the calling uthread like jf_sched_block(@unlock), until it is woken, or
 * @deadline_ns passes (UINT64_MAX: never), or a jf_cancel() ends the wait. @on_timeout(@arg)
 * runs for the last two, before the wake, and must take the uthread off whatever wait queue it
 * is on; it returns false if the uthread was already woken another way (then it is not woken
 * again). It runs on a timer's path or the canceller's, never with @unlock held. Return: 0 when
 * woken the ordinary way, -ETIMEDOUT, -ECANCELED (then nothing was woken for it: the caller must
 * not count on a wakeup it was waiting for).
 */
int jf_block_wait(uint32_t *unlock, uint64_t deadline_ns, bool (*on_timeout)(void *arg), void *arg);
/* Lock-holder preemption (src/sync/holder.h; the deferral is preempt.c's lock_holder_defer):
 * @cur released its last lock with a preemption deferred: take it at the runtime section's end. */
void jf_lock_holder_owed(struct jf_thread *cur);
/* A cancellation of the calling uthread is pending and not disabled (blocking calls fail). */
static inline bool jf_cancel_due(const struct jf_thread *t)
{
	return JF_UNLIKELY(__atomic_load_n(&t->cancel_req, __ATOMIC_RELAXED)) &&
	       __atomic_load_n(&t->cancel_mode, __ATOMIC_RELAXED) != JF_CANCEL_DISABLE;
}
/* jf_cancel(): end @t's cancellable wait, if it is in one (timer.c). */
void jf_cancel_wake(struct jf_thread *t);

/* --- uthread-local storage and pinning (local.c) -------------------------------------------- */

/* The running uthread's local_fast on this worker (jiffy/local.h reads it %fs-relative). */
extern __thread void **jf_local_cur __attribute__((tls_model("initial-exec")));
/* A new uthread @t, created on @w with @attr (may be NULL): no values, pinned if @attr says. */
void jf_local_thread_init(struct jf_thread *t, struct worker *w, const struct jf_attr *attr);
/* @t ends: its destructors, in @t (uthread_exit, while it is still preemptible), then its table
 * freed. Only called when t->local is not NULL. */
void jf_local_exit(struct jf_thread *t);
/* Shutdown: free @t's table without running destructors (jf_stack_free_all). */
void jf_local_discard(struct jf_thread *t);

/* --- misc ---------------------------------------------------------------------------------- */

/* The clock jf_now_ns() reads from now on: jf_run() sets its configuration's (jf_config.clock). */
void jf_clock_select(enum jf_clock_kind kind);
/* Without a jf_clock_select() yet: choose the default (the TSC when invariant). */
void jf_clock_init(void);
/* jf_now_ns(), and the TSC value it was computed from in *@tsc (0 when the clock is not the
 * TSC): the switch's one clock read (when it reads one: rt->switch_clock), and a lazy run's at
 * its start, which "deadline" and "auto" arm the word from. */
uint64_t jf_now_ns_tsc(uint64_t *tsc);
/* A timestamp for the wake and block paths, by the same read (no lfence, jf_now_ns_tsc() says
 * why that is safe for a stamp): when a uthread became runnable (state_ns), when a mutex waiter
 * first blocked. Never for a deadline check, which must not see the clock early. */
static inline uint64_t jf_stamp_ns(void)
{
	uint64_t tsc;
	return jf_now_ns_tsc(&tsc);
}
/* A duration as TSC ticks, rounded up (only meaningful when jf_tsc_hz() != 0). */
uint64_t jf_ns_to_tsc_ticks(uint64_t ns);
/* The same inline, for the switch path: the multiplier is set once, at calibration (clock.c). */
extern uint64_t jf__tsc_mult;
static inline uint64_t jf_ns_to_tsc_ticks_inline(uint64_t ns)
{
	return (uint64_t)(((unsigned __int128)ns * jf__tsc_mult) >> 32) + 1;
}
void jf_tsan_thread_created(struct jf_thread *t);
void jf_tsan_thread_freed(struct jf_thread *t);
void jf_tsan_worker_started(struct worker *w);
void jf_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void jf_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int jf_policy_registry_lookup(const char *name, const struct jf_policy_ops **ops, char *err,
			      size_t errlen);
/*
 * config.c: @ops's parameters under @cfg (its table's defaults, then what @cfg sets for it) and
 * @cfg->quantum_ns into @params; nworkers and seed are left to the caller.
 */
void jf_config_policy_params(const struct jf_config *cfg, const struct jf_policy_ops *ops,
			     struct jf_policy_params *params);

/* blocking.c: jf_run() ends, its workers joined: drop the calls not started, wait for the
 * functions running, join the pool threads. */
void jf_blocking_runtime_exit(void);
/* blocking.c: one line of the pool's counters for jf_stats_print() (nothing if never used). */
void jf_blocking_print(FILE *out);

#endif /* JIFFY_RUNTIME_H */
