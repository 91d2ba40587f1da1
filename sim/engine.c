/*
 * sim/engine.c - the event loop that runs a Jiffy policy's own code in virtual time.
 *
 * Owns: simulated workers, requests as policy tasks, and the runtime's events in virtual time,
 * in the order src/runtime/thread.c and src/runtime/preempt/preempt.c have them (tests/sched/
 * policy_harness.h's model too). The calls into the policy, the times they are given and the
 * JF_POLICY_NEEDS_TIME stamps are the policy driver's (src/sched/driver.h), the runtime's own:
 *   arrival      task_init, enqueue(NEW) from the worker whose queue receives it (RSS), then
 *                after_enqueue: wakeup_preempt of the target's running task, the mechanism told
 *                that work waits, idle workers look for work (has_work, pick_next, balance);
 *   completion   task_exit, then pick_next then balance on that worker (or it goes idle);
 *   block/wake   blocked(), later enqueue(WOKEN) from the worker it last ran on;
 *   yield        the driver's requeue-and-pick: enqueue_pick(YIELDED) (enqueue then pick_next
 *                without it), then balance;
 *   preemption   at the run's due time (start + slice(), the quantum by default) the mechanism
 *                fires if has_work(); the interrupt reaches the worker when the sender has sent
 *                it (costs.h); the receiver re-checks: the driver's tick decision (has_work(),
 *                then tick()); yes: requeue-and-pick(PREEMPTED); no: a new slice. Wakeup kicks
 *                skip the slice check (has_work() only).
 * Policies without JF_POLICY_NEEDS_TIME get now = 0 in the queue ops, as from the runtime (the
 * driver sees to it); slice and tick always get the time.
 * Idle workers are modelled as spinning (they see queued work at once; parking is not modelled).
 *
 * Costs (costs.h): a worker's time is split into segments; a segment begins with an overhead
 * (receiver, switch, dispatch) during which its task makes no progress, then the task progresses
 * at 1 / (1 + check/every) of real time. A task's remaining work is kept in ns of nominal CPU.
 *
 * Invariants checked on every run (a violation ends the run with a message, never a crash):
 * every task a policy hands out was given to it and is queued (not running, blocked, finished:
 * no duplication); enqueue returns -1 or a valid worker. With cfg->check also: no worker stays
 * idle while tasks are queued (every policy but fifo, after two looks), and at the end every
 * task finishes (no loss).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/policy.h>

#include "../src/sched/driver.h"
#include "heap.h"
#include "internal.h"

enum task_state { TS_FREE, TS_QUEUED, TS_RUNNING, TS_BLOCKED, TS_DONE };

#define TASK_MAGIC 0x51A7A5C0u
#define CHUNK_TASKS 4096

struct task {
	struct jf_task t; /* first: what the policy sees */
	uint64_t arrival_ns;
	uint64_t service_ns;
	uint64_t left_ns;  /* nominal work left */
	uint64_t block_at; /* block when left_ns reaches this (0: it will not) */
	uint64_t yield_at; /* yield when left_ns reaches this (0: it will not) */
	struct task *next_free;
	uint32_t magic;
	uint8_t state;
	uint8_t klass;
	bool measured;
};

struct worker {
	struct task *cur;
	uint64_t last_id;    /* id of the task it ran last (a switch is to another one) */
	uint64_t seg_begin;  /* the current segment began (overhead included) */
	uint64_t prog_start; /* cur progresses from here on */
	uint64_t due;        /* the mechanism's next look at this run (SIM_NEVER: none) */
	uint64_t kick_at;    /* an interrupt reaches this worker then (SIM_NEVER: none) */
	bool kick_forced;    /* it is a wakeup kick: no slice check */
	bool overdue;        /* due passed while no work waited: fire when told of work */
	bool idle;
	uint64_t busy_ns, overhead_ns, idle_since;
};

struct chunk {
	struct chunk *next;
	struct task tasks[CHUNK_TASKS];
};

