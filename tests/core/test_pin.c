/*
 * core/test_pin.c - proves pinning (jiffy/local.h: struct jf_attr.pin, jf_thread_pin(),
 * jf_thread_unpin()) holds end to end under every policy x {none, timer, deadline}, in one
 * process (tests/sync/matrix.h; JFT_MATRIX_POLICY / JFT_MATRIX_PREEMPT narrow it): on 3 workers, uthreads pinned at spawn
 * (to a named worker and to the spawner's) and uthreads that pin themselves run a mix of
 * yields, sleeps, contended mutex waits woken from other workers, condition-variable ping-pong
 * with a partner on another worker, busy loops long enough to be preempted, and attribute
 * changes that hint another worker (jf_thread_set_sched_attr) - and jf_worker_id() never changes
 * for a pinned uthread, nor does a __thread variable's address; the same workload unpinned does
 * migrate (the hint moves it under every policy that reads attr.worker; central moves it by
 * serving any worker). Also nesting, the error codes, jf_thread_pinned(), and unpin letting a
 * uthread move again; jf_dump_threads() shows the pins.
 */
#include <stdatomic.h>

#include "jf_test.h"
#include "sync/matrix.h"

#define NW 3

static jf_mutex_t big = JF_MUTEX_INITIALIZER;
static long shared_count;
static _Thread_local int tls_probe;
static atomic_long migrations;   /* by unpinned uthreads */
static atomic_long pinned_steps; /* checked steps of pinned uthreads */
static int rounds;

struct pp { /* condition-variable ping-pong between two uthreads on different workers */
	jf_mutex_t m;
	jf_cond_t c;
	int turn;
};

static void busy_us(uint64_t us)
{
	uint64_t end = jf_now_ns() + us * 1000;
	while (jf_now_ns() < end)
		__asm__ volatile("" ::: "memory");
}

/* One step of the mix; @i selects what. */
static void step(int i)
{
	struct jf_sched_attr a;

	switch (i % 6) {
	case 0:
		jf_yield();
		break;
	case 1:
		CHECK_EQ(jf_sleep_ns(20000 + (uint64_t)(i % 7) * 10000), 0);
		break;
	case 2: /* contended: woken by a uthread on another worker */
		jf_mutex_lock(&big);
		shared_count++;
		jf_yield();
		jf_mutex_unlock(&big);
		break;
	case 3: /* long enough for a preemption under timer/deadline */
		busy_us(150);
		break;
	case 4: /* hint another worker: a pinned uthread must stay anyway */
		jf_thread_get_sched_attr(jf_self(), &a);
		a.worker = (jf_worker_id() + 1) % NW;
		CHECK_EQ(jf_thread_set_sched_attr(jf_self(), &a), 0);
		jf_yield();
		CHECK_EQ(jf_sleep_ns(1000), 0);
		break;
	default:
		jf_yield();
		busy_us(20);
		break;
	}
}

/* Pinned (at spawn): every step on worker (intptr_t)arg. */
static void *pinned_fn(void *arg)
{
	int w = (int)(intptr_t)arg;
	int *probe = &tls_probe;

	CHECK_EQ(jf_worker_id(), w);
	CHECK_EQ(jf_thread_pinned(jf_self()), w);
	for (int i = 0; i < rounds; i++) {
		step(i);
		if (jf_worker_id() != w) {
			fprintf(stderr, "pinned uthread %llu: on worker %d after step %d (kind %d), pinned "
					"to %d (the cell printed last)\n",
				(unsigned long long)jf_thread_id(jf_self()), jf_worker_id(), i, i % 6, w);
			CHECK(!"a pinned uthread moved");
		}
		CHECK(&tls_probe == probe); /* the same kernel thread's variable */
		atomic_fetch_add(&pinned_steps, 1);
	}
	return NULL;
}

