/*
 * tests/sched/test_policy_ops.c - the policy conformance suite, at the level of the policy ops.
 *
 * Owns: the properties every policy must have and the per-policy ones, checked by driving the
 * policy's own code in virtual time through policy_harness.h (the same way the simulator runs
 * it), so they are deterministic and independent of the machine's load:
 *   - no lost or duplicated task under random spawn / yield / block / wakeup / preempt / exit
 *     sequences on 4 workers (every pick is checked against the model; at the end every task
 *     must have run to its end);
 *   - bounded idleness: an idle worker finds work within 2 looks while any task is queued
 *     (every policy but fifo, which by design never moves work: d-FCFS);
 *   - pinning: the same random sequences with a quarter of the tasks pinned to a worker at spawn
 *     and running tasks pinning and unpinning themselves: a pinned task is only ever picked by
 *     its worker (never stolen, never taken from a shared queue elsewhere), none is lost, and
 *     an idle worker still finds the work it may run; and tasks pinned to one worker, spawned
 *     and woken from the others, all run there while the others look for work;
 *   - no starvation: 3 always-runnable tasks on one worker all get CPU under ticks;
 *   - rr: equal shares; cfs and eevdf: shares proportional to weight (1:2:4), and a task that
 *     wakes after sleeping runs within the scheduling latency (schbench's property);
 *   - twoq: new work runs before preempted work, and preempts a task taken from the
 *     preempted queue at once; a new task that keeps yielding is demoted after demote_yields;
 *   - central: SQ serves in arrival order; MQ serves the head with the largest wait / SLO;
 *     preempted tasks go to the head or the tail as configured;
 *   - lcbe: best-effort work runs while no latency-critical work exists, and latency-critical
 *     work arriving while best-effort work runs everywhere runs at once.
 * Usage: test_sched_policy_ops <policy> [seeds]
 */
#include "../jf_test.h"
#include "broken_policies.h"
#include "policy_harness.h"

static const char *policy;

#define CHECK_SIM(s)                                                                          \
	do {                                                                                  \
		if ((s)->why) {                                                               \
			fprintf(stderr, "%s:%d: policy %s: %s (virtual time %" PRIu64 " ns)\n",  \
				__FILE__, __LINE__, policy, (s)->why, (s)->now);              \
			jft_fail();                                                           \
		}                                                                             \
	} while (0)

static void sim_init(struct ph_sim *s, int nworkers, int ntasks,
		     const struct jf_policy_params *tun, uint64_t seed)
{
	CHECK_EQ(ph_init(s, policy, nworkers, ntasks, tun, seed), 0);
}

/* The policy's defaults with its parameter @name set to @value (as JIFFY_<POLICY>_<NAME>). */
static void params_with(struct jf_policy_params *pp, const char *name, const char *value)
{
	const struct jf_policy_ops *ops = jf_policy_find(policy);
	char err[256] = "";

	jf_policy_params_default(ops, pp);
	if (jf_policy_param_set(ops, pp, name, value, err, sizeof(err)))
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(jf_policy_param_set(ops, pp, name, value, NULL, 0), 0);
}

/* --- no lost or duplicated task; bounded idleness ---------------------------------------------- */

static void random_attrs(struct ph_sim *s, int i)
{
	struct jf_sched_attr *a = &s->tasks[i].t.attr;
	static const uint32_t weights[] = {0, 512, 1024, 2048, 4096};

	a->worker = ph_rand(s) % 4 == 0 ? (int32_t)(ph_rand(s) % (uint64_t)s->nworkers) : -1;
	a->klass = (int32_t)(ph_rand(s) % 2);
	a->type = (int32_t)(ph_rand(s) % 4);
	a->weight = weights[ph_rand(s) % 5];
	a->slo_ns = ph_rand(s) % 3 == 0 ? 0 : 10000 * (1 + ph_rand(s) % 100);
}

static void check_idleness(struct ph_sim *s, bool conserving, bool pins)
{
	for (int w = 0; w < s->nworkers; w++) {
		if (s->cur[w] >= 0)
			continue;
		for (int look = 0; look < 2 && s->cur[w] < 0; look++)
			ph_idle_look(s, w);
		/* with pinned tasks, only those this worker may run count */
		if (conserving && s->cur[w] < 0 && s->nqueued > 0 && (!pins || ph_queued_for(s, w)))
			ph_violation(s, "worker %d stays idle while %d tasks are queued", w,
				     pins ? ph_queued_for(s, w) : s->nqueued);
	}
}

