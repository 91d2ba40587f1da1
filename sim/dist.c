/*
 * sim/dist.c - service-time distributions (see dist.h). The syntax, the classes and the
 * parameterisation (lognormal by the mean and standard deviation of the distribution itself;
 * values rounded to whole nanoseconds) are jiffy-load's (load/src/spec.rs), so that a simulated
 * and a measured run of the same --dist draw the same distribution.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "../src/common/errf.h"

static bool is_number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+';
}

/* strtod over exactly [s, s + len): true if all of it is one finite-or-not number. */
static bool parse_double_n(const char *s, size_t len, double *out)
{
	char buf[64], *end;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*out = strtod(buf, &end);
	return end == buf + len;
}

int sim_parse_duration_ns(const char *s, uint64_t *ns, char *err, size_t errlen)
{
	double v;
	int rc = sim_parse_time_ns(s, &v, err, errlen);

	if (rc == 0)
		*ns = (uint64_t)llround(v);
	return rc;
}

int sim_parse_time_ns(const char *s, double *ns, char *err, size_t errlen)
{
	const char *t = s, *unit;
	size_t len;
	double v, mult;

	while (*t == ' ' || *t == '\t')
		t++;
	len = strlen(t);
	while (len && (t[len - 1] == ' ' || t[len - 1] == '\t' || t[len - 1] == '\n'))
		len--;
	unit = t;
	while (unit < t + len && is_number_char(*unit))
		unit++;
	if (unit == t + len)
		return jf_errf(err, errlen, "'%s': missing unit (use ns, us, ms or s, e.g. 10us)", s);
	if ((size_t)(t + len - unit) == 2 && !strncmp(unit, "ns", 2))
		mult = 1.0;
	else if (((size_t)(t + len - unit) == 2 && !strncmp(unit, "us", 2)) ||
		 ((size_t)(t + len - unit) == 3 && !strncmp(unit, "\xc2\xb5s", 3)))
		mult = 1e3;
	else if ((size_t)(t + len - unit) == 2 && !strncmp(unit, "ms", 2))
		mult = 1e6;
	else if ((size_t)(t + len - unit) == 1 && *unit == 's')
		mult = 1e9;
	else
		return jf_errf(err, errlen, "'%s': unknown unit '%.*s' (use ns, us, ms or s)", s,
			    (int)(t + len - unit), unit);
	if (!parse_double_n(t, (size_t)(unit - t), &v))
		return jf_errf(err, errlen, "'%s': '%.*s' is not a number", s, (int)(unit - t), t);
	if (!isfinite(v) || v < 0)
		return jf_errf(err, errlen, "'%s': must be a non-negative finite time", s);
	if (v * mult > 1e15)
		return jf_errf(err, errlen, "'%s': too large", s);
	*ns = v * mult;
	return 0;
}

static int parse_percent(const char *s, const char *what, double *out, char *err, size_t errlen)
{
	double v;

	if (!parse_double_n(s, strlen(s), &v))
		return jf_errf(err, errlen, "%s: '%s' is not a percentage", what, s);
	if (!(v >= 0.0 && v <= 100.0))
		return jf_errf(err, errlen, "%s: %g is not in [0, 100]", what, v);
	*out = v;
	return 0;
}

/* Split @spec at ':' into at most @max parts (in @buf); the number of parts. */
static int split(char *buf, char **parts, int max)
{
	int n = 0;
	char *p = buf;

	parts[n++] = p;
	while ((p = strchr(p, ':')) != NULL) {
		*p++ = '\0';
		if (n == max)
			return max + 1;
		parts[n++] = p;
	}
	return n;
}

static void set_classes(struct sim_dist *d, int n, const char *const *names)
{
	d->nclasses = n;
	for (int i = 0; i < n; i++)
		snprintf(d->class_names[i], SIM_CLASS_NAME_MAX, "%s", names[i]);
}

int sim_class_intern(char names[][SIM_CLASS_NAME_MAX], int *n, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(names[i], name))
			return i;
	if (*n == SIM_MAX_CLASSES)
		return -1;
	snprintf(names[*n], SIM_CLASS_NAME_MAX, "%s", name);
	return (*n)++;
}

