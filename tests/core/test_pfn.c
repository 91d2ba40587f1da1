/*
 * tests/core/test_pfn.c - preemptible functions (jiffy/pfn.h) and uthread cancellation.
 *
 * Owns the checks that: a launch completes with the function's result; a budget stops code with
 * and without safepoints (the budget timer's signal) under the mechanism CTest names, "none"
 * included, and any number of resumes, on any worker and from another uthread, give bit-exact
 * results (integer, SSE and x87 state across stops); pause; nesting (the outer budget bounds the
 * inner, the inner's rest is given back); cancel runs cleanup handlers LIFO, innermost first, and
 * frees the arena and stacks (ASan/LSan see any leak); functions hammering malloc and stdio are
 * cancelled at random points without a lock left held; jf_exit() inside functions; uthread
 * cancellation: blocked in sleep, cond, join, waitgroup and a descriptor wait it wakes with
 * -ECANCELED, JF_CANCEL_ASYNC ends a busy loop with its handlers run, jf_testcancel,
 * JF_CANCEL_DISABLE; jf_join_timeout; and every misuse gets its error code.
 *
 * No timing is asserted: a stop must eventually happen, and what resumes must be exact. Under
 * ThreadSanitizer (which cannot follow a stack switch in a signal handler) budgets are enforced at
 * safepoints only (src/runtime/pfn.c), so the loops here call jf_safepoint() there.
 */
#define _GNU_SOURCE
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "jf_test.h"

#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#else
#define TSAN 0
#endif

static const char *mech;
static bool coop; /* the mechanism preempts only at safepoints, or never: busy loops yield */

/* --- a computation whose result depends on every step: integer, SSE and x87 ---------------- */

struct work {
	uint64_t iters;
	int safepoints; /* call jf_safepoint() in the loop */
	uint64_t result;
};

static uint64_t compute(uint64_t iters, int safepoints)
{
	uint64_t x = 0x243F6A8885A308D3ull, acc = 0;
	double d = 1.0;
	long double ld = 1.0L;

	for (uint64_t i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		d = d * 1.0000001 + (double)(x & 0xff) * 1e-9;
		ld = ld * 1.00000001L + (long double)(x & 0xf) * 1e-12L;
		acc += x + (uint64_t)(d * 1000.0) + (uint64_t)(ld * 100.0L);
		if (safepoints || TSAN)
			jf_safepoint();
	}
	return acc;
}

static void *work_fn(void *arg)
{
	struct work *wk = arg;
	wk->result = compute(wk->iters, wk->safepoints);
	return (void *)(uintptr_t)(wk->result ^ 0x5a5a);
}

/* Run @wk under @budget until done; count the stops. Resumes alternate between this uthread and
 * a helper uthread on another worker when @migrate. */
struct resumer_arg {
	jf_pfn_t *cont;
	uint64_t budget;
	int status;
	void *ret;
};

static void *resumer(void *arg)
{
	struct resumer_arg *ra = arg;
	ra->status = jf_pfn_resume(ra->cont, ra->budget, &ra->ret);
	return NULL;
}

static unsigned run_to_completion(struct work *wk, uint64_t budget, bool migrate, void **ret)
{
	jf_pfn_t *cont = NULL;
	unsigned stops = 0;
	int st = jf_pfn_launch(work_fn, wk, budget, ret, &cont);

	while (st != JF_PFN_DONE) {
		CHECK_EQ(st, JF_PFN_TIMEOUT);
		CHECK(cont != NULL);
		stops++;
		if (migrate && (stops & 1)) {
			struct resumer_arg ra = {cont, budget, -1, NULL};
			jf_thread_t *t = jft_spawn_on((int)(stops / 2 % 2), resumer, &ra);
			jft_join(t);
			st = ra.status;
			*ret = ra.ret;
		} else {
			st = jf_pfn_resume(cont, budget, ret);
		}
	}
	return stops;
}

