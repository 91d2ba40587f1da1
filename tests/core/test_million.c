/*
 * core/test_million.c - proves that uthreads are cheap and never lost or duplicated at volume:
 * 1,000,000 sequential spawn+join pairs from main each return their own value, then 1,000,000
 * detached uthreads on 2 workers each run exactly once (a per-task byte, an atomic counter and a
 * wait group all agree), and stacks and handles are recycled (the process does not run out of
 * memory or mappings). Under ASan the counts are scaled down; the plain build does the full
 * million.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define NWORKERS 2
/* Detached uthreads spawned but not yet finished, at most: keeps memory use bounded. */
#define MAX_IN_FLIGHT 4096

static long n_tasks;
static unsigned char *ran;
static atomic_long ran_count;
static atomic_long done_count;
static jf_waitgroup_t wg;

static void *plus_one(void *arg)
{
	return (void *)((intptr_t)arg + 1);
}

static void *detached_fn(void *arg)
{
	long i = (long)(intptr_t)arg;

	/* Each task owns its byte: a task run twice shows up as 2. */
	ran[i]++;
	atomic_fetch_add_explicit(&ran_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_count, 1, memory_order_release);
	CHECK_EQ(jf_waitgroup_done(&wg), 0);
	return NULL;
}

static void *main_fn(void *arg)
{
	struct jf_attr attr;
	long i;
	uint64_t t0, t1, t2;

	(void)arg;
	CHECK_EQ(jf_nworkers(), NWORKERS);

	/* 1. Sequential spawn+join. */
	t0 = jf_now_ns();
	for (i = 0; i < n_tasks; i++) {
		jf_thread_t *t = NULL;
		void *ret = NULL;
		int rc = jf_spawn(&t, NULL, plus_one, (void *)(intptr_t)i);

		if (rc != 0) {
			fprintf(stderr, "spawn #%ld failed: %d\n", i, rc);
			CHECK_EQ(rc, 0);
		}
		rc = jf_join(t, &ret);
		if (rc != 0 || (intptr_t)ret != i + 1) {
			fprintf(stderr, "join #%ld: rc %d ret %ld\n", i, rc, (long)(intptr_t)ret);
			CHECK(0);
		}
	}
	t1 = jf_now_ns();

	/* 2. Detached uthreads, counted. */
	jf_attr_init(&attr);
	attr.detached = 1;
	CHECK_EQ(jf_waitgroup_add(&wg, n_tasks), 0);
	for (i = 0; i < n_tasks; i++) {
		int rc;

		while (i - atomic_load_explicit(&done_count, memory_order_acquire) >= MAX_IN_FLIGHT)
			jf_yield();
		rc = jf_spawn(NULL, &attr, detached_fn, (void *)(intptr_t)i);
		if (rc != 0) {
			fprintf(stderr, "detached spawn #%ld failed: %d\n", i, rc);
			CHECK_EQ(rc, 0);
		}
	}
	jf_waitgroup_wait(&wg);
	t2 = jf_now_ns();

	CHECK_EQ(atomic_load(&ran_count), n_tasks);
	for (i = 0; i < n_tasks; i++) {
		if (ran[i] != 1) {
			fprintf(stderr, "detached task %ld ran %d times\n", i, ran[i]);
			CHECK_EQ(ran[i], 1);
		}
	}
	printf("%ld spawn+join: %.0f ns each; %ld detached: %.0f ns each\n", n_tasks,
	       (double)(t1 - t0) / (double)n_tasks, n_tasks, (double)(t2 - t1) / (double)n_tasks);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	n_tasks = JFT_SCALE(1000000L, 100000L);
	ran = calloc((size_t)n_tasks, 1);
	CHECK(ran != NULL);
	jft_config(&cfg, NWORKERS);
	cfg.workers = NWORKERS;
	printf("policy %s, %u workers, %ld tasks\n", cfg.policy, cfg.workers, n_tasks);
	jft_run(&cfg, main_fn, NULL);
	free(ran);
	jft_ok("core.million");
	return 0;
}