/* Append (@ns, @klass) to a file: distribution. */
static int push_value(struct sim_dist *d, size_t *cap, uint64_t ns, int klass)
{
	if (d->nvals == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		uint64_t *v = realloc(d->vals, ncap * sizeof(*v));
		uint8_t *c;
		if (!v)
			return -ENOMEM;
		d->vals = v;
		c = realloc(d->val_class, ncap);
		if (!c)
			return -ENOMEM;
		d->val_class = c;
		*cap = ncap;
	}
	d->vals[d->nvals] = ns;
	d->val_class[d->nvals++] = (uint8_t)klass;
	return 0;
}

int sim_read_lines(const char *path, const char *what, char **f, int max,
		   int (*fn)(void *ctx, char **f, int n, long lineno, char *err, size_t errlen),
		   void *ctx, char *err, size_t errlen)
{
	FILE *file = fopen(path, "r");
	char line[512];
	long lineno = 0;
	int rc = 0;

	if (!file) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", what, strerror(e));
		return -e;
	}
	while (rc == 0 && fgets(line, sizeof(line), file)) {
		char *save = NULL, *hash;
		int n = 0;

		lineno++;
		if (!strchr(line, '\n') && !feof(file)) {
			rc = jf_errf(err, errlen, "%s: line %ld: longer than %zu characters", what,
				      lineno, sizeof(line) - 1);
			break;
		}
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		for (char *tok = strtok_r(line, " \t\r\n,", &save); tok && n <= max;
		     tok = strtok_r(NULL, " \t\r\n,", &save))
			if (n++ < max)
				f[n - 1] = tok;
		if (n)
			rc = fn(ctx, f, n, lineno, err, errlen);
	}
	fclose(file);
	return rc;
}

struct file_ctx {
	struct sim_dist *d;
	const char *path;
	size_t cap;
};

/* One line of a file: distribution, "TIME [CLASS]". */
static int file_line(void *ctx, char **f, int n, long lineno, char *err, size_t errlen)
{
	struct file_ctx *c = ctx;
	char why[256];
	uint64_t ns;
	int k;

	if (n > 2)
		return jf_errf(err, errlen, "%s:%ld: expected TIME [CLASS]", c->path, lineno);
	if (sim_parse_duration_ns(f[0], &ns, why, sizeof(why)) != 0)
		return jf_errf(err, errlen, "%s:%ld: %s", c->path, lineno, why);
	k = sim_class_intern(c->d->class_names, &c->d->nclasses, n == 2 ? f[1] : "all");
	if (k < 0)
		return jf_errf(err, errlen, "%s:%ld: more than %d classes", c->path, lineno,
				SIM_MAX_CLASSES);
	if (push_value(c->d, &c->cap, ns, k))
		return jf_errf(err, errlen, "%s: out of memory", c->path);
	return 0;
}

static int parse_file(struct sim_dist *d, const char *path, char *err, size_t errlen)
{
	struct file_ctx c = {d, path, 0};
	char what[300], *f[2];
	double sum = 0;
	int rc;

	snprintf(what, sizeof(what), "cannot read '%s'", path);
	d->kind = SIM_DIST_FILE;
	if ((rc = sim_read_lines(path, what, f, 2, file_line, &c, err, errlen)) != 0)
		return rc;
	if (d->nvals == 0)
		return jf_errf(err, errlen, "'%s' holds no service time", path);
	for (size_t i = 0; i < d->nvals; i++)
		sum += (double)d->vals[i];
	d->mean_ns = sum / (double)d->nvals;
	return 0;
}

static int parse_lognormal(struct sim_dist *d, char **parts, char *err, size_t errlen)
{
	uint64_t m, sd;
	double s2;

	if (sim_parse_duration_ns(parts[1], &m, err, errlen) ||
	    sim_parse_duration_ns(parts[2], &sd, err, errlen))
		return -EINVAL;
	if (m == 0)
		return jf_errf(err, errlen, "the mean must be > 0");
	/* Mean m and sd of the distribution itself: sigma^2 = ln(1 + sd^2/m^2), mu = ln m - s2/2 */
	s2 = log(1.0 + ((double)sd * (double)sd) / ((double)m * (double)m));
	d->kind = SIM_DIST_LOGNORMAL;
	d->ln_mu = log((double)m) - s2 / 2;
	d->ln_sigma = sqrt(s2);
	d->mean_ns = (double)m;
	return 0;
}

