/*
 * tests/apps/test_pfn_bomb.c - the decompression-bomb demo's promises (apps/pfn/, issue 17),
 * under the mechanism JIFFY_PREEMPT names (CTest runs it once per mechanism, "none" included).
 *
 * Proves, with no timing asserted:
 *   1. a bomb that never ends (its input repeats a deflate block forever) comes back from
 *      jf_pfn_launch() as JF_PFN_TIMEOUT, at budgets from 30 us to 2 ms, and again from each
 *      jf_pfn_resume() (were a budget not enforced, a watchdog fails the test after 30 s);
 *      jf_pfn_cancel() then runs the cleanup handler exactly once (if the function got as far as
 *      pushing it), which frees zlib's state and the output: nothing the demo's allocator
 *      tracks is left, and LeakSanitizer (ASan build) finds nothing at exit;
 *   2. the same with zlib's state in the launch's arena (jf_pfn_alloc), which cancel frees;
 *   3. a benign input decodes bit-exact however often it is stopped: budgets of 20-200 us, each
 *      timeout resumed alternately by the launching uthread and by other uthreads (on any worker);
 *      a benign decode cancelled after a timeout leaks nothing either; a decode that returns
 *      runs no cleanup handler;
 *   4. a finite bomb (16 MiB of zeros) is a valid stream: decoded unbounded it is 16 MiB of zeros.
 */
#include <stdlib.h>
#include <string.h>

#include "jf_test.h"
#include <jiffy/pfn.h>

#include "zjob.h"

/* A budget that is never enforced leaves the endless bomb running: fail with a message rather
 * than at CTest's timeout. */
