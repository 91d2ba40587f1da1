/*
 * runtime.c - starting and stopping the runtime, and the worker scheduler loop.
 *
 * Owns: jf_run(), the worker kernel threads, the idle path (spin, then park on a futex, or in
 * epoll for the netpoller while uthreads wait on descriptors: src/runtime/net/netpoll.c), and
 * shutdown. A worker's pthread stack runs worker_loop() only when no uthread can run directly
 * (see runtime.h). Parking protocol: a worker publishes WK_PARKED, issues a full fence and checks
 * for work once more before sleeping; jf_sched_make_runnable() fences after enqueueing and then
 * reads the park state. One of the two always sees the other, so no wakeup is lost.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define JF_RUNNING_ON_VALGRIND RUNNING_ON_VALGRIND
#else
#define JF_RUNNING_ON_VALGRIND 0
#endif
#include "net/netpoll.h"

struct runtime *jf_rt;

static _Atomic int runtime_active;

void jf_die(const char *fmt, ...)
{
	va_list ap;
	fputs("jiffy: fatal: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void jf_warn(const char *fmt, ...)
{
	va_list ap;
	fputs("jiffy: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int jf_nworkers(void)
{
	return jf_rt ? jf_rt->nworkers : 0;
}

static bool stopping(const struct runtime *rt)
{
	return atomic_load_explicit(&rt->stopping, memory_order_relaxed) != 0;
}

void jf_runtime_stop(void *main_retval)
{
	struct runtime *rt = jf_rt;
	rt->main_retval = main_retval;
	atomic_store(&rt->stopping, 1);
	for (int i = 0; i < rt->nworkers; i++)
		jf_worker_kick(jf_this_worker(), &rt->workers[i]);
}

/* --- idle: spin, then park ----------------------------------------------------------------- */

/* The earliest timer of any worker: an idle worker fires timers of busy ones too. */
static uint64_t earliest_timer(const struct runtime *rt)
{
	uint64_t min = UINT64_MAX;
	for (int i = 0; i < rt->nworkers; i++) {
		uint64_t d = jf_timers_next(&rt->workers[i]);
		if (d < min)
			min = d;
	}
	return min;
}

static unsigned run_all_due_timers(struct worker *w, uint64_t now)
{
	struct runtime *rt = jf_rt;
	unsigned n = 0;
	for (int i = 0; i < rt->nworkers; i++)
		if (jf_timers_next(&rt->workers[i]) <= now)
			n += jf_timers_run(&rt->workers[i], now);
	STAT_ADD(w, timers, n);
	return n;
}

static bool has_work(struct runtime *rt, struct worker *w)
{
	return jf_drv_has_work(&rt->drv, w->id);
}

/*
 * Park until kicked or until the earliest timer of any worker falls due; with no timer, without a
 * deadline. The handshake with a waker (jf_sched_make_runnable -> after_enqueue -> jf_worker_kick)
 * and with a timer being armed (jf_timer_arm -> timer_armed_kick) is the same store-buffering
 * pattern: each side writes its own word (park_state here; the queue or the timer heap there),
 * issues a full fence, then reads the other's. One of the two always sees the other: either this
 * worker sees the work (or the new earliest deadline) and does not sleep, or the other side sees
 * it parked and kicks it, which rewrites park_state so that FUTEX_WAIT returns at once if it has
 * not started yet. tools/model/park.pml checks exactly this (make model; CTest model.park).
 *
 * Until issue 16 this slept at most 10 ms, for a lost wakeup seen once under 4 CPU hogs: a worker
 * in FUTEX_WAIT with park_state already RUNNING and work in its inbox. That picture is the
 * ordinary moment between a kicker's exchange and the woken thread getting a vCPU back from the
 * hogs (tracing every park and kick showed the FUTEX_WAKE returning 1 and the test progressing,
 * only slowly). The bound did hide a real one: a timer armed on a busy worker (a uthread sleeping
 * while another runs on its worker) after the idle workers had computed their deadlines was never
 * fired by anyone while that worker stayed busy. jf_timer_arm() now kicks a parked worker whose
 * deadline is later (core.idle_wake checks both: no periodic wake-ups, timers fire while busy).
 */