struct engine {
	const struct sim_config *cfg;
	struct sim_result *res;
	struct jf_driver d;   /* the policy, driven as the runtime drives it */
	const char *pname;    /* its name, for messages */
	bool preempt, kick, conserving;
	int n;
	struct worker *w;
	struct sim_iheap heap; /* ids 0..n-1: workers; n: the arrival process */
	struct sim_theap sleepers;
	uint64_t now;
	/* costs, in whole ns */
	uint64_t rx_ns, tx_ns, sw_ns, dispatch_ns, check_every_ns;
	bool tx_central, slowed;
	double slow_f;
	uint64_t central_free, central_busy;
	struct sim_rng mech_rng;
	/* tasks */
	struct chunk *chunks;
	struct task *free;
	uint64_t inflight, nqueued;
	/* idle workers: a bitmap, their number, and where the next look starts */
	uint64_t idle_mask[(SIM_MAX_CORES + 63) / 64];
	int nidle, cursor;
	int noverdue; /* workers with overdue set */
	/* arrivals */
	struct sim_source src;
	struct sim_request next_req;
	bool have_req;
	uint64_t measured_left, deadline;
};

/* --- violations --------------------------------------------------------------------------- */

static void violation(struct engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(struct engine *e, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (e->res->violation[0])
		return;
	off = snprintf(e->res->violation, sizeof(e->res->violation), "policy %s: ", e->pname);
	va_start(ap, fmt);
	vsnprintf(e->res->violation + off, sizeof(e->res->violation) - (size_t)off, fmt, ap);
	va_end(ap);
}

static bool broken(const struct engine *e)
{
	return e->res->violation[0] != '\0';
}

/* --- tasks -------------------------------------------------------------------------------- */

static struct task *task_of(struct jf_task *t)
{
	return (struct task *)(void *)t;
}

static struct task *task_alloc(struct engine *e)
{
	struct task *t = e->free;

	if (!t) {
		/* aligned_alloc wants a size that is a multiple of the alignment */
		struct chunk *c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
		if (!c)
			return NULL;
		c->next = e->chunks;
		e->chunks = c;
		for (int i = CHUNK_TASKS - 1; i >= 0; i--) {
			c->tasks[i].magic = TASK_MAGIC;
			c->tasks[i].state = TS_FREE;
			c->tasks[i].next_free = e->free;
			e->free = &c->tasks[i];
		}
		t = e->free;
	}
	e->free = t->next_free;
	return t;
}

static void task_release(struct engine *e, struct task *t)
{
	t->state = TS_FREE;
	t->next_free = e->free;
	e->free = t;
}

static const char *state_name(uint8_t s)
{
	static const char *const names[] = {"not given to the policy (free)", "queued",
					    "running (duplicated)", "blocked", "finished"};
	return s <= TS_DONE ? names[s] : "unknown";
}

/* The policy handed @jt to worker @w: it must be a task it was given and that is queued. */
static struct task *check_pick(struct engine *e, int w, struct jf_task *jt)
{
	struct task *t = task_of(jt);

	if (t->magic != TASK_MAGIC) {
		violation(e, "worker %d picked a task the runtime never gave the policy", w);
		return NULL;
	}
	if (t->state != TS_QUEUED) {
		violation(e, "worker %d picked task %llu which is %s", w,
			  (unsigned long long)jt->id, state_name(t->state));
		return NULL;
	}
	return t;
}

static bool check_target(struct engine *e, int target, const char *op)
{
	if (target >= -1 && target < e->n)
		return true;
	violation(e, "%s returned worker %d (workers: %d)", op, target, e->n);
	return false;
}

/* --- time and progress ------------------------------------------------------------------- */

static uint64_t wall_for(const struct engine *e, uint64_t work)
{
	return e->slowed ? (uint64_t)ceil((double)work * e->slow_f) : work;
}

static uint64_t work_in(const struct engine *e, uint64_t wall)
{
	return e->slowed ? (uint64_t)((double)wall / e->slow_f) : wall;
}

/* The left_ns value at which the running task stops by itself (0: when it completes). */
static uint64_t stop_point(const struct task *t)
{
	return t->block_at > t->yield_at ? t->block_at : t->yield_at;
}

static uint64_t stop_time(const struct engine *e, const struct worker *w)
{
	const struct task *t = w->cur;
	uint64_t sp = stop_point(t);

	return w->prog_start + wall_for(e, t->left_ns > sp ? t->left_ns - sp : 0);
}

/* End @w's current segment at now: credit the progress and account the time. */
static void end_segment(struct engine *e, struct worker *w)
{
	struct task *t = w->cur;
	uint64_t ov_end = w->prog_start < e->now ? w->prog_start : e->now;

	if (ov_end > w->seg_begin)
		w->overhead_ns += ov_end - w->seg_begin;
	w->busy_ns += e->now - w->seg_begin;
	if (e->now > w->prog_start) {
		uint64_t done = work_in(e, e->now - w->prog_start);
		t->left_ns = done < t->left_ns ? t->left_ns - done : 0;
	}
	w->seg_begin = w->prog_start = e->now;
}

/* The worker's next event into the heap. */
static void resched(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];
	uint64_t t = SIM_NEVER;

	if (w->cur) {
		t = stop_time(e, w);
		if (w->kick_at < t)
			t = w->kick_at;
		if (w->due < t)
			t = w->due;
		if (t < e->now)
			t = e->now;
	}
	sim_iheap_set(&e->heap, wi, t);
}

