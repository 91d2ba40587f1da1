/*
 * fuzz/fuzz_sim_dist.c - libFuzzer target for jiffy-sim's --dist parser (sim/dist.c): the input's
 * first line is the specification; when it starts with "file:", the path is replaced by a memfd
 * holding the rest of the input (memfile.h), so the file: reader (sim_read_lines, one
 * "TIME [CLASS]" per line) is fuzzed on the same input and no other file is ever opened.
 *
 * Owns the checks: a refused spec leaves a message "--dist '<spec>': <reason>" and no memory
 * (ASan's leak check at exit); an accepted one has 1..SIM_MAX_CLASSES NUL-terminated class
 * names, a finite non-negative mean, and draws (sim_dist_sample) that are at most 1e15 ns with
 * a class index inside the table.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "memfile.h"
#include "rng.h"

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz_sim_dist: check failed: %s (line %d)\n", #cond,     \
				__LINE__);                                                      \
			abort();                                                                \
		}                                                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t speclen = nl ? (size_t)(nl - data) : size;
	char spec[SIM_SPEC_MAX + 64], err[1024];
	struct sim_dist d;

	if (speclen >= 5 && !memcmp(data, "file:", 5)) {
		const uint8_t *rest = nl ? nl + 1 : data + size;
		snprintf(spec, sizeof(spec), "file:%s", memfile_set(rest, (size_t)(data + size - rest)));
	} else {
		/* Longer than SIM_SPEC_MAX on purpose: the "too long" path. */
		if (speclen >= sizeof(spec))
			speclen = sizeof(spec) - 1;
		memcpy(spec, data, speclen);
		spec[speclen] = '\0';
	}
	err[0] = '\0';
	if (sim_dist_parse(&d, spec, err, sizeof(err)) != 0) {
		CHECK(err[0] && memchr(err, '\0', sizeof(err)));
		CHECK(d.vals == NULL && d.val_class == NULL);
		return 0;
	}
	CHECK(d.nclasses >= 1 && d.nclasses <= SIM_MAX_CLASSES);
	for (int i = 0; i < d.nclasses; i++)
		CHECK(memchr(d.class_names[i], '\0', SIM_CLASS_NAME_MAX));
	CHECK(isfinite(d.mean_ns) && d.mean_ns >= 0);
	CHECK(d.kind != SIM_DIST_FILE || (d.nvals > 0 && d.vals && d.val_class));

	struct sim_rng r;
	sim_rng_seed(&r, size, 1);
	for (int i = 0; i < 64; i++) {
		int k = -1;
		uint64_t ns = sim_dist_sample(&d, &r, &k);
		CHECK(ns <= (uint64_t)1e15);
		CHECK(k >= 0 && k < d.nclasses);
	}
	sim_dist_free(&d);
	return 0;
}
