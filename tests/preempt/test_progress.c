/*
 * preempt/test_progress.c - proves that preemption guarantees progress on a single worker: a
 * uthread A that computes without ever blocking or yielding (it waits for a flag only a uthread
 * spawned after it can set) is interrupted once it has used its quantum, so that uthread B runs
 * and A finishes; under the signal mechanisms this holds also when A never calls jf_safepoint(),
 * under "safepoint" it holds because A calls jf_safepoint() about every microsecond; it holds
 * too when A spends nearly all its time in memcpy(), where requests are deferred (they must be
 * retried until one lands where A may be preempted, or be taken when A leaves libc). And two
 * uthreads that each count in a tight loop for 200 ms (longer if the machine is so loaded that
 * they have not yet taken 20 turns each) share the worker round-robin: both count, each gets a
 * fair share (at least a fifth of what its turns are worth: 10% when both are preempted at the
 * quantum; under "hybrid" and "auto" the one without safepoints runs quantum + grace per turn,
 * under "auto" with its 5 ms grace ~50x the other's) and each runs again and again after the
 * other, not once.
 * The workers count the preemptions (stats preempts >= 1).
 */
#include "pt_common.h"

#define NAME "preempt.progress"

static const char *mech;
static uint64_t quantum_ns;

/* ---- part 1: A waits for B, which only preemption can run ---- */

static atomic_int b_ran;
static atomic_ullong b_ran_at;
static int a_safepoints;
static unsigned char *a_buf; /* A_BUF bytes, twice: A copies one half to the other */
#define A_BUF (1u << 20)

static void *b_fn(void *arg)
{
	(void)arg;
	atomic_store(&b_ran_at, jf_now_ns());
	atomic_store(&b_ran, 1);
	return NULL;
}

static void *a_fn(void *arg)
{
	uint64_t t0, x = 12345;
	jf_thread_t *b;

	(void)arg;
	/* B exists only once A runs, so B cannot have run before A. */
	b = jft_spawn_on(0, b_fn, NULL);
	t0 = jf_now_ns();
	while (!atomic_load_explicit(&b_ran, memory_order_relaxed)) {
		if (a_buf) {
			/* Nearly all of A's time is in libc, where it must not be preempted. */
			memcpy(a_buf + (x & 1) * A_BUF, a_buf + (~x & 1) * A_BUF, A_BUF);
			x++;
		} else {
			x = pt_work(x, 250); /* about 1 us */
		}
		if (a_safepoints)
			jf_safepoint();
		if (jf_now_ns() - t0 > 10 * PT_S) {
			fprintf(stderr, "%s [%s]: B did not run within 10 s while A computed "
					"(safepoints %d)\n",
				NAME, mech, a_safepoints);
			CHECK(!"no preemption: B never ran");
		}
	}
	printf("%s [%s]: A%s%s safepoints: B ran %.1f us after A started computing "
	       "(quantum %llu us)\n",
	       NAME, mech, a_buf ? " (in memcpy)" : "", a_safepoints ? " with" : " without",
	       (double)(atomic_load(&b_ran_at) - t0) / 1e3,
	       (unsigned long long)(quantum_ns / PT_US));
	jft_join(b);
	return (void *)(uintptr_t)(x | 1);
}

static void *part1_main(void *arg)
{
	struct jf_worker_stats st;
	jf_thread_t *a;

	(void)arg;
	CHECK(strcmp(jf_preempt_mechanism(), mech) == 0);
	atomic_store(&b_ran, 0);
	a = jft_spawn_on(0, a_fn, NULL);
	CHECK(jft_join(a) != NULL);
	CHECK_EQ(atomic_load(&b_ran), 1);
	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	CHECK_GE(st.preempts, 1);
	return NULL;
}

/* ---- part 2: two counters share the worker ---- */

#define NCOUNTERS 2
#define MIN_TURNS 20

struct counter {
	uint64_t count;
	atomic_ullong turns; /* times it ran after the other had run */
	uint64_t longest_gap_ns;
	int id;
	int safepoints;
};

static struct counter counters[NCOUNTERS];
static atomic_int last_runner;
static uint64_t deadline, hard_deadline;

/* 200 ms have passed and both took turns often enough (or 10 s more have passed). */
static int done_counting(uint64_t now)
{
	if (now >= hard_deadline)
		return 1;
	if (now < deadline)
		return 0;
	for (int i = 0; i < NCOUNTERS; i++)
		if (atomic_load_explicit(&counters[i].turns, memory_order_relaxed) < MIN_TURNS)
			return 0;
	return 1;
}