/* --- idle set ----------------------------------------------------------------------------- */

static void set_idle(struct engine *e, int wi, bool idle)
{
	struct worker *w = &e->w[wi];

	if (w->idle == idle)
		return;
	w->idle = idle;
	if (idle) {
		e->idle_mask[wi / 64] |= UINT64_C(1) << (wi % 64);
		e->nidle++;
		w->idle_since = e->now;
	} else {
		e->idle_mask[wi / 64] &= ~(UINT64_C(1) << (wi % 64));
		e->nidle--;
	}
}

static void set_overdue(struct engine *e, struct worker *w, bool overdue)
{
	if (w->overdue != overdue) {
		w->overdue = overdue;
		e->noverdue += overdue ? 1 : -1;
	}
}

/* The first idle worker at or after @from (cyclically), or -1. */
static int next_idle(const struct engine *e, int from)
{
	int words = (e->n + 63) / 64;

	for (int k = 0; k <= words; k++) {
		int wd = (from / 64 + k) % words;
		uint64_t m = e->idle_mask[wd];
		if (k == 0)
			m &= ~UINT64_C(0) << (from % 64);
		if (m)
			return wd * 64 + __builtin_ctzll(m);
	}
	return -1;
}

/* --- runs ----------------------------------------------------------------------------------- */

static uint64_t slice_of(struct engine *e, int wi, struct task *t)
{
	return jf_drv_slice(&e->d, wi, &t->t, e->now);
}

/* Arm the mechanism for the run that begins now on @wi and progresses from prog_start. */
static void arm(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];
	uint64_t slice;

	w->kick_at = SIM_NEVER; /* a request owed to the last run lapses */
	w->kick_forced = false;
	set_overdue(e, w, false);
	if (!e->preempt) {
		w->due = SIM_NEVER;
		return;
	}
	slice = slice_of(e, wi, w->cur);
	w->due = e->now + slice;
	/* The runtime restarts a slice that switching in ate more than half of (preempt.c). */
	if (w->prog_start - e->now > slice / 2)
		w->due = w->prog_start + slice;
}