/* @pins: a quarter of the tasks start pinned, and running tasks pin and unpin themselves. */
static void random_ops(uint64_t seed, bool pins)
{
	enum { NW = 4, NT = 300, STEPS = 60000 };
	struct ph_sim s;
	bool conserving = strcmp(policy, "fifo") != 0;
	int spawned = 0;

	sim_init(&s, NW, NT, NULL, seed);
	for (int i = 0; i < NT; i++) {
		random_attrs(&s, i);
		if (pins && ph_rand(&s) % 4 == 0) {
			s.tasks[i].t.pinned = 1;
			s.tasks[i].t.pin_worker = (int32_t)(ph_rand(&s) % NW);
		}
	}
	for (int step = 0; step < STEPS && !s.why; step++) {
		int w = (int)(ph_rand(&s) % NW), op = (int)(ph_rand(&s) % 100);

		s.now += ph_rand(&s) % 20000;
		if (op < 12 && spawned < NT) {
			ph_spawn(&s, w, spawned++);
		} else if (op < 27) {
			int i = (int)(ph_rand(&s) % NT); /* wake a blocked task, if that one is */
			if (s.tasks[i].state == PH_BLOCKED)
				ph_wake(&s, w, i);
		} else if (s.cur[w] >= 0) {
			if (op < 45)
				ph_requeue(&s, w, JF_ENQ_YIELDED);
			else if (op < 75 && s.now >= s.due[w])
				ph_tick(&s, w);
			else if (op < 90)
				ph_block(&s, w, false);
			else if (op < 93)
				ph_block(&s, w, true);
			/* else: it just keeps running */
		}
		/* a task may change its attributes while queued or running */
		if (op == 99) {
			int i = (int)(ph_rand(&s) % NT);
			random_attrs(&s, i);
		}
		if (pins && op == 98 && s.cur[w] >= 0)
			ph_pin(&s, w, !s.tasks[s.cur[w]].t.pinned);
		check_idleness(&s, conserving, pins);
	}
	CHECK_SIM(&s);
	/* Drain: everything spawns, wakes and finishes; nothing may be left behind. */
	while (spawned < NT)
		ph_spawn(&s, spawned % NW, spawned), spawned++;
	for (int round = 0; round < 100000 && ph_count(&s, PH_DONE) < NT && !s.why; round++) {
		for (int i = 0; i < NT; i++)
			if (s.tasks[i].state == PH_BLOCKED)
				ph_wake(&s, (int)(ph_rand(&s) % NW), i);
		for (int w = 0; w < NW; w++) {
			s.now += 1000;
			if (s.cur[w] >= 0)
				ph_block(&s, w, true);
			else
				ph_idle_look(&s, w);
		}
	}
	CHECK_SIM(&s);
	for (int i = 0; i < NT; i++)
		if (s.tasks[i].state != PH_DONE) {
			fprintf(stderr, "policy %s: task %d lost (state %d) after the drain (seed %" PRIu64
					")\n", policy, i, s.tasks[i].state, seed);
			jft_fail();
		}
	ph_fini(&s);
}

/*
 * Tasks pinned to worker 0 or 1, spawned and woken by the other workers, which keep looking for
 * work: every pinned task runs only where it is pinned (ph_start checks each pick), and all of
 * them run to their end there, beside unpinned tasks that anyone may take.
 */
static void pinned_stay(void)
{
	enum { NW = 4, NT = 24 };
	struct ph_sim s;
	uint64_t picks[NW] = {0};

	sim_init(&s, NW, NT, NULL, 77);
	for (int i = 0; i < NT; i++) {
		if (i % 3 != 2) {
			s.tasks[i].t.pinned = 1;
			s.tasks[i].t.pin_worker = i % 2;
		}
		s.tasks[i].t.attr.klass = i % 4 == 3; /* lcbe: some best-effort ones */
		ph_spawn(&s, 2 + i % 2, i);
	}
	for (int round = 0; round < 4000 && ph_count(&s, PH_DONE) < NT && !s.why; round++) {
		s.now += 5000;
		for (int w = 0; w < NW; w++) {
			if (s.cur[w] < 0) {
				ph_idle_look(&s, w);
				continue;
			}
			picks[w]++;
			int i = s.cur[w];
			if (s.tasks[i].picks > 6)
				ph_block(&s, w, true);
			else if (round % 3 == 0)
				ph_block(&s, w, false); /* woken below, from another worker */
			else if (s.now >= s.due[w])
				ph_tick(&s, w);
			else
				ph_requeue(&s, w, JF_ENQ_YIELDED);
		}
		for (int i = 0; i < NT; i++)
			if (s.tasks[i].state == PH_BLOCKED)
				ph_wake(&s, (int)(2 + ph_rand(&s) % 2), i);
	}
	CHECK_SIM(&s);
	CHECK_EQ(ph_count(&s, PH_DONE), NT);
	CHECK(picks[0] > 0 && picks[1] > 0);
	printf("   %s: tasks pinned to workers 0 and 1, spawned and woken elsewhere, ran only there "
	       "(runs per worker %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")\n",
	       policy, picks[0], picks[1], picks[2], picks[3]);
	ph_fini(&s);
}

