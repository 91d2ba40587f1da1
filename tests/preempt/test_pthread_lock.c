/*
 * tests/preempt/test_pthread_lock.c - a uthread preempted inside a pthread lock's critical
 * section must not deadlock its worker (issue 14 §3; src/shim/pthread_shim.c).
 *
 * Owns: the scenario, on ONE worker, for each lock kind the shim covers (mutex, rwlock as writer,
 * spin lock) and each mechanism: uthread A takes the lock and works for ~30 ms inside it,
 * calling jf_safepoint() every few µs (so the flag mechanisms would preempt it there, and the
 * signal ones anywhere); uthread B, runnable on the same worker from the start, takes the same
 * lock the blocking way. Without the shim, A is preempted inside, B blocks the only kernel
 * thread in pthread_*_lock, and A never runs again: a deadlock. With it, the preemption that
 * falls due inside is deferred to A's unlock (preempt_deferred counts it) and B gets the lock.
 * A watchdog thread (outside the runtime) ends the process after 10 s.
 *
 * JFT_EXPECT_DEADLOCK=1 (with JIFFY_PTHREAD_SHIM=0) turns it around: the deadlock must happen,
 * which shows the test can fail (registered as preempt.pthread_lock_noshim.<mechanism>).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#include "pt_common.h"

#define NAME "preempt.pthread_lock"

#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_BUILD 1
#endif
#endif

enum kind { MUTEX, RWLOCK, SPIN, NKINDS };
static const char *const kind_name[] = {"mutex", "rwlock", "spinlock"};

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static enum kind kind;
static atomic_int a_inside, a_leaving, b_done, a_done, phase_done;
static volatile uint64_t sink;

static int expect_deadlock;

static void lock(void)
{
	if (kind == MUTEX) {
		CHECK_EQ(pthread_mutex_lock(&mutex), 0);
	} else if (kind == RWLOCK) {
		int rc = pthread_rwlock_wrlock(&rwlock);
		if (rc == EDEADLK && expect_deadlock) {
			/* glibc saw this kernel thread holding the write lock already: the holder was
			 * preempted inside it, the deadlock the test expects, caught at once. */
			printf("%s: without the shim: the contender's wrlock returned EDEADLK, as "
			       "expected (the holder was preempted inside the rwlock on the same kernel "
			       "thread)\n", NAME);
			fflush(stdout);
			_exit(0);
		}
		CHECK_EQ(rc, 0);
	} else {
		CHECK_EQ(pthread_spin_lock(&spin), 0);
	}
}

static void unlock(void)
{
	if (kind == MUTEX)
		CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
	else if (kind == RWLOCK)
		CHECK_EQ(pthread_rwlock_unlock(&rwlock), 0);
	else
		CHECK_EQ(pthread_spin_unlock(&spin), 0);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *holder(void *arg)
{
	(void)arg;
	lock();
	atomic_store(&a_inside, 1);
	uint64_t end = now_ns() + 30 * PT_MS, x = 1;
	while (now_ns() < end) {
		x = pt_work(x, 200); /* a few µs */
		jf_safepoint();
	}
	sink = x;
	CHECK(!atomic_load(&b_done)); /* B cannot have had the lock while A held it */
	atomic_store(&a_leaving, 1);
	unlock(); /* the deferred preemption is taken here: B may run before the next line */
	atomic_store(&a_done, 1);
	return NULL;
}

static void *contender(void *arg)
{
	(void)arg;
	while (!atomic_load(&a_inside)) /* runnable on A's worker the whole time A holds the lock */
		jf_yield();
	lock(); /* the blocking way: a kernel-thread block if A holds it */
	CHECK(atomic_load(&a_leaving));
	unlock();
	atomic_store(&b_done, 1);
	return NULL;
}

static struct jf_worker_stats st; /* read before the runtime stops */

static void *app(void *arg)
{
	(void)arg;
	for (kind = 0; kind < NKINDS; kind++) {
		jf_thread_t *a, *b;
		atomic_store(&a_inside, 0);
		atomic_store(&a_leaving, 0);
		atomic_store(&a_done, 0);
		atomic_store(&b_done, 0);
		CHECK_EQ(jf_spawn(&a, NULL, holder, NULL), 0);
		CHECK_EQ(jf_spawn(&b, NULL, contender, NULL), 0);
		CHECK_EQ(jf_join(a, NULL), 0);
		CHECK_EQ(jf_join(b, NULL), 0);
		CHECK(atomic_load(&b_done));
		printf("%s: %s: the holder kept its worker to its unlock; the contender got the lock\n",
		       NAME, kind_name[kind]);
		atomic_fetch_add(&phase_done, 1);
	}
	st = pt_stats();
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		usleep(100 * 1000);
		if (atomic_load(&phase_done) == NKINDS)
			return NULL;
		if (expect_deadlock && i >= 30 && atomic_load(&a_inside) && !atomic_load(&a_done)) {
			printf("%s: without the shim: deadlock after 3 s, as expected (the holder was "
			       "preempted inside the %s and the contender blocks the only worker)\n",
			       NAME, kind_name[kind]);
			fflush(stdout);
			_exit(0);
		}
	}
	printf("%s: FAIL: %s: no progress in 10 s: the worker is deadlocked\n", NAME,
	       kind_name[kind]);
	fflush(stdout);
	_exit(1);
}

int main(void)
{
	struct jf_config cfg;
	pthread_t wd;
	const char *m = pt_config(&cfg, 1, NAME, true);
	const char *e = getenv("JFT_EXPECT_DEADLOCK");

	expect_deadlock = e && e[0] == '1';
#ifdef TSAN_BUILD
	printf("%s [%s]: skipped: the ThreadSanitizer build keeps glibc's pthread locks (TSan's "
	       "runtime defines them to follow locks), so there is no shim to test\n", NAME, m);
	return PT_SKIP;
#endif
	CHECK_EQ(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);
	CHECK_EQ(pthread_create(&wd, NULL, watchdog, NULL), 0);
	CHECK_EQ(jf_run(&cfg, app, NULL, NULL), 0);
	if (expect_deadlock) {
		printf("%s [%s]: FAIL: no deadlock without the shim: the scenario did not preempt the "
		       "holder inside its critical section\n", NAME, m);
		return 1;
	}
	CHECK_EQ(pthread_join(wd, NULL), 0);
	pt_print_stats(NAME, m, &st);
	/* The holder ran ~90 ms inside locks with work waiting: preemptions came due and waited. */
	CHECK(st.preempt_deferred > 0);
	printf("%s [%s]: ok\n", NAME, m);
	return 0;
}
