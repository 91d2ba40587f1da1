/*
 * preempt/test_request_race.c - a preemption request entered with the count at 0 (a safepoint
 * answering its flag, the jf_preempt_enable() that takes a deferred request) must not act on a
 * worker it read before a signal moved the uthread elsewhere.
 *
 * Under "hybrid" (and "auto") the safepoint and the signal meet: the timer thread raises the flag,
 * and after the grace period signals. A signal that landed in jf__safepoint_slow() before
 * request() raised the count could preempt the uthread and resume it on the other worker; request()
 * then went on with the worker it had read before, whose cur was another uthread by then, and
 * preempted THAT one from this stack: its context saved with this stack, one context resumed twice
 * (jf_join() -EDEADLK, SIGSEGV in uthread_exit; preempt.errno.hybrid failed ~1 run in 25 under
 * load). Here a plain thread sends the preemption signal to both workers back to back while
 * uthreads on 2 workers, moving between them, enter the safepoint's slow path (as jf_safepoint()
 * does when the flag is up) and leave short jf_preempt_disable() regions (where the signals that
 * land are deferred to the jf_preempt_enable()) all the time, and each checks that jf_self() is
 * still itself and that its preemption count is 0 in its own code (the count was raised through
 * a thread-local address computed before such a migration: the other worker's uthread was left
 * unpreemptible, main's sleep on it never ended). The old code failed within a second or two.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pt_common.h"

#define NAME "preempt.request_race"
#define NTHREADS 8

static const char *mech;
static int psig;
static atomic_int stop, sender_stop, sender_done;
static atomic_int tids[2];
static atomic_ullong sent, rounds;

/* Signals the workers as fast as it can: the runtime takes them as its own (SI_TKILL, our pid). */
static void *sender(void *arg)
{
	pid_t pid = getpid();

	(void)arg;
	while (!atomic_load(&sender_stop)) {
		for (int i = 0; i < 2; i++) {
			int tid = atomic_load_explicit(&tids[i], memory_order_relaxed);
			if (tid && syscall(SYS_tgkill, pid, tid, psig) == 0)
				atomic_fetch_add_explicit(&sent, 1, memory_order_relaxed);
		}
	}
	atomic_store(&sender_done, 1);
	return NULL;
}

static void publish_tid(void)
{
	jf_preempt_disable(); /* the worker and the kernel thread belong together */
	atomic_store_explicit(&tids[jf_worker_id()], (int)syscall(SYS_gettid), memory_order_relaxed);
	jf_preempt_enable();
}

/* This kernel thread's preemption count (one %fs-relative load): 0 in the uthread's own code. */
static inline int count_here(void)
{
	int c;
	__asm__ volatile(JF__PREEMPT_TLS_ASM("movl", 0) ", %0" : "=r"(c) : : "rax");
	return c;
}

/*
 * A count raised through an address computed before a migration belongs to the uthread that now
 * runs on the old worker: never preempted again (its worker's timers never fire: a hang).
 */
#define CHECK_COUNT_0(where)                                                                      \
	do {                                                                                      \
		int c_ = count_here();                                                            \
		if (c_ != 0) {                                                                    \
			fprintf(stderr, "%s [%s]: preemption count %d in uthread code, after %s "  \
					"(step %llu)\n",                                            \
				NAME, mech, c_, where, (unsigned long long)k);                    \
			CHECK_EQ(c_, 0);                                                          \
		}                                                                                 \
	} while (0)

static void *racer(void *arg)
{
	jf_thread_t *me = jf_self();
	uint64_t x = (uint64_t)(intptr_t)arg + 1, k = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		x = pt_work(x, 4);
		CHECK_COUNT_0("computing");
		/* What jf_safepoint() calls once the timer thread raised the flag: request() entered
		 * with the count at 0, where the signal lands too. */
		jf__safepoint_slow();
		CHECK_COUNT_0("the safepoint");
		if (jf_self() != me) {
			fprintf(stderr, "%s [%s]: a uthread resumed as another one (step %llu)\n",
				NAME, mech, (unsigned long long)k);
			CHECK(jf_self() == me);
		}
		/* A short region: a signal landing in it is taken by the jf_preempt_enable(). */
		jf_preempt_disable();
		x = pt_work(x, 8);
		jf_preempt_enable();
		CHECK_COUNT_0("the region");
		CHECK(jf_self() == me);
		if (++k % 32 == 0) {
			publish_tid();
			pt_hint_other_worker(); /* the next preemption moves it to the other worker */
			CHECK_COUNT_0("the hint");
		}
	}
	atomic_fetch_add(&rounds, k);
	return (void *)(uintptr_t)(x | 1);
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[NTHREADS];
	struct jf_worker_stats st;
	uint64_t want = JFT_SCALE(20000, 2000), preempts;
	pthread_t snd;
	bool signals = pt_is_signal(mech);

	(void)arg;
	publish_tid();
	if (signals)
		CHECK_EQ(pthread_create(&snd, NULL, sender, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		t[i] = jft_spawn_on(i % 2, racer, (void *)(intptr_t)i);
	preempts = pt_watch(&stop, JFT_SCALE(2, 1) * PT_S, 6 * PT_S, want);
	if (signals) {
		atomic_store(&sender_stop, 1);
		while (!atomic_load(&sender_done))
			CHECK_EQ(jf_sleep_ns(PT_MS), 0);
		CHECK_EQ(pthread_join(snd, NULL), 0); /* it has returned: no wait */
	}
	for (int i = 0; i < NTHREADS; i++)
		CHECK(jft_join(t[i]) != NULL);
	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	printf("%s [%s]: %d uthreads, %llu rounds, %llu signals sent by the test\n", NAME, mech,
	       NTHREADS, (unsigned long long)atomic_load(&rounds),
	       (unsigned long long)atomic_load(&sent));
	CHECK_GE(preempts, 100);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	mech = pt_config(&cfg, 2, NAME, true);
	psig = cfg.preempt_signal;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", "ws");
	cfg.quantum_ns = 20 * PT_US;
	jft_run(&cfg, main_fn, NULL);
	jft_ok(NAME);
	return 0;
}