static void test_complete_and_stops(void)
{
	void *ret = NULL;
	jf_pfn_t *cont = NULL;
	uint64_t iters = JFT_SCALE(3000000, 300000);
	uint64_t expect = compute(iters, 0);

	/* completes: the result comes back, no continuation */
	struct work quick = {1000, 0, 0};
	CHECK_EQ(jf_pfn_launch(work_fn, &quick, 10ull * 1000 * 1000 * 1000, &ret, &cont), JF_PFN_DONE);
	CHECK_EQ((uint64_t)(uintptr_t)ret, quick.result ^ 0x5a5a);
	CHECK_EQ(quick.result, compute(1000, 0));

	/* no safepoints (the budget timer's signal), then with them; 100 us and 1 ms budgets */
	for (int sp = 0; sp < 2; sp++) {
		for (uint64_t budget = 100000; budget <= 1000000; budget *= 10) {
			struct work wk = {iters, sp, 0};
			unsigned stops = run_to_completion(&wk, budget, true, &ret);
			CHECK_EQ(wk.result, expect);
			CHECK_EQ((uint64_t)(uintptr_t)ret, expect ^ 0x5a5a);
			printf("  safepoints=%d budget=%llu us: %u stops, result exact\n", sp,
			       (unsigned long long)budget / 1000, stops);
			CHECK(stops > 0); /* tens of ms of work: a budget of 1 ms must have ended */
		}
	}
	jft_ok("complete, timeout, resume across workers and uthreads");
}

/* --- pause ---------------------------------------------------------------------------------- */

static void *pauser(void *arg)
{
	int *n = arg;
	for (int i = 0; i < 5; i++) {
		(*n)++;
		CHECK_EQ(jf_pfn_pause(), 0);
	}
	return (void *)(uintptr_t)77;
}

static void test_pause(void)
{
	int n = 0, st, rounds = 0;
	void *ret = NULL;
	jf_pfn_t *cont = NULL;

	CHECK_EQ(jf_pfn_pause(), -EPERM); /* not inside one */
	st = jf_pfn_launch(pauser, &n, JF_PFN_UNLIMITED, &ret, &cont);
	while (st == JF_PFN_PAUSED) {
		rounds++;
		CHECK_EQ(n, rounds);
		st = jf_pfn_resume(cont, JF_PFN_UNLIMITED, &ret);
	}
	CHECK_EQ(st, JF_PFN_DONE);
	CHECK_EQ(rounds, 5);
	CHECK_EQ((uintptr_t)ret, 77u);
	jft_ok("pause");
}

/* --- nesting -------------------------------------------------------------------------------- */

struct nest {
	int inner_status;
	uint64_t inner_result;
	int inner_timeouts;
};

static void *nest_inner(void *arg)
{
	(void)arg;
	return (void *)(uintptr_t)compute(JFT_SCALE(2000000, 200000), 0);
}

static void *nest_outer(void *arg)
{
	struct nest *ns = arg;
	jf_pfn_t *c = NULL;
	void *r = NULL;
	/* an inner budget far beyond the outer's: the outer's bounds it */
	int st = jf_pfn_launch(nest_inner, NULL, 60ull * 1000 * 1000 * 1000, &r, &c);
	while (st == JF_PFN_TIMEOUT) {
		ns->inner_timeouts++;
		st = jf_pfn_resume(c, 60ull * 1000 * 1000 * 1000, &r);
	}
	ns->inner_status = st;
	ns->inner_result = (uint64_t)(uintptr_t)r;
	return NULL;
}

static void test_nesting(void)
{
	struct nest ns = {-1, 0, 0};
	void *ret = NULL;
	unsigned stops = 0;
	jf_pfn_t *cont = NULL;
	int st = jf_pfn_launch(nest_outer, &ns, 200000, &ret, &cont);

	while (st == JF_PFN_TIMEOUT) {
		stops++;
		CHECK(jf_pfn_current() == NULL);
		st = jf_pfn_resume(cont, 200000, &ret);
	}
	CHECK_EQ(st, JF_PFN_DONE);
	CHECK_EQ(ns.inner_status, JF_PFN_DONE);
	CHECK_EQ(ns.inner_result, (uint64_t)compute(JFT_SCALE(2000000, 200000), 0));
	/* the outer stopped with the inner inside it; the inner never timed out on its own */
	CHECK(stops > 0);
	CHECK_EQ(ns.inner_timeouts, 0);
	printf("  outer stopped %u times with the inner inside, inner exact\n", stops);
	jft_ok("nesting");
}

/* --- cancel: cleanup handlers, arena ---------------------------------------------------------- */

