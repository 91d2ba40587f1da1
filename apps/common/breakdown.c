/*
 * apps/common/breakdown.c - the per-request timestamps of --breakdown and their summary
 * (breakdown.h says what each stamp is).
 */
#define _GNU_SOURCE
#include "breakdown.h"

#include <linux/sockios.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

static struct jp_bd_stamp *recs;
static size_t cap;
static atomic_size_t used;
static uint64_t split_ns;

int jp_bd_init(size_t max, uint64_t idle_split_ns)
{
	recs = calloc(max, sizeof(*recs));
	if (!recs)
		return -1;
	cap = max;
	split_ns = idle_split_ns;
	return 0;
}

bool jp_bd_enabled(void) { return recs != NULL; }

uint64_t jp_bd_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t jp_bd_arrival(int fd)
{
	struct timespec ts;
	if (ioctl(fd, SIOCGSTAMPNS, &ts) != 0)
		return jp_bd_now();
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void jp_bd_record(const struct jp_bd_stamp *s)
{
	size_t i = atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
	if (i < cap)
		recs[i] = *s;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_arrival(const void *a, const void *b)
{
	uint64_t x = ((const struct jp_bd_stamp *)a)->arrival, y = ((const struct jp_bd_stamp *)b)->arrival;
	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

/* One line: percentiles of segment @seg over the requests of group @group (-1 all). */
static void line(FILE *f, const char *prog, const char *name, int seg, int group, size_t n,
		 const uint64_t *idle, uint64_t *tmp)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct jp_bd_stamp *s = &recs[i];
		if (group >= 0 && (idle[i] >= split_ns) != (group == 1))
			continue;
		uint64_t a = seg == 0 ? s->arrival : seg == 1 ? s->received : seg == 2 ? s->started
										: s->arrival;
		uint64_t b = seg == 0 ? s->received : seg == 1 ? s->started : s->replied;
		tmp[k++] = b > a ? b - a : 0;
	}
	qsort(tmp, k, sizeof(*tmp), cmp_u64);
	fprintf(f, "%s: breakdown %-26s %-12s n=%-7zu p50=%.1f p90=%.1f p99=%.1f p99.9=%.1f "
		   "max=%.1f us\n", prog, name,
		group < 0 ? "all" : group ? "after-idle" : "busy", k, pct(tmp, k, 50),
		pct(tmp, k, 90), pct(tmp, k, 99), pct(tmp, k, 99.9), k ? (double)tmp[k - 1] / 1e3 : 0);
}

void jp_bd_report(FILE *f, const char *prog)
{
	size_t n = atomic_load(&used);
	if (!recs)
		return;
	if (n > cap)
		n = cap;
	uint64_t *idle = calloc(n ? n : 1, sizeof(*idle)), *tmp = calloc(n ? n : 1, sizeof(*tmp));
	if (!idle || !tmp)
		goto out;
	/* Idle time before each arrival: since the latest reply of any request that arrived before
	 * it. The records are in reply order; the report needs arrival order. */
	qsort(recs, n, sizeof(*recs), cmp_arrival);
	uint64_t last_reply = 0;
	for (size_t k = 0; k < n; k++) {
		idle[k] = last_reply && recs[k].arrival > last_reply ? recs[k].arrival - last_reply : 0;
		if (recs[k].replied > last_reply)
			last_reply = recs[k].replied;
	}
	fprintf(f, "%s: breakdown of %zu requests (idle split at %.0f us)\n", prog, n,
		(double)split_ns / 1e3);
	static const char *names[] = {"kernel->receiver", "receiver->handler", "handler->reply",
				      "kernel->reply"};
	for (int seg = 0; seg < 4; seg++)
		for (int g = -1; g <= 1; g++)
			line(f, prog, names[seg], seg, g, n, idle, tmp);
out:
	free(idle);
	free(tmp);
}
