/*
 * core/test_thread_api.c - proves the uthread API keeps its documented contract: spawn/join pass
 * arguments and return values (also through jf_exit()), detached threads run and free themselves,
 * identities are unique and never reused, names are copied and truncated, worker indices are in
 * range, and every documented error is returned (-EDEADLK joining oneself; -EINVAL joining a
 * detached thread, joining a thread already being joined, detaching twice, bad attributes;
 * -EPERM outside the runtime; -EBUSY starting a second runtime). jf_run() returns main's value
 * (returned or passed to jf_exit()) and can be called repeatedly in one process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "jf_test.h"

#define NWORKERS 2

static struct jf_config cfg;

/* ---- spawn / join / return values / identities ---- */

#define NCHILD 16

static uint64_t child_ids[NCHILD];
static int child_workers[NCHILD];

static void *child_ret(void *arg)
{
	intptr_t i = (intptr_t)arg;
	jf_thread_t *self = jf_self();

	CHECK(self != NULL);
	child_ids[i] = jf_thread_id(self);
	child_workers[i] = jf_worker_id();
	CHECK_EQ(jf_nworkers(), NWORKERS);
	CHECK(strcmp(jf_thread_name(self), "") == 0);
	jf_yield();
	CHECK(jf_self() == self);
	return (void *)(i * 2 + 1);
}

static void check_spawn_join(void)
{
	jf_thread_t *t[NCHILD];
	uint64_t first_ids[NCHILD];
	int round, i, j;

	for (round = 0; round < 2; round++) {
		for (i = 0; i < NCHILD; i++)
			t[i] = jft_spawn(NULL, child_ret, (void *)(intptr_t)i);
		for (i = 0; i < NCHILD; i++) {
			uint64_t id = jf_thread_id(t[i]); /* the handle is valid until joined */
			void *ret = (void *)-1;

			CHECK_EQ(jf_join(t[i], &ret), 0);
			CHECK_EQ((intptr_t)ret, i * 2 + 1);
			CHECK_EQ(child_ids[i], id);
			CHECK(child_ids[i] > 0);
			CHECK(child_workers[i] >= 0 && child_workers[i] < NWORKERS);
		}
		for (i = 0; i < NCHILD; i++) {
			CHECK(child_ids[i] != jf_thread_id(jf_self()));
			for (j = 0; j < i; j++)
				CHECK(child_ids[i] != child_ids[j]);
			/* Ids are never reused, even after the first round was joined and freed. */
			for (j = 0; round == 1 && j < NCHILD; j++)
				CHECK(child_ids[i] != first_ids[j]);
		}
		memcpy(first_ids, child_ids, sizeof(first_ids));
	}

	/* join with a NULL retval. */
	CHECK_EQ(jf_join(jft_spawn(NULL, child_ret, (void *)0), NULL), 0);
}

/* ---- names ---- */

static void *name_check(void *arg)
{
	const char *expect = arg;

	CHECK(strcmp(jf_thread_name(jf_self()), expect) == 0);
	return NULL;
}

static char long_name_truncated[JF_THREAD_NAME_MAX];

static void check_names(void)
{
	static const char long_name[] =
		"a-very-long-uthread-name-that-does-not-fit-in-the-buffer-0123456789";
	struct jf_attr attr;
	char buf[64];
	jf_thread_t *t;
	const char *n;

	jf_attr_init(&attr);
	attr.name = "short-name";
	t = jft_spawn(&attr, name_check, "short-name");
	jft_join(t);

	/* Truncated to JF_THREAD_NAME_MAX - 1 characters, a prefix of the given name. */
	memcpy(long_name_truncated, long_name, JF_THREAD_NAME_MAX - 1);
	attr.name = long_name;
	t = jft_spawn(&attr, name_check, (void *)long_name_truncated);
	n = jf_thread_name(t);
	CHECK_EQ(strlen(n), JF_THREAD_NAME_MAX - 1);
	CHECK(strncmp(n, long_name, JF_THREAD_NAME_MAX - 1) == 0);
	jft_join(t);

	/* The name is copied at spawn. */
	snprintf(buf, sizeof(buf), "%s", "copied-name");
	attr.name = buf;
	t = jft_spawn(&attr, name_check, "copied-name");
	memset(buf, 'X', sizeof(buf) - 1);
	CHECK(strcmp(jf_thread_name(t), "copied-name") == 0);
	jft_join(t);

	/* No name: "". */
	t = jft_spawn(NULL, name_check, "");
	jft_join(t);
}

/* ---- detach ---- */

static jf_waitgroup_t gate;     /* holds detached threads until the handle tests are done */
static jf_waitgroup_t finished; /* counts detached threads still to finish */
static atomic_int detached_ran;

static void *detached_fn(void *arg)
{
	(void)arg;
	jf_waitgroup_wait(&gate);
	atomic_fetch_add(&detached_ran, 1);
	jf_waitgroup_done(&finished);
	return NULL;
}