static void worker_park(struct runtime *rt, struct worker *w)
{
	uint64_t deadline, now;
	struct timespec ts, *tsp = NULL;
	/* Uthreads wait on descriptors: park in epoll instead (if no other worker does). */
	bool poll = jf_netpoll_active();

	__atomic_store_n(&w->idle.park_until, 0, __ATOMIC_RELAXED); /* not decided: armers kick */
	__atomic_store_n(&w->idle.park_state, poll ? WK_PARKED_POLL : WK_PARKED, __ATOMIC_SEQ_CST);
	atomic_fetch_add(&rt->nr_parked, 1);
	jf_smp_mb();
	deadline = earliest_timer(rt);
	__atomic_store_n(&w->idle.park_until, deadline, __ATOMIC_RELAXED);
	now = jf_now_ns();
	if (!stopping(rt) && !has_work(rt, w) && deadline > now) {
		/* Before either wait: auto's backstop timer, left armed after a busy period, fired
		 * into the parked worker otherwise (epoll_pwait2 as much as the futex; it was only
		 * cancelled on the futex path: a network server took ~17 such signals a second at
		 * 40,000 req/s, each waking a halted vCPU; docs/performance.md). */
		if (rt->preempting && rt->mech->on_park)
			rt->mech->on_park(w);
		/* A kick after the store above makes epoll return at once (the eventfd). */
		if (poll && jf_netpoll_park(w, deadline == UINT64_MAX ? UINT64_MAX : deadline - now))
			goto out;
		if (poll) { /* another worker is the poller: this one sleeps on its futex */
			uint32_t exp = WK_PARKED_POLL;
			if (!__atomic_compare_exchange_n(&w->idle.park_state, &exp, WK_PARKED, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				goto out; /* kicked meanwhile */
		}
		if (deadline != UINT64_MAX) {
			uint64_t d = deadline - now;
			ts.tv_sec = (time_t)(d / 1000000000u);
			ts.tv_nsec = (long)(d % 1000000000u);
			tsp = &ts;
		}
		STAT_INC(w, parks);
		syscall(SYS_futex, &w->idle.park_state, FUTEX_WAIT_PRIVATE, WK_PARKED, tsp, NULL, 0);
	}
out:
	__atomic_store_n(&w->idle.park_state, WK_RUNNING, __ATOMIC_SEQ_CST);
	atomic_fetch_sub(&rt->nr_parked, 1);
}

/*
 * The adaptive idle spin (spin_max_ns > 0), in the manner of Linux's cpuidle haltpoll governor:
 * after an idle period that ended in a park, a wait that a longer spin (up to spin_max_ns) would
 * have covered doubles the window, and a wait longer than spin_max_ns halves it; the window stays
 * within [spin_ns, spin_max_ns]. A worker whose work arrives in gaps shorter than spin_max_ns thus
 * stops parking (waking a halted vCPU costs ~30 us at p50 and ms at p99.9 on a KVM guest), and one
 * whose gaps are longer goes back to spin_ns, so the CPU it burns follows the arrival rate.
 */
static void adapt_spin(struct runtime *rt, struct worker *w, uint64_t idle_ns, bool parked)
{
	uint64_t max = rt->cfg.spin_max_ns, win = w->idle.spin_window_ns;

	if (!max || !parked)
		return;
	if (idle_ns <= max)
		win = win * 2 > max ? max : win * 2;
	else
		win = win / 2 < rt->cfg.spin_ns ? rt->cfg.spin_ns : win / 2;
	w->idle.spin_window_ns = win ? win : 1000; /* spin_ns = 0: grow from 1 us */
}

/*
 * Nothing to run: look for work for up to the spin window, then park. Returns work found, or
 * NULL. Never inlined: make perfcheck (scripts/perfcheck.sh) leaves this function out of its
 * instruction counts by name (Callgrind's --toggle-collect): how long an idle worker spins, or
 * whether it parks before a wake reaches it, depends on how Valgrind interleaves the threads.
 */
__attribute__((noinline)) static struct jf_thread *worker_idle(struct runtime *rt, struct worker *w)
{
	uint64_t start = jf_now_ns(), now = start;
	uint64_t window = rt->cfg.spin_max_ns ? w->idle.spin_window_ns : rt->cfg.spin_ns;
	struct jf_thread *t = NULL;
	bool parked = false;

	atomic_fetch_add(&rt->nr_spinning, 1);
	for (;;) {
		if (stopping(rt))
			break;
		if (earliest_timer(rt) <= now)
			run_all_due_timers(w, now);
		if (JF_UNLIKELY(jf_netpoll_active()))
			jf_netpoll_poll(w, now); /* idle: every round of the spin */
		if (has_work(rt, w) && (t = jf_sched_pick(w)) != NULL)
			break;
		/*
		 * Look for work at every pause, the clock, the timers and the netpoller once per 16
		 * (as often as before). A look every 16 pauses (~70 cycles each on the AMD EPYC guest)
		 * left queued work unseen for ~0.3 us on average: a cross-worker wake round trip took
		 * 0.99 us, 0.71 us with a look at every pause (bench/jiffy_bench wakeup_xworker).
		 */
		for (int i = 0; i < 16; i++) {
			jf_cpu_relax();
			if (has_work(rt, w) && (t = jf_sched_pick(w)) != NULL)
				goto found;
		}
		now = jf_now_ns();
		if (now - start >= window)
			break;
	}
found:
	atomic_fetch_sub(&rt->nr_spinning, 1);
	if (!t && !stopping(rt)) {
		/* Work may have been queued after our last look but before nr_spinning dropped. */
		if (!has_work(rt, w) || (t = jf_sched_pick(w)) == NULL) {
			worker_park(rt, w);
			parked = true;
		}
	}
	now = jf_now_ns();
	adapt_spin(rt, w, now - start, parked);
	STAT_ADD(w, idle_ns, now - start);
	return t;
}

/* --- workers ------------------------------------------------------------------------------- */

static void pin_worker(int id)
{
	cpu_set_t allowed, one;
	int n = 0, want;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return;
	want = id % CPU_COUNT(&allowed);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (n++ == want) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0)
				jf_warn("could not pin worker %d to CPU %d", id, cpu);
			return;
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct runtime *rt = jf_rt;
	pthread_attr_t attr;

	jf_set_this_worker(w);
	jf_tsan_worker_started(w);
	jf_errno_check();
	if (rt->cfg.pin_workers)
		pin_worker(w->id);
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		pthread_attr_getstack(&attr, &w->pthread_stack_lo, &w->pthread_stack_size);
		pthread_attr_destroy(&attr);
	}
	if (jf_stack_worker_init(w) != 0)
		jf_warn("worker %d: no alternate signal stack; stack overflows may not be reported",
			w->id);
	if (jf_preempt_worker_start(w) != 0)
		jf_warn("worker %d: preemption (%s) could not start here: %s", w->id, rt->mech->name,
			strerror(errno));
	atomic_fetch_add(&rt->workers_ready, 1);

	for (;;) {
		struct jf_thread *t;

		jf_finish_switch(w);
		jf_hist_flush(w);
		/* A preemption signal left its uthread here: finish the preemption (thread.c). */
		if (JF_UNLIKELY(w->preempted != NULL) && jf_sched_finish_preempt(w))
			continue;
		__atomic_store_n(&w->cur, NULL, __ATOMIC_RELAXED); /* read by mutex spinners */
		__atomic_store_n(&w->pre.run_start_ns, 0, __ATOMIC_RELEASE); /* nothing to preempt */
		jf_pcount_set(1);
		if (stopping(rt))
			break;
		t = w->handoff; /* picked by the uthread we left, still on another CPU then */
		w->handoff = NULL;
		if (!t)
			t = jf_sched_pick(w);
		if (!t)
			t = worker_idle(rt, w);
		if (t)
			jf_sched_run_from_loop(w, t);
	}
	jf_netpoll_irq_worker_stop(); /* no readiness kick reaches it from now on */
	jf_preempt_worker_stop(w);
	jf_stack_worker_fini(w);
	jf_set_this_worker(NULL);
	return NULL;
}