/* @wi starts running @t (just picked and checked) after @overhead ns. */
static void start(struct engine *e, int wi, struct task *t, uint64_t overhead)
{
	struct worker *w = &e->w[wi];
	uint64_t begin = e->now;

	t->state = TS_RUNNING;
	e->nqueued--;
	jf_drv_run_start(&e->d, wi, &t->t, e->now);
	if (w->idle) {
		if (e->cfg->park_after_ns && e->now - w->idle_since >= e->cfg->park_after_ns) {
			overhead += e->cfg->wake_ns; /* it had parked: a futex wake-up */
			e->res->parked_wakeups++;
		}
		set_idle(e, wi, false);
	}
	if (w->last_id != t->t.id) {
		overhead += e->sw_ns;
		e->res->switches++;
	}
	if (e->dispatch_ns) { /* a central dispatcher assigns it first */
		begin = e->central_free > e->now ? e->central_free : e->now;
		e->central_free = begin + e->dispatch_ns;
		e->central_busy += e->dispatch_ns;
		overhead += e->central_free - e->now;
	}
	w->cur = t;
	w->last_id = t->t.id;
	w->seg_begin = e->now;
	w->prog_start = e->now + overhead;
	arm(e, wi);
	resched(e, wi);
}

static void go_idle(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];

	w->cur = NULL;
	w->due = w->kick_at = SIM_NEVER;
	set_overdue(e, w, false);
	set_idle(e, wi, true);
	resched(e, wi);
}

/*
 * The driver's pick: pick_next, then balance when the policy steals. With no task queued
 * anywhere the worker goes idle without asking (a conforming policy answers NULL, and for the
 * stealing ones the question reads every worker's queues): the speed of the common case at low
 * and medium load. Under cfg->check the policy is asked anyway, so that one returning a task it
 * does not hold is caught.
 */
static struct jf_task *pick(struct engine *e, int wi)
{
	struct jf_task *jt;
	bool stolen;

	if (e->nqueued == 0 && !e->cfg->check)
		return NULL;
	jt = jf_drv_pick(&e->d, wi, e->now, &stolen);
	if (stolen)
		e->res->steals++;
	return jt;
}

/* @wi has nothing to run (its task ended or blocked): the next one, or idle. */
static void pick_and_start(struct engine *e, int wi, uint64_t overhead)
{
	struct jf_task *jt = pick(e, wi);
	struct task *t;

	if (jt && (t = check_pick(e, wi, jt)) != NULL)
		start(e, wi, t, overhead);
	else
		go_idle(e, wi);
}

/* An idle worker looks for work, as the idle loop does: has_work, then pick/balance. */
static bool look(struct engine *e, int wi)
{
	struct jf_task *jt;
	struct task *t;

	if (!jf_drv_has_work(&e->d, wi) || !(jt = pick(e, wi)))
		return false;
	if (!(t = check_pick(e, wi, jt)))
		return false;
	start(e, wi, t, 0);
	return true;
}

/* --- interrupts --------------------------------------------------------------------------- */

/* Ask the mechanism to interrupt @wi (@forced: a wakeup kick, which skips the slice check). */
static void request_interrupt(struct engine *e, int wi, bool forced)
{
	struct worker *w = &e->w[wi];
	uint64_t at = e->now;

	if (w->kick_at != SIM_NEVER) { /* one in flight already: it will do */
		w->kick_forced |= forced;
		return;
	}
	if (e->tx_central && e->tx_ns) {
		uint64_t begin = e->central_free > e->now ? e->central_free : e->now;
		e->central_free = begin + e->tx_ns;
		e->central_busy += e->tx_ns;
		at = e->central_free;
	}
	if (e->check_every_ns) /* acted on at the task's next safepoint check */
		at += (uint64_t)(sim_rng_uniform(&e->mech_rng) * (double)e->check_every_ns);
	w->kick_at = at;
	w->kick_forced = forced;
	w->due = SIM_NEVER;
	resched(e, wi);
}

static void after_enqueue(struct engine *e, int from, int target, struct task *t,
			  enum jf_enqueue_reason r);

/*
 * @wi's running task goes back to the policy for @r (yield, preemption): the driver's
 * requeue-and-pick; it may be picked again ("keep running").
 */
