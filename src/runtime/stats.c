/*
 * stats.c - reading, resetting and printing the per-worker counters and histograms (see
 * jiffy/stats.h). A reset records a baseline that reads subtract: the workers never see it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#define FIELDS(X)                                                                                \
	X(switches) X(spawns) X(tasks_done) X(yields) X(blocks) X(wakeups) X(steals) X(parks)    \
	X(unparks) X(timers) X(idle_ns) X(preempt_requests) X(preempts) X(preempt_skipped)          \
	X(preempt_deferred) X(wakeup_preempts) X(netpolls) X(preempts_safepoint) X(preempts_signal) \
	X(preempt_lock_deferred) X(netpoll_irqs) X(netpoll_irq_wakeups)

static void read_raw(const struct worker *w, struct jf_worker_stats *out)
{
#define READ(f) out->f = __atomic_load_n(&w->stats.f, __ATOMIC_RELAXED);
	FIELDS(READ)
#undef READ
}

/* What worker @w counted since the last jf_stats_reset(). */
static void read_worker(const struct worker *w, struct jf_worker_stats *out)
{
	const struct jf_worker_stats *base = &jf_rt->stats_base[w->id];

	read_raw(w, out);
#define SUB(f) out->f -= __atomic_load_n(&base->f, __ATOMIC_RELAXED);
	FIELDS(SUB)
#undef SUB
}

static void hist_read_raw(const struct jf_hist *h, struct jf_hist *out)
{
	for (unsigned i = 0; i < JF_HIST_BUCKETS; i++)
		out->buckets[i] = __atomic_load_n(&h->buckets[i], __ATOMIC_RELAXED);
}

static uint64_t bucket_high(unsigned i);

/* Fill @h's count and sum from its buckets (a value counts as its bucket's midpoint). */
static void hist_totals(struct jf_hist *h)
{
	h->count = h->sum_ns = 0;
	for (unsigned i = 0; i < JF_HIST_BUCKETS; i++) {
		uint64_t lo = jf_hist_bucket_low(i), hi = bucket_high(i);
		if (i + 1 == JF_HIST_BUCKETS)
			hi = lo;
		h->count += h->buckets[i];
		h->sum_ns += h->buckets[i] * (lo + (hi - lo) / 2);
	}
}

/* Add histogram @kind of worker @w since the last reset to @acc (buckets only). */
static void hist_accumulate(const struct worker *w, enum jf_hist_kind kind, struct jf_hist *acc)
{
	const struct jf_hist *h = &w->hist[kind];
	const struct jf_hist *base = &jf_rt->hist_base[(size_t)w->id * JF_HIST_NR + kind];

	for (unsigned i = 0; i < JF_HIST_BUCKETS; i++)
		acc->buckets[i] += __atomic_load_n(&h->buckets[i], __ATOMIC_RELAXED) -
				   __atomic_load_n(&base->buckets[i], __ATOMIC_RELAXED);
}

int jf_stats_hist(int w, enum jf_hist_kind kind, struct jf_hist *out)
{
	struct runtime *rt = jf_rt;

	if (!rt)
		return -ESRCH;
	if (w < -1 || w >= rt->nworkers || (unsigned)kind >= JF_HIST_NR || !out)
		return -EINVAL;
	if (kind <= JF_HIST_RUN_LENGTH && !rt->workers[0].hist_on)
		return -ENODATA; /* the switch path's two: only when asked for (runtime.c) */
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < rt->nworkers; i++)
		if (w < 0 || w == i)
			hist_accumulate(&rt->workers[i], kind, out);
	hist_totals(out);
	return 0;
}

uint64_t jf_hist_bucket_low(unsigned i)
{
	unsigned msb;

	if (i >= JF_HIST_BUCKETS)
		return 0;
	if (i < (1u << JF_HIST_SUB_BITS))
		return i;
	msb = (i >> JF_HIST_SUB_BITS) - 1 + JF_HIST_SUB_BITS;
	return ((uint64_t)(1u << JF_HIST_SUB_BITS) + (i & ((1u << JF_HIST_SUB_BITS) - 1)))
	       << (msb - JF_HIST_SUB_BITS);
}

/* The highest value bucket @i holds. */
static uint64_t bucket_high(unsigned i)
{
	if (i + 1 >= JF_HIST_BUCKETS)
		return UINT64_MAX;
	return jf_hist_bucket_low(i + 1) - 1;
}

uint64_t jf_hist_percentile(const struct jf_hist *h, double pct)
{
	uint64_t total = 0, rank, seen = 0;

	if (!h)
		return 0;
	for (unsigned i = 0; i < JF_HIST_BUCKETS; i++)
		total += h->buckets[i];
	if (!total)
		return 0;
	if (!(pct > 0)) /* also NaN */
		pct = 0;
	if (pct > 100)
		pct = 100;
	rank = (uint64_t)(pct / 100.0 * (double)total + 0.5);
	if (rank < 1)
		rank = 1;
	if (rank > total)
		rank = total;
	for (unsigned i = 0; i < JF_HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			return bucket_high(i);
	}
	return bucket_high(JF_HIST_BUCKETS - 1);
}