static void check_detach(void)
{
	struct jf_attr attr;
	jf_thread_t *t;
	int i;

	jf_waitgroup_init(&gate);
	jf_waitgroup_init(&finished);
	CHECK_EQ(jf_waitgroup_add(&gate, 1), 0);
	CHECK_EQ(jf_waitgroup_add(&finished, 1 + 8), 0);

	/* The thread is blocked on the gate, so its handle stays valid while we use it. */
	t = jft_spawn(NULL, detached_fn, NULL);
	CHECK_EQ(jf_detach(t), 0);
	CHECK_EQ(jf_detach(t), -EINVAL);
	CHECK_EQ(jf_join(t, NULL), -EINVAL);

	/* Spawned detached, without a handle. */
	jf_attr_init(&attr);
	attr.detached = 1;
	for (i = 0; i < 8; i++)
		CHECK_EQ(jf_spawn(NULL, &attr, detached_fn, NULL), 0);

	/* A joinable thread needs somewhere to put its handle. */
	attr.detached = 0;
	CHECK_EQ(jf_spawn(NULL, &attr, detached_fn, NULL), -EINVAL);

	CHECK_EQ(atomic_load(&detached_ran), 0);
	CHECK_EQ(jf_waitgroup_done(&gate), 0);
	jf_waitgroup_wait(&finished);
	CHECK_EQ(atomic_load(&detached_ran), 9);
}

/* ---- a thread already being joined (on one worker, so the order is known) ---- */

static jf_waitgroup_t hold;
static jf_thread_t *held_thread;
static atomic_int joiner_started;

static void *held_fn(void *arg)
{
	jf_waitgroup_wait(&hold);
	return arg;
}

static void *joiner_fn(void *arg)
{
	void *ret = NULL;

	(void)arg;
	atomic_store(&joiner_started, 1);
	/* No scheduling point between the flag and blocking in jf_join. */
	CHECK_EQ(jf_join(held_thread, &ret), 0);
	CHECK(ret == (void *)0x5151);
	return NULL;
}

static void *main_double_join(void *arg)
{
	jf_thread_t *joiner;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 1);
	jf_waitgroup_init(&hold);
	CHECK_EQ(jf_waitgroup_add(&hold, 1), 0);
	held_thread = jft_spawn(NULL, held_fn, (void *)0x5151);
	joiner = jft_spawn(NULL, joiner_fn, NULL);
	while (!atomic_load(&joiner_started))
		jf_yield();
	/* One worker: the joiner ran until it blocked inside jf_join(held_thread). */
	CHECK_EQ(jf_join(held_thread, NULL), -EINVAL);
	CHECK_EQ(jf_detach(held_thread), -EINVAL);
	CHECK_EQ(jf_waitgroup_done(&hold), 0);
	jft_join(joiner);
	return NULL;
}

/* ---- jf_exit ---- */

static int after_exit;

static volatile int really_exit = 1;

/* jf_exit() from deep inside nested calls. */
__attribute__((noinline)) static int exit_deep(int depth, void *value)
{
	if (depth == 0) {
		if (really_exit)
			jf_exit(value);
		return 0;
	}
	return exit_deep(depth - 1, value) + 1;
}

static void *exit_fn(void *arg)
{
	jf_yield();
	after_exit = exit_deep(10, arg);
	return (void *)0xdead;
}

static void check_exit(void)
{
	jf_thread_t *t = jft_spawn(NULL, exit_fn, (void *)0x1234);

	CHECK((intptr_t)jft_join(t) == 0x1234);
	CHECK_EQ(after_exit, 0);
}

/* ---- attributes ---- */

static void *worker_fn(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)jf_worker_id();
}

static void *big_frame_fn(void *arg)
{
	volatile char buf[4096];
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)i;
	return (void *)(intptr_t)(buf[100] + (arg != NULL));
}

