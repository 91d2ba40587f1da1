/*
 * debug/gdb_target.c - the program that test debug.gdb.* looks into with gdb and the Jiffy gdb
 * extension (tools/gdb/jiffy-gdb.py), live and through a core file (tests/debug/check_gdb.py).
 *
 * Owns: uthreads in known states at one known point, gdbt_ready(), where the checker's breakpoint
 * is. Two workers, policy ws. Mode "states" (no preemption):
 *     gdbt-finisher  exited, not joined yet          gdbt-sleeper   blocked in jf_sleep_ns (1 h)
 *     gdbt-mutex     blocked on jf_mutex (main holds) gdbt-joiner    blocked in jf_join(sleeper)
 *     gdbt-spinner   running on the other worker      gdbt-queued    runnable, never ran (new)
 *     main           running, in gdbt_ready()
 * Mode "preempted" (timer signals, 1 ms quantum): three uthreads gdbt-spin0..2 compute on two
 * workers without a scheduling point until every one has started and at least six preemptions
 * happened. Then the main uthread disables its own preemption and raises a flag; the spinner
 * running on the other worker sees it and disables its preemption too, so that no worker is in
 * the middle of a switch when gdb stops the process: at gdbt_ready() that spinner runs and the
 * other two are runnable, preempted inside gdbt_spin() (their stacks hold the signal frame of the
 * preemption).
 * After gdbt_ready() everything is released and the program exits 0 (the sleeper and its joiner
 * are discarded by the shutdown), so a gdb session can also check that it ran to the end.
 */
#include <stdatomic.h>
#include <time.h>

#include "jf_test.h"

#define MS 1000000ull

