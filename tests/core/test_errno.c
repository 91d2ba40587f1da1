/*
 * core/test_errno.c - proves that errno belongs to the uthread, not to the worker's kernel
 * thread: many uthreads each keep their own, changing errno value (set by hand and by failing
 * libc calls) across thousands of yields, sleeps and blocking mutex acquisitions, while sharing
 * workers with the others, on 2 workers (where they may also migrate) and on 1 worker.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define NTHREADS 32

/*
 * ASan/TSan builds get <jiffy/thread.h>'s function form of errno (sanitizers cannot instrument
 * the one-instruction %fs-relative form), which an asynchronous preemption can split between
 * computing errno's address and using it; the header says to wrap such accesses in
 * jf_preempt_disable() when the code can migrate, and under the signal mechanisms (the
 * core.errno.ws.* variants) these uthreads do. So there the test's own reads and writes are
 * wrapped: what it checks is still that the runtime keeps errno across its switches and the
 * preemptions around them. The plain build checks the bare macro (tests/preempt/test_errno.c
 * checks it inside computation, too).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ERRNO_GET()                                                                               \
	({                                                                                        \
		int v_;                                                                           \
		jf_preempt_disable();                                                             \
		v_ = errno;                                                                       \
		jf_preempt_enable();                                                              \
		v_;                                                                               \
	})
#define ERRNO_SET(x)                                                                              \
	do {                                                                                      \
		jf_preempt_disable();                                                             \
		errno = (x);                                                                      \
		jf_preempt_enable();                                                              \
	} while (0)
#else
#define ERRNO_GET() (errno)
#define ERRNO_SET(x) (errno = (x))
#endif

static long iters;
static jf_mutex_t m = JF_MUTEX_INITIALIZER;
static atomic_long checks;

static void expect_errno(int want, int who, long k, const char *after)
{
	int got = ERRNO_GET();

	if (got != want) {
		fprintf(stderr, "uthread %d, iteration %ld: errno %d after %s, expected %d\n",
			who, k, got, after, want);
		CHECK_EQ(got, want);
	}
	atomic_fetch_add_explicit(&checks, 1, memory_order_relaxed);
}

static void *errno_fn(void *arg)
{
	int who = (int)(intptr_t)arg;
	long k;

	for (k = 0; k < iters; k++) {
		int v = 1000 + who * 100000 + (int)(k % 1000);

		ERRNO_SET(v);
		if (k % 64 == 0) {
			CHECK_EQ(jf_sleep_ns(1000 + (uint64_t)who * 200), 0);
			expect_errno(v, who, k, "sleep");
		} else if (k % 32 == 0) {
			jf_mutex_lock(&m);
			expect_errno(v, who, k, "mutex_lock");
			jf_yield();
			expect_errno(v, who, k, "yield holding the mutex");
			CHECK_EQ(jf_mutex_unlock(&m), 0);
			ERRNO_SET(v);
		} else {
			jf_yield();
		}
		expect_errno(v, who, k, "yield");

		if (k % 16 == 0) {
			/* errno set by libc, as real code sees it. */
			CHECK_EQ(close(-1), -1);
			expect_errno(EBADF, who, k, "close(-1)");
			jf_yield();
			expect_errno(EBADF, who, k, "close(-1) and yield");
		}
	}
	ERRNO_SET(0);
	return (void *)(intptr_t)who;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[NTHREADS];
	int i;

	(void)arg;
	ERRNO_SET(4242);
	for (i = 0; i < NTHREADS; i++)
		t[i] = jft_spawn_on(i % 2 ? -1 : (i / 2) % jf_nworkers(), errno_fn,
				    (void *)(intptr_t)i);
	for (i = 0; i < NTHREADS; i++) {
		CHECK_EQ((intptr_t)jft_join(t[i]), i);
		expect_errno(4242, -1, i, "join");
	}
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	unsigned workers;

	iters = JFT_SCALE(3000L, 600L);
	for (workers = 2; workers >= 1; workers--) {
		jft_config(&cfg, workers);
		cfg.workers = workers;
		atomic_store(&checks, 0);
		jft_run(&cfg, main_fn, NULL);
		printf("%u worker(s), policy %s: %ld errno checks\n", workers, cfg.policy,
		       atomic_load(&checks));
	}
	jft_ok("core.errno");
	return 0;
}
