/*
 * sim/hist.h - a log-bucketed histogram with HdrHistogram's buckets and quantile rule.
 *
 * Owns: recording values (latencies in ns, slowdowns in thousandths) and reading percentiles
 * from them. The buckets are those of an HdrHistogram with 3 significant digits and unit 1 (the
 * configuration jiffy-load uses): values below 2048 are exact, above that each power-of-two
 * range is split into 1024 sub-buckets, so a value is known within 1/1024 (< 0.1 %); a quantile
 * is the highest value equivalent to the bucket where the cumulative count first reaches
 * ceil(q * total), as HdrHistogram's value_at_quantile() returns it. Simulated and measured
 * percentiles are thus read the same way.
 * Why not exact percentiles from sorted samples: 16 bytes per request and an O(n log n) sort
 * would cost more than the simulation itself at 5 M requests/s; 0.1 % is far inside every
 * tolerance we check (2 %).
 * Invariant: values above SIM_HIST_MAX are recorded as SIM_HIST_MAX (saturating, like
 * jiffy-load's saturating_record).
 */
#ifndef JIFFY_SIM_HIST_H
#define JIFFY_SIM_HIST_H

#include <stdint.h>

#define SIM_HIST_SUB_BITS 11                          /* 2048 sub-buckets: 3 digits */
#define SIM_HIST_MAX ((UINT64_C(1) << 51) - 1)        /* 26 days in ns */
#define SIM_HIST_BUCKETS (1024 * (51 - SIM_HIST_SUB_BITS) + 2048)

struct sim_hist {
	uint64_t *counts; /* SIM_HIST_BUCKETS entries, or NULL before sim_hist_init() */
	uint64_t total;
	uint64_t max_value;
	uint32_t max_idx;
};

static inline uint32_t sim_hist_index(uint64_t v)
{
	int b;

	if (v < 2048)
		return (uint32_t)v;
	if (v > SIM_HIST_MAX)
		v = SIM_HIST_MAX;
	b = 63 - __builtin_clzll(v) - (SIM_HIST_SUB_BITS - 1);
	return (uint32_t)(1024u * (unsigned)b + (uint32_t)(v >> b));
}

/** sim_hist_record() - count @v once. */
static inline void sim_hist_record(struct sim_hist *h, uint64_t v)
{
	uint32_t i = sim_hist_index(v);

	h->counts[i]++;
	h->total++;
	if (v > h->max_value)
		h->max_value = v > SIM_HIST_MAX ? SIM_HIST_MAX : v;
	if (i > h->max_idx)
		h->max_idx = i;
}

/** sim_hist_init() - an empty histogram. Return: 0 or -ENOMEM. */
int sim_hist_init(struct sim_hist *h);
void sim_hist_free(struct sim_hist *h);
/** sim_hist_add() - add @src's counts to @dst (both initialised). */
void sim_hist_add(struct sim_hist *dst, const struct sim_hist *src);
/** sim_hist_quantile() - HdrHistogram's value_at_quantile(@q) (0 when empty). */
uint64_t sim_hist_quantile(const struct sim_hist *h, double q);
/** sim_hist_max() - the highest value equivalent to the largest recorded (HdrHistogram's max). */
uint64_t sim_hist_max(const struct sim_hist *h);

#endif /* JIFFY_SIM_HIST_H */
