/*
 * fuzz/fuzz_sim_trace.c - libFuzzer target for jiffy-sim's --arrivals trace reader
 * (sim_trace_load in sim/sim.c, on sim_read_lines and the time syntax of sim/dist.c): the input
 * is the trace file, handed over as a memfd (memfile.h).
 *
 * Owns the checks: a refused trace leaves a message naming --arrivals and no memory; an accepted
 * one has n >= 2 requests, non-decreasing arrivals, every class index inside 1..SIM_MAX_CLASSES
 * NUL-terminated names, service times at most 1e15 ns, a finite mean and a finite rate.
 *
 * sim.c also holds sim_run() and the result recording, which call into the engines (and through
 * them the policies in libjiffy); the target links sim.c with the leaf files it calls (dist.c,
 * hist.c, costs.c, json.c) and the stubs below for the engines and the check of the policy's
 * parameters (sim/params.c), which the trace reader never reaches.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memfile.h"
#include "sim.h"

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz_sim_trace: check failed: %s (line %d)\n", #cond,    \
				__LINE__);                                                      \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* ---- stubs: never called by sim_trace_load() ----------------------------------------------- */

int sim_engine_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen)
{
	(void)cfg, (void)res, (void)err, (void)errlen;
	abort();
}

int sim_ps_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen)
{
	(void)cfg, (void)res, (void)err, (void)errlen;
	abort();
}

int sim_params_check(const struct sim_config *cfg, char *err, size_t errlen)
{
	(void)cfg, (void)err, (void)errlen;
	abort();
}

/* ---- the target -------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_trace tr;
	char err[1024] = "";

	if (sim_trace_load(&tr, memfile_set(data, size), err, sizeof(err)) != 0) {
		CHECK(memchr(err, '\0', sizeof(err)) && strstr(err, "--arrivals"));
		CHECK(tr.at_ns == NULL && tr.service_ns == NULL && tr.klass == NULL && tr.n == 0);
		return 0;
	}
	CHECK(tr.n >= 2 && tr.at_ns && tr.service_ns && tr.klass);
	CHECK(tr.nclasses >= 1 && tr.nclasses <= SIM_MAX_CLASSES);
	for (int i = 0; i < tr.nclasses; i++)
		CHECK(memchr(tr.class_names[i], '\0', SIM_CLASS_NAME_MAX));
	for (size_t i = 0; i < tr.n; i++) {
		CHECK(i == 0 || tr.at_ns[i] >= tr.at_ns[i - 1]);
		CHECK(tr.service_ns[i] <= (uint64_t)1e15 && tr.at_ns[i] <= (uint64_t)1e15);
		CHECK(tr.klass[i] < tr.nclasses);
	}
	CHECK(isfinite(tr.mean_service_ns) && tr.mean_service_ns >= 0);
	CHECK(isfinite(tr.rate) && tr.rate >= 0);
	sim_trace_free(&tr);
	return 0;
}
