/*
 * chan_pipeline.c - a three-stage pipeline over channels (jiffy/chan.h): a generator, two
 * squarers and a sink that waits in jf_chan_select() with a deadline.
 *
 *   generator --nums (bounded, 16)--> squarer x2 --squares (unbuffered)--> sink
 *                                                      sink --progress (bounded, 4)--> sink
 *
 * Closing propagates the end: the generator closes nums; each squarer stops when nums is closed
 * and drained; a closer closes squares once both squarers are done (a waitgroup); the sink
 * stops when squares is closed. The sink's select also watches the progress channel (which the
 * sink itself feeds every 2500 values) and gives up if nothing arrives within 1 s.
 * The exit status is the verdict: 0 only if the sum of squares is exact.
 * Build against an installed Jiffy:  cc chan_pipeline.c $(pkg-config --cflags --libs jiffy)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include <jiffy/jiffy.h>

#define N 10000

static jf_chan_t *nums, *squares, *progress;
static jf_waitgroup_t squarers = JF_WAITGROUP_INITIALIZER;

static void *generator(void *arg)
{
	(void)arg;
	for (long i = 1; i <= N; i++)
		if (jf_chan_send(nums, &i) != 0)
			return (void *)1;
	jf_chan_close(nums); /* receivers still get what is buffered, then -EPIPE */
	return NULL;
}

static void *squarer(void *arg)
{
	long x, sq;
	(void)arg;
	while (jf_chan_recv(nums, &x) == 0) {
		sq = x * x;
		if (jf_chan_send(squares, &sq) != 0)
			break;
	}
	jf_waitgroup_done(&squarers); /* closer() closes squares after both are done */
	return NULL;
}

static void *closer(void *arg)
{
	(void)arg;
	jf_waitgroup_wait(&squarers);
	jf_chan_close(squares);
	return NULL;
}

static void *app_main(void *arg)
{
	jf_thread_t *t[4];
	long long sum = 0, want = 0;
	long got = 0, sq = 0, note = 0;
	int rc = 0;
	(void)arg;

	if (jf_chan_create(&nums, sizeof(long), 16) || jf_chan_create(&squares, sizeof(long), 0) ||
	    jf_chan_create(&progress, sizeof(long), 4))
		return (void *)1;
	jf_waitgroup_add(&squarers, 2);
	jf_spawn(&t[0], NULL, generator, NULL);
	jf_spawn(&t[1], NULL, squarer, NULL);
	jf_spawn(&t[2], NULL, squarer, NULL);
	jf_spawn(&t[3], NULL, closer, NULL);

	for (;;) {
		struct jf_chan_op ops[2] = {
			{squares, JF_CHAN_OP_RECV, &sq, 0},
			{progress, JF_CHAN_OP_RECV, &note, 0},
		};
		/* wait at most 1 s for the next value: a stuck pipeline fails instead of hanging */
		int i = jf_chan_select(ops, 2, jf_now_ns() + 1000000000ull);
		if (i == -ETIMEDOUT) {
			fprintf(stderr, "chan_pipeline: no value for 1 s after %ld\n", got);
			rc = 1;
			break;
		}
		if (i < 0) {
			fprintf(stderr, "chan_pipeline: select failed: %d\n", i);
			rc = 1;
			break;
		}
		if (i == 0 && ops[0].result == -EPIPE)
			break; /* squares closed: every value arrived */
		if (i == 0) {
			sum += sq;
			if (++got % 2500 == 0)
				jf_chan_trysend(progress, &got); /* picked up by a later select */
		} else {
			printf("progress: %ld squares received\n", note);
		}
	}
	for (int k = 0; k < 4; k++)
		jf_join(t[k], NULL);
	for (long long i = 1; i <= N; i++)
		want += i * i;
	printf("sum of squares 1..%d = %lld (expected %lld), %ld values\n", N, sum, want, got);
	jf_chan_destroy(nums);
	jf_chan_destroy(squares);
	jf_chan_destroy(progress);
	return (void *)(intptr_t)(rc || sum != want || got != N);
}

int main(void)
{
	void *ret = (void *)1;
	int rc = jf_run(NULL, app_main, NULL, &ret);
	if (rc) {
		fprintf(stderr, "jf_run failed: %d\n", rc);
		return 1;
	}
	return ret == NULL ? 0 : 1;
}
