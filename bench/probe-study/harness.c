/*
 * bench/probe-study/harness.c - runs one program's work() under Jiffy and measures preemption.
 *
 * Owns: the measurement of one run (docs/probe-study.md). Inside jf_run() with one worker,
 * uthread A runs work() and uthread B is always runnable on the same worker: B records
 * jf_now_ns() into a preallocated array and yields, nothing else. So whenever A is preempted the
 * worker switches to B and, at B's yield, back to A; the gaps between consecutive stamps (with
 * A's start and end as the first and last) are A's run lengths: the preemption interval. Under
 * JIFFY_PREEMPT=none, A runs to completion and the only gap is the whole run (the baseline).
 * Prints one JSON line on stdout.
 *
 * Invariants: this file and Jiffy are compiled without probes (only the drivers and their
 * libraries get them), so B's loop costs the same in both builds. The configuration comes from
 * the environment (jf_run(NULL, ...)); JIFFY_WORKERS must be 1 (set here when unset), or A and B
 * would run side by side and nothing would be measured.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jiffy/jiffy.h>

#include "study.h"

#ifndef STUDY_BUILD
#error "compile with -DSTUDY_BUILD=\"plain\" or \"probes\""
#endif

/* Enough stamps for ~20 s at a 5 us quantum; a run that fills them is reported, not cut. */
#define MAX_STAMPS (4u << 20)

static uint64_t *stamps;
static uint32_t nstamps;
static int stamps_overflow;
static int a_started, a_done; /* one worker: A and B never run at the same time */
static uint64_t a_start_ns, a_end_ns, checksum;
static struct jf_worker_stats stats;
static struct jf_preempt_stats pstats;
static char mechanism[32] = "?";

static void *run_a(void *arg)
{
	(void)arg;
	a_start_ns = jf_now_ns();
	__atomic_store_n(&a_started, 1, __ATOMIC_RELEASE);
	checksum = work();
	a_end_ns = jf_now_ns();
	__atomic_store_n(&a_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *run_b(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&a_done, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&a_started, __ATOMIC_ACQUIRE)) {
			uint64_t now = jf_now_ns();
			if (nstamps < MAX_STAMPS)
				stamps[nstamps++] = now;
			else
				stamps_overflow = 1;
		}
		jf_yield();
	}
	return NULL;
}

static void *app_main(void *arg)
{
	(void)arg;
	if (jf_nworkers() != 1) {
		fprintf(stderr, "probe-study: needs one worker (JIFFY_WORKERS=1), has %d\n",
			jf_nworkers());
		return (void *)1;
	}
	struct jf_attr attr_a, attr_b;
	jf_attr_init(&attr_a);
	attr_a.stack_size = 8u << 20; /* SQLite and Lua recurse */
	attr_a.name = "work";
	jf_attr_init(&attr_b);
	attr_b.name = "stamp";
	jf_thread_t *a, *b;
	if (jf_spawn(&b, &attr_b, run_b, NULL) || jf_spawn(&a, &attr_a, run_a, NULL)) {
		fprintf(stderr, "probe-study: jf_spawn failed\n");
		return (void *)1;
	}
	jf_join(a, NULL);
	jf_join(b, NULL);
	jf_stats_total(&stats);
	jf_preempt_stats(&pstats);
	snprintf(mechanism, sizeof(mechanism), "%s", jf_preempt_mechanism());
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/*
 * The gaps A ran for: A's start, B's stamps, A's end. Returns how many (sorted, in @gap); @max_at
 * receives where the longest began, in ns after A's start (where the probes left a hole).
 */
static size_t intervals(uint64_t *gap, uint64_t *max_at)
{
	size_t n = 0;
	uint64_t prev = a_start_ns, longest = 0;
	for (uint32_t i = 0; i <= nstamps; i++) {
		uint64_t t = i < nstamps ? stamps[i] : a_end_ns; /* gap may be stamps: read first */
		if (t - prev > longest) {
			longest = t - prev;
			*max_at = prev - a_start_ns;
		}
		gap[n++] = t - prev;
		prev = t;
	}
	qsort(gap, n, sizeof(*gap), cmp_u64);
	return n;
}

/* Mean and standard deviation of the gaps, in us (Aspen Fig. 2 reports the deviation). */
static void mean_sd_us(const uint64_t *gap, size_t n, double *mean, double *sd)
{
	double sum = 0, sq = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)gap[i];
	*mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += ((double)gap[i] - *mean) * ((double)gap[i] - *mean);
	*sd = (n > 1 ? __builtin_sqrt(sq / (double)(n - 1)) : 0) / 1e3;
	*mean /= 1e3;
}

static double pct_us(const uint64_t *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return (double)sorted[i] / 1e3;
}

/*
 * Counting the probes a run executes (--count-probes). The pass has no counting mode, so the
 * harness counts at the one place every probe can be made to reach: every binary is linked with
 * -Wl,--wrap=jf__probe_armed. A probe whose poll word is armed counts jf__preempt.probe_left
 * down and calls jf__probe_armed() when it reaches 0; with the word forced to 1 outside the
 * runtime and the count kept at 0, every probe lands in __wrap_jf__probe_armed, which counts it
 * by call site. Otherwise the wrapper only forwards: it is on the armed path (a few calls per
 * quantum while work waits), never on the path of a probe that finds the word 0.
 * Sites are offsets from the executable's start (what nm prints for this PIE binary).
 */
void __real_jf__probe_armed(void);
void __wrap_jf__probe_armed(void);
extern const char __executable_start[];

#define SITE_SLOTS 8192 /* a power of two */
#define TOP_SITES 12
struct site {
	uintptr_t pc; /* 0: free */
	uint64_t n;
};
static struct site *sites;
static uint64_t probes_counted, probes_unsited;
static int counting_probes;

