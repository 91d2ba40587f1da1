/*
 * preempt/test_fallback.c - proves what each mechanism does for code with and without
 * safepoints, and that the per-path counters (jf_worker_stats.preempts_safepoint,
 * preempts_signal) tell the two paths apart. One worker; uthread A computes (integer and
 * floating-point chains, no system call, no jf_ call) until uthread B, which it spawned on the
 * same worker and which waits runnable behind it, has run, or for at most 2 s of wall clock;
 * 10 rounds of that per case (one where nothing can preempt A):
 *   - with a jf_safepoint() about every microsecond: every mechanism must run B while A still
 *     computes, within 100 ms (a quantum of 100 us plus a grace period plus a signal, with a
 *     thousandfold margin for a loaded machine); under safepoint, deadline, hybrid and auto the
 *     preemptions are counted as taken at safepoints (under auto more of them than by signal:
 *     the signal is only a fallback), under timer and dispatcher as taken by signal;
 *   - without any safepoint (plain C code the compiler cannot hoist or elide): the signal
 *     mechanisms (timer, dispatcher, hybrid, auto) must run B while A still computes, within
 *     100 ms, and count the preemptions as taken by signal, none at a safepoint; under safepoint
 *     and deadline, which only safepoints can preempt, B must run only after A stopped (A then
 *     computes for 50 ms only): the limit that "auto" removes.
 * In every case A's results after all its preemptions must equal the same chains recomputed once
 * A and B finished (nothing waits then, so nothing preempts the recomputation): general and
 * vector registers survive; and A's errno must be its own.
 */
#include "pt_common.h"

#define NAME "preempt.fallback"

static const char *mech;
static uint64_t quantum_ns;

static int a_safepoints;      /* A calls jf_safepoint() in its loop */
static uint64_t a_limit_ns;   /* A stops after this long even if B never ran */
static atomic_int a_running;  /* A is inside its loop */
static atomic_int b_ran;      /* B has run */
static atomic_int b_saw_a;    /* ... while A was inside its loop */
static atomic_ullong b_at;    /* when B ran */

struct a_result {
	uint64_t iters, x, b_seen_at_iter;
	double f;
	uint64_t start_ns;
};
static struct a_result ares;

/* One step of A's two chains: an integer xorshift and a floating-point recurrence (SSE). */
static inline void a_step(uint64_t *x, double *f)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	*f = *f * 0.999999 + (double)(*x & 0xff) * 1e-3;
	__asm__ volatile("" : "+r"(*x), "+x"(*f)); /* no hoisting, no folding across steps */
}

static void *b_fn(void *arg)
{
	(void)arg;
	atomic_store(&b_saw_a, atomic_load(&a_running));
	atomic_store(&b_at, jf_now_ns());
	atomic_store(&b_ran, 1);
	return NULL;
}

static void *a_fn(void *arg)
{
	uint64_t x = 88172645463325252ull, i = 0, t0;
	double f = 1.0;
	jf_thread_t *b;

	(void)arg;
	/* A counts as computing from before B exists: a signal may preempt A between the spawn
	 * and the loop (under ASan that gap is long enough to meet a timer tick), and B running
	 * then is still B running while A computes. jf_spawn() never yields, so under safepoint
	 * and deadline B still cannot run before A stops. */
	t0 = jf_now_ns();
	ares.start_ns = t0;
	ares.b_seen_at_iter = 0;
	atomic_store(&a_running, 1);
	b = jft_spawn_on(0, b_fn, NULL); /* runnable behind A on A's only worker */
	errno = 4321;
	for (;;) {
		a_step(&x, &f);
		i++;
		if (a_safepoints && (i & 255) == 0)
			jf_safepoint(); /* every ~1 us */
		if ((i & 4095) == 0) {
			if (atomic_load_explicit(&b_ran, memory_order_relaxed)) {
				ares.b_seen_at_iter = i;
				break;
			}
			if (jf_now_ns() - t0 > a_limit_ns)
				break;
		}
	}
	atomic_store(&a_running, 0);
	CHECK_EQ(errno, 4321);
	ares.iters = i;
	ares.x = x;
	ares.f = f;
	jft_join(b);
	return NULL;
}

#define ROUNDS 10
static int rounds;
static struct jf_worker_stats st0, st1;
static uint64_t worst_delay_ns, grace_ns;

static void check_exact(void);

