/*
 * sim/ps.c - "ps": ideal processor sharing on c cores, for comparison. Not a Jiffy policy: no
 * policy code runs here, and there is no mechanism and no cost.
 *
 * Model: n requests in the system share c cores equally; each progresses at rate min(1, c/n)
 * (the limit of round robin on a central queue as the time slice goes to 0, which Shinjuku's
 * simulator approximates with 0.1 us slices, §2). Exact and event-driven with a virtual clock V
 * that advances at the per-request rate: a request arriving when V = v finishes when V reaches
 * v + service, so requests finish in the order of these tags (a min-heap), and the next
 * completion is at now + (min tag - V) / rate.
 * Invariant: V and the time only move forward; the results share sim_record_*() with the
 * policy engine, so both are read the same way.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ps_job {
	double tag; /* V at which it finishes */
	uint64_t seq;
	uint64_t arrival_ns, service_ns;
	int klass;
	bool measured;
};

struct ps_heap {
	size_t n, cap;
	struct ps_job *a;
};

static bool job_less(const struct ps_job *x, const struct ps_job *y)
{
	return x->tag < y->tag || (x->tag == y->tag && x->seq < y->seq);
}

static void job_swap(struct ps_job *a, struct ps_job *b)
{
	struct ps_job t = *a;
	*a = *b;
	*b = t;
}

static int heap_push(struct ps_heap *h, const struct ps_job *j)
{
	size_t i;

	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 1024;
		struct ps_job *a = realloc(h->a, nc * sizeof(*a));
		if (!a)
			return -ENOMEM;
		h->a = a;
		h->cap = nc;
	}
	i = h->n++;
	h->a[i] = *j;
	while (i > 0 && job_less(&h->a[i], &h->a[(i - 1) / 2])) {
		job_swap(&h->a[i], &h->a[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct ps_job heap_pop(struct ps_heap *h)
{
	struct ps_job top = h->a[0];
	size_t i = 0;

	h->a[0] = h->a[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && job_less(&h->a[l], &h->a[m]))
			m = l;
		if (r < h->n && job_less(&h->a[r], &h->a[m]))
			m = r;
		if (m == i)
			return top;
		job_swap(&h->a[i], &h->a[m]);
		i = m;
	}
}

struct ps {
	const struct sim_config *cfg;
	struct sim_result *res;
	struct sim_source src;
	struct ps_heap jobs;
	double now, v;
	double busy; /* integral of min(n, c) dt */
	uint64_t measured_left, deadline;
};

static double rate(const struct ps *s)
{
	double n = (double)s->jobs.n, c = s->cfg->cores;
	return n <= c ? 1.0 : c / n;
}

/* Move the clock to @t (no event in between). */
static void advance(struct ps *s, double t)
{
	double n = (double)s->jobs.n, c = s->cfg->cores;

	if (t <= s->now)
		return;
	s->v += (t - s->now) * rate(s);
	s->busy += (t - s->now) * (n < c ? n : c);
	s->now = t;
}

static uint64_t ns(double t)
{
	return sim_round_u64(t);
}

static void ps_complete(struct ps *s)
{
	struct ps_job j = heap_pop(&s->jobs);
	uint64_t now = ns(s->now);

	if (j.measured) {
		sim_record(s->res, j.klass, now - j.arrival_ns, j.service_ns);
		s->measured_left--;
	}
	sim_record_done(s->res, &s->src, j.klass, now);
}

static int ps_arrive(struct ps *s, const struct sim_request *r)
{
	struct ps_job j = {
		.tag = s->v + (double)r->service_ns,
		.seq = r->index,
		.arrival_ns = r->at_ns,
		.service_ns = r->service_ns,
		.klass = r->klass,
		.measured = r->measured,
	};

	if (r->measured)
		sim_record_scheduled(s->res, r->klass);
	s->res->sent++;
	if (heap_push(&s->jobs, &j))
		return -ENOMEM;
	if (s->jobs.n > s->res->max_inflight)
		s->res->max_inflight = s->jobs.n;
	return 0;
}

static void record_lost(struct ps *s)
{
	for (size_t i = 0; i < s->jobs.n; i++)
		if (s->jobs.a[i].measured)
			sim_record_lost(s->res, s->jobs.a[i].klass,
					s->deadline - s->jobs.a[i].arrival_ns,
					s->jobs.a[i].service_ns);
}

int sim_ps_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen)
{
	struct ps s = {.cfg = cfg, .res = res, .now = (double)SIM_T0_NS};
	struct sim_request r;
	bool have;
	uint64_t end;

	sim_source_init(&s.src, cfg);
	s.measured_left = s.src.total - cfg->warmup;
	have = sim_source_next(&s.src, &r);
	while (s.measured_left > 0) {
		double tc = s.jobs.n ? s.now + (s.jobs.a[0].tag - s.v) / rate(&s) : INFINITY;
		double ta = have ? (double)r.at_ns : INFINITY;
		double t = ta <= tc ? ta : tc;

		if (s.src.w1_known && !s.deadline)
			s.deadline = s.src.w1 + cfg->drain_ns;
		if (t == INFINITY || (s.deadline && t > (double)s.deadline))
			break;
		res->events++;
		advance(&s, t);
		if (ta <= tc) {
			if (ps_arrive(&s, &r)) {
				free(s.jobs.a);
				snprintf(err, errlen, "out of memory for %zu requests in flight",
					 s.jobs.n);
				return -ENOMEM;
			}
			have = sim_source_next(&s.src, &r);
		} else {
			s.v = s.jobs.a[0].tag; /* exact: no rounding drift at completions */
			ps_complete(&s);
		}
	}
	end = ns(s.now);
	if (s.measured_left > 0 && s.deadline) {
		advance(&s, (double)s.deadline);
		end = s.deadline;
		record_lost(&s);
	}
	if (!s.src.w1_known)
		s.src.w1 = end;
	res->window_ns = s.src.w1 > s.src.w0 ? s.src.w1 - s.src.w0 : 1;
	res->run_ns = end - SIM_T0_NS;
	res->busy_frac = res->run_ns ? s.busy / ((double)res->run_ns * cfg->cores) : 0;
	free(s.jobs.a);
	return 0;
}