static int parse_modes(struct sim_dist *d, char **parts, int n, char *err, size_t errlen)
{
	static const char *const two[] = {"short", "long"}, *const three[] = {"short", "medium",
									      "long"};
	double p1, p2 = 0;
	uint64_t s[3];

	if (n == 4) {
		if (parse_percent(parts[1], "bimodal P", &p1, err, errlen) ||
		    sim_parse_duration_ns(parts[2], &s[0], err, errlen) ||
		    sim_parse_duration_ns(parts[3], &s[1], err, errlen))
			return -EINVAL;
		d->nmodes = 2;
		d->mode_cum[0] = p1 / 100.0;
		d->mode_cum[1] = 1.0;
		set_classes(d, 2, two);
	} else {
		if (parse_percent(parts[1], "trimodal P1", &p1, err, errlen) ||
		    parse_percent(parts[3], "trimodal P2", &p2, err, errlen))
			return -EINVAL;
		if (p1 + p2 > 100.0)
			return jf_errf(err, errlen, "P1 + P2 = %g > 100", p1 + p2);
		if (sim_parse_duration_ns(parts[2], &s[0], err, errlen) ||
		    sim_parse_duration_ns(parts[4], &s[1], err, errlen) ||
		    sim_parse_duration_ns(parts[5], &s[2], err, errlen))
			return -EINVAL;
		d->nmodes = 3;
		d->mode_cum[0] = p1 / 100.0;
		d->mode_cum[1] = (p1 + p2) / 100.0;
		d->mode_cum[2] = 1.0;
		set_classes(d, 3, three);
	}
	d->kind = SIM_DIST_MODES;
	d->mean_ns = 0;
	for (int i = 0; i < d->nmodes; i++) {
		d->mode_ns[i] = s[i];
		d->mean_ns += (d->mode_cum[i] - (i ? d->mode_cum[i - 1] : 0.0)) * (double)s[i];
	}
	return 0;
}

static int parse_pareto(struct sim_dist *d, char **parts, char *err, size_t errlen)
{
	uint64_t m;
	double a;

	if (sim_parse_duration_ns(parts[1], &m, err, errlen))
		return -EINVAL;
	if (!parse_double_n(parts[2], strlen(parts[2]), &a) || !isfinite(a))
		return jf_errf(err, errlen, "ALPHA '%s' is not a number", parts[2]);
	if (m == 0)
		return jf_errf(err, errlen, "the mean must be > 0");
	if (!(a > 1.0))
		return jf_errf(err, errlen, "ALPHA must be > 1 for a finite mean (got %g)", a);
	d->kind = SIM_DIST_PARETO;
	d->pareto_alpha = a;
	d->pareto_xm = (double)m * (a - 1.0) / a; /* mean = xm * alpha / (alpha - 1) */
	d->mean_ns = (double)m;
	return 0;
}

/* The forms, for the messages. */
static const char *form_of(const char *kind)
{
	static const struct {
		const char *kind, *form;
	} forms[] = {
		{"fixed", "fixed:TIME (e.g. fixed:10us)"},
		{"exp", "exp:MEAN (e.g. exp:10us)"},
		{"lognormal", "lognormal:MEAN:SD (e.g. lognormal:1us:10us)"},
		{"bimodal", "bimodal:P:S1:S2 (P percent S1, the rest S2; e.g. bimodal:99.5:500ns:500us)"},
		{"trimodal", "trimodal:P1:S1:P2:S2:S3 (e.g. trimodal:90:1us:9:10us:1ms)"},
		{"pareto", "pareto:MEAN:ALPHA (ALPHA > 1; e.g. pareto:10us:1.5)"},
	};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!strcmp(forms[i].kind, kind))
			return forms[i].form;
	return NULL;
}

