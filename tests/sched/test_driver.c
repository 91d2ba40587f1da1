/*
 * tests/sched/test_driver.c - the three callers of a policy drive it the same way: through the
 * policy driver (src/sched/driver.h).
 *
 * Owns: a recording policy ("ws" underneath, every op wrapped) registered twice, as "drv-rec"
 * (no JF_POLICY_NEEDS_TIME, with enqueue_pick) and "drv-rec-time" (JF_POLICY_NEEDS_TIME, without
 * enqueue_pick, so the driver's two-call requeue is used), and the properties every driver of a
 * policy must keep, checked inside the ops as they are called:
 *   1. time: the ops that place tasks (task_init, enqueue, enqueue_pick, pick_next, balance,
 *      blocked, task_exit, wakeup_preempt) get now == 0 without NEEDS_TIME and a real time with
 *      it; slice and tick always get a real time;
 *   2. stamps: without NEEDS_TIME runnable_ns, started_ns and ran_ns stay 0; with it, enqueue
 *      sees runnable_ns == now and tick sees a started_ns no later than now;
 *   3. tick is never called on a worker whose has_work() is false;
 *   4. the follow-up of an enqueue and the skip rule, which the runtime's after_enqueue and
 *      mechanisms and the simulator take from the driver (jf_drv_work_to_tell,
 *      jf_drv_due_worth_interrupt): every reason of enum jf_enqueue_reason classified, and the
 *      skip rule answered from the policy's has_work().
 * The same recording policy is driven by the conformance harness (tests/sched/policy_harness.h),
 * by the simulator (sim/engine.c, through sim_run()) and by the runtime (jf_run() on one worker
 * under "deadline", or "safepoint" where the TSC is not the clock, with the skip rule off, so
 * that the runtime decides at every quantum, also while nothing else waits). Each part also
 * checks that the paths it means to exercise ran (ticks taken, decisions made with no other
 * work), so that it cannot pass by not looking. These properties once differed between the three
 * (the harness gave real times to every policy; the runtime asked tick() without has_work()).
 * Usage: test_sched_driver   (CTest sched.driver)
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "../jf_test.h"
#include "policy_harness.h"
#include "sim.h"

enum rec_op {
	OP_TASK_INIT,
	OP_ENQUEUE,
	OP_ENQUEUE_PICK,
	OP_PICK,
	OP_BALANCE,
	OP_BLOCKED,
	OP_EXIT,
	OP_WAKEUP_PREEMPT,
	OP_SLICE,
	OP_TICK,
	OP_NR
};
static const char *const op_names[OP_NR] = {
	"task_init", "enqueue", "enqueue_pick", "pick_next", "balance",
	"blocked",   "task_exit", "wakeup_preempt", "slice", "tick",
};

static const struct jf_policy_ops *ws;
static struct jf_policy_ops rec_plain, rec_time;
static const char *volatile driver = "?"; /* who drives the policy now, for messages */
static struct {
	atomic_ulong calls[OP_NR];
	atomic_int violations;
	char first[320];
} rec;

static void rec_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rec_violation(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&rec.violations, 1) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(rec.first, sizeof(rec.first), fmt, ap);
	va_end(ap);
}

static void rec_reset(const char *who)
{
	for (int i = 0; i < OP_NR; i++)
		atomic_store(&rec.calls[i], 0);
	atomic_store(&rec.violations, 0);
	rec.first[0] = '\0';
	driver = who;
}

static unsigned long calls(enum rec_op op)
{
	return atomic_load(&rec.calls[op]);
}

static bool timed(const struct jf_policy *p)
{
	return (p->ops->flags & JF_POLICY_NEEDS_TIME) != 0;
}

/* An op that places tasks was called with @now (about @t, or NULL): properties 1 and 2. */
static void placing(const struct jf_policy *p, enum rec_op op, const struct jf_task *t,
		    uint64_t now)
{
	atomic_fetch_add_explicit(&rec.calls[op], 1, memory_order_relaxed);
	if (!timed(p) && now != 0)
		rec_violation("%s: %s got now=%" PRIu64 " from the %s, but the policy did not ask "
			      "for time (it must get 0)", p->ops->name, op_names[op], now, driver);
	if (timed(p) && now == 0)
		rec_violation("%s: %s got now=0 from the %s, but the policy asked for time",
			      p->ops->name, op_names[op], driver);
	if (t && !timed(p) && (t->runnable_ns || t->started_ns || t->ran_ns))
		rec_violation("%s: %s: the %s stamped task %" PRIu64 " (runnable %" PRIu64
			      ", started %" PRIu64 ", ran %" PRIu64 ") for a policy that did "
			      "not ask for time", p->ops->name, op_names[op], driver, t->id,
			      t->runnable_ns, t->started_ns, t->ran_ns);
	if (t && timed(p) && (op == OP_ENQUEUE || op == OP_ENQUEUE_PICK) && t->runnable_ns != now)
		rec_violation("%s: %s: runnable_ns %" PRIu64 " is not now %" PRIu64 " (the %s)",
			      p->ops->name, op_names[op], t->runnable_ns, now, driver);
}

