/*
 * stats.c - reading and printing the per-worker counters (see jiffy/stats.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "runtime.h"

#define FIELDS(X)                                                                                \
	X(switches) X(spawns) X(tasks_done) X(yields) X(blocks) X(wakeups) X(steals) X(parks)    \
	X(unparks) X(timers) X(idle_ns) X(preempt_requests) X(preempts) X(preempt_skipped)          \
	X(preempt_deferred) X(wakeup_preempts) X(netpolls) X(preempts_safepoint) X(preempts_signal)

static void read_worker(const struct worker *w, struct jf_worker_stats *out)
{
#define READ(f) out->f = __atomic_load_n(&w->stats.f, __ATOMIC_RELAXED);
	FIELDS(READ)
#undef READ
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
}
