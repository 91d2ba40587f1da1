/*
 * core/test_handoff.c - proves that two workers never wait for each other's outgoing uthread.
 *
 * Regression test for a deadlock found under "ws": uthread X on worker A blocks while Y on worker
 * B wakes X (X lands in B's queue) and yields; B picks X, still switching out on A, and A, now
 * idle, steals Y, still switching out on B. If a worker waited for its pick's on_cpu flag while
 * its own uthread was still on the CPU, both would spin forever. Here many pairs do exactly that
 * (signal, then yield at once) across 2 workers; the property is that every pair finishes its
 * rounds (the CTest timeout catches a hang) and every handoff is seen exactly once.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define PAIRS 4

struct pair {
	jf_mutex_t m;
	jf_cond_t c;
	long turn; /* even: ping's turn, odd: pong's */
	long rounds;
};

static struct pair pairs[PAIRS];
static atomic_long handoffs;

static void play(struct pair *p, long parity)
{
	for (long i = 0; i < p->rounds; i++) {
		jf_mutex_lock(&p->m);
		while ((p->turn & 1) != parity)
			CHECK_EQ(jf_cond_wait(&p->c, &p->m), 0);
		p->turn++;
		jf_cond_signal(&p->c);
		CHECK_EQ(jf_mutex_unlock(&p->m), 0);
		atomic_fetch_add_explicit(&handoffs, 1, memory_order_relaxed);
		jf_yield(); /* the woken partner and we switch out at the same time */
	}
}

static void *ping(void *arg)
{
	play(arg, 0);
	return NULL;
}

static void *pong(void *arg)
{
	play(arg, 1);
	return NULL;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[2 * PAIRS];
	long rounds = JFT_SCALE(400000L, 20000L);

	(void)arg;
	for (int i = 0; i < PAIRS; i++) {
		jf_mutex_init(&pairs[i].m);
		jf_cond_init(&pairs[i].c);
		pairs[i].rounds = rounds;
		t[2 * i] = jft_spawn_on(i % 2, ping, &pairs[i]);
		t[2 * i + 1] = jft_spawn_on(-1, pong, &pairs[i]);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		jft_join(t[i]);
	for (int i = 0; i < PAIRS; i++)
		CHECK_EQ(pairs[i].turn, 2 * rounds);
	CHECK_EQ(atomic_load(&handoffs), 2L * PAIRS * rounds);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	jft_config(&cfg, 2);
	cfg.workers = 2;
	CHECK_EQ(jf_run(&cfg, main_fn, NULL, NULL), 0);
	printf("core.handoff: ok (%ld handoffs)\n", atomic_load(&handoffs));
	return 0;
}
