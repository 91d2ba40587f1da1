/*
 * bench/chan_bench.c - what a jf_chan_t operation costs (docs/channels.md has the numbers).
 *
 * Owns: three measurements, each repeated REPS times (the minimum and the median per operation
 * are printed, one line each: "chan\t<op>\t<workers>\t<min_ns>\t<median_ns>"):
 *   sendrecv      one uthread: jf_chan_send() then jf_chan_recv() on a buffered channel (capacity
 *                 64), uncontended; ns per send+recv pair;
 *   pingpong      two uthreads bounce a value through two unbuffered channels; ns per round trip
 *                 (two handoffs, each a block and a wake); on 2 workers they are pinned to
 *                 different workers, so every handoff wakes a uthread on the other worker;
 *   select_pingpong  the same, but the answering side waits in jf_chan_select() over its
 *                 receive channel and a second, idle channel (the cost of a 2-arm select).
 * Usage: chan_bench [workers (1)] [policy (fifo)]; other settings from the JIFFY_* environment
 * (JIFFY_PREEMPT, ...; workers pinned unless JIFFY_PIN=0); BENCH_QUICK=1 runs shorter. Run it
 * under flock /tmp/jiffy-timing.lock on a quiet machine.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

#define REPS 7

static uint64_t iters;
static unsigned nworkers = 1;

static void die(const char *what, int rc)
{
	fprintf(stderr, "chan_bench: %s failed: %d\n", what, rc);
	exit(1);
}

#define OK(call)                                                                                 \
	do {                                                                                     \
		int rc_ = (call);                                                                \
		if (rc_ != 0)                                                                    \
			die(#call, rc_);                                                         \
	} while (0)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *op, uint64_t *ns_per_op)
{
	qsort(ns_per_op, REPS, sizeof(*ns_per_op), cmp_u64);
	printf("chan\t%s\t%u\t%.1f\t%.1f\n", op, nworkers, (double)ns_per_op[0] / 10.0,
	       (double)ns_per_op[REPS / 2] / 10.0);
}

/* --- sendrecv ----------------------------------------------------------------------------- */

static void bench_sendrecv(void)
{
	jf_chan_t *c;
	uint64_t res[REPS];
	long v = 1, w;

	OK(jf_chan_create(&c, sizeof(long), 64));
	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = jf_now_ns();
		for (uint64_t i = 0; i < iters * 4; i++) {
			OK(jf_chan_send(c, &v));
			OK(jf_chan_recv(c, &w));
		}
		res[r] = (jf_now_ns() - t0) * 10 / (iters * 4); /* tenths of ns */
	}
	OK(jf_chan_destroy(c));
	report("sendrecv", res);
}

/* --- pingpong ----------------------------------------------------------------------------- */

struct pp {
	jf_chan_t *ab, *ba, *idle;
	bool use_select;
};

static void *ponger(void *arg)
{
	struct pp *p = arg;
	long v;

	for (;;) {
		if (p->use_select) {
			struct jf_chan_op ops[2] = {{p->ab, JF_CHAN_OP_RECV, &v, 0},
						    {p->idle, JF_CHAN_OP_RECV, &v, 0}};
			int r = jf_chan_select(ops, 2, UINT64_MAX);
			if (r != 0)
				die("jf_chan_select", r);
			if (ops[0].result == -EPIPE)
				return NULL;
		} else if (jf_chan_recv(p->ab, &v) != 0) {
			return NULL; /* closed: done */
		}
		OK(jf_chan_send(p->ba, &v));
	}
}

static void bench_pingpong(bool use_select)
{
	struct pp p = {.use_select = use_select};
	struct jf_attr attr;
	jf_thread_t *t;
	uint64_t res[REPS];
	long v = 0;

	OK(jf_chan_create(&p.ab, sizeof(long), 0));
	OK(jf_chan_create(&p.ba, sizeof(long), 0));
	OK(jf_chan_create(&p.idle, sizeof(long), 0));
	jf_attr_init(&attr);
	attr.sched.worker = nworkers > 1 ? 1 : 0; /* main runs on worker 0 */
	OK(jf_spawn(&t, &attr, ponger, &p));
	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = jf_now_ns();
		for (uint64_t i = 0; i < iters; i++) {
			OK(jf_chan_send(p.ab, &v));
			OK(jf_chan_recv(p.ba, &v));
		}
		res[r] = (jf_now_ns() - t0) * 10 / iters;
	}
	OK(jf_chan_close(p.ab));
	OK(jf_join(t, NULL));
	OK(jf_chan_destroy(p.ab));
	OK(jf_chan_destroy(p.ba));
	OK(jf_chan_destroy(p.idle));
	report(use_select ? "select_pingpong" : "pingpong", res);
}

static void *bench_main(void *arg)
{
	(void)arg;
	bench_sendrecv();
	bench_pingpong(false);
	bench_pingpong(true);
	return NULL;
}

int main(int argc, char **argv)
{
	struct jf_config cfg;
	const char *quick = getenv("BENCH_QUICK");
	char err[256] = "";

	jf_config_default(&cfg);
	cfg.pin_workers = true; /* like jiffy_bench; JIFFY_PIN=0 overrides */
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "chan_bench: %s\n", err);
		return 2;
	}
	if (argc > 1)
		nworkers = (unsigned)atoi(argv[1]);
	if (nworkers < 1)
		nworkers = 1;
	cfg.workers = nworkers;
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", argc > 2 ? argv[2] : "fifo");
	iters = quick && *quick == '1' ? 5000 : 50000;
	OK(jf_run(&cfg, bench_main, NULL, NULL));
	return 0;
}