const char *jf_hist_name(enum jf_hist_kind kind)
{
	static const char *const names[JF_HIST_NR] = {
		[JF_HIST_RUNNABLE_DELAY] = "runnable_delay",
		[JF_HIST_RUN_LENGTH] = "run_length",
		[JF_HIST_LATENESS_SAFEPOINT] = "late_safepoint",
		[JF_HIST_LATENESS_SIGNAL] = "late_signal",
		[JF_HIST_LATENESS_OTHER] = "late_other",
	};
	return (unsigned)kind < JF_HIST_NR ? names[kind] : "?";
}

int jf_stats_reset(void)
{
	struct runtime *rt = jf_rt;
	struct jf_worker_stats now;
	struct jf_hist h;

	if (!rt)
		return -ESRCH;
	for (int i = 0; i < rt->nworkers; i++) {
		const struct worker *w = &rt->workers[i];
		struct jf_worker_stats *b = &rt->stats_base[i];

		read_raw(w, &now);
#define SET(f) __atomic_store_n(&b->f, now.f, __ATOMIC_RELAXED);
		FIELDS(SET)
#undef SET
		for (int k = 0; k < JF_HIST_NR; k++) {
			struct jf_hist *hb = &rt->hist_base[(size_t)i * JF_HIST_NR + k];
			hist_read_raw(&w->hist[k], &h);
			for (unsigned j = 0; j < JF_HIST_BUCKETS; j++)
				__atomic_store_n(&hb->buckets[j], h.buckets[j], __ATOMIC_RELAXED);
		}
	}
	return 0;
}

/* One line of percentiles of @h under @label. */
static void print_hist_row(FILE *out, const char *label, const struct jf_hist *h)
{
	static const double pcts[] = {50, 90, 99, 99.9};

	fprintf(out, "%-8s %12" PRIu64 " %12" PRIu64, label, h->count,
		h->count ? h->sum_ns / h->count : 0);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		fprintf(out, " %12" PRIu64, jf_hist_percentile(h, pcts[i]));
	fprintf(out, " %12" PRIu64 "\n", jf_hist_percentile(h, 100));
}

static void print_hists(FILE *out)
{
	struct runtime *rt = jf_rt;
	struct jf_hist *h = malloc(sizeof(*h));

	if (!h)
		return;
	for (int k = 0; k < JF_HIST_NR; k++) {
		if (jf_stats_hist(-1, (enum jf_hist_kind)k, h) != 0)
			continue; /* not recorded in this runtime (JIFFY_HIST) */
		if (!h->count && k >= JF_HIST_LATENESS_SAFEPOINT)
			continue; /* a path this run's mechanism never took */
		fprintf(out, "jiffy: histogram %s (ns)%s\n%-8s %12s %12s %12s %12s %12s %12s %12s\n",
			jf_hist_name((enum jf_hist_kind)k),
			k >= JF_HIST_LATENESS_SAFEPOINT ? " [taken - due]" : "", "worker", "count",
			"mean", "p50", "p90", "p99", "p99.9", "max");
		for (int i = 0; i < rt->nworkers; i++) {
			char label[16];
			jf_stats_hist(i, (enum jf_hist_kind)k, h);
			snprintf(label, sizeof(label), "%d", i);
			print_hist_row(out, label, h);
		}
		jf_stats_hist(-1, (enum jf_hist_kind)k, h);
		print_hist_row(out, "total", h);
	}
	free(h);
}

int jf_stats_worker(int w, struct jf_worker_stats *out)
{
	struct runtime *rt = jf_rt;
	if (!rt)
		return -ESRCH;
	if (w < 0 || w >= rt->nworkers || !out)
		return -EINVAL;
	read_worker(&rt->workers[w], out);
	return 0;
}

int jf_stats_total(struct jf_worker_stats *out)
{
	struct runtime *rt = jf_rt;
	struct jf_worker_stats one;
	if (!rt)
		return -ESRCH;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < rt->nworkers; i++) {
		read_worker(&rt->workers[i], &one);
#define ADD(f) out->f += one.f;
		FIELDS(ADD)
#undef ADD
	}
	return 0;
}

void jf_stats_print(FILE *out)
{
	struct runtime *rt = jf_rt;
	struct jf_worker_stats s, total;

	if (!rt)
		return;
	fprintf(out, "jiffy: configuration\n");
	jf_config_print(&rt->cfg, out);
	fprintf(out, "jiffy: counters\n%-8s", "worker");
#define HDR(f) fprintf(out, " %12s", #f);
	FIELDS(HDR)
#undef HDR
	fputc('\n', out);
	for (int i = 0; i < rt->nworkers; i++) {
		read_worker(&rt->workers[i], &s);
		fprintf(out, "%-8d", i);
#define ROW(f) fprintf(out, " %12" PRIu64, s.f);
		FIELDS(ROW)
#undef ROW
		fputc('\n', out);
	}
	jf_stats_total(&total);
	fprintf(out, "%-8s", "total");
#define TOT(f) fprintf(out, " %12" PRIu64, total.f);
	FIELDS(TOT)
#undef TOT
	fputc('\n', out);
	print_hists(out);
	jf_blocking_print(out);
}