static int order[8];
static atomic_int norder; /* two cancelled uthreads may note at once */

static void note(void *arg)
{
	order[atomic_fetch_add(&norder, 1)] = (int)(intptr_t)arg;
}

static void *cancel_inner(void *arg)
{
	struct jf_cleanup c3, c4;
	(void)arg;
	CHECK(jf_pfn_alloc(1000) != NULL);
	jf_cleanup_push(&c3, note, (void *)3);
	jf_cleanup_push(&c4, note, (void *)4);
	jf_pfn_pause();
	CHECK(0); /* cancelled: never resumed */
	return NULL;
}

static void *cancel_outer(void *arg)
{
	struct jf_cleanup c1, c2;
	jf_pfn_t *c = NULL;
	char *buf = jf_pfn_alloc(4096);
	(void)arg;
	CHECK(buf != NULL);
	CHECK_EQ((uintptr_t)buf % 16, 0u);
	memset(buf, 1, 4096);
	jf_cleanup_push(&c1, note, (void *)1);
	jf_cleanup_push(&c2, note, (void *)2);
	/* the inner pauses back here */
	CHECK_EQ(jf_pfn_launch(cancel_inner, NULL, JF_PFN_UNLIMITED, NULL, &c), JF_PFN_PAUSED);
	CHECK_EQ(jf_pfn_cancel(c), 0); /* from inside a function: the inner's handlers, 4 then 3 */
	jf_cleanup_push(&(struct jf_cleanup){0}, note, (void *)5);
	jf_pfn_pause(); /* main cancels it here */
	CHECK(0);
	return NULL;
}

static void *pop_checks(void *arg)
{
	struct jf_cleanup a, b;
	(void)arg;
	CHECK_EQ(jf_cleanup_push(&a, note, (void *)10), 0);
	CHECK_EQ(jf_cleanup_push(&b, note, (void *)11), 0);
	CHECK_EQ(jf_cleanup_pop(&a, 1), -EINVAL); /* not the last pushed */
	CHECK_EQ(jf_cleanup_pop(&b, 1), 0);
	CHECK_EQ(jf_cleanup_pop(&a, 0), 0);
	CHECK_EQ(jf_cleanup_push(NULL, note, NULL), -EINVAL);
	CHECK_EQ(jf_cleanup_push(&a, NULL, NULL), -EINVAL);
	jf_cleanup_push(&a, note, (void *)12); /* dropped when it returns */
	return NULL;
}

static void test_cancel(void)
{
	jf_pfn_t *cont = NULL;

	norder = 0;
	CHECK_EQ(jf_pfn_launch(cancel_outer, NULL, JF_PFN_UNLIMITED, NULL, &cont), JF_PFN_PAUSED);
	CHECK_EQ(norder, 2); /* the outer cancelled the paused inner itself */
	CHECK_EQ(jf_pfn_cancel(cont), 0);
	/* then the outer's handlers, last pushed first */
	CHECK_EQ(norder, 5);
	CHECK_EQ(order[0], 4);
	CHECK_EQ(order[1], 3);
	CHECK_EQ(order[2], 5);
	CHECK_EQ(order[3], 2);
	CHECK_EQ(order[4], 1);

	norder = 0;
	CHECK_EQ(jf_pfn_launch(pop_checks, NULL, JF_PFN_UNLIMITED, NULL, &cont), JF_PFN_DONE);
	CHECK_EQ(norder, 1);
	CHECK_EQ(order[0], 11);
	jft_ok("cancel: handlers LIFO, arena and stacks freed");
}

/* A continuation with an inner function inside: cancelling runs the inner's handlers first. */
static void *chain_inner(void *arg)
{
	struct jf_cleanup c;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)2);
	jf_pfn_alloc(100);
	for (;;)
		compute(1000, 0);
	return NULL;
}

static void *chain_outer(void *arg)
{
	struct jf_cleanup c;
	jf_pfn_t *k = NULL;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)1);
	jf_pfn_launch(chain_inner, NULL, JF_PFN_UNLIMITED, NULL, &k);
	CHECK(0); /* the inner never returns, and the outer's budget stops both */
	return NULL;
}

