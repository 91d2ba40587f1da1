/*
 * debug/test_valgrind.c - the workload that test debug.valgrind.* runs under Valgrind's memcheck
 * (tests/debug/CMakeLists.txt): it must end with no memcheck error and no leak.
 *
 * Owns: a small program that exercises what Valgrind has to follow in Jiffy: many switches between
 * uthread stacks (spawn, join, yield, a contended jf_mutex, a jf_cond, sleeps on the per-worker
 * timers), stacks reused from the cache and stacks mapped and unmapped (odd stack sizes are never
 * cached), detached uthreads (their stacks are freed by the next context on the worker), and deep
 * frames that touch a large part of a uthread's stack. Under a preemption mechanism other than
 * "none" it also has three uthreads compute (calling only jf_safepoint()) while the main uthread
 * sleeps: the main uthread only runs again if a spinner is preempted, at a safepoint ("deadline")
 * or by a signal whose handler switches uthreads on the uthread's own stack ("timer": the program
 * checks that signals did it). Signal mechanisms run under Valgrind with one worker only: its
 * sigreturn restores the thread pointer (FS base) saved when the signal was delivered, so a
 * uthread preempted on one worker and resumed on another would go on with the first worker's
 * thread-local state (docs/debugging.md). Without the stack registration in
 * src/runtime/stack.c memcheck takes a switch between two uthread stacks for a huge frame pushed or
 * popped and reports reads of the other uthreads' memory as invalid. The program checks its own
 * results as well, so it is also a plain test outside Valgrind.
 */
#include <stdatomic.h>
#include <time.h>

#include "jf_test.h"

#define ROUNDS 3
#define PER_ROUND 48
#define US 1000ull

static jf_mutex_t lock = JF_MUTEX_INITIALIZER;
static jf_cond_t cond = JF_COND_INITIALIZER;
static long total;     /* under lock */
static int generation; /* under lock: bumped by the main uthread, waited for with cond */
static jf_waitgroup_t detached_wg;
static atomic_long detached_sum;
static const char *mechanism;
static atomic_int stop_spinning;
static atomic_int spinners_timed_out;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Computes, with no scheduling point but safepoints, until told to stop (or 10 s: preemption is
 * broken). */