__attribute__((noinline)) void __wrap_jf__probe_armed(void)
{
	if (!counting_probes) {
		__real_jf__probe_armed();
		return;
	}
	probes_counted++;
	jf__preempt.probe_left = 0; /* the next probe comes here too */
	uintptr_t pc = (uintptr_t)__builtin_return_address(0) - (uintptr_t)__executable_start;
	for (uintptr_t i = (pc * 0x9e3779b97f4a7c15ull) >> 51, tries = 0; tries < 64;
	     i = (i + 1) & (SITE_SLOTS - 1), tries++) {
		if (sites[i].pc == pc || !sites[i].pc) {
			sites[i].pc = pc;
			sites[i].n++;
			return;
		}
	}
	probes_unsited++;
}

static int cmp_site(const void *x, const void *y)
{
	const struct site *a = x, *b = y;
	return a->n < b->n ? 1 : a->n > b->n ? -1 : (a->pc > b->pc) - (a->pc < b->pc);
}

static int count_probes(void)
{
	study_prepare();
	sites = study_alloc(sizeof(*sites) * SITE_SLOTS);
	jf__preempt.poll = 1;
	jf__preempt.probe_left = 0;
	counting_probes = 1;
	uint64_t t0 = jf_now_ns();
	uint64_t sum = work();
	uint64_t t1 = jf_now_ns();
	counting_probes = 0;
	jf__preempt.poll = 0;
	size_t nsites = 0;
	for (size_t i = 0; i < SITE_SLOTS; i++)
		if (sites[i].pc)
			sites[nsites++] = sites[i];
	qsort(sites, nsites, sizeof(*sites), cmp_site);
	printf("{\"program\":\"%s\",\"build\":\"%s\",\"mechanism\":\"count\",\"checksum\":"
	       "\"%016" PRIx64 "\",\"probes\":%" PRIu64 ",\"probe_sites_run\":%zu,"
	       "\"elapsed_counting_ns\":%" PRIu64 ",\"top_sites\":[",
	       study_program, STUDY_BUILD, sum, probes_counted, nsites, t1 - t0);
	for (size_t i = 0; i < nsites && i < TOP_SITES; i++)
		printf("%s[\"%#lx\",%" PRIu64 "]", i ? "," : "", (unsigned long)sites[i].pc, sites[i].n);
	printf("],\"probes_unsited\":%" PRIu64 "}\n", probes_unsited);
	return 0;
}

/* Prints 1 and returns 0 when mechanism @name exists and can run here; 0 otherwise. */
static int available(const char *name)
{
	char why[256] = "";
	int r = jf_preempt_available(name, why, sizeof(why));
	printf("%d\n", r == 1);
	if (r != 1)
		fprintf(stderr, "probe-study: '%s' %s%s\n", name,
			r < 0 ? "is not a mechanism of this Jiffy" : "is unavailable: ", why);
	return r == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--available"))
		return available(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "--count-probes"))
		return count_probes();
	if (argc != 1) {
		fprintf(stderr,
			"usage: %s [--available MECHANISM | --count-probes]\n"
			"  runs %s's work() under Jiffy (JIFFY_* from the environment) and prints a\n"
			"  JSON line; --count-probes runs it outside the runtime, counting probes\n",
			argv[0], study_program);
		return 2;
	}
	setenv("JIFFY_WORKERS", "1", 0);
	study_prepare();
	stamps = study_alloc((MAX_STAMPS + 1) * sizeof(*stamps)); /* + A's end */

	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	void *ret = NULL;
	int rc = jf_run(NULL, app_main, NULL, &ret);
	getrusage(RUSAGE_SELF, &ru1);
	if (rc || ret) {
		fprintf(stderr, "probe-study: jf_run: %s\n", rc ? strerror(-rc) : "failed");
		return 1;
	}
	uint64_t *gap = stamps; /* sorted in place: the stamps are not needed after this */
	uint64_t max_at = 0;
	size_t n = intervals(gap, &max_at);
	double mean, sd;
	mean_sd_us(gap, n, &mean, &sd);
	printf("{\"program\":\"%s\",\"build\":\"%s\",\"mechanism\":\"%s\",\"quantum_us\":%.0f,"
	       "\"elapsed_ns\":%" PRIu64 ",\"checksum\":\"%016" PRIx64 "\","
	       "\"preempts\":%" PRIu64 ",\"preempt_requests\":%" PRIu64
	       ",\"preempt_deferred\":%" PRIu64 ",\"preempt_skipped\":%" PRIu64
	       ",\"preempts_safepoint\":%" PRIu64 ",\"preempts_signal\":%" PRIu64
	       ",\"switches\":%" PRIu64 ",\"intervals\":%zu,\"interval_p50_us\":%.2f,"
	       "\"interval_p99_us\":%.2f,\"interval_max_us\":%.2f,\"interval_max_at_ms\":%.3f,"
	       "\"interval_mean_us\":%.2f,\"interval_sd_us\":%.2f,\"stamps_overflow\":%s,"
	       "\"involuntary_switches\":%ld}\n",
	       study_program, STUDY_BUILD, mechanism,
	       (double)pstats.quantum_ns / 1e3, a_end_ns - a_start_ns, checksum, stats.preempts,
	       stats.preempt_requests, stats.preempt_deferred, stats.preempt_skipped,
	       stats.preempts_safepoint, stats.preempts_signal, stats.switches, n,
	       pct_us(gap, n, 0.50), pct_us(gap, n, 0.99), pct_us(gap, n, 1.0),
	       (double)max_at / 1e6, mean, sd, stamps_overflow ? "true" : "false",
	       ru1.ru_nivcsw - ru0.ru_nivcsw);
	return 0;
}