static int policy_setup(struct runtime *rt)
{
	const struct jf_policy_ops *ops;
	struct jf_policy_params params;
	char err[256];
	int rc = jf_policy_registry_lookup(rt->cfg.policy, &ops, err, sizeof(err));

	if (rc) {
		jf_warn("%s", err);
		return rc;
	}
	memset(&params, 0, sizeof(params));
	jf_config_policy_params(&rt->cfg, ops, &params); /* quantum and the policy's own values */
	params.nworkers = rt->nworkers;
	params.seed = 0x6a6966667921ull;
	rc = jf_drv_init(&rt->drv, ops, &params);
	if (rc) {
		jf_warn("policy '%s' failed to initialise: %s", ops->name, strerror(-rc));
		return rc;
	}
	return 0;
}

static void runtime_free(struct runtime *rt)
{
	jf_drv_fini(&rt->drv);
	jf_stack_free_all();
	if (rt->workers) {
		for (int i = 0; i < rt->nworkers; i++) {
			jf_timers_fini(&rt->workers[i]);
			free(rt->workers[i].stack_cache);
		}
		free(rt->workers);
	}
	free(rt->stats_base);
	free(rt->hist_base);
	pthread_mutex_destroy(&rt->reg_lock);
	free(rt);
}

static int runtime_create(const struct jf_config *cfg, struct runtime **out)
{
	struct runtime *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->cfg = *cfg;
	rt->nworkers = (int)cfg->workers;
	pthread_mutex_init(&rt->reg_lock, NULL);
	rt->next_id_block = 1;
	rt->pool_max = cfg->stack_cache * 8u * cfg->workers;
	rt->stack_map_default = jf_stack_map_size(cfg->stack_size);
	rt->workers = aligned_alloc(JF_CACHELINE, sizeof(struct worker) * (size_t)rt->nworkers);
	if (!rt->workers) {
		runtime_free(rt);
		return -ENOMEM;
	}
	memset(rt->workers, 0, sizeof(struct worker) * (size_t)rt->nworkers);
	rt->stats_base = calloc((size_t)rt->nworkers, sizeof(*rt->stats_base));
	rt->hist_base = calloc((size_t)rt->nworkers * JF_HIST_NR, sizeof(*rt->hist_base));
	if (!rt->stats_base || !rt->hist_base) {
		runtime_free(rt);
		return -ENOMEM;
	}
	for (int i = 0; i < rt->nworkers; i++) {
		struct worker *w = &rt->workers[i];
		w->id = i;
		w->hist_late[0] = w->hist_late[1] = UINT64_MAX;
		w->hist_on = cfg->histograms || cfg->stats || cfg->schedtrace_ns;
		w->pfn.due_ns = UINT64_MAX;
		w->idle.spin_window_ns = rt->cfg.spin_ns;
		w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
		jf_timers_init(w);
		w->stack_cache = calloc(cfg->stack_cache ? cfg->stack_cache : 1, sizeof(void *));
		if (!w->stack_cache) {
			runtime_free(rt);
			return -ENOMEM;
		}
	}
	*out = rt;
	return 0;
}

