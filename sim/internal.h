/*
 * sim/internal.h - what the two engines (engine.c, ps.c) share: the request source and the
 * recording of results.
 *
 * Owns: struct sim_source, which draws the requests of a run in order (arrival time, service
 * time, class, the worker whose queue receives it, whether it will block) from the run's seed,
 * independently of the policy (each quantity from its own stream, rng.h), and fixes the
 * measured window; and the sim_record_*() helpers that fill struct sim_result the way
 * jiffy-load fills its statistics (latency floored at 1 ns; slowdown = latency / max(service,
 * 1 ns) in thousandths; lost requests recorded with latency = deadline - arrival).
 * Invariant: request i is the same in every run with the same workload and seed.
 */
#ifndef JIFFY_SIM_INTERNAL_H
#define JIFFY_SIM_INTERNAL_H

#include "rng.h"
#include "sim.h"

/* Virtual time starts here, never at 0: the runtime's "0 = not running" convention. */
#define SIM_T0_NS UINT64_C(1000000)
#define SIM_NEVER UINT64_MAX

struct sim_request {
	uint64_t index;
	uint64_t at_ns;
	uint64_t service_ns;
	int klass;
	int from;     /* the worker whose queue receives it (RSS: uniform) */
	bool blocks;  /* it will block once (cfg->block_prob) */
	bool measured;
};

struct sim_source {
	const struct sim_config *cfg;
	struct sim_rng gaps, service, placement, block;
	uint64_t next;      /* index of the next request */
	uint64_t total;     /* warmup + requests */
	double clock_ns;    /* Poisson: the last arrival, unrounded */
	double trace_scale; /* trace: time scale (1: as recorded) */
	uint64_t w0, w1;    /* the measured window [w0, w1): known once the requests reach it */
	bool w1_known;
};

void sim_source_init(struct sim_source *s, const struct sim_config *cfg);
/* The next request, or false when all have been drawn. */
bool sim_source_next(struct sim_source *s, struct sim_request *r);

/* Allocate @res's histograms for @nclasses classes. Return: 0 or -ENOMEM. */
int sim_result_init(struct sim_result *res, int nclasses);
/* A measured request of class @k completed after @lat_ns (service @svc_ns). */
void sim_record(struct sim_result *res, int k, uint64_t lat_ns, uint64_t svc_ns);
/* A measured request of class @k was still unfinished at the deadline. */
void sim_record_lost(struct sim_result *res, int k, uint64_t lat_ns, uint64_t svc_ns);
/* A measured request of class @k arrived. */
void sim_record_scheduled(struct sim_result *res, int k);
/* Any request of class @k completed at @t: counts for the achieved rate if inside the window. */
void sim_record_done(struct sim_result *res, const struct sim_source *src, int k, uint64_t t);

#endif /* JIFFY_SIM_INTERNAL_H */
