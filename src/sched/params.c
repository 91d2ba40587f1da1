/*
 * params.c - the policies' parameter tables (struct jf_policy_param): checking a table, the
 * defaults, reading a value from its written form and writing it back.
 *
 * Owns: the one parser of policy parameters. The environment (src/runtime/config.c), the
 * configuration API (jf_config_set_param), jiffy-sim's --param and the tests all go through
 * jf_policy_param_parse(), so a value means the same everywhere and is range-checked once.
 * A policy declares its parameters in its ops table and reads params->value[i] at init: it never
 * parses anything itself.
 *
 * Invariant: a value this file accepts is within its parameter's range (min..max; 0..1 for a
 * bool; a choice's index for an enum), so a policy may use params->value[i] without checking.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jiffy/policy.h>

#include "../common/errf.h"
#include "../common/parse.h"
#include "registry.h"

static size_t nchoices(const struct jf_policy_param *p)
{
	size_t n = 0;

	while (p->choices && p->choices[n])
		n++;
	return n;
}

static uint64_t param_min(const struct jf_policy_param *p)
{
	return p->type == JF_PARAM_BOOL || p->type == JF_PARAM_ENUM ? 0 : p->min;
}

static uint64_t param_max(const struct jf_policy_param *p)
{
	if (p->type == JF_PARAM_BOOL)
		return 1;
	if (p->type == JF_PARAM_ENUM)
		return nchoices(p) ? nchoices(p) - 1 : 0;
	return p->max;
}

static bool is_duration(const struct jf_policy_param *p)
{
	return p->type == JF_PARAM_US || p->type == JF_PARAM_NS;
}

static bool valid_name(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !islower((unsigned char)s[0]))
		return false;
	for (; s[n]; n++)
		if (n + 1 >= max || !(islower((unsigned char)s[n]) || isdigit((unsigned char)s[n]) ||
				      s[n] == '_'))
			return false;
	return true;
}

static bool valid_env_alias(const char *s)
{
	if (strncmp(s, "JIFFY_", 6) != 0 || !s[6])
		return false;
	for (s += 6; *s; s++)
		if (!(isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

static int check_one(const struct jf_policy_ops *ops, size_t i, char *err, size_t errlen)
{
	const struct jf_policy_param *p = &ops->params[i];

	if (!valid_name(p->name, JF_PARAM_NAME_MAX))
		return jf_errf(err, errlen, "policy %s: parameter %zu: the name must be 1 to %d of "
			    "[a-z0-9_], starting with a letter", ops->name, i, JF_PARAM_NAME_MAX - 1);
	for (size_t j = 0; j < i; j++)
		if (!strcmp(ops->params[j].name, p->name))
			return jf_errf(err, errlen, "policy %s: parameter %s is declared twice",
				    ops->name, p->name);
	if ((unsigned)p->type >= JF_PARAM_NR_TYPES)
		return jf_errf(err, errlen, "policy %s: parameter %s: unknown type %d", ops->name,
			    p->name, (int)p->type);
	if (p->type == JF_PARAM_ENUM) {
		if (!nchoices(p))
			return jf_errf(err, errlen, "policy %s: parameter %s: an enum needs choices",
				    ops->name, p->name);
		for (size_t c = 0; p->choices[c]; c++)
			if (!p->choices[c][0])
				return jf_errf(err, errlen, "policy %s: parameter %s: an empty choice",
					    ops->name, p->name);
	}
	if (param_min(p) > param_max(p) || p->def < param_min(p) || p->def > param_max(p))
		return jf_errf(err, errlen, "policy %s: parameter %s: the default %" PRIu64 " is "
			    "not within [%" PRIu64 ", %" PRIu64 "]", ops->name, p->name, p->def,
			    param_min(p), param_max(p));
	if (p->env_alias && !valid_env_alias(p->env_alias))
		return jf_errf(err, errlen, "policy %s: parameter %s: env_alias '%s' is not "
			    "JIFFY_[A-Z0-9_]+", ops->name, p->name, p->env_alias);
	return 0;
}

int jf_policy_params_check(const struct jf_policy_ops *ops, char *err, size_t errlen)
{
	if (ops->nparams > JF_POLICY_PARAMS_MAX)
		return jf_errf(err, errlen, "policy %s: %zu parameters, at most %d", ops->name,
			    ops->nparams, JF_POLICY_PARAMS_MAX);
	if (ops->nparams && !ops->params)
		return jf_errf(err, errlen, "policy %s: nparams %zu but no params table", ops->name,
			    ops->nparams);
	for (size_t i = 0; i < ops->nparams; i++) {
		int rc = check_one(ops, i, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* JIFFY_<S> for "s" in @buf: upper case, anything but letters and digits as '_'. */