static void requeue(struct engine *e, int wi, enum jf_enqueue_reason r, uint64_t overhead)
{
	struct worker *w = &e->w[wi];
	struct task *t = w->cur, *next = NULL;
	struct jf_task *jt;
	int target;
	bool stolen;

	jf_drv_run_end(&e->d, &t->t, e->now);
	t->state = TS_QUEUED;
	e->nqueued++;
	w->cur = NULL;
	jt = jf_drv_requeue_pick(&e->d, wi, &t->t, r, e->now, &target, &stolen);
	if (stolen)
		e->res->steals++;
	if (!check_target(e, target, r == JF_ENQ_YIELDED ? "enqueue(YIELDED)"
							  : "enqueue(PREEMPTED)"))
		return;
	if (jt && !(next = check_pick(e, wi, jt)))
		return;
	if (!next && target == wi)
		violation(e, "worker %d: its task was re-queued there but nothing could be picked",
			  wi);
	if (next)
		start(e, wi, next, overhead);
	else
		go_idle(e, wi);
	after_enqueue(e, wi, target, t, r);
}

/* The interrupt reaches @wi now: the receiver pays its cost and re-checks. */
static void deliver(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];
	struct task *t = w->cur;
	bool forced = w->kick_forced, want;
	uint64_t rx = e->rx_ns + (e->tx_central ? 0 : e->tx_ns);

	w->kick_at = SIM_NEVER;
	w->kick_forced = false;
	e->res->interrupts++;
	end_segment(e, w);
	want = forced ? jf_drv_has_work(&e->d, wi) : jf_drv_tick(&e->d, wi, &t->t, e->now);
	if (want) {
		e->res->preempts++;
		requeue(e, wi, JF_ENQ_PREEMPTED, rx);
		return;
	}
	e->res->preempt_skipped++;
	w->prog_start = e->now + rx;
	w->due = e->now + slice_of(e, wi, t);
	resched(e, wi);
}

/* @wi's due time: fire if work waits (the skip rule), else wait to be told of work. */
static void due_reached(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];

	w->due = SIM_NEVER;
	if (!jf_drv_due_worth_interrupt(&e->d, wi, true)) {
		/* Unarmed: told when work arrives (after_enqueue); looked at again each slice. */
		set_overdue(e, w, true);
		w->due = e->now + slice_of(e, wi, w->cur);
		resched(e, wi);
		return;
	}
	request_interrupt(e, wi, false);
	if (w->kick_at == e->now)
		deliver(e, wi);
}

/* The mechanism is told that work waits for @wi: an overdue run is looked at now. */
static void tell_work(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];

	if (!w->overdue || !w->cur)
		return;
	set_overdue(e, w, false);
	w->due = e->now;
	resched(e, wi);
}

/*
 * @t was queued on @target (-1: a shared queue) for @r by worker @from: the runtime's
 * after_enqueue. Wakeup preemption for NEW/WOKEN, the mechanism told, idle workers look.
 */
static void after_enqueue(struct engine *e, int from, int target, struct task *t,
			  enum jf_enqueue_reason r)
{
	int tell = jf_drv_work_to_tell(target, r);

	(void)from;
	if (e->kick && jf_drv_may_wakeup_preempt(&e->d, target, r) && e->w[target].cur &&
	    jf_drv_wakeup_preempt(&e->d, target, &t->t, e->now)) {
		e->res->wakeup_preempts++;
		request_interrupt(e, target, true);
	}
	if (e->preempt && e->noverdue) { /* the driver's rule, as the runtime's after_enqueue */
		if (tell == JF_DRV_TELL_ALL) {
			for (int i = 0; i < e->n; i++)
				tell_work(e, i);
		} else if (tell >= 0) {
			tell_work(e, tell);
		}
	}
	if (target >= 0 && e->w[target].idle)
		look(e, target);
	if (e->nqueued == 0 || e->nidle == 0 || (target >= 0 && !e->d.can_steal))
		return;
	/* Spinning idle workers: each looks, from a rotating start, while work is queued. */
	for (int k = 0, wi = e->cursor; k < e->n && e->nqueued && e->nidle; k++) {
		if ((wi = next_idle(e, wi)) < 0)
			break;
		if (look(e, wi))
			e->cursor = (wi + 1) % e->n;
		wi = (wi + 1) % e->n;
		if (broken(e))
			return;
	}
}

