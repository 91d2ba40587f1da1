/*
 * preempt/test_disable.c - proves that jf_preempt_disable()/jf_preempt_enable() make a
 * non-preemptible region that nests and that the preemption falling due inside it is deferred,
 * not lost: on 1 worker, uthread A enters a region twice nested and computes for 5 quanta while
 * uthread B, which is runnable all the time and records the time whenever it runs, must not run:
 * not while the region is nested, not after the inner jf_preempt_enable(), not when A calls
 * jf_safepoint() inside the region (under "safepoint" and "hybrid" the flag is up by then). After
 * the outermost jf_preempt_enable() B runs soon (within 1 s even on a loaded machine; under the
 * signal mechanisms the deferred preemption is normally taken inside that very call, which must
 * happen in at least one of the 50 regions). Under the signal mechanisms the workers count the
 * deferrals (stats preempt_deferred >= 1).
 */
#include "pt_common.h"

#define NAME "preempt.disable"
#define CYCLES 50
#define RING 4096

static const char *mech;
static uint64_t quantum_ns;
static atomic_int stop;
static atomic_ullong b_iters;
/* B's resumption times: when it notices that it had not run for a while. */
static atomic_ullong b_runs[RING];
static atomic_uint b_nruns;

static void *b_fn(void *arg)
{
	uint64_t prev = jf_now_ns(), x = 5;

	(void)arg;
	atomic_store(&b_runs[atomic_fetch_add(&b_nruns, 1) % RING], prev);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t now = jf_now_ns();

		if (now - prev > 10 * PT_US)
			atomic_store(&b_runs[atomic_fetch_add(&b_nruns, 1) % RING], now);
		prev = now;
		x = pt_work(x, 16);
		atomic_fetch_add_explicit(&b_iters, 1, memory_order_relaxed);
		jf_safepoint();
	}
	return (void *)(uintptr_t)(x | 1);
}

/* Compute for @ns, calling jf_safepoint() all along; B must not run meanwhile. */
static uint64_t compute_in_region(uint64_t ns, uint64_t b_before, int cycle, const char *where)
{
	uint64_t t0 = jf_now_ns(), x = 7;

	while (jf_now_ns() - t0 < ns) {
		x = pt_work(x, 100);
		jf_safepoint();
		if (atomic_load_explicit(&b_iters, memory_order_relaxed) != b_before) {
			fprintf(stderr, "%s [%s]: cycle %d: B ran %s\n", NAME, mech, cycle, where);
			CHECK(!"preempted inside a jf_preempt_disable() region");
		}
	}
	return x;
}

/* Compute (with safepoints) until B has run since @b_before; Return: how long that took. */
static uint64_t wait_for_b(uint64_t b_before, int cycle, const char *after)
{
	uint64_t t0 = jf_now_ns(), x = 3;

	while (atomic_load_explicit(&b_iters, memory_order_relaxed) == b_before) {
		x = pt_work(x, 100);
		jf_safepoint();
		if (jf_now_ns() - t0 > PT_S) {
			fprintf(stderr, "%s [%s]: cycle %d: B did not run within 1 s %s\n", NAME,
				mech, cycle, after);
			CHECK(!"deferred preemption lost");
		}
	}
	__asm__ volatile("" : : "r"(x));
	return jf_now_ns() - t0;
}

static void *a_fn(void *arg)
{
	struct jf_worker_stats st0, st;
	uint64_t max_latency = 0, sum_latency = 0;
	int cycle, immediate = 0;
	jf_thread_t *b;

	(void)arg;
	st0 = pt_stats();
	b = jft_spawn_on(0, b_fn, NULL);
	wait_for_b(0, -1, "after it was spawned");
	for (cycle = 0; cycle < CYCLES; cycle++) {
		uint64_t snap, t_start, t_end, lat;
		unsigned runs_before, i;

		/* B has just run, so it is queued behind A again. */
		wait_for_b(atomic_load(&b_iters), cycle, "between regions");
		snap = atomic_load(&b_iters);
		runs_before = atomic_load(&b_nruns);
		t_start = jf_now_ns();

		jf_preempt_disable();
		jf_preempt_disable();
		compute_in_region(3 * quantum_ns, snap, cycle, "inside the nested region");
		jf_preempt_enable();
		CHECK_EQ(atomic_load(&b_iters), snap);
		compute_in_region(2 * quantum_ns, snap, cycle, "after the inner jf_preempt_enable()");
		t_end = jf_now_ns();
		jf_preempt_enable();

		if (atomic_load(&b_iters) != snap)
			immediate++;
		lat = wait_for_b(snap, cycle, "after the outermost jf_preempt_enable()");
		sum_latency += lat;
		if (lat > max_latency)
			max_latency = lat;
		/* None of B's recorded run times falls into the region. */
		for (i = runs_before; i != atomic_load(&b_nruns); i++) {
			uint64_t t = atomic_load(&b_runs[i % RING]);

			if (t >= t_start && t <= t_end) {
				fprintf(stderr, "%s [%s]: cycle %d: B ran at +%llu ns in a region of "
						"%llu ns\n",
					NAME, mech, cycle, (unsigned long long)(t - t_start),
					(unsigned long long)(t_end - t_start));
				CHECK(!"B ran inside a jf_preempt_disable() region");
			}
		}
	}
	atomic_store(&stop, 1);
	jft_join(b);

	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	printf("%s [%s]: %d regions of 5 quanta (%llu us): B ran inside jf_preempt_enable() after "
	       "%d, later after the others; until B ran: mean %.1f us, max %.1f us\n",
	       NAME, mech, CYCLES, (unsigned long long)(5 * quantum_ns / PT_US), immediate,
	       (double)sum_latency / CYCLES / 1e3, (double)max_latency / 1e3);
	if (pt_is_signal(mech)) {
		CHECK_GE(st.preempt_deferred - st0.preempt_deferred, 1);
		CHECK_GE(immediate, 1);
	}
	CHECK_GE(st.preempts - st0.preempts, CYCLES);
	return NULL;
}

static void *main_fn(void *arg)
{
	(void)arg;
	CHECK(strcmp(jf_preempt_mechanism(), mech) == 0);
	jft_join(jft_spawn_on(0, a_fn, NULL));
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	mech = pt_config(&cfg, 1, NAME, true);
	quantum_ns = 200 * PT_US;
	cfg.quantum_ns = quantum_ns;
	jft_run(&cfg, main_fn, NULL);
	jft_ok(NAME);
	return 0;
}