static void check_attrs(void)
{
	struct jf_attr attr;
	struct jf_sched_attr sa;
	jf_thread_t *t = NULL;
	intptr_t ran_on;
	int w;

	jf_attr_init(&attr);
	CHECK_EQ(attr.stack_size, 0);
	CHECK(attr.name == NULL);
	CHECK_EQ(attr.detached, 0);
	CHECK_EQ(attr.sched.worker, -1);
	CHECK_EQ(attr.sched.klass, 0);
	CHECK_EQ(attr.sched.type, 0);
	CHECK_EQ(attr.sched.weight, 0);
	CHECK_EQ(attr.sched.slo_ns, 0);

	attr.stack_size = 4096;
	CHECK_EQ(jf_spawn(&t, &attr, worker_fn, NULL), -EINVAL);
	attr.stack_size = 16 * 1024 - 1;
	CHECK_EQ(jf_spawn(&t, &attr, worker_fn, NULL), -EINVAL);
	attr.stack_size = 16 * 1024; /* the smallest allowed */
	CHECK_EQ(jf_spawn(&t, &attr, big_frame_fn, NULL), 0);
	CHECK_EQ((intptr_t)jft_join(t), 100);
	attr.stack_size = 1024 * 1024;
	CHECK_EQ(jf_spawn(&t, &attr, big_frame_fn, &attr), 0);
	CHECK_EQ((intptr_t)jft_join(t), 101);

	jf_attr_init(&attr);
	attr.sched.worker = NWORKERS;
	CHECK_EQ(jf_spawn(&t, &attr, worker_fn, NULL), -EINVAL);
	attr.sched.worker = 1000;
	CHECK_EQ(jf_spawn(&t, &attr, worker_fn, NULL), -EINVAL);
	attr.sched.worker = -2;
	CHECK_EQ(jf_spawn(&t, &attr, worker_fn, NULL), -EINVAL);
	for (w = -1; w < NWORKERS; w++) {
		attr.sched.worker = w;
		CHECK_EQ(jf_spawn(&t, &attr, worker_fn, NULL), 0);
		ran_on = (intptr_t)jft_join(t);
		CHECK(ran_on >= 0 && ran_on < NWORKERS);
	}

	/* Policy attributes are kept as given and can be changed. */
	jf_attr_init(&attr);
	attr.sched.klass = 1;
	attr.sched.type = 7;
	attr.sched.weight = 2048;
	attr.sched.slo_ns = 50000;
	jf_waitgroup_init(&hold);
	CHECK_EQ(jf_waitgroup_add(&hold, 1), 0);
	CHECK_EQ(jf_spawn(&t, &attr, held_fn, NULL), 0);
	jf_thread_get_sched_attr(t, &sa);
	CHECK_EQ(sa.klass, 1);
	CHECK_EQ(sa.type, 7);
	CHECK_EQ(sa.weight, 2048);
	CHECK_EQ(sa.slo_ns, 50000);
	sa.type = 9;
	CHECK_EQ(jf_thread_set_sched_attr(t, &sa), 0);
	memset(&sa, 0, sizeof(sa));
	jf_thread_get_sched_attr(t, &sa);
	CHECK_EQ(sa.type, 9);
	CHECK_EQ(sa.klass, 1);
	CHECK_EQ(jf_waitgroup_done(&hold), 0);
	jft_join(t);
}

/* ---- a second runtime while one runs ---- */

static void *never_called(void *arg)
{
	(void)arg;
	CHECK(!"a nested runtime must not start");
	return NULL;
}

static void *pthread_run(void *arg)
{
	struct jf_config *c = arg;

	CHECK(jf_self() == NULL);
	return (void *)(intptr_t)jf_run(c, never_called, NULL, NULL);
}

static void check_nested_run(void)
{
	pthread_t pt;
	void *ret = NULL;

	/* From a uthread. */
	CHECK_EQ(jf_run(&cfg, never_called, NULL, NULL), -EBUSY);
	CHECK_EQ(jf_run(NULL, never_called, NULL, NULL), -EBUSY);
	/* From another kernel thread (this blocks the worker briefly, which is fine here). */
	CHECK_EQ(pthread_create(&pt, NULL, pthread_run, &cfg), 0);
	CHECK_EQ(pthread_join(pt, &ret), 0);
	CHECK_EQ((intptr_t)ret, -EBUSY);
}

static void *main_fn(void *arg)
{
	jf_thread_t *self = jf_self();

	CHECK(arg == (void *)&cfg);
	CHECK(self != NULL);
	CHECK(jf_thread_id(self) > 0);
	CHECK_EQ(jf_nworkers(), NWORKERS);
	CHECK(jf_worker_id() >= 0 && jf_worker_id() < NWORKERS);
	CHECK_EQ(jf_join(self, NULL), -EDEADLK);

	check_spawn_join();
	check_names();
	check_detach();
	check_exit();
	check_attrs();
	check_nested_run();
	return (void *)0xabc;
}

static void *main_exit(void *arg)
{
	jf_yield();
	jf_exit(arg);
}

static void check_outside(void)
{
	jf_thread_t *t = NULL;

	CHECK(jf_self() == NULL);
	CHECK_EQ(jf_worker_id(), -1);
	CHECK_EQ(jf_nworkers(), 0);
	CHECK_EQ(jf_spawn(&t, NULL, worker_fn, NULL), -EPERM);
	CHECK(t == NULL);
	CHECK_EQ(jf_join(NULL, NULL), -EPERM);
}

int main(void)
{
	struct jf_config one;
	void *ret = NULL;
	int i;

	check_outside();
	jft_config(&cfg, NWORKERS);
	cfg.workers = NWORKERS;

	CHECK((intptr_t)jft_run(&cfg, main_fn, &cfg) == 0xabc);
	check_outside();

	/* jf_run() again, several times: main's value returned or passed to jf_exit(). */
	for (i = 0; i < 3; i++) {
		CHECK_EQ(jf_run(&cfg, main_exit, (void *)(intptr_t)(100 + i), &ret), 0);
		CHECK_EQ((intptr_t)ret, 100 + i);
	}
	CHECK_EQ(jf_run(&cfg, main_exit, NULL, NULL), 0); /* retval may be NULL */
	check_outside();

	one = cfg;
	one.workers = 1;
	jft_run(&one, main_double_join, NULL);
	check_outside();

	jft_ok("core.thread_api");
	return 0;
}