/* Pins itself where it happens to run, nests, unpins; checked in between. */
static void *self_pin_fn(void *arg)
{
	int w;

	(void)arg;
	step(0);
	CHECK_EQ(jf_thread_pinned(jf_self()), -1);
	CHECK_EQ(jf_thread_unpin(), -EINVAL); /* not pinned */
	CHECK_EQ(jf_thread_pin(), 0);
	w = jf_worker_id();
	CHECK_EQ(jf_thread_pinned(jf_self()), w);
	CHECK_EQ(jf_thread_pin(), 0); /* nested */
	for (int i = 0; i < rounds; i++) {
		step(i + 1);
		CHECK_EQ(jf_worker_id(), w);
		if (i == rounds / 2)
			CHECK_EQ(jf_thread_unpin(), 0); /* one level left: still pinned */
		CHECK_EQ(jf_thread_pinned(jf_self()), w);
		atomic_fetch_add(&pinned_steps, 1);
	}
	CHECK_EQ(jf_thread_unpin(), 0);
	CHECK_EQ(jf_thread_pinned(jf_self()), -1);
	CHECK_EQ(jf_thread_unpin(), -EINVAL);
	return NULL;
}

/* The same mix unpinned: counts how often it finds itself on another worker (going on past its
 * rounds, up to 3000 more steps, until it has moved once: stealing policies may bring it back). */
static void *free_fn(void *arg)
{
	int w = jf_worker_id(), moved = 0;

	(void)arg;
	for (int i = 0; i < rounds || (!moved && i < rounds + 3000); i++) {
		step(i);
		if (jf_worker_id() != w) {
			atomic_fetch_add(&migrations, 1);
			w = jf_worker_id();
			moved = 1;
		}
	}
	return NULL;
}

/* Ping-pong: side (arg->turn parity) waits for its turn; each side is pinned to its worker. */
struct pp_arg {
	struct pp *pp;
	int side;
	int worker;
};

static void *pp_fn(void *arg)
{
	struct pp_arg *a = arg;
	int n = rounds * 4;

	for (int i = 0; i < n; i++) {
		jf_mutex_lock(&a->pp->m);
		while ((a->pp->turn & 1) != a->side)
			CHECK_EQ(jf_cond_wait(&a->pp->c, &a->pp->m), 0);
		a->pp->turn++;
		jf_cond_signal(&a->pp->c);
		jf_mutex_unlock(&a->pp->m);
		CHECK_EQ(jf_worker_id(), a->worker);
		atomic_fetch_add(&pinned_steps, 1);
	}
	return NULL;
}

/* Unpinning lets a uthread move again: hinted to another worker and sleeping, it leaves its
 * worker within a few rounds (a policy that steals may bring it back, so the loop looks for any
 * move; central ignores the hint but serves any worker). */
static void *unpin_moves_fn(void *arg)
{
	struct jf_sched_attr a;
	int w = jf_worker_id();

	(void)arg;
	CHECK_EQ(jf_thread_pinned(jf_self()), w);
	CHECK_EQ(jf_thread_unpin(), 0);
	jf_thread_get_sched_attr(jf_self(), &a);
	a.worker = (w + 1) % NW;
	CHECK_EQ(jf_thread_set_sched_attr(jf_self(), &a), 0);
	for (int i = 0; i < 2000 && jf_worker_id() == w; i++)
		step(i); /* woken or requeued: placed by the policy, which may read the hint */
	return (void *)(intptr_t)(jf_worker_id() != w);
}

static atomic_int dump_ready;

static void *dump_target_fn(void *arg)
{
	(void)arg;
	atomic_store_explicit(&dump_ready, 1, memory_order_release);
	CHECK_EQ(jf_sleep_ns(60ull * 1000000000), -ECANCELED); /* until main cancels it */
	return NULL;
}