static void test_cancel_chain(void)
{
	jf_pfn_t *cont = NULL;

	norder = 0;
	CHECK_EQ(jf_pfn_launch(chain_outer, NULL, 1000000, NULL, &cont), JF_PFN_TIMEOUT);
	CHECK_EQ(jf_pfn_resume(cont, 500000, NULL), JF_PFN_TIMEOUT);
	CHECK_EQ(jf_pfn_cancel(cont), 0);
	CHECK_EQ(norder, 2);
	CHECK_EQ(order[0], 2);
	CHECK_EQ(order[1], 1);
	jft_ok("cancel of a continuation with a function inside: innermost first");
}

/* --- malloc and stdio, cancelled at random points ---------------------------------------------- */

static void free_ptr(void *arg)
{
	void **p = arg;
	free(*p);
	*p = NULL;
}

static void *hammer(void *arg)
{
	FILE *null = arg;
	void *slot = NULL;
	struct jf_cleanup c;
	char line[256];
	jf_cleanup_push(&c, free_ptr, &slot);
	for (uint64_t i = 0;; i++) {
		/* A block is owned by the slot (freed by the handler) from the moment it exists: a
		 * stop between malloc() returning and the store would leak it (docs/pfn.md). */
		jf_preempt_disable();
		void *p = malloc(64 + (i % 4096));
		free(slot);
		slot = p;
		jf_preempt_enable();
		memset(p, (int)i, 64);
		snprintf(line, sizeof(line), "%llu %p %f\n", (unsigned long long)i, p, (double)i / 7);
		fputs(line, null);
		if ((i & 63) == 0)
			fflush(null);
		char *q = jf_pfn_alloc(32); /* the arena: freed with the launch */
		CHECK(q != NULL);
		if (TSAN)
			jf_safepoint(); /* no budget signal under TSan (src/runtime/pfn.c) */
	}
	return NULL;
}

static void test_hammer(void)
{
	FILE *null = fopen("/dev/null", "w");
	uint64_t rng = 42;
	int rounds = JFT_SCALE(200, 40), cancelled = 0;

	CHECK(null != NULL);
	for (int r = 0; r < rounds; r++) {
		jf_pfn_t *cont = NULL;
		uint64_t budget = 20000 + jft_splitmix64(&rng) % 200000;
		int st = jf_pfn_launch(hammer, null, budget, NULL, &cont);
		int resumes = (int)(jft_splitmix64(&rng) % 4);
		while (st == JF_PFN_TIMEOUT && resumes-- > 0)
			st = jf_pfn_resume(cont, budget, NULL);
		CHECK_EQ(st, JF_PFN_TIMEOUT);
		CHECK_EQ(jf_pfn_cancel(cont), 0);
		cancelled++;
		/* stdio and malloc still work here: no lock was left held */
		fputs("x\n", null);
		free(malloc(100));
	}
	fclose(null);
	printf("  %d launches hammering malloc/stdio cancelled at random points\n", cancelled);
	jft_ok("malloc and stdio cancelled at random points");
}

/* --- misuse ------------------------------------------------------------------------------------ */

static void *self_resume(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_pfn_resume(jf_pfn_current(), 1000, NULL), -EBUSY);
	CHECK_EQ(jf_pfn_cancel(jf_pfn_current()), -EBUSY);
	CHECK(jf_pfn_remaining_ns() > 0);
	return NULL;
}

static void test_misuse(void)
{
	jf_pfn_t *cont = NULL;

	CHECK_EQ(jf_pfn_launch(NULL, NULL, 1000, NULL, &cont), -EINVAL);
	CHECK_EQ(jf_pfn_launch(work_fn, NULL, 0, NULL, &cont), -EINVAL);
	CHECK_EQ(jf_pfn_launch(work_fn, NULL, 1000, NULL, NULL), -EINVAL);
	CHECK_EQ(jf_pfn_resume(NULL, 1000, NULL), -EINVAL);
	CHECK_EQ(jf_pfn_cancel(NULL), -EINVAL);
	CHECK_EQ(jf_pfn_launch(self_resume, NULL, 1000000000, NULL, &cont), JF_PFN_DONE);
	CHECK(jf_pfn_current() == NULL);
	CHECK_EQ(jf_pfn_remaining_ns(), UINT64_MAX);
	errno = 0;
	CHECK(jf_pfn_alloc(10) == NULL);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(jf_setcancel(7, NULL), -EINVAL);
	CHECK_EQ(jf_cancel(NULL), -EINVAL);
	jft_ok("misuse gets error codes");
}