static int env_upper(const char *s, char *buf, size_t len)
{
	char name[JF_POLICY_NAME_MAX + JF_PARAM_NAME_MAX + 8];
	int n = snprintf(name, sizeof(name), "JIFFY_%s", s);

	for (char *c = name + 6; *c; c++)
		*c = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
	snprintf(buf, len, "%s", name);
	return n;
}

size_t jf_policy_env_prefix(const char *policy, char *buf, size_t len)
{
	char s[JF_POLICY_NAME_MAX + 8];

	snprintf(s, sizeof(s), "%.*s_", JF_POLICY_NAME_MAX, policy);
	return (size_t)env_upper(s, buf, len);
}

int jf_policy_param_env(const char *policy, const struct jf_policy_param *param, char *buf,
			size_t len)
{
	char s[JF_POLICY_NAME_MAX + JF_PARAM_NAME_MAX + 8];

	snprintf(s, sizeof(s), "%.*s_%.*s", JF_POLICY_NAME_MAX, policy, JF_PARAM_NAME_MAX,
		 param->name);
	return env_upper(s, buf, len);
}

void jf_policy_params_default(const struct jf_policy_ops *ops, struct jf_policy_params *params)
{
	memset(params->value, 0, sizeof(params->value));
	params->quantum_ns = JF_POLICY_QUANTUM_DEFAULT_NS;
	for (size_t i = 0; i < ops->nparams && i < JF_POLICY_PARAMS_MAX; i++)
		params->value[i] = ops->params[i].def;
}