/* --- task life ------------------------------------------------------------------------------ */

static void complete(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];
	struct task *t = w->cur;

	jf_drv_run_end(&e->d, &t->t, e->now);
	if (t->measured) {
		sim_record(e->res, t->klass, e->now - t->arrival_ns, t->service_ns);
		e->measured_left--;
	}
	sim_record_done(e->res, &e->src, t->klass, e->now);
	t->state = TS_DONE;
	w->cur = NULL;
	jf_drv_task_exit(&e->d, wi, &t->t, e->now);
	e->inflight--;
	task_release(e, t);
	pick_and_start(e, wi, 0);
}

static void block(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];
	struct task *t = w->cur;

	jf_drv_run_end(&e->d, &t->t, e->now);
	t->block_at = 0;
	t->state = TS_BLOCKED;
	w->cur = NULL;
	jf_drv_blocked(&e->d, wi, &t->t, e->now);
	if (sim_theap_push(&e->sleepers, e->now + e->cfg->block_ns, t))
		violation(e, "out of memory for sleeping tasks");
	pick_and_start(e, wi, 0);
}

static void wake(struct engine *e, struct task *t)
{
	int from = t->t.last_worker >= 0 ? t->t.last_worker : 0, target;

	t->state = TS_QUEUED;
	e->nqueued++;
	target = jf_drv_enqueue(&e->d, from, &t->t, JF_ENQ_WOKEN, e->now);
	if (check_target(e, target, "enqueue(WOKEN)"))
		after_enqueue(e, from, target, t, JF_ENQ_WOKEN);
}

/* The running task of @wi reached the point where it stops by itself. */
static void reach_stop(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];
	struct task *t = w->cur;
	uint64_t y = e->cfg->yield_every_ns;

	end_segment(e, w);
	if (t->left_ns == 0) {
		complete(e, wi);
		return;
	}
	if (t->yield_at >= t->left_ns)
		t->yield_at = y && t->left_ns > y ? t->left_ns - y : 0;
	if (t->block_at && t->block_at >= t->left_ns)
		block(e, wi);
	else
		requeue(e, wi, JF_ENQ_YIELDED, 0);
}

static void worker_event(struct engine *e, int wi)
{
	struct worker *w = &e->w[wi];

	if (stop_time(e, w) <= e->now)
		reach_stop(e, wi);
	else if (w->kick_at <= e->now)
		deliver(e, wi);
	else if (w->due <= e->now)
		due_reached(e, wi);
	else
		resched(e, wi); /* nothing due: cannot happen, but never spin on it */
}

/* --- arrivals ----------------------------------------------------------------------------- */

static void next_arrival(struct engine *e)
{
	e->have_req = sim_source_next(&e->src, &e->next_req);
	sim_iheap_set(&e->heap, e->n, e->have_req ? e->next_req.at_ns : SIM_NEVER);
	if (e->src.w1_known && !e->deadline)
		e->deadline = e->src.w1 + e->cfg->drain_ns;
}

static void arrive(struct engine *e)
{
	const struct sim_request req = e->next_req, *r = &req;
	struct task *t = task_alloc(e);
	uint64_t y = e->cfg->yield_every_ns;
	int target;

	if (!t) {
		violation(e, "out of memory for %llu tasks in flight",
			  (unsigned long long)e->inflight);
		return;
	}
	memset(&t->t, 0, sizeof(t->t));
	t->t.id = r->index + 1;
	t->t.last_worker = -1;
	t->t.home_worker = r->from;
	t->t.attr.worker = -1;
	t->t.attr.type = r->klass;
	t->t.attr.slo_ns = e->cfg->slo_ns[r->klass];
	t->arrival_ns = e->now;
	t->service_ns = t->left_ns = r->service_ns;
	t->block_at = r->blocks && r->service_ns ? (r->service_ns + 1) / 2 : 0;
	t->yield_at = y && r->service_ns > y ? r->service_ns - y : 0;
	t->klass = (uint8_t)r->klass;
	t->measured = r->measured;
	if (t->measured)
		sim_record_scheduled(e->res, r->klass);
	e->res->sent++;
	if (++e->inflight > e->res->max_inflight)
		e->res->max_inflight = e->inflight;
	jf_drv_task_init(&e->d, r->from, &t->t, e->now);
	t->state = TS_QUEUED;
	e->nqueued++;
	target = jf_drv_enqueue(&e->d, r->from, &t->t, JF_ENQ_NEW, e->now);
	next_arrival(e);
	if (check_target(e, target, "enqueue(NEW)"))
		after_enqueue(e, r->from, target, t, JF_ENQ_NEW);
}