static void *count_fn(void *arg)
{
	struct counter *c = arg;
	uint64_t x = 99, prev = jf_now_ns(), now;

	while (!done_counting(now = jf_now_ns())) {
		if (atomic_load_explicit(&last_runner, memory_order_relaxed) != c->id) {
			/* The other one ran since this one last looked: a new turn. */
			atomic_store_explicit(&last_runner, c->id, memory_order_relaxed);
			atomic_fetch_add_explicit(&c->turns, 1, memory_order_relaxed);
			if (now - prev > c->longest_gap_ns)
				c->longest_gap_ns = now - prev;
		}
		prev = now;
		x = pt_work(x, 32);
		c->count++;
		if (c->safepoints)
			jf_safepoint();
	}
	return (void *)(uintptr_t)(x | 1);
}

static void *part2_main(void *arg)
{
	struct jf_worker_stats st;
	jf_thread_t *t[NCOUNTERS];
	uint64_t total = 0, t0;
	int i;

	(void)arg;
	memset(counters, 0, sizeof(counters));
	atomic_store(&last_runner, -1);
	/* Both start behind main; whichever runs first would keep the worker to the end. */
	t0 = jf_now_ns();
	deadline = t0 + 200 * PT_MS;
	hard_deadline = deadline + 10 * PT_S;
	for (i = 0; i < NCOUNTERS; i++) {
		counters[i].id = i;
		counters[i].safepoints = pt_uses_safepoints(mech, i);
		t[i] = jft_spawn_on(0, count_fn, &counters[i]);
	}
	for (i = 0; i < NCOUNTERS; i++)
		CHECK(jft_join(t[i]) != NULL);
	printf("%s [%s]: counted for %.1f ms\n", NAME, mech, (double)(jf_now_ns() - t0) / 1e6);
	for (i = 0; i < NCOUNTERS; i++) {
		printf("%s [%s]: counter %d (safepoints %d): %llu iterations in %llu turns, longest "
		       "wait %.1f us\n",
		       NAME, mech, i, counters[i].safepoints, (unsigned long long)counters[i].count,
		       (unsigned long long)atomic_load(&counters[i].turns),
		       (double)counters[i].longest_gap_ns / 1e3);
		total += counters[i].count;
	}
	/*
	 * What a turn is worth: a quantum, or quantum + grace for one without safepoints under the
	 * mechanisms that signal it only after the grace period.
	 */
	struct jf_preempt_stats ps;
	uint64_t turn_ns[NCOUNTERS], turns_ns = 0;
	CHECK_EQ(jf_preempt_stats(&ps), 0);
	for (i = 0; i < NCOUNTERS; i++) {
		bool late = !counters[i].safepoints && (!strcmp(mech, "hybrid") || !strcmp(mech, "auto"));
		turn_ns[i] = quantum_ns + (late ? ps.grace_ns : 0);
		turns_ns += turn_ns[i];
	}
	for (i = 0; i < NCOUNTERS; i++) {
		CHECK(counters[i].count > 0);
		/* Taking turns, not one after the other. */
		CHECK_GE(atomic_load(&counters[i].turns), MIN_TURNS);
		/* A fair share, give or take: at least a fifth of what its turns are worth (10 % of
		 * the total for equal turns; a 25th in the several-times-slower sanitizer builds,
		 * where a loaded machine skews shares more). */
		CHECK_GE(counters[i].count * JFT_SCALE(5, 25) * turns_ns, total * turn_ns[i]);
	}
	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	CHECK_GE(st.preempts, 2 * MIN_TURNS - 1);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	mech = pt_config(&cfg, 1, NAME, true);
	quantum_ns = pt_is_safepoint(mech) ? 20 * PT_US : 100 * PT_US;
	cfg.quantum_ns = quantum_ns;

	a_safepoints = 1;
	jft_run(&cfg, part1_main, NULL);
	if (pt_is_signal(mech)) {
		/* Only a signal can reach a uthread that never polls. */
		a_safepoints = 0;
		jft_run(&cfg, part1_main, NULL);
	}
	/*
	 * A spends nearly all its time in memcpy(): requests that land there are deferred, and
	 * must be retried until one is taken.
	 */
	a_buf = malloc(2 * A_BUF);
	CHECK(a_buf != NULL);
	memset(a_buf, 0x5a, 2 * A_BUF);
	a_safepoints = pt_is_safepoint(mech);
	jft_run(&cfg, part1_main, NULL);
	free(a_buf);
	a_buf = NULL;
	jft_run(&cfg, part2_main, NULL);
	jft_ok(NAME);
	return 0;
}