static void *spinner(void *arg)
{
	uint64_t deadline = mono_ns() + 10000000000ull;
	volatile unsigned long x = (unsigned long)(intptr_t)arg;

	while (!atomic_load_explicit(&stop_spinning, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		jf_safepoint();
		if (mono_ns() > deadline) {
			atomic_store(&spinners_timed_out, 1);
			break;
		}
	}
	return NULL;
}

/* Three spinners on at most two workers; the main uthread's sleep ends only through a
 * preemption. */
static void spin_phase(void)
{
	struct jf_worker_stats st;
	jf_thread_t *s[3];

	for (int i = 0; i < 3; i++)
		s[i] = jft_spawn(NULL, spinner, (void *)(intptr_t)i);
	jf_sleep_ns(20000 * US);
	atomic_store(&stop_spinning, 1);
	for (int i = 0; i < 3; i++)
		jft_join(s[i]);
	CHECK_EQ(atomic_load(&spinners_timed_out), 0);
	CHECK_EQ(jf_stats_total(&st), 0);
	printf("spin phase: %llu preemptions (%llu by signal)\n", (unsigned long long)st.preempts,
	       (unsigned long long)st.preempts_signal);
	CHECK(st.preempts > 0);
	if (!strcmp(mechanism, "timer"))
		CHECK(st.preempts_signal > 0);
}

/* A frame of @depth x 2 KiB filled and read back: defined stack memory across switches. */
static __attribute__((noinline)) unsigned long deep(int depth, unsigned long seed)
{
	volatile unsigned char buf[2048];
	unsigned long sum = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(seed + i);
	if (depth > 0) {
		if (depth % 4 == 0)
			jf_yield(); /* switch away with this deep stack live */
		sum = deep(depth - 1, seed * 31 + 7);
	}
	for (size_t i = 0; i < sizeof(buf); i += 64)
		sum += buf[i];
	return sum;
}

static void *counter(void *arg)
{
	long i = (long)(intptr_t)arg;
	long *heap = malloc(64 * sizeof(*heap));
	long mine = 0;

	CHECK(heap != NULL);
	for (int k = 0; k < 64; k++)
		heap[k] = i + k;
	for (int k = 0; k < 8; k++) {
		jf_mutex_lock(&lock);
		total++;
		if (k == 3)
			jf_yield(); /* hold the mutex across a switch: others block on it */
		jf_mutex_unlock(&lock);
		mine += heap[k * 8];
	}
	if (i % 3 == 0)
		jf_sleep_ns((uint64_t)(50 + i % 7 * 30) * US);
	mine += (long)(deep(12, (unsigned long)i) & 1);
	free(heap);
	return (void *)(intptr_t)mine;
}

/* Waits on the cond until the main uthread announces generation @arg. */
static void *waiter(void *arg)
{
	int want = (int)(intptr_t)arg;

	jf_mutex_lock(&lock);
	while (generation < want)
		jf_cond_wait(&cond, &lock);
	jf_mutex_unlock(&lock);
	return NULL;
}

static void *detached(void *arg)
{
	char *s = malloc(32);

	CHECK(s != NULL);
	snprintf(s, 32, "d%ld", (long)(intptr_t)arg);
	jf_sleep_ns(20 * US);
	atomic_fetch_add(&detached_sum, (long)strlen(s));
	free(s);
	jf_waitgroup_done(&detached_wg);
	return NULL;
}

static void *app_main(void *arg)
{
	jf_thread_t *t[PER_ROUND], *w[4];
	long expect_total = 0;

	(void)arg;
	mechanism = jf_preempt_mechanism();
	jf_waitgroup_init(&detached_wg);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < 4; i++)
			w[i] = jft_spawn(NULL, waiter, (void *)(intptr_t)(r + 1));
		for (int i = 0; i < PER_ROUND; i++) {
			struct jf_attr attr;

			jf_attr_init(&attr);
			attr.name = "counter";
			/* Every fourth: an odd stack size, never cached: mapped and unmapped. */
			if (i % 4 == 0)
				attr.stack_size = 96 * 1024;
			t[i] = jft_spawn(&attr, counter, (void *)(intptr_t)(r * PER_ROUND + i));
		}
		for (int i = 0; i < 8; i++) {
			struct jf_attr attr;

			jf_attr_init(&attr);
			attr.detached = 1;
			CHECK_EQ(jf_waitgroup_add(&detached_wg, 1), 0);
			jft_spawn(&attr, detached, (void *)(intptr_t)(r * 8 + i));
		}
		jf_sleep_ns(100 * US);
		jf_mutex_lock(&lock);
		generation = r + 1;
		jf_cond_broadcast(&cond);
		jf_mutex_unlock(&lock);
		for (int i = 0; i < PER_ROUND; i++) {
			long got = (long)(intptr_t)jft_join(t[i]);
			long id = r * PER_ROUND + i;

			/* counter()'s sum: heap[k * 8] = id + 8k for k < 8, and deep()'s low bit
			 * (deterministic: the same frames filled the same way, here on this stack) */
			CHECK_EQ(got, 8 * id + 8 * 28 + (long)(deep(12, (unsigned long)id) & 1));
			expect_total += 8;
		}
		for (int i = 0; i < 4; i++)
			jft_join(w[i]);
	}
	jf_waitgroup_wait(&detached_wg);
	jf_mutex_lock(&lock);
	CHECK_EQ(total, expect_total);
	jf_mutex_unlock(&lock);
	/* "d0".."d9": 2 characters, "d10".."d23": 3. */
	CHECK_EQ(atomic_load(&detached_sum), 10 * 2 + (ROUNDS * 8 - 10) * 3);
	if (strcmp(mechanism, "none") != 0)
		spin_phase();
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	jft_config(&cfg, 2);
	jft_run(&cfg, app_main, NULL);
	printf("ok: %ld increments, %d rounds of %d uthreads on %u workers (%s)\n", total, ROUNDS,
	       PER_ROUND, cfg.workers, mechanism);
	return 0;
}
