/*
 * preempt/test_timers.c - a sleeper wakes on time even when every worker is busy; a busy worker
 * with nothing due is left alone.
 *
 * 1. One worker runs a compute-bound uthread with nothing else queued, so the skip rule keeps the
 *    mechanism from interrupting it for the quantum. The main uthread sleeps 2 ms, 20 times. Its
 *    timer lives on the busy worker; no idle worker exists to fire it. The mechanism must
 *    interrupt the worker when the timer falls due (the timer thread or the worker's POSIX timer
 *    watch the earliest timer too), so the sleeps end within a bound far below the hog's run (it
 *    computes until main is done, or 10 s). The hog calls jf_safepoint() under the flag
 *    mechanisms (safepoint, deadline: nothing else reaches it), and once more without any
 *    safepoint under every mechanism that can interrupt a plain loop (timer, dispatcher, hybrid,
 *    auto). Regression tests: before, main slept until the hog finished; and under hybrid, which
 *    only raised the flag for overdue timers, a hog without safepoints kept them from firing
 *    for good (the run without safepoints hung).
 * 2. Two workers: a hog pinned to worker 0 with nothing else to run, and a uthread on worker 1
 *    that sleeps 300 ms. Nothing is due on worker 0, so the mechanism must not interrupt it:
 *    at most a handful of signals and flags in all (the timer thread signalled it ~7,000 times
 *    a second: an overdue-timer test that wrapped for a worker without timers).
 * 3. One worker, parked in the netpoller: a busy period (two hogs that preempt each other, so
 *    that work waits and auto arms its backstop timer), then the only uthread waits 40 ms on a
 *    socket nobody writes to. The worker parks in epoll, where nothing is due: not one request
 *    may reach it. Regression test: auto cancelled its timer only when the worker parked on its
 *    futex, not in epoll, so the timer fired into the parked worker a grace period after the
 *    busy period (1 request; a UDP server took ~17 such signals a second, each waking a halted
 *    vCPU: docs/performance.md, "auto on the head-of-line workload"). Under auto twice: its
 *    default timer counts CPU time (cannot fire in a park), and with a 500 us grace period it is
 *    on the wall clock and must be cancelled at the park. Checked under auto and deadline only
 *    (the others' requests may come from elsewhere: see the check).
 */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/net.h>

#include "pt_common.h"

static atomic_int stop;
static atomic_ulong hog_chunks;

static bool hog_safepoints;

static void *hog(void *arg)
{
	bool sp = hog_safepoints;
	(void)arg;
	uint64_t end = jf_now_ns() + 10 * PT_S;
	uint64_t x = 1;

	while (!atomic_load_explicit(&stop, memory_order_relaxed) && jf_now_ns() < end) {
		x = pt_work(x, 200);
		atomic_fetch_add_explicit(&hog_chunks, 1, memory_order_relaxed);
		if (sp)
			jf_safepoint();
	}
	return (void *)(uintptr_t)(x & 1);
}

static void *main_fn(void *arg)
{
	jf_thread_t *h = jft_spawn(NULL, hog, arg);
	uint64_t worst = 0;

	while (atomic_load(&hog_chunks) == 0)
		jf_yield(); /* the hog runs */
	for (int i = 0; i < 20; i++) {
		uint64_t t0 = jf_now_ns();
		CHECK_EQ(jf_sleep_ns(2 * PT_MS), 0);
		uint64_t slept = jf_now_ns() - t0;
		CHECK_GE(slept, 2 * PT_MS);
		if (slept > worst)
			worst = slept;
	}
	atomic_store(&stop, 1);
	jft_join(h);
	printf("preempt.timers (%s): 20 sleeps of 2 ms beside a busy hog %s safepoints: worst "
	       "%.2f ms\n", (const char *)arg, hog_safepoints ? "with" : "without",
	       (double)worst / 1e6);
	/* The hog would have run 10 s: 1 s catches "not woken until a scheduling point". */
	CHECK(worst < 1 * PT_S);
	return NULL;
}

/* --- 2. nothing due: no interrupt ------------------------------------------------------- */

static void *sleeper(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_sleep_ns(300 * PT_MS), 0);
	atomic_store(&stop, 1);
	return NULL;
}

static void *idle_main(void *arg)
{
	struct jf_attr a;
	struct jf_preempt_stats p0, p1;
	jf_thread_t *h, *sl;

	jf_attr_init(&a);
	a.pin = 1;
	a.sched.worker = 0;
	atomic_store(&stop, 0);
	atomic_store(&hog_chunks, 0);
	hog_safepoints = false;
	h = jft_spawn(&a, hog, arg);
	while (atomic_load(&hog_chunks) == 0)
		jf_sleep_ns(PT_MS); /* the hog runs on worker 0 */
	a.sched.worker = 1;
	CHECK_EQ(jf_preempt_stats(&p0), 0);
	sl = jft_spawn(&a, sleeper, NULL);
	jft_join(sl);
	CHECK_EQ(jf_preempt_stats(&p1), 0);
	jft_join(h);
	printf("preempt.timers (%s): a hog alone on worker 0 for 300 ms: %llu signals and %llu flags "
	       "from the timer thread\n", (const char *)arg,
	       (unsigned long long)(p1.signals_sent - p0.signals_sent),
	       (unsigned long long)(p1.flags_set - p0.flags_set));
	/* Nothing is due on worker 0: not one interrupt is owed it (a few allow for the start). */
	CHECK(p1.signals_sent - p0.signals_sent + p1.flags_set - p0.flags_set <= 4);
	return NULL;
}