/* --- shares and starvation on one worker ----------------------------------------------------- */

/* Worker 0 runs for @dur of virtual time, the mechanism firing at each due time. */
static void run_ticks(struct ph_sim *s, uint64_t dur)
{
	uint64_t end = s->now + dur;
	while (s->now < end && !s->why) {
		CHECK(s->cur[0] >= 0);
		s->now = s->due[0] > s->now ? s->due[0] : s->now + 1000;
		ph_tick(s, 0);
	}
}

/* Run worker 0 until task @i is running (at most @max of virtual time). */
static void run_until(struct ph_sim *s, int i, uint64_t max)
{
	uint64_t end = s->now + max;
	while (s->cur[0] != i && s->now < end && !s->why) {
		if (s->cur[0] < 0) {
			ph_idle_look(s, 0);
			continue;
		}
		s->now = s->due[0] > s->now ? s->due[0] : s->now + 1000;
		ph_tick(s, 0);
	}
}

/* Spawn tasks 0..@n-1 on worker 0 and let them run, always runnable, for @dur of virtual time
 * under ticks at each due time. The last one picked is left running. */
static void run_one_worker(struct ph_sim *s, int n, uint64_t dur)
{
	for (int i = 0; i < n; i++)
		ph_spawn(s, 0, i);
	if (s->cur[0] < 0)
		ph_idle_look(s, 0);
	run_ticks(s, dur);
}

static void shares(void)
{
	static const uint32_t w3[] = {1024, 2048, 4096};
	bool weighted = !strcmp(policy, "cfs") || !strcmp(policy, "eevdf");
	struct ph_sim s;
	uint64_t total = 0;

	sim_init(&s, 1, 3, NULL, 42);
	for (int i = 0; i < 3; i++)
		s.tasks[i].t.attr.weight = w3[i];
	run_one_worker(&s, 3, 200 * 1000 * 1000ull);
	ph_stop(&s, 0); /* count the last run */
	CHECK_SIM(&s);
	for (int i = 0; i < 3; i++)
		total += s.tasks[i].cpu_ns;
	printf("   %s: CPU shares of 3 tasks (weights 1024/2048/4096) on one worker: %.3f %.3f %.3f\n",
	       policy, (double)s.tasks[0].cpu_ns / (double)total,
	       (double)s.tasks[1].cpu_ns / (double)total, (double)s.tasks[2].cpu_ns / (double)total);
	for (int i = 0; i < 3; i++) {
		double share = (double)s.tasks[i].cpu_ns / (double)total;
		/* every policy: nobody starves (at least half of an equal share... or of its weight) */
		CHECK(share > (weighted ? (double)w3[i] / 7168 / 2 : 1.0 / 6));
		if (weighted) /* proportional to weight within 10 % */
			CHECK(share > 0.9 * w3[i] / 7168 && share < 1.1 * w3[i] / 7168);
		else if (!strcmp(policy, "rr")) /* equal within 5 % */
			CHECK(share > 0.95 / 3 && share < 1.05 / 3);
	}
	ph_fini(&s);
}

/* cfs, eevdf: a task that slept runs within the scheduling latency of its wakeup. */
static void wakeup_latency(void)
{
	struct ph_sim s;
	uint64_t worst = 0, lat_bound;
	int latency;

	sim_init(&s, 1, 5, NULL, 7);
	/* cfs: its period; eevdf has none, and is held to cfs's default (Skyloft's 50 us) */
	latency = jf_policy_param_index(s.d.policy.ops, "latency_us");
	lat_bound = latency >= 0 ? s.d.policy.params.value[latency] : 50000;
	run_one_worker(&s, 4, 20 * 1000 * 1000ull); /* 4 CPU hogs with some history */
	ph_spawn(&s, 0, 4);
	for (int r = 0; r < 50 && !s.why; r++) {
		uint64_t t0;
		run_until(&s, 4, 100 * 1000 * 1000ull); /* the sleeper runs, briefly, and sleeps */
		CHECK_SIM(&s);
		CHECK_EQ(s.cur[0], 4);
		s.now += 2000;
		ph_block(&s, 0, false);
		run_ticks(&s, 3 * 1000 * 1000ull); /* the hogs run for 3 ms */
		t0 = s.now;
		ph_wake(&s, 0, 4);
		run_until(&s, 4, 100 * 1000 * 1000ull);
		CHECK_SIM(&s);
		CHECK_EQ(s.cur[0], 4);
		if (s.now - t0 > worst)
			worst = s.now - t0;
	}
	printf("   %s: worst wakeup latency of a sleeper among 4 hogs: %.1f us (bound: "
	       "sched latency %.1f us)\n",
	       policy, (double)worst / 1000, (double)lat_bound / 1000);
	CHECK(worst <= lat_bound);
	ph_fini(&s);
}

