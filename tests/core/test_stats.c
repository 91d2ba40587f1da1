/*
 * core/test_stats.c - proves the per-worker counters count what they say: after spawning N
 * uthreads that each yield Y times, the totals grew by at least N spawns, N*Y yields and N
 * finished tasks, switches grew, a sleep counted as a block; the total is the sum of the workers
 * (for counters that are quiet at that moment); bad worker indices give -EINVAL and calls without
 * a runtime give -ESRCH; jf_stats_print() and JIFFY_STATS-style printing at exit work.
 */
#include "jf_test.h"

#define N 1000
#define Y 10

static void *yielder(void *arg)
{
	int i;

	for (i = 0; i < Y; i++)
		jf_yield();
	return arg;
}

static void sum_workers(struct jf_worker_stats *sum)
{
	int w;

	memset(sum, 0, sizeof(*sum));
	for (w = 0; w < jf_nworkers(); w++) {
		struct jf_worker_stats s;

		CHECK_EQ(jf_stats_worker(w, &s), 0);
		sum->spawns += s.spawns;
		sum->yields += s.yields;
	}
}

static void *main_fn(void *arg)
{
	static jf_thread_t *t[N];
	struct jf_worker_stats before, after, sum, w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int i;

	(void)arg;
	CHECK_EQ(jf_stats_total(&before), 0);
	for (i = 0; i < N; i++)
		t[i] = jft_spawn(NULL, yielder, (void *)(intptr_t)i);
	for (i = 0; i < N; i++)
		CHECK_EQ((intptr_t)jft_join(t[i]), i);
	for (i = 0; i < N; i++)
		jf_yield();
	CHECK_EQ(jf_sleep_ns(1000000), 0);
	CHECK_EQ(jf_stats_total(&after), 0);

	printf("spawns %llu, yields %llu, switches %llu, tasks_done %llu, blocks %llu\n",
	       (unsigned long long)(after.spawns - before.spawns),
	       (unsigned long long)(after.yields - before.yields),
	       (unsigned long long)(after.switches - before.switches),
	       (unsigned long long)(after.tasks_done - before.tasks_done),
	       (unsigned long long)(after.blocks - before.blocks));
	CHECK_GE(after.spawns - before.spawns, N);
	CHECK_GE(after.yields - before.yields, (uint64_t)N * Y + N);
	CHECK_GE(after.switches - before.switches, N);
	/* All N finished before their joins returned; the counter may trail by the last few. */
	CHECK_GE(after.tasks_done - before.tasks_done + 2, N);
	CHECK_GE(after.blocks - before.blocks, 1);
	/* Counters only grow. */
	CHECK_GE(after.switches, before.switches);
	CHECK_GE(after.idle_ns, before.idle_ns);
	CHECK_GE(after.parks, before.parks);

	/* Nothing else spawns or yields now: the sum of the workers is the total. */
	sum_workers(&sum);
	CHECK_EQ(jf_stats_total(&after), 0);
	CHECK_EQ(sum.spawns, after.spawns);
	CHECK_EQ(sum.yields, after.yields);

	CHECK_EQ(jf_stats_worker(-1, &w), -EINVAL);
	CHECK_EQ(jf_stats_worker(jf_nworkers(), &w), -EINVAL);
	CHECK_EQ(jf_stats_worker(1000, &w), -EINVAL);

	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	jf_stats_print(f);
	CHECK_EQ(fclose(f), 0);
	CHECK(buf != NULL && len > 0);
	CHECK_STR_CONTAINS(buf, "switches");
	free(buf);
	return NULL;
}

static void *trivial(void *arg)
{
	jf_yield();
	return arg;
}

int main(void)
{
	struct jf_config cfg;
	struct jf_worker_stats s;

	CHECK_EQ(jf_stats_total(&s), -ESRCH);
	CHECK_EQ(jf_stats_worker(0, &s), -ESRCH);

	jft_config(&cfg, 2);
	cfg.workers = 2;
	jft_run(&cfg, main_fn, NULL);

	CHECK_EQ(jf_stats_total(&s), -ESRCH);
	CHECK_EQ(jf_stats_worker(0, &s), -ESRCH);

	/* Printing at exit (JIFFY_STATS=1) must not disturb anything. */
	cfg.stats = true;
	CHECK((intptr_t)jft_run(&cfg, trivial, (void *)7) == 7);
	jft_ok("core.stats");
	return 0;
}