static void *app_main(void *arg)
{
	enum { NPIN = 2 * NW, NSELF = NW, NFREE = NW };
	jf_thread_t *t[64];
	int n = 0;
	struct jf_attr attr;
	struct pp pp;
	struct pp_arg ppa[2];

	(void)arg;
	atomic_store(&migrations, 0);
	atomic_store(&pinned_steps, 0);
	atomic_store(&dump_ready, 0);
	CHECK_EQ(jf_nworkers(), NW);
	CHECK_EQ(jf_thread_pinned(NULL), -1);
	CHECK_EQ(jf_thread_unpin(), -EINVAL); /* main is not pinned */

	/* attr.pin with a worker out of range is refused like any bad worker */
	jf_attr_init(&attr);
	attr.pin = 1;
	attr.sched.worker = NW;
	CHECK_EQ(jf_spawn(&t[0], &attr, pinned_fn, NULL), -EINVAL);

	for (int i = 0; i < NPIN; i++) {
		jf_attr_init(&attr);
		attr.pin = 1;
		attr.sched.worker = i % NW;
		t[n++] = jft_spawn(&attr, pinned_fn, (void *)(intptr_t)(i % NW));
	}
	/* pinned to the spawner's worker (sched.worker -1) */
	jf_attr_init(&attr);
	attr.pin = 1;
	CHECK_EQ(jf_thread_pin(), 0); /* main stays put while it spawns it */
	t[n++] = jft_spawn(&attr, pinned_fn, (void *)(intptr_t)jf_worker_id());
	CHECK_EQ(jf_thread_unpin(), 0);
	for (int i = 0; i < NSELF; i++)
		t[n++] = jft_spawn(NULL, self_pin_fn, NULL);
	for (int i = 0; i < NFREE; i++)
		t[n++] = jft_spawn(NULL, free_fn, NULL);
	jf_mutex_init(&pp.m);
	jf_cond_init(&pp.c);
	pp.turn = 0;
	for (int s = 0; s < 2; s++) {
		ppa[s] = (struct pp_arg){&pp, s, s};
		jf_attr_init(&attr);
		attr.pin = 1;
		attr.sched.worker = s;
		t[n++] = jft_spawn(&attr, pp_fn, &ppa[s]);
	}
	for (int i = 0; i < n; i++)
		jft_join(t[i]);

	{ /* jf_dump_threads() shows the pin of a blocked pinned uthread (dumped only once it has
	   * said it started: the dump reads its fields without the runtime's locks) */
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		jf_attr_init(&attr);
		attr.pin = 1;
		attr.sched.worker = 1;
		t[0] = jft_spawn(&attr, dump_target_fn, NULL);
		while (!atomic_load_explicit(&dump_ready, memory_order_acquire))
			CHECK_EQ(jf_sleep_ns(100000), 0);
		CHECK_EQ(jf_sleep_ns(1000000), 0); /* it blocks in its sleep meanwhile */
		f = open_memstream(&buf, &len);
		CHECK(f != NULL);
		CHECK_EQ(jf_dump_threads(f), 0);
		fclose(f);
		CHECK_STR_CONTAINS(buf, "pinned to worker 1");
		free(buf);
		CHECK_EQ(jf_cancel(t[0]), 0);
		jft_join(t[0]);
	}

	jf_attr_init(&attr);
	attr.pin = 1;
	attr.sched.worker = 2;
	t[0] = jft_spawn(&attr, unpin_moves_fn, NULL);
	t[1] = jft_spawn(NULL, free_fn, NULL); /* company, so that yields requeue */
	CHECK(jft_join(t[0]) != NULL);
	jft_join(t[1]);

	printf("   %ld checked steps of pinned uthreads, none moved; unpinned uthreads migrated %ld "
	       "times\n",
	       (long)atomic_load(&pinned_steps), (long)atomic_load(&migrations));
	CHECK(atomic_load(&migrations) > 0);
	return NULL;
}

int main(void)
{
	int cells;

	rounds = JFT_SCALE(100, 30);
	CHECK_EQ(jf_thread_pin(), -EPERM);
	CHECK_EQ(jf_thread_unpin(), -EPERM);
	cells = jft_matrix_run("core.pin", NW, app_main, NULL);
	printf("core.pin: %d cells OK\n", cells);
	return 0;
}