static void *run_main(void *arg)
{
	(void)arg;
	struct jf_preempt_stats ps;

	CHECK(strcmp(jf_preempt_mechanism(), mech) == 0);
	CHECK_EQ(jf_preempt_stats(&ps), 0);
	grace_ns = ps.grace_ns; /* the mechanism's own unless JIFFY_GRACE_US says */
	st0 = pt_stats();
	worst_delay_ns = 0;
	for (int r = 0; r < rounds; r++) {
		atomic_store(&b_ran, 0);
		atomic_store(&b_saw_a, 0);
		atomic_store(&a_running, 0);
		jft_join(jft_spawn_on(0, a_fn, NULL));
		CHECK(atomic_load(&b_ran));
		if (rounds > 1 && !atomic_load(&b_saw_a)) {
			fprintf(stderr, "%s [%s]: round %d: B ran only after A stopped computing (A %s "
					"safepoints): no preemption\n",
				NAME, mech, r, a_safepoints ? "with" : "without");
			CHECK(!"B did not run while A computed");
		}
		if (atomic_load(&b_at) - ares.start_ns > worst_delay_ns)
			worst_delay_ns = atomic_load(&b_at) - ares.start_ns;
		check_exact();
	}
	st1 = pt_stats();
	return NULL;
}

/* What A's registers must have ended with: its chains recomputed by main once A and B finished
 * (nothing waits then: nothing preempts this). */
static void check_exact(void)
{
	uint64_t x = 88172645463325252ull;
	double f = 1.0;

	for (uint64_t i = 0; i < ares.iters; i++)
		a_step(&x, &f);
	CHECK_EQ(ares.x, x);
	if (memcmp(&ares.f, &f, sizeof(f)) != 0) {
		fprintf(stderr, "%s [%s]: A's floating-point chain is %.17g, expected %.17g\n", NAME,
			mech, ares.f, f);
		CHECK(!"A's vector registers were not kept");
	}
}

static bool mech_is(const char *m)
{
	return strcmp(mech, m) == 0;
}

static void run_one(int safepoints)
{
	struct jf_config cfg;
	uint64_t ps, psig, pre;
	bool preemptible = safepoints || pt_is_signal(mech);

	pt_config(&cfg, 1, NAME, true);
	cfg.quantum_ns = quantum_ns;
	a_safepoints = safepoints;
	a_limit_ns = preemptible ? 2 * PT_S : 50 * PT_MS;
	rounds = preemptible ? ROUNDS : 1;
	jft_run(&cfg, run_main, NULL);

	pre = st1.preempts - st0.preempts;
	ps = st1.preempts_safepoint - st0.preempts_safepoint;
	psig = st1.preempts_signal - st0.preempts_signal;
	printf("%s [%s]: A %s safepoints, %d rounds: B ran %s A stopped, at most %.1f us after A "
	       "started (quantum %llu us, grace %llu us); preempts %llu: at safepoints %llu, by "
	       "signal %llu\n",
	       NAME, mech, safepoints ? "with" : "without", rounds,
	       atomic_load(&b_saw_a) ? "before" : "after", (double)worst_delay_ns / 1e3,
	       (unsigned long long)(quantum_ns / PT_US), (unsigned long long)(grace_ns / PT_US),
	       (unsigned long long)pre, (unsigned long long)ps, (unsigned long long)psig);
	fflush(stdout);
	CHECK_GE(pre, ps + psig);
	if (!preemptible) {
		/* Only a safepoint can preempt under safepoint and deadline: A ran to its end. */
		CHECK(!atomic_load(&b_saw_a));
		CHECK_EQ(ares.b_seen_at_iter, 0);
		CHECK_EQ(pre, 0);
		return;
	}
	CHECK(worst_delay_ns <= 100 * PT_MS);
	CHECK_GE(pre, rounds);
	if (!safepoints || mech_is("timer") || mech_is("dispatcher") ||
	    (mech_is("auto") && strcmp(jf_clock_source(), "tsc") != 0)) {
		/* Only a signal can reach A (or the mechanism has nothing else; "auto" without the
		 * TSC is "timer"). */
		CHECK_GE(psig, rounds);
		CHECK_EQ(ps, 0);
	} else if (mech_is("hybrid")) {
		/* Its timer thread may wake after q + grace and signal at once: either path. */
		CHECK_GE(ps + psig, rounds);
	} else {
		/* A reached a safepoint every microsecond: they took its preemptions (under auto
		 * the signal is a fallback, taken only when a stall outlasts the grace period). */
		CHECK_GE(ps, rounds / 2);
		CHECK(ps > psig);
	}
}

int main(void)
{
	struct jf_config cfg;

	mech = pt_config(&cfg, 1, NAME, true);
	quantum_ns = 100 * PT_US;
	run_one(1);
	run_one(0);
	jft_ok(NAME);
	return 0;
}
