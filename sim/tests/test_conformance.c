/*
 * sim/tests/test_conformance.c - the policy conformance properties, through the simulator.
 *
 * tests/sched/test_policy_ops.c drives each policy's ops with random steps through
 * tests/sched/policy_harness.h. This test drives the same ops through jiffy-sim's event loop
 * (sim/engine.c), the runtime model the simulator's results come from, with requests instead of
 * random steps: Poisson arrivals of bimodal work at 90 % load, requests that block (WOKEN path)
 * and yield (YIELDED path), preemption by every kind of mechanism (none; free; a central sender
 * with receiver costs; a per-worker timer; safepoints with a poll delay), on 1, 4 and 16 workers,
 * several seeds. With --check the engine verifies, for every run:
 *   - no duplicated task: every task a policy hands out is one it was given and is queued
 *     (not running elsewhere, blocked or finished);
 *   - no lost task: after the arrivals stop, every request finishes (a drain), and enqueue
 *     returns -1 or a valid worker;
 *   - bounded idleness (work conservation): after every event, no worker stays idle while a
 *     task is queued, even after a second look (every policy but fifo, which never moves work
 *     by design: d-FCFS);
 *   - and here: every measured request completed, and every request that arrived finished.
 * The policy-specific properties (shares, twoq's order, central's order, lcbe's classes) stay in
 * the ops-level suite, where single steps can be staged.
 * --selftest: three broken policies (one loses an enqueue in 500, one hands a task out twice,
 * one never steals) must each be caught.
 * Usage: test_sim_conformance <policy> | --selftest
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/policy.h>

#include "sim.h"
#include "sched/broken_policies.h"

struct mech {
	const char *preset;
	uint64_t quantum_ns;
};

static const struct mech mechs[] = {
	{"none", 0},        {"ideal", 2000},    {"uintr", 5000},
	{"kb-timer", 5000}, {"safepoint", 5000}, {"signal", 20000},
};

static int failures, runs;

/* @params: NULL, or the policy's parameters as jiffy-sim's --param takes them, comma separated. */
static bool run_one(const char *policy, const char *params, const char *mech,
		    uint64_t quantum, int cores, uint64_t seed, bool expect_violation,
		    const char *tag)
{
	struct sim_config cfg;
	struct sim_dist d;
	struct sim_result r;
	char err[512], list[256], *save = NULL;
	bool ok;

	sim_config_default(&cfg);
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", policy);
	snprintf(list, sizeof(list), "%s", params ? params : "");
	for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save))
		if (sim_param_add(&cfg, p, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			exit(2);
		}
	if (quantum)
		cfg.tun.quantum_ns = quantum;
	if (sim_costs_preset(&cfg.costs, mech, NULL, err, sizeof(err)) ||
	    sim_dist_parse(&d, "bimodal:90:1us:50us", err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	cfg.cores = cores;
	cfg.dist = &d;
	cfg.requests = 4000;
	cfg.warmup = 400;
	cfg.seed = seed;
	cfg.block_prob = 0.2;
	cfg.block_ns = 5000;
	cfg.yield_every_ns = seed % 2 ? 12000 : 0; /* above the quanta but 2, so preemption happens too */
	cfg.slo_ns[0] = 10000;
	cfg.slo_ns[1] = 500000;
	cfg.check = true;
	cfg.rate = sim_rate_for_load(&cfg, 0.9);
	if (sim_run(&cfg, &r, err, sizeof(err))) {
		fprintf(stderr, "%s: sim_run: %s\n", tag, err);
		exit(2);
	}
	runs++;
	if (expect_violation) {
		ok = r.violation[0] != '\0';
		printf("   %-12s %-10s %2d workers seed %llu: %s%s\n", tag, mech, cores,
		       (unsigned long long)seed, ok ? "caught: " : "NOT CAUGHT", r.violation);
	} else {
		ok = !r.violation[0] && r.overall.lost == 0 &&
		     r.overall.completed == r.overall.scheduled && r.received == r.sent;
		if (!ok)
			printf("   %-12s %-10s %2d workers seed %llu: FAIL %s (completed %llu of "
			       "%llu, received %llu of %llu)\n", tag, mech, cores,
			       (unsigned long long)seed, r.violation,
			       (unsigned long long)r.overall.completed,
			       (unsigned long long)r.overall.scheduled,
			       (unsigned long long)r.received, (unsigned long long)r.sent);
	}
	failures += !ok;
	sim_result_free(&r);
	sim_dist_free(&d);
	return ok;
}

static void policy_matrix(const char *policy, const char *params, const char *tag)
{
	static const int cores[] = {1, 4, 16};
	int before = failures, n = runs;

	for (size_t m = 0; m < sizeof(mechs) / sizeof(mechs[0]); m++)
		for (size_t c = 0; c < 3; c++)
			for (uint64_t seed = 1; seed <= 3; seed++)
				run_one(policy, params, mechs[m].preset, mechs[m].quantum_ns,
					cores[c], seed * 7919 + c, false, tag);
	printf("   %-12s %d runs (6 mechanisms x 1/4/16 workers x 3 seeds): %s\n", tag, runs - n,
	       failures == before ? "no task lost or duplicated, no worker idle while work "
				    "waited" : "FAILED");
}

/* --- broken policies, which the checks must catch ------------------------------------------- */

static void selftest(void)
{
	if (broken_policies_register() != 0) { /* tests/sched/broken_policies.h */
		fprintf(stderr, "cannot register the broken policies\n");
		exit(2);
	}
	printf("broken policies must be caught:\n");
	run_one("broken-lose", NULL, "ideal", 5000, 4, 1, true, "broken-lose");
	run_one("broken-dup", NULL, "ideal", 5000, 4, 1, true, "broken-dup");
	run_one("broken-idle", NULL, "none", 0, 4, 1, true, "broken-idle");
}

int main(int argc, char **argv)
{
	const char *p = argc > 1 ? argv[1] : "";

	if (!strcmp(p, "--selftest")) {
		selftest();
	} else if (!strcmp(p, "central")) {
		printf("policy central through the simulator:\n");
		for (int v = 0; v < 4; v++) {
			const char *queues = v & 1 ? "mq" : "sq", *preempted = v & 2 ? "head" : "tail";
			char tag[32], params[64];

			snprintf(params, sizeof(params), "queues=%s,preempted=%s", queues, preempted);
			snprintf(tag, sizeof(tag), "central:%s:%s", queues, preempted);
			policy_matrix("central", params, tag);
		}
	} else if (jf_policy_find(p)) {
		printf("policy %s through the simulator:\n", p);
		policy_matrix(p, NULL, p);
	} else {
		fprintf(stderr, "usage: %s <policy> | --selftest  (unknown policy '%s')\n", argv[0],
			p);
		return 2;
	}
	printf("%s: %s\n", p, failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