/* slice and tick measure a run: a real time, whatever the flags. */
static void timing(const struct jf_policy *p, enum rec_op op, uint64_t now)
{
	atomic_fetch_add_explicit(&rec.calls[op], 1, memory_order_relaxed);
	if (now == 0)
		rec_violation("%s: %s got now=0 from the %s (it always gets the time)",
			      p->ops->name, op_names[op], driver);
}

static void rec_task_init(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	placing(p, OP_TASK_INIT, t, now);
	if (ws->task_init)
		ws->task_init(p, worker, t, now);
}

static int rec_enqueue(struct jf_policy *p, int worker, struct jf_task *t,
		       enum jf_enqueue_reason reason, uint64_t now)
{
	placing(p, OP_ENQUEUE, t, now);
	return ws->enqueue(p, worker, t, reason, now);
}

static struct jf_task *rec_enqueue_pick(struct jf_policy *p, int worker, struct jf_task *t,
					enum jf_enqueue_reason reason, uint64_t now, int *target)
{
	placing(p, OP_ENQUEUE_PICK, t, now);
	return ws->enqueue_pick(p, worker, t, reason, now, target);
}

static struct jf_task *rec_pick_next(struct jf_policy *p, int worker, uint64_t now)
{
	placing(p, OP_PICK, NULL, now);
	return ws->pick_next(p, worker, now);
}

static struct jf_task *rec_balance(struct jf_policy *p, int worker, uint64_t now)
{
	placing(p, OP_BALANCE, NULL, now);
	return ws->balance(p, worker, now);
}

static void rec_blocked(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	placing(p, OP_BLOCKED, t, now);
	if (ws->blocked)
		ws->blocked(p, worker, t, now);
}

static void rec_task_exit(struct jf_policy *p, int worker, struct jf_task *t, uint64_t now)
{
	placing(p, OP_EXIT, t, now);
	if (ws->task_exit)
		ws->task_exit(p, worker, t, now);
}

static bool rec_wakeup_preempt(struct jf_policy *p, int target, struct jf_task *woken,
			       uint64_t now)
{
	(void)target;
	placing(p, OP_WAKEUP_PREEMPT, woken, now);
	return false;
}

static uint64_t rec_slice(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	(void)worker, (void)cur;
	timing(p, OP_SLICE, now);
	return 0; /* the quantum */
}

static bool rec_tick(struct jf_policy *p, int worker, struct jf_task *cur, uint64_t now)
{
	timing(p, OP_TICK, now);
	if (!ws->has_work(p, worker))
		rec_violation("%s: tick on worker %d while its has_work() is false (the %s must "
			      "ask has_work() first)", p->ops->name, worker, driver);
	if (timed(p) && (cur->started_ns == 0 || cur->started_ns > now))
		rec_violation("%s: tick: started_ns %" PRIu64 " at now %" PRIu64 " (the %s)",
			      p->ops->name, cur->started_ns, now, driver);
	return ws->tick ? ws->tick(p, worker, cur, now) : true;
}

static void register_recorders(void)
{
	ws = jf_policy_find("ws");
	CHECK(ws != NULL);
	rec_plain = *ws;
	rec_plain.name = "drv-rec";
	rec_plain.summary = "ws, recording what the driver passes (tests/sched/test_driver.c)";
	rec_plain.flags = 0;
	rec_plain.task_init = rec_task_init;
	rec_plain.enqueue = rec_enqueue;
	rec_plain.enqueue_pick = rec_enqueue_pick;
	rec_plain.pick_next = rec_pick_next;
	rec_plain.balance = rec_balance;
	rec_plain.blocked = rec_blocked;
	rec_plain.task_exit = rec_task_exit;
	rec_plain.wakeup_preempt = rec_wakeup_preempt;
	rec_plain.slice = rec_slice;
	rec_plain.tick = rec_tick;
	rec_time = rec_plain;
	rec_time.name = "drv-rec-time";
	rec_time.flags = JF_POLICY_NEEDS_TIME;
	rec_time.enqueue_pick = NULL; /* the driver's enqueue + pick_next */
	CHECK_EQ(jf_policy_register(&rec_plain), 0);
	CHECK_EQ(jf_policy_register(&rec_time), 0);
}

