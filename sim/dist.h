/*
 * sim/dist.h - service-time distributions and the time syntax, as jiffy-load spells them.
 *
 * Owns: parsing of --dist specifications (load/src/spec.rs's syntax: fixed:T, exp:MEAN,
 * lognormal:MEAN:SD, bimodal:P:S1:S2, trimodal:P1:S1:P2:S2:S3; plus pareto:MEAN:ALPHA and
 * file:PATH), their request classes (bimodal -> short,long; trimodal -> short,medium,long; file
 * -> the names in the file; else all) and drawing from them.
 * Invariants: a parsed distribution is immutable (sampling takes the stream, not the
 * distribution, as mutable state); every malformed input is an error message naming the spec and
 * the part that is wrong, never an abort.
 */
#ifndef JIFFY_SIM_DIST_H
#define JIFFY_SIM_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

#define SIM_MAX_CLASSES 8
#define SIM_CLASS_NAME_MAX 24
#define SIM_SPEC_MAX 512

enum sim_dist_kind {
	SIM_DIST_FIXED,
	SIM_DIST_EXP,
	SIM_DIST_LOGNORMAL,
	SIM_DIST_MODES, /* bimodal, trimodal */
	SIM_DIST_PARETO,
	SIM_DIST_FILE,  /* the empirical distribution of a file's values */
};

/**
 * struct sim_dist - a parsed --dist.
 * @spec:     the text as given (jiffy-load's "dist" column).
 * @mean_ns:  the distribution's mean (the file's sample mean for file:).
 * @nclasses, @class_names: the request classes it draws (>= 1).
 */
struct sim_dist {
	enum sim_dist_kind kind;
	char spec[SIM_SPEC_MAX];
	double mean_ns;
	uint64_t fixed_ns;
	double exp_mean_ns;
	double ln_mu, ln_sigma;
	double pareto_xm, pareto_alpha;
	int nmodes;
	double mode_cum[3]; /* cumulative probabilities; the last is 1 */
	uint64_t mode_ns[3];
	size_t nvals;       /* file: */
	uint64_t *vals;
	uint8_t *val_class;
	int nclasses;
	char class_names[SIM_MAX_CLASSES][SIM_CLASS_NAME_MAX];
};

/* @x >= 0 rounded to the nearest integer (halves up) without a libm call: the hot paths. */
static inline uint64_t sim_round_u64(double x)
{
	return (uint64_t)(x + 0.5);
}

/**
 * sim_parse_duration_ns() - "10us", "0.5ms", "500ns", "1s" (also "µs") to nanoseconds, as
 * jiffy-load parses them (a unit is required; non-negative, at most 1e15 ns).
 * Return: 0, or -EINVAL with the reason (quoting @s) in @err.
 */
int sim_parse_duration_ns(const char *s, uint64_t *ns, char *err, size_t errlen);

/** sim_parse_time_ns() - the same, unrounded (for costs such as 191.5ns or 0.36us). */
int sim_parse_time_ns(const char *s, double *ns, char *err, size_t errlen);

/**
 * sim_read_lines() - call @fn for each line of the file @path, split into at most @max fields
 * (blanks or commas between them; '#' starts a comment; a line without fields is skipped) in
 * @f[0..n), with n, or @max + 1 when the line has more. The data files of --dist file: and
 * --arrivals. Return: 0, the first error of @fn, or -errno / -EINVAL with "<@what>: <reason>"
 * in @err when the file cannot be read or a line is longer than 511 characters.
 */
int sim_read_lines(const char *path, const char *what, char **f, int max,
		   int (*fn)(void *ctx, char **f, int n, long lineno, char *err, size_t errlen),
		   void *ctx, char *err, size_t errlen);

/* The index of class @name in @names (@n of them), added at the end if new; -1 when full. */
int sim_class_intern(char names[][SIM_CLASS_NAME_MAX], int *n, const char *name);

/**
 * sim_dist_parse() - parse @spec into @d. file:PATH reads PATH: one value per line, "TIME
 * [CLASS]" ('#' comments), at most SIM_MAX_CLASSES class names.
 * Return: 0; -EINVAL (or -errno of a file error) with "--dist '<spec>': <reason>" in @err.
 */
int sim_dist_parse(struct sim_dist *d, const char *spec, char *err, size_t errlen);

/** sim_dist_free() - free a file: distribution's values (safe on any parsed or zeroed dist). */
void sim_dist_free(struct sim_dist *d);

/** sim_dist_sample() - draw a service time (ns) from @r; its class index in *@klass. */
uint64_t sim_dist_sample(const struct sim_dist *d, struct sim_rng *r, int *klass);

#endif /* JIFFY_SIM_DIST_H */