int jf_policy_param_index(const struct jf_policy_ops *ops, const char *name)
{
	for (size_t i = 0; name && i < ops->nparams && i < JF_POLICY_PARAMS_MAX; i++)
		if (!strcmp(ops->params[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* @ns nanoseconds in @unit_ns units, with up to 3 decimals and no trailing zeros ("12.5"). */
static int format_scaled(uint64_t ns, uint64_t unit_ns, char *buf, size_t len)
{
	uint64_t whole = ns / unit_ns, frac = ns % unit_ns;
	char f[32];
	int n;

	if (!frac)
		return snprintf(buf, len, "%" PRIu64, whole);
	if (unit_ns == 1000)
		snprintf(f, sizeof(f), "%03" PRIu64, frac);
	else
		snprintf(f, sizeof(f), "%0*" PRIu64, unit_ns == 1000000 ? 6 : 9, frac);
	n = (int)strlen(f);
	while (n > 0 && f[n - 1] == '0')
		f[--n] = '\0';
	return snprintf(buf, len, "%" PRIu64 ".%s", whole, f);
}

int jf_policy_param_format(const struct jf_policy_param *param, uint64_t value, char *buf,
			   size_t len)
{
	switch (param->type) {
	case JF_PARAM_US:
		return format_scaled(value, 1000, buf, len);
	case JF_PARAM_ENUM:
		if (value < nchoices(param))
			return snprintf(buf, len, "%s", param->choices[value]);
		return snprintf(buf, len, "#%" PRIu64, value);
	default:
		return snprintf(buf, len, "%" PRIu64, value);
	}
}

/* What @param accepts, for messages: "microseconds from 1 to 1000000". */
static void describe(const struct jf_policy_param *p, char *buf, size_t len)
{
	char lo[32], hi[32];
	size_t off = 0;

	switch (p->type) {
	case JF_PARAM_BOOL:
		snprintf(buf, len, "0 or 1 (no/yes, off/on, false/true)");
		return;
	case JF_PARAM_ENUM:
		off = (size_t)snprintf(buf, len, "one of ");
		for (size_t c = 0; p->choices[c] && off < len; c++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", c ? ", " : "",
						p->choices[c]);
		return;
	default:
		jf_policy_param_format(p, p->min, lo, sizeof(lo));
		jf_policy_param_format(p, p->max, hi, sizeof(hi));
		snprintf(buf, len, "%s from %s to %s%s",
			 p->type == JF_PARAM_US	  ? "microseconds"
			 : p->type == JF_PARAM_NS ? "nanoseconds"
						  : "an integer",
			 lo, hi, is_duration(p) ? " (or a time with a unit: ns, us, ms, s)" : "");
	}
}

/* "123", "12.5", "50us" (or "50µs"), "0.25ms": nanoseconds, exactly. Return 0 or -1. */
static int parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {{"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"ms", 1000000},
		     {"s", 1000000000}};
	unsigned __int128 whole = 0, frac = 0, scale = 1, unit = default_unit_ns, ns;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		whole = whole * 10 + (unsigned)(*p - '0');
		if (whole > UINT64_MAX)
			return -1;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++) {
			if (scale >= 1000000000000000000ull) /* 18 decimals are plenty */
				return -1;
			frac = frac * 10 + (unsigned)(*p - '0');
			scale *= 10;
		}
	}
	if (*p) {
		size_t i;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(p, units[i].name))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -1;
		unit = units[i].ns;
	}
	if ((frac * unit) % scale)
		return -1; /* not a whole number of nanoseconds */
	ns = whole * unit + frac * unit / scale;
	if (ns > UINT64_MAX)
		return -1;
	*out = (uint64_t)ns;
	return 0;
}

/* jf_parse_bool() into a parameter value (0 or 1). */
static int parse_bool_u64(const char *s, uint64_t *out)
{
	bool b;

	if (jf_parse_bool(s, &b))
		return -1;
	*out = b;
	return 0;
}

int jf_policy_param_parse(const struct jf_policy_param *param, const char *text, uint64_t *value,
			  char *err, size_t errlen)
{
	char what[256];
	uint64_t v = 0;
	int rc = -1;

	if (text) {
		switch (param->type) {
		case JF_PARAM_US:
			rc = parse_duration(text, 1000, &v);
			break;
		case JF_PARAM_NS:
			rc = parse_duration(text, 1, &v);
			break;
		case JF_PARAM_UINT:
			rc = jf_parse_u64(text, false, &v);
			break;
		case JF_PARAM_BOOL:
			rc = parse_bool_u64(text, &v);
			break;
		case JF_PARAM_ENUM:
			for (size_t c = 0; param->choices && param->choices[c]; c++)
				if (!strcmp(text, param->choices[c])) {
					v = c;
					rc = 0;
				}
			break;
		default:
			break;
		}
	}
	if (rc == 0 && v >= param_min(param) && v <= param_max(param)) {
		*value = v;
		return 0;
	}
	describe(param, what, sizeof(what));
	return jf_errf(err, errlen, "'%s': expected %s", text ? text : "(null)", what);
}

int jf_policy_param_check_value(const struct jf_policy_param *param, uint64_t value, char *err,
				size_t errlen)
{
	char what[256], text[48];

	if (value >= param_min(param) && value <= param_max(param))
		return 0;
	describe(param, what, sizeof(what));
	jf_policy_param_format(param, value, text, sizeof(text));
	return jf_errf(err, errlen, "'%s': expected %s", text, what);
}

int jf_policy_param_set(const struct jf_policy_ops *ops, struct jf_policy_params *params,
			const char *name, const char *text, char *err, size_t errlen)
{
	int i = jf_policy_param_index(ops, name);
	char why[320];

	if (i < 0) {
		char names[256] = "";
		jf_policy_param_names(ops, names, sizeof(names));
		jf_errf(err, errlen, "%s.%s: policy %s has no such parameter; its parameters: %s",
			ops->name, name ? name : "(null)", ops->name, names);
		return -ENOENT;
	}
	if (jf_policy_param_parse(&ops->params[i], text, &params->value[i], why, sizeof(why)))
		return jf_errf(err, errlen, "%s.%s=%s", ops->name, name, why);
	return 0;
}

void jf_policy_param_names(const struct jf_policy_ops *ops, char *buf, size_t len)
{
	size_t off = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (!ops->nparams)
		snprintf(buf, len, "none");
	for (size_t i = 0; i < ops->nparams && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					ops->params[i].name);
}