/* --- twoq ---------------------------------------------------------------------------------------- */

static void twoq_order(void)
{
	struct ph_sim s;

	sim_init(&s, 1, 5, NULL, 3);
	run_one_worker(&s, 2, 2 * 1000 * 1000ull); /* 0 and 1: long, preempted many times */
	CHECK(s.tasks[0].picks > 2 && s.tasks[1].picks > 2);
	CHECK(s.cur[0] == 0 || s.cur[0] == 1);
	/* A new task preempts a task from the preempted queue at once... */
	s.now += 1000;
	ph_spawn(&s, 0, 2);
	CHECK_SIM(&s);
	CHECK_EQ(s.cur[0], 2);
	/* ...and new tasks queued meanwhile run before the preempted ones. */
	ph_spawn(&s, 0, 3);
	ph_spawn(&s, 0, 4);
	s.now += 1000;
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 3);
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 4);
	ph_block(&s, 0, true);
	CHECK(s.cur[0] == 0 || s.cur[0] == 1);
	CHECK_SIM(&s);
	ph_fini(&s);
}

/*
 * A new-queue task that keeps yielding is demoted after demote_yields yields in a row (here 4),
 * so preempted work runs: two new tasks that yield to each other, waiting for something a
 * preempted-queue task holds, must not keep it off the worker for ever (core.storm.twoq hung so:
 * its tasks yield-looped in jf_mutex_trylock() while the mutex's holder sat in the preempted
 * queue). Fewer yields than that keep new work first.
 */
static void twoq_yield_demote(void)
{
	struct jf_policy_params tun;
	struct ph_sim s;
	int yields = 0;

	params_with(&tun, "demote_yields", "4");
	sim_init(&s, 1, 4, &tun, 3);
	run_one_worker(&s, 2, 2 * 1000 * 1000ull); /* 0 and 1: long, preempted many times */
	CHECK(s.cur[0] == 0 || s.cur[0] == 1);
	s.now += 1000;
	ph_spawn(&s, 0, 2); /* preempts the preempted-queue task at once */
	ph_spawn(&s, 0, 3);
	CHECK_EQ(s.cur[0], 2);
	/* 2 and 3 yield to each other: 3 yields each keep them first (6 yields)... */
	for (; yields < 6; yields++) {
		s.now += 100;
		ph_requeue(&s, 0, JF_ENQ_YIELDED);
		CHECK(s.cur[0] == 2 || s.cur[0] == 3);
	}
	/* ...the 4th yield of each demotes it: then the preempted tasks run. */
	for (; yields < 8 && (s.cur[0] == 2 || s.cur[0] == 3); yields++) {
		s.now += 100;
		ph_requeue(&s, 0, JF_ENQ_YIELDED);
	}
	CHECK(s.cur[0] == 0 || s.cur[0] == 1);
	CHECK_SIM(&s);
	ph_fini(&s);
}

/* --- central -------------------------------------------------------------------------------- */

