/*
 * core/test_stats.c - proves the per-worker counters count what they say, with exact figures
 * wherever the test controls the work: after main spawns N uthreads that each yield Y times,
 * joins them, yields N times and sleeps once, the totals grew by exactly N spawns, N*Y + N
 * yields and N finished tasks; blocks by 1..N+1 (the sleep, and the joins that waited);
 * switches by at least N (every new uthread's first run) and at most spawns + yields + blocks
 * + preempts (a uthread is switched into only after it was spawned, yielded, blocked or was
 * preempted); timers and idle time grew (the sleep's timer fired while both workers had nothing
 * to run). The total is the sum of the workers (for counters that are quiet at that moment);
 * bad worker indices give -EINVAL and calls without a runtime give -ESRCH; jf_stats_print()
 * and JIFFY_STATS-style printing at exit work.
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
		sum->tasks_done += s.tasks_done;
		sum->blocks += s.blocks;
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

#define D(f) (after.f - before.f)
	printf("spawns %llu, yields %llu, switches %llu, tasks_done %llu, blocks %llu, preempts "
	       "%llu, timers %llu, idle %llu ns\n",
	       (unsigned long long)D(spawns), (unsigned long long)D(yields),
	       (unsigned long long)D(switches), (unsigned long long)D(tasks_done),
	       (unsigned long long)D(blocks), (unsigned long long)D(preempts),
	       (unsigned long long)D(timers), (unsigned long long)D(idle_ns));
	/* What the test did, exactly: nothing else spawns, yields or exits meanwhile. */
	CHECK_EQ(D(spawns), N);
	CHECK_EQ(D(yields), (uint64_t)N * Y + N);
	/* Each exit is counted before its joiner can see it exited: all N, none trailing. */
	CHECK_EQ(D(tasks_done), N);
	/* Only main blocks: in the sleep, and in the joins that found their uthread running. */
	CHECK_GE(D(blocks), 1);
	CHECK_GE(N + 1, D(blocks));
	/* Every new uthread's first run is a switch; a switch needs a spawn, yield, block or
	 * preemption before it (a yield or wakeup that keeps the same uthread is no switch). */
	CHECK_GE(D(switches), N);
	CHECK_GE(D(spawns) + D(yields) + D(blocks) + D(preempts), D(switches));
	/* The sleep's timer fired, and the workers were idle while main slept. */
	CHECK_GE(D(timers), 1);
	CHECK(D(idle_ns) > 0);
#undef D

	/* Nothing else spawns or yields now: the sum of the workers is the total. */
	sum_workers(&sum);
	CHECK_EQ(jf_stats_total(&after), 0);
	CHECK_EQ(sum.spawns, after.spawns);
	CHECK_EQ(sum.yields, after.yields);
	CHECK_EQ(sum.tasks_done, after.tasks_done);
	CHECK_EQ(sum.blocks, after.blocks);

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