static jf_mutex_t gdbt_lock = JF_MUTEX_INITIALIZER;
static atomic_int stop;
static atomic_int arrived; /* uthreads that reached (just before) their blocking call */
static atomic_int spinner_running;
static atomic_int spin_started[3];
static atomic_int freeze, frozen;
static jf_thread_t *sleeper;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The breakpoint: every uthread is in place when this is called. */
__attribute__((noinline, used)) void gdbt_ready(void)
{
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void *gdbt_finisher(void *arg)
{
	return arg;
}

static __attribute__((noinline)) void *gdbt_mutex_waiter(void *arg)
{
	atomic_fetch_add(&arrived, 1);
	jf_mutex_lock(&gdbt_lock);
	jf_mutex_unlock(&gdbt_lock);
	return arg;
}

static __attribute__((noinline)) void *gdbt_sleeper(void *arg)
{
	atomic_fetch_add(&arrived, 1);
	jf_sleep_ns(3600ull * 1000 * MS);
	return arg;
}

static __attribute__((noinline)) void *gdbt_joiner(void *arg)
{
	void *ret = NULL;

	atomic_fetch_add(&arrived, 1);
	jf_join(sleeper, &ret);
	return (void *)((char *)arg + (ret != NULL));
}

static __attribute__((noinline)) void *gdbt_spinner(void *arg)
{
	atomic_store(&spinner_running, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		__builtin_ia32_pause();
	return arg;
}

static __attribute__((noinline)) void *gdbt_queued(void *arg)
{
	return arg;
}

/* Computes without a scheduling point (and outside libc) until told to stop. */
static __attribute__((noinline)) void *gdbt_spin(void *arg)
{
	volatile uint64_t x = (uint64_t)(intptr_t)arg;

	atomic_store(&spin_started[(intptr_t)arg], 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (atomic_load_explicit(&freeze, memory_order_relaxed) &&
		    !atomic_load_explicit(&frozen, memory_order_relaxed)) {
			jf_preempt_disable(); /* stay on this worker until stop */
			atomic_store(&frozen, 1);
			while (!atomic_load_explicit(&stop, memory_order_relaxed))
				x = x * 6364136223846793005ull + 1442695040888963407ull;
			jf_preempt_enable();
		}
	}
	return NULL;
}

static jf_thread_t *spawn_named(const char *name, jf_thread_fn fn, void *arg)
{
	struct jf_attr attr;

	jf_attr_init(&attr);
	attr.name = name;
	return jft_spawn(&attr, fn, arg);
}

static void wait_until(atomic_int *flag, int value, const char *what)
{
	uint64_t deadline = mono_ns() + 10000 * MS;

	while (atomic_load(flag) < value) {
		if (mono_ns() > deadline) {
			fprintf(stderr, "gdb_target: timed out waiting for %s\n", what);
			jft_fail();
		}
		__builtin_ia32_pause(); /* no scheduling point: keep this worker */
	}
}

static void states(void)
{
	jf_thread_t *finisher, *mutex_waiter, *joiner, *spinner, *queued;

	jf_mutex_lock(&gdbt_lock);
	finisher = spawn_named("gdbt-finisher", gdbt_finisher, NULL);
	mutex_waiter = spawn_named("gdbt-mutex", gdbt_mutex_waiter, NULL);
	sleeper = spawn_named("gdbt-sleeper", gdbt_sleeper, NULL);
	joiner = spawn_named("gdbt-joiner", gdbt_joiner, NULL);
	while (atomic_load(&arrived) < 3)
		jf_sleep_ns(1 * MS);
	jf_sleep_ns(100 * MS); /* from "arrived" to blocked: a few instructions, unless descheduled */
	spinner = spawn_named("gdbt-spinner", gdbt_spinner, NULL);
	wait_until(&spinner_running, 1, "gdbt-spinner to run on the other worker");
	queued = spawn_named("gdbt-queued", gdbt_queued, NULL);
	printf("gdb_target: states in place\n");
	fflush(stdout);

	gdbt_ready();

	atomic_store(&stop, 1);
	jf_mutex_unlock(&gdbt_lock);
	jft_join(finisher);
	jft_join(mutex_waiter);
	jft_join(spinner);
	jft_join(queued);
	(void)joiner; /* blocked on the sleeper until the shutdown discards both */
}

static void preempted(void)
{
	static const char *names[3] = {"gdbt-spin0", "gdbt-spin1", "gdbt-spin2"};
	jf_thread_t *spin[3];
	uint64_t deadline = mono_ns() + 10000 * MS;
	struct jf_worker_stats st;

	for (int i = 0; i < 3; i++)
		spin[i] = spawn_named(names[i], gdbt_spin, (void *)(intptr_t)i);
	for (;;) {
		int started = 0;

		jf_sleep_ns(2 * MS); /* ends only when a worker preempts a spinner */
		for (int i = 0; i < 3; i++)
			started += atomic_load(&spin_started[i]);
		CHECK_EQ(jf_stats_total(&st), 0);
		if (started == 3 && st.preempts >= 6)
			break;
		if (mono_ns() > deadline) {
			fprintf(stderr, "gdb_target: %d spinners started, %llu preemptions in 10 s\n",
				started, (unsigned long long)st.preempts);
			jft_fail();
		}
	}
	printf("gdb_target: spinners preempted %llu times\n", (unsigned long long)st.preempts);
	fflush(stdout);
	jf_preempt_disable(); /* before freeze: else a second spinner could freeze on this worker */
	atomic_store(&freeze, 1);
	wait_until(&frozen, 1, "a spinner to freeze on the other worker");

	gdbt_ready();

	atomic_store(&stop, 1);
	jf_preempt_enable();
	for (int i = 0; i < 3; i++)
		jft_join(spin[i]);
}

static void *gdbt_main(void *arg)
{
	const char *mode = arg;

	if (!strcmp(mode, "states"))
		states();
	else
		preempted();
	return NULL;
}

int main(int argc, char **argv)
{
	struct jf_config cfg;
	const char *mode = argc > 1 ? argv[1] : "states";

	if (strcmp(mode, "states") != 0 && strcmp(mode, "preempted") != 0) {
		fprintf(stderr, "usage: %s [states|preempted]\n", argv[0]);
		return 2;
	}
	jft_config(&cfg, 2);
	cfg.workers = 2;
	snprintf(cfg.policy, sizeof(cfg.policy), "ws");
	if (!strcmp(mode, "states")) {
		snprintf(cfg.preempt, sizeof(cfg.preempt), "none");
		/* The listing's ages are checked: without preemption, a policy with time or the
		 * histograms, the switch reads no clock and stamps none (core.introspect checks
		 * that case). */
		cfg.histograms = true;
	} else {
		snprintf(cfg.preempt, sizeof(cfg.preempt), "timer");
		cfg.quantum_ns = 1 * MS;
	}
	jft_run(&cfg, gdbt_main, (void *)mode);
	printf("gdb_target: %s done\n", mode);
	return 0;
}
