/*
 * broken_policies.h - three deliberately broken policies, to show that a conformance check fails
 * when it should: "broken-lose" drops one enqueue in 500, "broken-dup" hands out one task
 * twice, "broken-idle" never steals. All three are ws underneath.
 *
 * Owns: their ops and broken_policies_register(); shared by the ops-level suite
 * (tests/sched/test_policy_ops.c) and the simulator's (sim/tests/test_conformance.c), whose
 * self-tests run them and expect failure.
 */
#ifndef JIFFY_TESTS_BROKEN_POLICIES_H
#define JIFFY_TESTS_BROKEN_POLICIES_H

#include <jiffy/policy.h>

static struct jf_policy_ops broken_lose, broken_dup, broken_idle;
static unsigned broken_n;

static int lose_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
			enum jf_enqueue_reason r, uint64_t now)
{
	if (++broken_n % 500 == 0)
		return -1; /* dropped on the floor */
	return jf_policy_find("ws")->enqueue(p, worker, t, r, now);
}

static struct jf_task *dup_pick(struct jf_policy *p, int worker, uint64_t now)
{
	static struct jf_task *last;
	struct jf_task *t = jf_policy_find("ws")->pick_next(p, worker, now);

	if (t && ++broken_n % 500 == 0 && last)
		return last; /* the previous one again */
	if (t)
		last = t;
	return t;
}

/* Register the three; 0, or the first jf_policy_register() error. */
static int broken_policies_register(void)
{
	int rc;

	broken_lose = broken_dup = broken_idle = *jf_policy_find("ws");
	broken_lose.name = "broken-lose", broken_lose.enqueue_pick = NULL;
	broken_lose.enqueue = lose_enqueue;
	broken_dup.name = "broken-dup", broken_dup.enqueue_pick = NULL;
	broken_dup.pick_next = dup_pick;
	broken_idle.name = "broken-idle", broken_idle.balance = NULL;
	if ((rc = jf_policy_register(&broken_lose)) != 0 ||
	    (rc = jf_policy_register(&broken_dup)) != 0)
		return rc;
	return jf_policy_register(&broken_idle);
}

#endif /* JIFFY_TESTS_BROKEN_POLICIES_H */
