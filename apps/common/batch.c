/*
 * apps/common/batch.c - the best-effort batch loop and its measurement window (batch.h).
 */
#define _GNU_SOURCE
#include "batch.h"

#include <time.h>

#include "spin.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void jp_batch_run(struct jp_batch *b, void (*check)(void))
{
	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		jp_spin_ns(JP_BATCH_UNIT_NS, check);
		atomic_fetch_add_explicit(&b->units, 1, memory_order_relaxed);
	}
}

void jp_batch_lc_seen(struct jp_batch *b)
{
	int no = 0;
	if (atomic_load_explicit(&b->seen, memory_order_relaxed))
		return;
	if (atomic_compare_exchange_strong(&b->seen, &no, 1)) {
		b->units0 = atomic_load(&b->units);
		b->t0_ns = mono_ns();
	}
}

void jp_batch_stop(struct jp_batch *b)
{
	b->units1 = atomic_load(&b->units);
	b->t1_ns = mono_ns();
	atomic_store(&b->stop, 1);
}

void jp_batch_report(const struct jp_batch *b, char *out, size_t len)
{
	double work = 0, win = 0;
	if (atomic_load(&b->seen) && b->t1_ns > b->t0_ns) {
		work = (double)(b->units1 - b->units0) * JP_BATCH_UNIT_NS / 1e9;
		win = (double)(b->t1_ns - b->t0_ns) / 1e9;
	}
	snprintf(out, len, " be_work_s=%.3f be_window_s=%.3f be_share=%.3f", work, win,
		 win > 0 ? work / win : 0.0);
}
