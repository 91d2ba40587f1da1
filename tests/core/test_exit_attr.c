/*
 * core/test_exit_attr.c - proves that attributes set on a blocked uthread take effect when it
 * is woken, whichever way it is woken (issue 16: the exit path's fused enqueue_pick skipped
 * them).
 *
 * Policy fifo (it puts a woken uthread on the worker its attr.worker names), preemption none,
 * 2 workers. Uthread J, on worker 0, spawns T on worker 0 and joins it; T runs once J has
 * blocked (one queue, nothing preempts), moves J to worker 1 with jf_thread_set_sched_attr()
 * and exits. The exit wakes J (exit_switch -> pick_next's enqueue_pick), which must then run on
 * worker 1. The same through a condition variable (jf_sched_make_runnable) for comparison.
 * ROUNDS times each.
 */
#include "jf_test.h"

#define ROUNDS 200

static jf_thread_t *victim;
static jf_mutex_t m;
static jf_cond_t c;
static int ready;

static void move_victim(void)
{
	struct jf_sched_attr a;

	jf_thread_get_sched_attr(victim, &a);
	a.worker = 1;
	CHECK_EQ(jf_thread_set_sched_attr(victim, &a), 0);
}

static void *mover(void *arg)
{
	(void)arg;
	move_victim(); /* the joiner is blocked in jf_join() on us: it is woken by our exit */
	return NULL;
}

static void *joiner(void *arg)
{
	struct jf_attr attr;
	jf_thread_t *t;

	(void)arg;
	victim = jf_self();
	CHECK_EQ(jf_worker_id(), 0);
	jf_attr_init(&attr);
	attr.sched.worker = 0;
	CHECK_EQ(jf_spawn(&t, &attr, mover, NULL), 0);
	CHECK_EQ(jf_join(t, NULL), 0);
	if (jf_worker_id() != 1) {
		fprintf(stderr, "woken by an exit, the joiner runs on worker %d, not on worker 1 "
				"as its attributes, set while it was blocked, say\n", jf_worker_id());
		CHECK(!"attributes set while blocked apply when an exit wakes the uthread");
	}
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	jf_mutex_lock(&m);
	move_victim(); /* the waiter is blocked in jf_cond_wait() */
	ready = 1;
	jf_cond_signal(&c);
	jf_mutex_unlock(&m);
	return NULL;
}

static void *waiter(void *arg)
{
	struct jf_attr attr;
	jf_thread_t *t;

	(void)arg;
	victim = jf_self();
	jf_attr_init(&attr);
	attr.sched.worker = 0;
	jf_mutex_lock(&m);
	ready = 0;
	CHECK_EQ(jf_spawn(&t, &attr, signaller, NULL), 0);
	while (!ready)
		CHECK_EQ(jf_cond_wait(&c, &m), 0);
	jf_mutex_unlock(&m);
	CHECK_EQ(jf_worker_id(), 1);
	CHECK_EQ(jf_join(t, NULL), 0);
	return NULL;
}

static void *main_fn(void *arg)
{
	struct jf_attr attr;

	(void)arg;
	jf_mutex_init(&m);
	jf_cond_init(&c);
	jf_attr_init(&attr);
	attr.sched.worker = 0;
	for (int r = 0; r < ROUNDS; r++) {
		jf_thread_t *t;
		CHECK_EQ(jf_spawn(&t, &attr, joiner, NULL), 0);
		CHECK_EQ(jf_join(t, NULL), 0);
		CHECK_EQ(jf_spawn(&t, &attr, waiter, NULL), 0);
		CHECK_EQ(jf_join(t, NULL), 0);
	}
	printf("%d rounds: woken by an exit or a signal, the uthread ran where its new attributes "
	       "said\n", ROUNDS);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	jft_config_fixed(&cfg, 2, "fifo", "none");
	CHECK_EQ(jf_run(&cfg, main_fn, NULL, NULL), 0);
	printf("core.exit_attr: ok\n");
	return 0;
}