static void central_order(void)
{
	struct jf_policy_params tun;
	struct ph_sim s;

	/* SQ: arrival order; preempted to the tail (default). */
	sim_init(&s, 1, 4, NULL, 5);
	ph_spawn(&s, 0, 0);
	ph_idle_look(&s, 0);
	CHECK_EQ(s.cur[0], 0);
	for (int i = 1; i < 4; i++)
		s.now += 1000, ph_spawn(&s, 0, i);
	s.now = s.due[0];
	ph_tick(&s, 0);
	CHECK_EQ(s.cur[0], 1); /* tail: 0 waits behind 2 and 3 */
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 2);
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 3);
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 0);
	CHECK_SIM(&s);
	ph_fini(&s);

	/* Preempted to the head: it is the next one served (on any worker). */
	params_with(&tun, "preempted", "head");
	sim_init(&s, 1, 3, &tun, 5);
	ph_spawn(&s, 0, 0);
	ph_idle_look(&s, 0);
	ph_spawn(&s, 0, 1);
	ph_spawn(&s, 0, 2);
	s.now = s.due[0];
	ph_tick(&s, 0);
	CHECK(s.cur[0] == 0 || s.why);
	CHECK_SIM(&s);
	ph_fini(&s);

	/* MQ: the head with the largest wait / SLO first. */
	params_with(&tun, "queues", "mq");
	sim_init(&s, 1, 4, &tun, 5);
	s.tasks[1].t.attr.type = 1, s.tasks[1].t.attr.slo_ns = 1000000; /* 1 ms */
	s.tasks[2].t.attr.type = 0, s.tasks[2].t.attr.slo_ns = 10000;   /* 10 us */
	s.tasks[3].t.attr.type = 1, s.tasks[3].t.attr.slo_ns = 1000000;
	ph_spawn(&s, 0, 0);
	ph_idle_look(&s, 0);
	ph_spawn(&s, 0, 1); /* waits longest, but its SLO is 100x looser */
	s.now += 5000;
	ph_spawn(&s, 0, 2);
	ph_spawn(&s, 0, 3);
	s.now += 15000;
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 2); /* 15 us / 10 us > 20 us / 1 ms */
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 1); /* then type 1 in its own FIFO order */
	ph_block(&s, 0, true);
	CHECK_EQ(s.cur[0], 3);
	CHECK_SIM(&s);
	ph_fini(&s);
}

/* --- lcbe ------------------------------------------------------------------------------------ */

static void lcbe_classes(void)
{
	struct ph_sim s;

	sim_init(&s, 2, 5, NULL, 9);
	for (int i = 0; i < 4; i++)
		s.tasks[i].t.attr.klass = 1; /* best effort */
	s.tasks[4].t.attr.klass = 0;         /* latency critical */
	for (int i = 0; i < 4; i++)
		ph_spawn(&s, i % 2, i);
	for (int w = 0; w < 2; w++)
		if (s.cur[w] < 0)
			ph_idle_look(&s, w);
	CHECK(s.cur[0] >= 0 && s.cur[1] >= 0); /* best effort runs while LC is idle */
	/* BE tasks share the workers: after a while all four have run */
	for (int k = 0; k < 2000 && !s.why; k++) {
		int w = k % 2;
		s.now = s.due[w] > s.now ? s.due[w] : s.now + 1000;
		ph_tick(&s, w);
	}
	for (int i = 0; i < 4; i++)
		CHECK(s.tasks[i].cpu_ns > 0);
	/* LC arrives while BE runs everywhere: it runs at once. */
	s.now += 1000;
	ph_spawn(&s, 0, 4);
	CHECK_SIM(&s);
	CHECK(s.cur[0] == 4 || s.cur[1] == 4);
	ph_fini(&s);
}

int main(int argc, char **argv)
{
	int seeds = argc > 2 ? atoi(argv[2]) : 20;

	CHECK_EQ(broken_policies_register(), 0); /* broken_policies.h */
	policy = argc > 1 ? argv[1] : getenv("JIFFY_POLICY");
	if (!policy || !jf_policy_find(policy)) {
		fprintf(stderr, "usage: %s <policy> [seeds]  (unknown policy '%s')\n", argv[0],
			policy ? policy : "");
		return 2;
	}
	for (int i = 0; i < seeds; i++)
		random_ops(0x5eed0000u + (uint64_t)i * 7919, false);
	printf("   %s: random spawn/yield/block/wake/preempt/exit sequences: %d seeds, no task lost "
	       "or duplicated%s\n",
	       policy, seeds, strcmp(policy, "fifo") ? ", no worker idle while work waits" : "");
	for (int i = 0; i < (seeds + 1) / 2; i++) /* half as many: the same paths, plus pins */
		random_ops(0x914e0000u + (uint64_t)i * 7919, true);
	printf("   %s: the same with pinned tasks: %d seeds, each picked by its own worker only\n",
	       policy, (seeds + 1) / 2);
	pinned_stay();
	shares();
	if (!strcmp(policy, "cfs") || !strcmp(policy, "eevdf"))
		wakeup_latency();
	if (!strcmp(policy, "twoq")) {
		twoq_order();
		twoq_yield_demote();
	}
	if (!strcmp(policy, "central"))
		central_order();
	if (!strcmp(policy, "lcbe"))
		lcbe_classes();
	printf("policy %s: conformance (ops level) passed\n", policy);
	return 0;
}