/* --- checks ----------------------------------------------------------------------------- */

/* cfg->check: no worker idle while tasks are queued (given a second look). */
static void check_conserving(struct engine *e)
{
	if (!e->conserving || e->nqueued == 0 || e->nidle == 0)
		return;
	for (int wi = next_idle(e, 0), k = 0; wi >= 0 && k < e->n && e->nqueued; k++) {
		look(e, wi);
		wi = next_idle(e, (wi + 1) % e->n);
	}
	if (e->nqueued && e->nidle)
		violation(e, "worker %d stays idle while %llu tasks are queued (virtual time %llu ns)",
			  next_idle(e, 0), (unsigned long long)e->nqueued,
			  (unsigned long long)(e->now - SIM_T0_NS));
}

/* --- setup and the loop --------------------------------------------------------------------- */

static int setup(struct engine *e, const struct sim_config *cfg, struct sim_result *res,
		 char *err, size_t errlen)
{
	const struct jf_policy_ops *ops;
	struct jf_policy_params params;
	const struct sim_costs *c = &cfg->costs;
	int rc;

	memset(e, 0, sizeof(*e));
	e->cfg = cfg;
	e->res = res;
	e->n = cfg->cores;
	if (!(ops = jf_policy_find(cfg->policy))) {
		char names[256];
		jf_policy_names(names, sizeof(names));
		snprintf(err, errlen, "--policy '%s': unknown; available: %s, ps", cfg->policy, names);
		return -EINVAL;
	}
	e->pname = ops->name;
	e->conserving = strcmp(ops->name, "fifo") != 0;
	e->preempt = c->preempt;
	e->kick = c->preempt && !c->no_kick;
	e->rx_ns = (uint64_t)llround(c->receiver_ns);
	e->tx_ns = (uint64_t)llround(c->sender_ns);
	e->tx_central = c->sender_central;
	e->sw_ns = (uint64_t)llround(c->switch_ns);
	e->dispatch_ns = (uint64_t)llround(c->dispatch_ns);
	if (c->check_every_ns > 0) {
		e->check_every_ns = (uint64_t)llround(c->check_every_ns);
		e->slow_f = 1.0 + c->check_ns / c->check_every_ns;
		e->slowed = c->check_ns > 0;
	}
	sim_rng_seed(&e->mech_rng, cfg->seed, SIM_STREAM_MECH);
	memset(&params, 0, sizeof(params));
	params.nworkers = e->n;
	params.seed = cfg->seed;
	sim_policy_params(cfg, ops, &params, NULL, 0); /* checked by sim_run() */
	if ((rc = jf_drv_init(&e->d, ops, &params)) != 0) {
		snprintf(err, errlen, "policy '%s' refused its parameters: %s", cfg->policy,
			 strerror(-rc));
		return rc < 0 ? rc : -EINVAL;
	}
	e->w = calloc((size_t)e->n, sizeof(*e->w));
	if (!e->w || sim_iheap_init(&e->heap, e->n + 1)) {
		snprintf(err, errlen, "out of memory for %d workers", e->n);
		return -ENOMEM;
	}
	for (int i = 0; i < e->n; i++) {
		e->w[i].due = e->w[i].kick_at = SIM_NEVER;
		set_idle(e, i, true);
	}
	sim_source_init(&e->src, cfg);
	e->measured_left = e->src.total > cfg->warmup ? e->src.total - cfg->warmup : 0;
	return 0;
}

