/*
 * preempt/test_errno.c - proves that errno belongs to the uthread also across preemption: many
 * uthreads on 2 workers (policy ws; each asks every 50 steps to move to the other worker, so that
 * preemptions migrate them between kernel threads) each set errno to their own, changing values
 * and then compute without any scheduling point of their own, reading errno back every few
 * nanoseconds (so preemptions land inside errno accesses too); failing libc calls (close(-1) ->
 * EBADF, open() of a missing file -> ENOENT) set it as real code sees it. Every read must give
 * the uthread's own last value although the workers preempt the uthreads thousands of times (at
 * least 500, 50 under sanitizers) in between. Under "safepoint" the uthreads reach jf_safepoint()
 * between reads (a scheduling point that must keep errno too).
 */
#include <fcntl.h>

#include "pt_common.h"

#define NAME "preempt.errno"

static const char *mech;
static int nthreads;
static atomic_int stop;
static atomic_ullong checks, migrations;

static void errno_fail(int who, uint64_t k, int got, int want, const char *after)
{
	fprintf(stderr, "%s [%s]: uthread %d, step %llu, worker %d: errno %d after %s, expected %d\n",
		NAME, mech, who, (unsigned long long)k, jf_worker_id(), got, after, want);
	CHECK_EQ(got, want);
}

static void *errno_fn(void *arg)
{
	int who = (int)(intptr_t)arg;
	int safepoints = pt_uses_safepoints(mech, who);
	int last_worker = jf_worker_id();
	uint64_t k = 0, x = (uint64_t)who + 1, n = 0, moved = 0;
	int want = 1000 + who * 100003;

	errno = want;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int got;

		/*
		 * About 1 us of work that reads errno all along, as code that tests errno in a
		 * loop does: preemptions land between the instructions of errno accesses too.
		 */
		for (int i = 0; i < 64; i++) {
			x = pt_work(x, 4);
			got = errno;
			if (got != want)
				errno_fail(who, k, got, want, "computing");
		}
		n += 64;
		if (safepoints) {
			jf_safepoint();
			got = errno;
			if (got != want)
				errno_fail(who, k, got, want, "jf_safepoint()");
		}
		k++;
		if (k % 50 == 0)
			pt_hint_other_worker(); /* the next preemption moves it to the other worker */
		if (k % 64 == 0) {
			/* A new value of its own. */
			want = 1000 + who * 100003 + (int)(k % 100000);
			errno = want;
		} else if (k % 97 == 0) {
			CHECK_EQ(close(-1), -1);
			want = EBADF;
			got = errno;
			if (got != want)
				errno_fail(who, k, got, want, "close(-1)");
		} else if (k % 101 == 0) {
			CHECK_EQ(open("/nonexistent/jiffy-preempt-errno", O_RDONLY), -1);
			want = ENOENT;
			got = errno;
			if (got != want)
				errno_fail(who, k, got, want, "open() of a missing file");
		}
		if (jf_worker_id() != last_worker) {
			moved++;
			last_worker = jf_worker_id();
		}
	}
	atomic_fetch_add(&checks, n);
	atomic_fetch_add(&migrations, moved);
	return (void *)(uintptr_t)(x | 1);
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[32];
	struct jf_worker_stats st;
	uint64_t want = JFT_SCALE(500, 50), preempts;
	int i;

	(void)arg;
	errno = 4242;
	for (i = 0; i < nthreads; i++)
		t[i] = jft_spawn_on(i % jf_nworkers(), errno_fn, (void *)(intptr_t)i);
	preempts = pt_watch(&stop, 1 * PT_S, 30 * PT_S, want);
	CHECK_EQ(errno, 4242);
	for (i = 0; i < nthreads; i++) {
		CHECK(jft_join(t[i]) != NULL);
		CHECK_EQ(errno, 4242);
	}
	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	printf("%s [%s]: %d uthreads, %llu errno checks, %llu migrations\n", NAME, mech, nthreads,
	       (unsigned long long)atomic_load(&checks),
	       (unsigned long long)atomic_load(&migrations));
	CHECK_GE(preempts, want);
	/* Preempted uthreads resumed on the other worker's kernel thread, with their errno. */
	CHECK_GE(atomic_load(&migrations), 10);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	mech = pt_config(&cfg, 2, NAME, true);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/*
	 * Sanitizers cannot instrument the one-instruction %fs-relative errno that
	 * <jiffy/thread.h> uses, so sanitizer builds get the function form, which an asynchronous
	 * preemption can split between computing errno's address and using it (documented in
	 * jiffy/thread.h). This test finds exactly that, so it runs in the plain build only.
	 */
	if (pt_is_signal(mech)) {
		printf("%s [%s]: skipped: sanitizer builds use the splittable errno form\n", NAME, mech);
		return 77;
	}
#endif
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", "ws");
	cfg.quantum_ns = pt_is_safepoint(mech) ? 10 * PT_US : 50 * PT_US;
	nthreads = JFT_SCALE(16, 6);
	jft_run(&cfg, main_fn, NULL);
	jft_ok(NAME);
	return 0;
}