static void watchdog(int sig)
{
	static const char msg[] = "test_pfn_bomb: still running after 30 s: a budget was not "
				  "enforced (the endless bomb never came back)\n";
	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

static unsigned early_stops; /* stopped before the handler was pushed */

static unsigned char *endless, *benign, *benign_raw, *finite;
static size_t endless_len, endless_cycle, benign_len, benign_raw_len, finite_len;

/* 1 and 2: the endless bomb at @budget, resumed @resumes times, then cancelled. */
static void bomb_once(uint64_t budget, int resumes, int arena)
{
	struct zjob j;
	jf_pfn_t *cont = NULL;
	void *rv = NULL;
	int64_t live0 = zjob_live_bytes();
	uint64_t before;
	int rc;

	zjob_init(&j, endless, endless_len, endless_cycle, ZJOB_PFN, 8u << 20);
	j.arena = arena;
	rc = jf_pfn_launch(zjob_decode_pfn, &j, budget, &rv, &cont);
	CHECK_EQ(rc, JF_PFN_TIMEOUT);
	CHECK(cont != NULL);
	CHECK_EQ(j.zrc, 0); /* still running: it never ends by itself */
	for (int i = 0; i < resumes; i++) {
		before = j.total_out;
		rc = jf_pfn_resume(cont, budget, &rv);
		CHECK_EQ(rc, JF_PFN_TIMEOUT);
		CHECK(j.total_out >= before);
	}
	CHECK_EQ(j.cleanups, 0);
	CHECK_EQ(jf_pfn_cancel(cont), 0);
	/* A stop may come before the function pushed its handler (small budgets, slow first runs
	 * under ASan); then it holds nothing yet. Once pushed, the handler runs exactly once. */
	CHECK(j.cleanups <= 1);
	if (j.pushed)
		CHECK_EQ(j.cleanups, 1);
	else
		early_stops++;
	CHECK(j.out == NULL);
	CHECK_EQ(j.zs_live, 0);
	CHECK_EQ(zjob_live_bytes(), live0);
}

struct resumer {
	jf_pfn_t *cont;
	uint64_t budget;
	int rc;
	void *rv;
};

static void *resume_elsewhere(void *arg)
{
	struct resumer *r = arg;

	r->rc = jf_pfn_resume(r->cont, r->budget, &r->rv);
	return NULL;
}

/* 3: the benign input at @budget, every timeout resumed, alternately here and by a new uthread. */
static unsigned benign_once(uint64_t budget, int cancel_at_first_timeout)
{
	struct zjob j;
	jf_pfn_t *cont = NULL;
	void *rv = NULL;
	int64_t live0 = zjob_live_bytes();
	unsigned timeouts = 0;
	int rc;

	zjob_init(&j, benign, benign_len, 0, ZJOB_PFN, 0);
	rc = jf_pfn_launch(zjob_decode_pfn, &j, budget, &rv, &cont);
	while (rc == JF_PFN_TIMEOUT) {
		timeouts++;
		if (cancel_at_first_timeout) {
			CHECK_EQ(jf_pfn_cancel(cont), 0);
			CHECK(j.cleanups <= 1);
			if (j.pushed)
				CHECK_EQ(j.cleanups, 1);
			CHECK(j.out == NULL);
			CHECK_EQ(zjob_live_bytes(), live0);
			return timeouts;
		}
		if (timeouts & 1) {
			struct resumer r = {cont, budget, -1, NULL};
			jf_thread_t *t;
			CHECK_EQ(jf_spawn(&t, NULL, resume_elsewhere, &r), 0);
			CHECK_EQ(jf_join(t, NULL), 0);
			rc = r.rc;
			rv = r.rv;
		} else {
			rc = jf_pfn_resume(cont, budget, &rv);
		}
	}
	CHECK_EQ(rc, JF_PFN_DONE);
	CHECK(rv == &j);
	CHECK_EQ(j.zrc, Z_STREAM_END);
	CHECK_EQ(j.cleanups, 0);
	CHECK_EQ(j.total_out, benign_raw_len);
	CHECK_EQ(j.out_len, benign_raw_len);
	CHECK(memcmp(j.out, benign_raw, benign_raw_len) == 0);
	zjob_release(&j);
	CHECK_EQ(zjob_live_bytes(), live0);
	return timeouts;
}

static void *test_main(void *arg)
{
	static const uint64_t bomb_budgets[] = {30000, 100000, 500000, 2000000};
	static const uint64_t benign_budgets[] = {20000, 50000, 200000};
	unsigned timeouts = 0;
	(void)arg;

	for (unsigned i = 0; i < sizeof(bomb_budgets) / sizeof(bomb_budgets[0]); i++) {
		bomb_once(bomb_budgets[i], 0, 0);
		bomb_once(bomb_budgets[i], 3, 0);
		bomb_once(bomb_budgets[i], 2, 1);
	}
	printf("endless bomb: stopped and cancelled at every budget (%u times before the handler "
	       "was pushed)\n", early_stops);
	for (unsigned i = 0; i < sizeof(benign_budgets) / sizeof(benign_budgets[0]); i++) {
		unsigned t = benign_once(benign_budgets[i], 0);
		printf("benign at %llu us: bit-exact after %u timeouts and resumes\n",
		       (unsigned long long)(benign_budgets[i] / 1000), t);
		timeouts += t;
		benign_once(benign_budgets[i], 1);
	}
	printf("benign: %u timeouts in all (not asserted: it depends on the machine's speed)\n",
	       timeouts);
	CHECK_EQ(zjob_live_bytes(), 0);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	struct zjob j;

	signal(SIGALRM, watchdog);
	alarm(30);
	CHECK_EQ(zjob_make_bomb(0, &endless, &endless_len, &endless_cycle), 0);
	CHECK(endless_cycle > 0 && endless_cycle < endless_len);
	CHECK_EQ(zjob_make_benign(JFT_SCALE(1u << 20, 256u << 10), &benign, &benign_len, &benign_raw,
				  &benign_raw_len), 0);
	CHECK_EQ(zjob_make_bomb(16, &finite, &finite_len, NULL), 0);

	/* 4: the finite bomb is a valid stream of zeros (outside the runtime, plain) */
	zjob_init(&j, finite, finite_len, 0, ZJOB_PLAIN, 0);
	CHECK_EQ(zjob_decode(&j), Z_STREAM_END);
	CHECK_EQ(j.total_out, 16u << 20);
	for (size_t i = 0; i < j.out_len; i++)
		if (j.out[i]) {
			CHECK_EQ(j.out[i], 0);
			break;
		}
	zjob_release(&j);
	printf("finite bomb: %zu bytes decode to 16 MiB of zeros\n", finite_len);

	jft_config(&cfg, 2);
	jft_run(&cfg, test_main, NULL);
	free(endless);
	free(benign);
	free(benign_raw);
	free(finite);
	printf("ok\n");
	return 0;
}