/* No violation was recorded, and each op of @need (bits 1u << OP_*) was called. */
static void rec_check(const char *policy, unsigned need)
{
	if (atomic_load(&rec.violations)) {
		fprintf(stderr, "driver: %s under the %s: %d violation(s), the first: %s\n", policy,
			driver, atomic_load(&rec.violations), rec.first);
		jft_fail();
	}
	for (int i = 0; i < OP_NR; i++)
		if ((need & (1u << i)) && calls((enum rec_op)i) == 0) {
			fprintf(stderr, "driver: %s under the %s: %s was never called (the test "
				"does not exercise what it checks)\n", policy, driver, op_names[i]);
			jft_fail();
		}
	printf("   %-13s %-9s ok:", policy, driver);
	for (int i = 0; i < OP_NR; i++)
		printf(" %s %lu", op_names[i], calls((enum rec_op)i));
	printf("\n");
}

#define NEED(op) (1u << (op))
#define NEED_COMMON                                                                          \
	(NEED(OP_TASK_INIT) | NEED(OP_ENQUEUE) | NEED(OP_PICK) | NEED(OP_BLOCKED) |          \
	 NEED(OP_EXIT) | NEED(OP_SLICE) | NEED(OP_TICK))
/* What each variant is expected to reach besides: enqueue_pick only where it has it. */
static unsigned need_of(const char *policy, bool steals)
{
	unsigned need = NEED_COMMON | (steals ? NEED(OP_BALANCE) : 0);

	if (!strcmp(policy, "drv-rec"))
		need |= NEED(OP_ENQUEUE_PICK);
	return need;
}

/* --- 1. the conformance harness ----------------------------------------------------------- */

static void through_harness(const char *policy)
{
	enum { NW = 2, NT = 40, STEPS = 20000 };
	struct ph_sim s;
	int spawned = 0;

	rec_reset("harness");
	CHECK_EQ(ph_init(&s, policy, NW, NT, NULL, 7), 0);
	for (int step = 0; step < STEPS && !s.why; step++) {
		int w = (int)(ph_rand(&s) % NW), op = (int)(ph_rand(&s) % 100);

		s.now += ph_rand(&s) % 20000;
		if (op < 15 && spawned < NT) {
			ph_spawn(&s, w, spawned++);
		} else if (op < 30) {
			int i = (int)(ph_rand(&s) % NT);
			if (s.tasks[i].state == PH_BLOCKED)
				ph_wake(&s, w, i);
		} else if (s.cur[w] < 0) {
			ph_idle_look(&s, w);
		} else if (op < 45) {
			ph_requeue(&s, w, JF_ENQ_YIELDED);
		} else if (op < 75) {
			if (s.now >= s.due[w])
				ph_tick(&s, w);
		} else if (op < 88) {
			ph_block(&s, w, false);
		} else if (op < 92) {
			ph_block(&s, w, true);
		}
	}
	if (s.why) {
		fprintf(stderr, "driver: %s under the harness: %s\n", policy, s.why);
		jft_fail();
	}
	ph_fini(&s);
	rec_check(policy, need_of(policy, true) | NEED(OP_WAKEUP_PREEMPT));
}

/* --- 2. the simulator ------------------------------------------------------------------------- */

static void through_sim(const char *policy)
{
	struct sim_config cfg;
	struct sim_dist d;
	struct sim_result r;
	char err[512];

	rec_reset("simulator");
	sim_config_default(&cfg);
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", policy);
	if (sim_costs_preset(&cfg.costs, "ideal", NULL, err, sizeof(err)) ||
	    sim_dist_parse(&d, "bimodal:90:1us:50us", err, sizeof(err))) {
		fprintf(stderr, "driver: %s\n", err);
		jft_fail();
	}
	cfg.tun.quantum_ns = 5000;
	cfg.cores = 2;
	cfg.dist = &d;
	cfg.requests = 3000;
	cfg.warmup = 300;
	cfg.seed = 11;
	cfg.block_prob = 0.2;
	cfg.block_ns = 5000;
	cfg.yield_every_ns = 12000;
	cfg.check = true;
	cfg.rate = sim_rate_for_load(&cfg, 0.9);
	memset(&r, 0, sizeof(r));
	if (sim_run(&cfg, &r, err, sizeof(err))) {
		fprintf(stderr, "driver: %s: sim_run: %s\n", policy, err);
		jft_fail();
	}
	if (r.violation[0]) {
		fprintf(stderr, "driver: %s under the simulator: %s\n", policy, r.violation);
		jft_fail();
	}
	sim_result_free(&r);
	sim_dist_free(&d);
	rec_check(policy, need_of(policy, true) | NEED(OP_WAKEUP_PREEMPT));
}

/* --- 3. the runtime --------------------------------------------------------------------------- */

static uint64_t lone_decisions;