/* --- 3. parked in the netpoller: no interrupt ----------------------------------------- */

static void *busy(void *arg)
{
	uint64_t end = jf_now_ns() + 3 * PT_MS, x = (uintptr_t)arg;

	while (jf_now_ns() < end) {
		x = pt_work(x, 200);
		jf_safepoint();
	}
	return (void *)(uintptr_t)(x & 1);
}

/* A plain thread: once worker 0 has parked again (its parks counter moved), the requests it had
 * taken so far; the window of the check starts there, not while main still runs. */
static uint64_t watch_parks, watch_requests;
static atomic_int watch_seen;

static void *park_watch(void *arg)
{
	struct jf_worker_stats st;
	struct timespec step = {0, 20 * 1000};

	(void)arg;
	for (int i = 0; i < 50000; i++) { /* up to ~1 s */
		CHECK_EQ(jf_stats_worker(0, &st), 0);
		if (st.parks > watch_parks) {
			watch_requests = st.preempt_requests;
			atomic_store(&watch_seen, 1);
			return NULL;
		}
		nanosleep(&step, NULL);
	}
	return NULL;
}

static void *park_main(void *arg)
{
	struct jf_worker_stats s1, b0, e0;
	pthread_t watcher;
	int sv[2];
	char c;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	CHECK_EQ(jf_fd_register(sv[0]), 0);
	CHECK_EQ(jf_stats_worker(0, &b0), 0);
	jf_thread_t *a = jft_spawn(NULL, busy, (void *)1), *b = jft_spawn(NULL, busy, (void *)2);
	jft_join(a);
	jft_join(b);
	CHECK_EQ(jf_stats_worker(0, &e0), 0);
	watch_parks = e0.parks;
	atomic_store(&watch_seen, 0);
	CHECK_EQ(pthread_create(&watcher, NULL, park_watch, NULL), 0);
	/* Nobody writes: the read times out, the worker parked in epoll meanwhile. */
	CHECK_EQ(jf_read(sv[0], &c, 1, 40 * (int64_t)PT_MS), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_EQ(jf_stats_worker(0, &s1), 0);
	CHECK_EQ(pthread_join(watcher, NULL), 0);
	CHECK(atomic_load(&watch_seen)); /* it parked */
	printf("preempt.timers (%s): the busy period: %llu preemptions; parked in epoll 40 ms "
	       "after it: %llu requests while parked (%llu since the busy period), %llu parks\n",
	       (const char *)arg, (unsigned long long)(e0.preempts - b0.preempts),
	       (unsigned long long)(s1.preempt_requests - watch_requests),
	       (unsigned long long)(s1.preempt_requests - e0.preempt_requests),
	       (unsigned long long)(s1.parks - e0.parks));
	/*
	 * Checked where every request is the worker's own doing: auto (its timer's signals) and
	 * deadline (none). Counted from the park on: before it, main's short run may still take a
	 * request owed to the busy period (auto with a 500 us grace beside two CPU hogs under ASan:
	 * its timer, armed for the busy period's last run, fired before the worker parked). Printed
	 * only for the others: "timer" arms its worker's timer a quantum ahead at every switch where
	 * work waits and has no park hook (cancelling it there races with on_work's arming, which
	 * only auto's lock orders), so the busy period's last expiry may fire into the park and be
	 * retried (1-2 requests seen); the timer thread of dispatcher, hybrid and safepoint may flag
	 * the busy period's last run late.
	 */
	if (!strcmp(arg, "auto") || !strcmp(arg, "deadline"))
		CHECK_EQ(s1.preempt_requests - watch_requests, 0);
	jf_close(sv[0]);
	close(sv[1]);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	const char *m = pt_config(&cfg, 1, "preempt.timers", true);

	/* 1 */
	hog_safepoints = pt_uses_safepoints(m, 0);
	jft_run(&cfg, main_fn, (void *)m);
	if (pt_is_signal(m)) {
		atomic_store(&stop, 0);
		atomic_store(&hog_chunks, 0);
		hog_safepoints = false;
		m = pt_config(&cfg, 1, "preempt.timers", true);
		jft_run(&cfg, main_fn, (void *)m);
	}
	/* 2 */
	m = pt_config(&cfg, 2, "preempt.timers", true);
	jft_run(&cfg, idle_main, (void *)m);
	/* 3; auto again with a grace period under 1 ms, where its timer is on the wall clock */
	m = pt_config(&cfg, 1, "preempt.timers", true);
	jft_run(&cfg, park_main, (void *)m);
	if (!strcmp(m, "auto")) {
		cfg.grace_ns = 500 * PT_US;
		jft_run(&cfg, park_main, (void *)m);
	}
	jft_ok("preempt.timers");
	return 0;
}