static int parse_parts(struct sim_dist *d, char **parts, int n, char *err, size_t errlen)
{
	static const int want[] = {2, 2, 3, 4, 6, 3};
	static const char *const kinds[] = {"fixed", "exp", "lognormal", "bimodal", "trimodal",
					    "pareto"};
	int k = -1;

	for (int i = 0; i < 6; i++)
		if (!strcmp(parts[0], kinds[i]))
			k = i;
	if (k < 0)
		return jf_errf(err, errlen, "unknown distribution '%s' (fixed, exp, lognormal, bimodal, "
					 "trimodal, pareto, file)", parts[0]);
	if (n != want[k])
		return jf_errf(err, errlen, "expected %s", form_of(kinds[k]));
	switch (k) {
	case 0:
		d->kind = SIM_DIST_FIXED;
		if (sim_parse_duration_ns(parts[1], &d->fixed_ns, err, errlen))
			return -EINVAL;
		d->mean_ns = (double)d->fixed_ns;
		return 0;
	case 1: {
		uint64_t m;
		if (sim_parse_duration_ns(parts[1], &m, err, errlen))
			return -EINVAL;
		if (m == 0)
			return jf_errf(err, errlen, "the mean must be > 0");
		d->kind = SIM_DIST_EXP;
		d->exp_mean_ns = d->mean_ns = (double)m;
		return 0;
	}
	case 2:
		return parse_lognormal(d, parts, err, errlen);
	case 3:
	case 4:
		return parse_modes(d, parts, n, err, errlen);
	default:
		return parse_pareto(d, parts, err, errlen);
	}
}

int sim_dist_parse(struct sim_dist *d, const char *spec, char *err, size_t errlen)
{
	static const char *const all[] = {"all"};
	char buf[SIM_SPEC_MAX], why[SIM_SPEC_MAX], *parts[8];
	int n, rc;

	memset(d, 0, sizeof(*d));
	if (strlen(spec) >= sizeof(buf))
		return jf_errf(err, errlen, "--dist: specification too long");
	snprintf(d->spec, sizeof(d->spec), "%s", spec);
	set_classes(d, 1, all);
	if (!strncmp(spec, "file:", 5)) {
		d->nclasses = 0;
		rc = spec[5] ? parse_file(d, spec + 5, why, sizeof(why))
			     : jf_errf(why, sizeof(why), "expected file:PATH");
	} else {
		snprintf(buf, sizeof(buf), "%s", spec);
		n = split(buf, parts, 7);
		rc = parse_parts(d, parts, n, why, sizeof(why));
	}
	if (rc) {
		sim_dist_free(d);
		snprintf(err, errlen, "--dist '%s': %s", spec, why);
	}
	return rc;
}

void sim_dist_free(struct sim_dist *d)
{
	free(d->vals);
	free(d->val_class);
	d->vals = NULL;
	d->val_class = NULL;
	d->nvals = 0;
}

static uint64_t to_ns(double x)
{
	if (!(x < 1e15))
		return (uint64_t)1e15; /* jiffy-load caps a draw at 1e15 ns (11.6 days) too */
	return sim_round_u64(x);
}

uint64_t sim_dist_sample(const struct sim_dist *d, struct sim_rng *r, int *klass)
{
	*klass = 0;
	switch (d->kind) {
	case SIM_DIST_FIXED:
		return d->fixed_ns;
	case SIM_DIST_EXP:
		return to_ns(-d->exp_mean_ns * log(sim_rng_uniform_pos(r)));
	case SIM_DIST_LOGNORMAL: {
		/* Box-Muller, one normal per draw: the distribution stays immutable. */
		double u1 = sim_rng_uniform_pos(r), u2 = sim_rng_uniform(r);
		double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
		return to_ns(exp(d->ln_mu + d->ln_sigma * z));
	}
	case SIM_DIST_MODES: {
		double u = sim_rng_uniform(r);
		for (int i = 0; i < d->nmodes; i++)
			if (u < d->mode_cum[i]) {
				*klass = i;
				return d->mode_ns[i];
			}
		*klass = d->nmodes - 1;
		return d->mode_ns[d->nmodes - 1];
	}
	case SIM_DIST_PARETO:
		return to_ns(d->pareto_xm * pow(sim_rng_uniform_pos(r), -1.0 / d->pareto_alpha));
	case SIM_DIST_FILE: {
		size_t i = (size_t)(((unsigned __int128)sim_rng_next(r) * d->nvals) >> 64);
		*klass = d->val_class[i];
		return d->vals[i];
	}
	}
	return 0;
}