/* --- jf_exit() inside functions ------------------------------------------------------------- */

static void *exit_inner(void *arg)
{
	struct jf_cleanup c;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)2);
	jf_exit((void *)(uintptr_t)99);
}

static void *exit_outer(void *arg)
{
	struct jf_cleanup c;
	jf_pfn_t *k = NULL;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)1);
	jf_pfn_launch(exit_inner, NULL, JF_PFN_UNLIMITED, NULL, &k);
	CHECK(0);
	return NULL;
}

static void *exit_thread(void *arg)
{
	struct jf_cleanup c;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)0);
	jf_pfn_launch(exit_outer, NULL, JF_PFN_UNLIMITED, NULL, &(jf_pfn_t *){0});
	CHECK(0);
	return NULL;
}

static void test_exit_inside(void)
{
	norder = 0;
	void *r = jft_join(jft_spawn(NULL, exit_thread, NULL));
	CHECK_EQ((uintptr_t)r, 99u);
	CHECK_EQ(norder, 3);
	CHECK_EQ(order[0], 2);
	CHECK_EQ(order[1], 1);
	CHECK_EQ(order[2], 0);
	jft_ok("jf_exit() inside nested functions: handlers innermost first, then the uthread's");
}

/* --- uthread cancellation ------------------------------------------------------------------- */

static jf_mutex_t mu;
static jf_cond_t cv;
static jf_waitgroup_t wg;
static atomic_int started;

static void *block_sleep(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	int r = jf_sleep_ns(60ull * 1000 * 1000 * 1000);
	CHECK_EQ(jf_sleep_ns(1000), -ECANCELED); /* sticky */
	return (void *)(intptr_t)r;
}

static void *block_cond(void *arg)
{
	(void)arg;
	jf_mutex_lock(&mu);
	atomic_fetch_add(&started, 1);
	int r = jf_cond_wait(&cv, &mu);
	jf_mutex_unlock(&mu); /* held again */
	return (void *)(intptr_t)r;
}

static void *block_wg(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	return (void *)(intptr_t)jf_waitgroup_wait(&wg);
}

static void *forever(void *arg)
{
	(void)arg;
	jf_sleep_ns(60ull * 1000 * 1000 * 1000);
	return NULL;
}

static void *block_join(void *arg)
{
	atomic_fetch_add(&started, 1);
	return (void *)(intptr_t)jf_join((jf_thread_t *)arg, NULL);
}

static void *block_fd(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char c;
	atomic_fetch_add(&started, 1);
	ssize_t n = jf_read(fd, &c, 1, -1);
	return (void *)(intptr_t)(n < 0 ? -errno : n); /* POSIX convention: -1 and errno */
}

static void *async_victim(void *arg)
{
	struct jf_cleanup c;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)7);
	CHECK_EQ(jf_setcancel(JF_CANCEL_ASYNC, NULL), 0);
	atomic_fetch_add(&started, 1);
	for (;;) {
		compute(1000, 0); /* no safepoint: jf_cancel()'s signal ends it */
		if (coop)
			jf_yield(); /* so that main runs at all on two workers */
	}
	return NULL;
}

static void *async_in_pfn_body(void *arg)
{
	struct jf_cleanup c;
	(void)arg;
	jf_cleanup_push(&c, note, (void *)8);
	atomic_fetch_add(&started, 1);
	for (;;) {
		compute(1000, 0);
		if (coop)
			jf_yield();
	}
	return NULL;
}

static void *async_in_pfn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_setcancel(JF_CANCEL_ASYNC, NULL), 0);
	jf_pfn_launch(async_in_pfn_body, NULL, JF_PFN_UNLIMITED, NULL, &(jf_pfn_t *){0});
	CHECK(0);
	return NULL;
}

static void *disabled(void *arg)
{
	int old = -1;
	(void)arg;
	CHECK_EQ(jf_setcancel(JF_CANCEL_DISABLE, &old), 0);
	CHECK_EQ(old, JF_CANCEL_DEFERRED);
	atomic_fetch_add(&started, 1);
	while (!jf_cancel_pending())
		jf_sleep_ns(1000 * 1000);
	CHECK_EQ(jf_sleep_ns(1000), 0); /* disabled: blocking calls work */
	CHECK_EQ(jf_setcancel(JF_CANCEL_DEFERRED, NULL), 0);
	CHECK_EQ(jf_sleep_ns(1000), -ECANCELED);
	jf_testcancel();
	CHECK(0);
	return NULL;
}