static void teardown(struct engine *e)
{
	jf_drv_fini(&e->d);
	while (e->chunks) {
		struct chunk *c = e->chunks;
		e->chunks = c->next;
		free(c);
	}
	free(e->sleepers.a);
	sim_iheap_free(&e->heap);
	free(e->w);
}

/* Measured requests still in flight at the deadline are lost (jiffy-load's rule). */
static void record_lost(struct engine *e, uint64_t deadline)
{
	for (struct chunk *c = e->chunks; c; c = c->next)
		for (int i = 0; i < CHUNK_TASKS; i++) {
			struct task *t = &c->tasks[i];
			if (t->measured && (t->state == TS_QUEUED || t->state == TS_RUNNING ||
					    t->state == TS_BLOCKED))
				sim_record_lost(e->res, t->klass, deadline - t->arrival_ns,
						t->service_ns);
		}
}

/* Run until every measured request is done (with cfg->check: every request), or the deadline. */
static void loop(struct engine *e)
{
	bool all = e->cfg->check;

	while (!broken(e)) {
		uint64_t th, ts = sim_theap_min(&e->sleepers);
		int id = sim_iheap_min(&e->heap, &th);

		if (!all && e->measured_left == 0)
			break;
		if (all && e->inflight == 0 && !e->have_req)
			break;
		if (id < 0 && ts == SIM_NEVER) {
			if (e->inflight)
				violation(e, "%llu tasks never finish: %llu queued with every worker "
					     "idle (lost by the policy)",
					  (unsigned long long)e->inflight,
					  (unsigned long long)e->nqueued);
			break;
		}
		if (!all && e->src.w1_known && (ts < th ? ts : th) > e->deadline)
			break;
		e->res->events++;
		if (ts <= th) {
			e->now = ts;
			wake(e, sim_theap_pop(&e->sleepers));
		} else {
			e->now = th;
			if (id == e->n)
				arrive(e);
			else
				worker_event(e, id);
		}
		if (e->cfg->check)
			check_conserving(e);
	}
}

static void summarise(struct engine *e, uint64_t end)
{
	struct sim_result *res = e->res;
	double busy = 0, over = 0, span;

	if (!e->src.w1_known) { /* the run broke off early */
		e->src.w1 = end;
		e->src.w1_known = true;
	}
	res->window_ns = e->src.w1 > e->src.w0 ? e->src.w1 - e->src.w0 : 1;
	res->run_ns = end > SIM_T0_NS ? end - SIM_T0_NS : 0;
	span = (double)res->run_ns * e->n;
	for (int i = 0; i < e->n; i++) {
		struct worker *w = &e->w[i];
		if (w->cur) { /* count the running segment up to the end */
			uint64_t now = e->now;
			e->now = end;
			end_segment(e, w);
			e->now = now;
		}
		busy += (double)w->busy_ns;
		over += (double)w->overhead_ns;
	}
	res->busy_frac = span > 0 ? busy / span : 0;
	res->overhead_frac = span > 0 ? over / span : 0;
	res->sender_frac = res->run_ns ? (double)e->central_busy / (double)res->run_ns : 0;
}

int sim_engine_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen)
{
	struct engine e;
	uint64_t end;
	int rc = setup(&e, cfg, res, err, errlen);

	if (rc == 0) {
		next_arrival(&e);
		loop(&e);
		end = e.now;
		if (!cfg->check && e.measured_left > 0 && e.deadline) {
			end = e.deadline;
			record_lost(&e, end);
		}
		if (cfg->check && !broken(&e) && e.inflight)
			violation(&e, "%llu tasks unfinished after the drain",
				  (unsigned long long)e.inflight);
		summarise(&e, end);
	}
	teardown(&e);
	return rc;
}
