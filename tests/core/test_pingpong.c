/*
 * core/test_pingpong.c - proves cross-worker blocking and wakeup with mutex+condvar: two uthreads
 * placed on different workers (attr.sched.worker 0 and 1, policy fifo) hand a turn back and forth
 * 100,000 times; every wakeup arrives (no lost signal, the test would hang), the turns strictly
 * alternate, and under fifo each uthread stays on the worker it was placed on through every block
 * and wakeup.
 */
#include <stdatomic.h>

#include "jf_test.h"

static long rounds;
static jf_mutex_t m = JF_MUTEX_INITIALIZER;
static jf_cond_t cv = JF_COND_INITIALIZER;
static int turn;       /* whose turn: 0 or 1 */
static long handoffs;  /* total turns taken */
static int last_side = 1;

static void *player(void *arg)
{
	int side = (int)(intptr_t)arg;
	long i;

	CHECK_EQ(jf_worker_id(), side);
	for (i = 0; i < rounds; i++) {
		jf_mutex_lock(&m);
		while (turn != side)
			CHECK_EQ(jf_cond_wait(&cv, &m), 0);
		if (jf_worker_id() != side) {
			fprintf(stderr, "round %ld: player %d runs on worker %d\n", i, side,
				jf_worker_id());
			CHECK_EQ(jf_worker_id(), side);
		}
		/* Strict alternation: the previous turn was the other side's. */
		CHECK_EQ(last_side, 1 - side);
		CHECK_EQ(handoffs, 2 * i + side);
		last_side = side;
		handoffs++;
		turn = 1 - side;
		jf_cond_signal(&cv);
		CHECK_EQ(jf_mutex_unlock(&m), 0);
	}
	CHECK_EQ(jf_worker_id(), side);
	return (void *)(intptr_t)(side + 10);
}

static void *main_fn(void *arg)
{
	jf_thread_t *a, *b;
	uint64_t t0 = jf_now_ns();

	(void)arg;
	CHECK_EQ(jf_nworkers(), 2);
	a = jft_spawn_on(0, player, (void *)0);
	b = jft_spawn_on(1, player, (void *)1);
	CHECK_EQ((intptr_t)jft_join(a), 10);
	CHECK_EQ((intptr_t)jft_join(b), 11);
	CHECK_EQ(handoffs, 2 * rounds);
	printf("%ld round trips: %.0f ns each\n", rounds,
	       (double)(jf_now_ns() - t0) / (double)rounds);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	rounds = JFT_SCALE(100000L, 20000L);
	jft_config(&cfg, 2);
	/* The placement check needs exactly these two. */
	cfg.workers = 2;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", "fifo");
	jft_run(&cfg, main_fn, NULL);
	jft_ok("core.pingpong");
	return 0;
}
