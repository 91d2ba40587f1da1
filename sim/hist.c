/*
 * sim/hist.c - the histogram of hist.h: bucket bounds and HdrHistogram's quantile rule.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "hist.h"

/* The lowest and highest values that share bucket @i. */
static uint64_t lowest_of(uint32_t i)
{
	uint32_t b;

	if (i < 2048)
		return i;
	b = i / 1024 - 1;
	return (uint64_t)(i - 1024 * b) << b;
}

static uint64_t highest_of(uint32_t i)
{
	return i < 2048 ? i : lowest_of(i) + (UINT64_C(1) << (i / 1024 - 1)) - 1;
}

int sim_hist_init(struct sim_hist *h)
{
	h->counts = calloc(SIM_HIST_BUCKETS, sizeof(*h->counts));
	h->total = h->max_value = 0;
	h->max_idx = 0;
	return h->counts ? 0 : -ENOMEM;
}

void sim_hist_free(struct sim_hist *h)
{
	free(h->counts);
	h->counts = NULL;
}

void sim_hist_add(struct sim_hist *dst, const struct sim_hist *src)
{
	for (uint32_t i = 0; i <= src->max_idx; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	if (src->max_value > dst->max_value)
		dst->max_value = src->max_value;
	if (src->max_idx > dst->max_idx)
		dst->max_idx = src->max_idx;
}

uint64_t sim_hist_quantile(const struct sim_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (h->total == 0)
		return 0;
	if (q > 1.0)
		q = 1.0;
	want = (uint64_t)ceil(q * (double)h->total);
	if (want == 0)
		want = 1;
	for (uint32_t i = 0; i <= h->max_idx; i++) {
		seen += h->counts[i];
		if (seen >= want)
			return q == 0.0 ? lowest_of(i) : highest_of(i);
	}
	return highest_of(h->max_idx);
}

uint64_t sim_hist_max(const struct sim_hist *h)
{
	return h->total ? highest_of(sim_hist_index(h->max_value)) : 0;
}