static void wait_started(int n)
{
	while (atomic_load(&started) < n)
		jf_sleep_ns(100 * 1000);
	jf_sleep_ns(2 * 1000 * 1000); /* let them block */
}

static void test_thread_cancel(void)
{
	jf_thread_t *t[6], *target;
	int sv[2];

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	atomic_store(&started, 0);
	jf_waitgroup_add(&wg, 1);
	target = jft_spawn(NULL, forever, NULL);
	t[0] = jft_spawn(NULL, block_sleep, NULL);
	t[1] = jft_spawn(NULL, block_cond, NULL);
	t[2] = jft_spawn(NULL, block_wg, NULL);
	t[3] = jft_spawn(NULL, block_join, target);
	t[4] = jft_spawn(NULL, block_fd, (void *)(intptr_t)sv[0]);
	wait_started(5);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(jf_cancel(t[i]), 0);
	for (int i = 0; i < 5; i++)
		CHECK_EQ((intptr_t)jft_join(t[i]), -ECANCELED);
	/* the join target is still joinable: the cancelled joiner let go of it */
	CHECK_EQ(jf_join_timeout(target, NULL, 1000 * 1000), -ETIMEDOUT);
	CHECK_EQ(jf_cancel(target), 0);
	CHECK_EQ(jf_join_timeout(target, NULL, 60ull * 1000 * 1000 * 1000), 0);
	jf_waitgroup_done(&wg);
	close(sv[0]);
	close(sv[1]);
	jft_ok("cancel wakes sleep, cond, waitgroup, join and a descriptor wait with -ECANCELED");

	/* asynchronous: a busy loop is ended, its handler runs, the joiner sees JF_CANCELED */
	norder = 0;
	atomic_store(&started, 0);
	t[0] = jft_spawn(NULL, async_victim, NULL);
	t[1] = jft_spawn(NULL, async_in_pfn, NULL);
	wait_started(2);
	CHECK_EQ(jf_cancel(t[0]), 0);
	CHECK_EQ(jf_cancel(t[1]), 0);
	CHECK(jft_join(t[0]) == JF_CANCELED);
	CHECK(jft_join(t[1]) == JF_CANCELED);
	CHECK_EQ(norder, 2);
	CHECK((order[0] == 7 && order[1] == 8) || (order[0] == 8 && order[1] == 7));
	jft_ok("JF_CANCEL_ASYNC ends a busy loop, inside a preemptible function too");

	atomic_store(&started, 0);
	t[0] = jft_spawn(NULL, disabled, NULL);
	wait_started(1);
	CHECK_EQ(jf_cancel(t[0]), 0);
	CHECK(jft_join(t[0]) == JF_CANCELED);
	jft_ok("JF_CANCEL_DISABLE, then jf_testcancel");
}

static void *main_fn(void *arg)
{
	(void)arg;
	test_misuse();
	test_complete_and_stops();
	test_pause();
	test_nesting();
	test_cancel();
	test_cancel_chain();
	test_hammer();
	test_exit_inside();
	test_thread_cancel();
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	jf_pfn_t *cont = NULL;

	/* outside the runtime */
	CHECK_EQ(jf_pfn_launch(work_fn, NULL, 1000, NULL, &cont), -EPERM);
	CHECK_EQ(jf_cancel(NULL), -EPERM);
	jft_config(&cfg, 2);
	cfg.workers = 2;
	mech = cfg.preempt;
	/* ("hybrid" only raises the safepoint flag for a busy worker's overdue timers, never a
	 * signal: main's sleep would not end behind two loops without safepoints either) */
	coop = !strcmp(mech, "none") || !strcmp(mech, "safepoint") || !strcmp(mech, "deadline") ||
	       !strcmp(mech, "hybrid");
	printf("test_pfn: mechanism %s\n", mech);
	jft_run(&cfg, main_fn, NULL);
	printf("test_pfn: OK\n");
	return 0;
}
