/*
 * sync/test_waitgroup.c - proves jf_waitgroup_t: with many uthreads on 2 workers calling done,
 * every waiter (main and several uthreads) returns only after the counter reached zero, i.e.
 * after every worker finished; a wait group can be reused; an add that would make the counter
 * negative (including done on zero) fails with -EINVAL and leaves it unchanged; waiting on a
 * zero counter (zero-initialised, or back at zero) returns at once.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define NWAITERS 5

static long ntasks;
static jf_waitgroup_t wg = JF_WAITGROUP_INITIALIZER;
static atomic_long finished;
static atomic_int released;

static void *task(void *arg)
{
	int i, n = (int)((intptr_t)arg % 7);

	for (i = 0; i < n; i++)
		jf_yield();
	if ((intptr_t)arg % 5 == 0)
		CHECK_EQ(jf_sleep_ns(1000 + (uint64_t)((intptr_t)arg % 13) * 1000), 0);
	atomic_fetch_add(&finished, 1);
	CHECK_EQ(jf_waitgroup_done(&wg), 0);
	return NULL;
}

static void *waiter(void *arg)
{
	long expect = (long)(intptr_t)arg;

	jf_waitgroup_wait(&wg);
	CHECK_EQ(atomic_load(&finished), expect);
	atomic_fetch_add(&released, 1);
	return NULL;
}

static void run_round(long n)
{
	struct jf_attr attr;
	jf_thread_t *w[NWAITERS];
	long i;
	int k;

	atomic_store(&finished, 0);
	atomic_store(&released, 0);
	CHECK_EQ(jf_waitgroup_add(&wg, n), 0);
	for (k = 0; k < NWAITERS; k++)
		w[k] = jft_spawn_on(k % 2, waiter, (void *)(intptr_t)n);

	jf_attr_init(&attr);
	attr.detached = 1;
	for (i = 0; i < n; i++) {
		attr.sched.worker = (int)(i % 3) - 1;
		CHECK_EQ(jf_spawn(NULL, &attr, task, (void *)(intptr_t)i), 0);
	}
	jf_waitgroup_wait(&wg);
	CHECK_EQ(atomic_load(&finished), n);
	for (k = 0; k < NWAITERS; k++)
		jft_join(w[k]);
	CHECK_EQ(atomic_load(&released), NWAITERS);
}

static void check_counter_rules(void)
{
	jf_waitgroup_t g;

	jf_waitgroup_init(&g);
	jf_waitgroup_wait(&g); /* zero: returns at once */
	CHECK_EQ(jf_waitgroup_add(&g, -1), -EINVAL);
	CHECK_EQ(jf_waitgroup_done(&g), -EINVAL);
	jf_waitgroup_wait(&g); /* still zero, not -1 */

	CHECK_EQ(jf_waitgroup_add(&g, 3), 0);
	CHECK_EQ(jf_waitgroup_add(&g, -4), -EINVAL); /* left at 3 */
	CHECK_EQ(jf_waitgroup_add(&g, 0), 0);
	CHECK_EQ(jf_waitgroup_done(&g), 0);
	CHECK_EQ(jf_waitgroup_add(&g, -2), 0); /* exactly to zero */
	jf_waitgroup_wait(&g);
	CHECK_EQ(jf_waitgroup_done(&g), -EINVAL);

	/* A zero-filled one is ready. */
	memset(&g, 0, sizeof(g));
	jf_waitgroup_wait(&g);
	CHECK_EQ(jf_waitgroup_add(&g, 1), 0);
	CHECK_EQ(jf_waitgroup_done(&g), 0);
	jf_waitgroup_wait(&g);
}

static void *main_fn(void *arg)
{
	int round;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 2);
	check_counter_rules();
	/* The same wait group, several times (reuse after reaching zero). */
	for (round = 0; round < 5; round++)
		run_round(ntasks + round);
	jf_waitgroup_wait(&wg);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	ntasks = JFT_SCALE(2000L, 500L);
	jft_config(&cfg, 2);
	cfg.workers = 2;
	jft_run(&cfg, main_fn, NULL);
	jft_ok("sync.waitgroup");
	return 0;
}