int jf_run(const struct jf_config *cfg_in, jf_thread_fn main_fn, void *arg, void **retval)
{
	struct jf_config cfg;
	struct runtime *rt;
	struct jf_thread *main_t;
	struct jf_attr attr;
	char err[256];
	int rc, expected = 0, started = 0;

	if (!main_fn)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&runtime_active, &expected, 1))
		return -EBUSY;

	if (cfg_in) {
		cfg = *cfg_in;
	} else {
		jf_config_default(&cfg);
		if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
			jf_warn("%s", err);
			rc = -EINVAL;
			goto out_inactive;
		}
	}
	if (jf_config_validate(&cfg, err, sizeof(err)) != 0) {
		jf_warn("%s", err);
		rc = -EINVAL;
		goto out_inactive;
	}
	jf_pthread_shim_setup(&cfg);
	if (cfg.quantum_ns == JF_QUANTUM_DEFAULT) /* before the policy copies it */
		cfg.quantum_ns = jf_preempt_default_quantum(cfg.preempt);
	jf_clock_select(cfg.clock); /* before the mechanisms ask for the TSC (deadline, auto) */

	rc = runtime_create(&cfg, &rt);
	if (rc)
		goto out_inactive;
	jf_rt = rt;
	rc = policy_setup(rt);
	if (rc)
		goto out_free;
	rc = jf_preempt_setup(rt, err, sizeof(err));
	if (rc) {
		jf_warn("%s", err);
		goto out_free;
	}
	rt->switch_clock = (rt->preempting && rt->word_switch == JF_WORD_CALL) ||
			   jf_drv_needs_time(&rt->drv) || rt->workers[0].hist_on ||
			   rt->cfg.schedtrace_ns || rt->cfg.stall_report || rt->cfg.netpoll_irq;
	for (int i = 0; i < rt->nworkers; i++)
		rt->workers[i].switch_clock = rt->switch_clock;
	rc = jf_overflow_handler_install();
	if (rc)
		goto out_preempt;
	if (JF_RUNNING_ON_VALGRIND && rt->mech->uses_signal && rt->nworkers > 1)
		jf_warn("running under Valgrind with preemption by signals ('%s') on %d workers: "
			"Valgrind's sigreturn restores the thread pointer saved when the signal came, so "
			"a uthread preempted on one worker and resumed on another can crash; use "
			"JIFFY_PREEMPT=none, deadline or safepoint, or JIFFY_WORKERS=1 "
			"(docs/debugging.md)", rt->mech->name, rt->nworkers);

	jf_attr_init(&attr);
	attr.name = "main";
	attr.detached = 1;
	rc = jf_thread_create(&rt->workers[0], &attr, main_fn, arg, &main_t);
	if (rc)
		goto out_handler;
	main_t->is_main = 1;
	main_t->state_ns = rt->switch_clock ? jf_now_ns() : 0;
	rt->main_thread = main_t;
	rt->pid = getpid();
	jf_drv_enqueue(&rt->drv, 0, &main_t->task, JF_ENQ_NEW, jf_policy_now());
	rt->workers[0].enqueues = 1; /* runnable = enqueues - picks (monitor.c) */

	for (started = 0; started < rt->nworkers; started++) {
		struct worker *w = &rt->workers[started];
		rc = -pthread_create(&w->pthread, NULL, worker_main, w);
		if (rc) {
			jf_warn("cannot start worker %d: %s", started, strerror(-rc));
			jf_runtime_stop(NULL);
			break;
		}
	}
	if (rc == 0 && rt->mech->uses_thread) {
		/* The timer thread needs every worker's thread id and preemption state. */
		while (atomic_load(&rt->workers_ready) < rt->nworkers)
			sched_yield();
		rc = jf_timer_thread_start(rt);
		if (rc) {
			jf_warn("cannot start the preemption timer thread: %s", strerror(-rc));
			jf_runtime_stop(NULL);
		}
	}
	if (rc == 0) {
		/* The stall monitor signals workers by thread id: wait until they have one. */
		while (rt->cfg.stall_report && atomic_load(&rt->workers_ready) < rt->nworkers)
			sched_yield();
		rc = jf_monitor_start(rt);
		if (rc) {
			jf_warn("cannot start the monitor thread (JIFFY_SCHEDTRACE, "
				"JIFFY_STALL_REPORT): %s", strerror(-rc));
			jf_runtime_stop(NULL);
		}
	}
	if (rc == 0 && rt->cfg.netpoll_irq) {
		/* Its kicks need every worker's mechanism state (JIFFY_NETPOLL_IRQ, netpoll.c). */
		while (atomic_load(&rt->workers_ready) < rt->nworkers)
			sched_yield();
		rc = jf_netpoll_irq_start(rt);
		if (rc) {
			jf_warn("cannot start the netpoller's interrupt thread (JIFFY_NETPOLL_IRQ): %s",
				strerror(-rc));
			jf_runtime_stop(NULL);
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(rt->workers[i].pthread, NULL);
	jf_netpoll_irq_stop();
	jf_monitor_stop(rt);

	if (rc == 0) {
		if (retval)
			*retval = rt->main_retval;
		if (cfg.stats)
			jf_stats_print(stderr);
	}
	jf_blocking_runtime_exit(); /* before the netpoller forgets the wakes it may still send */
	jf_netpoll_runtime_exit(); /* before the stacks holding its waiters are unmapped */
out_handler:
	jf_overflow_handler_remove();
out_preempt:
	jf_preempt_teardown(rt);
out_free:
	runtime_free(rt);
	jf_rt = NULL;
out_inactive:
	atomic_store(&runtime_active, 0);
	return rc;
}
