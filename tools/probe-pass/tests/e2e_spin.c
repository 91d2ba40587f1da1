/*
 * e2e_spin.c - end to end: a loop without a single jf_safepoint() call is preempted once the
 * probe pass has compiled it.
 *
 * Owns: the program check-e2e.sh runs twice, built from this one file with and without the
 * plugin (tools/probe-pass/CMakeLists.txt). On one worker, uthread A spawns B, then spins in a
 * plain hash loop (~200 ms); B only notes the time it ran. With the probes, under "deadline" and
 * a 50 us quantum, A is preempted at a probe and B runs long before A finishes; without them, B
 * runs only after A. A's checksum must be the same in both builds: a probe and a preemption
 * change no result.
 * Usage: e2e_spin preempted|not-preempted [iterations]   (exit 0: the expectation held)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

static uint64_t iterations = 150000000;
static uint64_t a_start_ns, a_end_ns, b_ns, checksum;

/* FNV-1a over the low bytes of a counter: serial, not vectorizable, no closed form. */
__attribute__((noinline)) static uint64_t spin_hash(uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ (i & 0xff)) * 0x100000001b3ull;
	return h;
}

static void *b_main(void *arg)
{
	b_ns = jf_now_ns();
	return arg;
}

static void *a_main(void *arg)
{
	jf_thread_t *b;
	if (jf_spawn(&b, NULL, b_main, NULL) != 0)
		return (void *)1;
	a_start_ns = jf_now_ns();
	checksum = spin_hash(iterations);
	a_end_ns = jf_now_ns();
	jf_join(b, NULL);
	return arg;
}

static void *app_main(void *arg)
{
	jf_thread_t *a;
	struct jf_worker_stats st;
	(void)arg;
	if (jf_spawn(&a, NULL, a_main, NULL) != 0 || jf_join(a, NULL) != 0)
		return (void *)1;
	if (jf_stats_total(&st) != 0)
		return (void *)1;
	return (void *)(uintptr_t)st.preempts;
}

int main(int argc, char **argv)
{
	void *ret = NULL;
	if (argc < 2 || (strcmp(argv[1], "preempted") && strcmp(argv[1], "not-preempted"))) {
		fprintf(stderr, "usage: %s preempted|not-preempted [iterations]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		iterations = strtoull(argv[2], NULL, 0);
	if (jf_run(NULL, app_main, NULL, &ret) != 0) {
		fprintf(stderr, "e2e_spin: jf_run failed\n");
		return 1;
	}
	uint64_t preempts = (uint64_t)(uintptr_t)ret;
	double a_ms = (a_end_ns - a_start_ns) / 1e6;
	double b_ms = ((double)b_ns - (double)a_start_ns) / 1e6; /* < 0: before A spun */
	printf("checksum=%016" PRIx64 " a_ms=%.1f b_at_ms=%.3f preempts=%" PRIu64 "\n", checksum,
	       a_ms, b_ms, preempts);
	if (!strcmp(argv[1], "preempted")) {
		/* B within the first half of A's run, and the runtime counted the preemption. */
		if (b_ns > a_start_ns && b_ms < a_ms / 2 && preempts > 0)
			return 0;
		fprintf(stderr, "e2e_spin: A was not preempted early (B at %.3f ms of %.1f ms, "
				"%" PRIu64 " preemptions)\n", b_ms, a_ms, preempts);
		return 1;
	}
	if (b_ns >= a_end_ns && preempts == 0)
		return 0;
	fprintf(stderr, "e2e_spin: B ran at %.3f ms of A's %.1f ms with %" PRIu64 " preemptions\n",
		b_ms, a_ms, preempts);
	return 1;
}