/* Spin, answering safepoints, until @enough ticks were taken or @deadline_ns passed. */
static void spin_until(unsigned long enough, uint64_t deadline_ns)
{
	do {
		for (volatile int i = 0; i < 500; i++)
			;
		jf_safepoint(); /* before the time check: one look even after a long descheduling */
	} while (calls(OP_TICK) < enough && jf_now_ns() < deadline_ns);
}

static void *hog(void *arg)
{
	(void)arg;
	spin_until(5, jf_now_ns() + 2000000000ull);
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_sleep_ns(100000), 0); /* blocked, then woken by its timer */
	return NULL;
}

static void *rt_main(void *arg)
{
	struct jf_worker_stats st;
	uint64_t before, deadline = jf_now_ns() + 2000000000ull;
	jf_thread_t *t[3];

	(void)arg;
	/* Alone on the worker: every decision at the end of a quantum finds no other work. */
	CHECK_EQ(jf_stats_total(&st), 0);
	before = st.preempt_skipped;
	do {
		spin_until(ULONG_MAX, jf_now_ns() + 200000);
		CHECK_EQ(jf_stats_total(&st), 0);
	} while (st.preempt_skipped - before < 5 && jf_now_ns() < deadline);
	lone_decisions = st.preempt_skipped - before;
	/* Two hogs and a sleeper: ticks with work waiting, blocked, woken, spawn and exit. */
	CHECK_EQ(jf_spawn(&t[0], NULL, sleeper, NULL), 0);
	CHECK_EQ(jf_spawn(&t[1], NULL, hog, NULL), 0);
	CHECK_EQ(jf_spawn(&t[2], NULL, hog, NULL), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(jf_join(t[i], NULL), 0);
	return NULL;
}

static void through_runtime(const char *policy)
{
	struct jf_config cfg;
	const char *mech = jf_preempt_available("deadline", NULL, 0) == 1 ? "deadline"
									   : "safepoint";

	rec_reset("runtime");
	jft_config_fixed(&cfg, 1, policy, mech);
	cfg.preempt_skip = false; /* decide at every quantum, also with nothing else to run */
	cfg.quantum_ns = 50000;
	jft_run(&cfg, rt_main, NULL);
	if (lone_decisions == 0) {
		fprintf(stderr, "driver: %s under the runtime (%s): no decision was made while the "
			"uthread ran alone (the test does not exercise what it checks)\n", policy,
			mech);
		jft_fail();
	}
	rec_check(policy, need_of(policy, false));
	printf("   %-13s runtime   %s: %llu decisions with nothing else to run, no tick among "
	       "them\n", policy, mech, (unsigned long long)lone_decisions);
}

/* --- 4. the driver's rules for what follows an enqueue ---------------------------------------- */

static void driver_rules(void)
{
	struct ph_sim s;

	/* Whom to tell that work waits: a shared queue concerns everyone, whatever the reason; a
	 * new or woken task its worker; a yielded or preempted task nobody (its worker's next
	 * pick). A reason added to the enum fails here until it is classified. */
	CHECK_EQ((int)JF_ENQ_NR_REASONS, 4); /* new, yielded, woken, preempted */
	for (int r = 0; r < JF_ENQ_NR_REASONS; r++) {
		bool fresh = r == JF_ENQ_NEW || r == JF_ENQ_WOKEN;
		CHECK_EQ(jf_drv_work_to_tell(-1, (enum jf_enqueue_reason)r), JF_DRV_TELL_ALL);
		CHECK_EQ(jf_drv_work_to_tell(1, (enum jf_enqueue_reason)r),
			 fresh ? 1 : JF_DRV_TELL_NONE);
	}
	/* The skip rule: worth an interrupt only with work waiting, or with the rule off. */
	CHECK_EQ(ph_init(&s, "fifo", 2, 4, NULL, 3), 0);
	CHECK(!jf_drv_due_worth_interrupt(&s.d, 0, true));
	CHECK(jf_drv_due_worth_interrupt(&s.d, 0, false));
	ph_spawn(&s, 0, 0);
	ph_spawn(&s, 0, 1);
	CHECK(jf_drv_has_work(&s.d, 0) == jf_drv_due_worth_interrupt(&s.d, 0, true));
	ph_fini(&s);
	printf("  rules: work_to_tell over the 4 reasons, due_worth_interrupt with and without work: "
	       "ok\n");
}

int main(void)
{
	static const char *const policies[] = {"drv-rec", "drv-rec-time"};

	driver_rules();

	register_recorders();
	printf("driver: one way to drive a policy (time, stamps, has_work before tick):\n");
	for (int i = 0; i < 2; i++) {
		through_harness(policies[i]);
		through_sim(policies[i]);
		through_runtime(policies[i]);
	}
	printf("driver: ok\n");
	return 0;
}
