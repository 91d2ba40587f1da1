/*
 * apps/common/slo_flag.c - the --slo flag's parser and the per-type report (slo_flag.h).
 *
 * Owns: the grammar of --slo and its refusals. The parser works on a copy of the table and
 * stores it only when the whole value was accepted, so a refused value changes nothing.
 */
#include "slo_flag.h"

#include "flags.h"

#include <stdarg.h>
#include <string.h>

#define SPEC_SHOW 40 /* characters of a bad item quoted in a message */

static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* @s[0..len) as a decimal number no larger than @max (digits only: no sign, no space). */
static bool parse_decimal(const char *s, size_t len, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
		if (v > max)
			return false; /* also stops before v * 10 could overflow */
	}
	*out = v;
	return true;
}

static bool all_digits(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return len > 0;
}

/* "a number in [0, 255] or get, put, ..." into @buf. */
static void expected_types(const struct jp_slo_name *names, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "a number in [0, %u]", JP_SLO_TYPES - 1);

	for (const struct jp_slo_name *nm = names; nm && nm->name && n < len; nm++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", nm == names ? " or " : ", ", nm->name);
}

/* The type named by @s[0..len), or -1 after a message. */
static int parse_type(const char *s, size_t len, const struct jp_slo_name *names, char *err,
		      size_t errlen)
{
	int show = (int)(len > SPEC_SHOW ? SPEC_SHOW : len);
	unsigned long v;
	char want[160];

	if (all_digits(s, len)) {
		if (parse_decimal(s, len, JP_SLO_TYPES - 1, &v))
			return (int)v;
		errf(err, errlen, "type '%.*s' is out of range [0, %u]", show, s, JP_SLO_TYPES - 1);
		return -1;
	}
	for (const struct jp_slo_name *nm = names; nm && nm->name; nm++)
		if (strlen(nm->name) == len && memcmp(nm->name, s, len) == 0)
			return (int)nm->type;
	expected_types(names, want, sizeof(want));
	errf(err, errlen, "unknown type '%.*s' (expected %s)", show, s, want);
	return -1;
}

int jp_slo_parse(const char *spec, const struct jp_slo_name *names, struct jp_slo_table *tab,
		 char *err, size_t errlen)
{
	struct jp_slo_table t = *tab;
	const char *p = spec;

	if (!spec || !*spec) {
		errf(err, errlen, "empty (expected TYPE=US[,TYPE=US...], e.g. 0=10,1=1000)");
		return -1;
	}
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int show = (int)(len > SPEC_SHOW ? SPEC_SHOW : len);
		const char *eq = memchr(p, '=', len);
		unsigned long us;
		int type;

		if (len == 0) {
			errf(err, errlen, "an empty item (a stray ',')");
			return -1;
		}
		if (!eq) {
			errf(err, errlen, "'%.*s': expected TYPE=US (e.g. 0=10)", show, p);
			return -1;
		}
		type = parse_type(p, (size_t)(eq - p), names, err, errlen);
		if (type < 0)
			return -1;
		if (!parse_decimal(eq + 1, len - (size_t)(eq - p) - 1, JP_SLO_MAX_US, &us)) {
			errf(err, errlen, "'%.*s': the SLO must be whole microseconds in [1, %lu]",
			     show, p, JP_SLO_MAX_US);
			return -1;
		}
		if (us == 0) {
			errf(err, errlen, "'%.*s': an SLO of 0 is none; leave the type out to get the "
			     "policy's default (JIFFY_CENTRAL_SLO_US)", show, p);
			return -1;
		}
		if (t.slo_ns[type] != 0) {
			errf(err, errlen, "type %d is given an SLO twice ('%.*s')", type, show, p);
			return -1;
		}
		t.slo_ns[type] = (uint64_t)us * 1000u;
		if (!end)
			break;
		p = end + 1;
	}
	*tab = t;
	return 0;
}

int jp_slo_flag(const char *prog, const char *flag, const char *value,
		const struct jp_slo_name *names, struct jp_slo_table *tab)
{
	char why[256];

	if (!value) {
		jp_flag_error(prog, flag, "needs a value (TYPE=US[,TYPE=US...])");
		return -1;
	}
	if (jp_slo_parse(value, names, tab, why, sizeof(why)) != 0) {
		jp_flag_error(prog, flag, "%s, got '%s'", why, value);
		return -1;
	}
	return 0;
}

void jp_type_count(struct jp_type_counts *c, unsigned type, bool tagged)
{
	type %= JP_SLO_TYPES;
	atomic_fetch_add_explicit(&c->requests[type], 1, memory_order_relaxed);
	if (tagged)
		atomic_fetch_add_explicit(&c->tagged[type], 1, memory_order_relaxed);
}

static const char *type_name(const struct jp_slo_name *names, unsigned type)
{
	for (const struct jp_slo_name *nm = names; nm && nm->name; nm++)
		if (nm->type == type)
			return nm->name;
	return NULL;
}

void jp_slo_report(FILE *f, const char *prog, const char *kind, const struct jp_slo_name *names,
		   const struct jp_slo_table *tab, const struct jp_type_counts *c)
{
	for (unsigned t = 0; t < JP_SLO_TYPES; t++) {
		uint64_t req = atomic_load_explicit(&c->requests[t], memory_order_relaxed);
		uint64_t tagged = atomic_load_explicit(&c->tagged[t], memory_order_relaxed);
		const char *name = type_name(names, t);
		char label[16], slo[24];

		if (req == 0 && tab->slo_ns[t] == 0)
			continue;
		if (name)
			snprintf(label, sizeof(label), "%s", name);
		else
			snprintf(label, sizeof(label), "%u", t);
		if (tab->slo_ns[t])
			snprintf(slo, sizeof(slo), "%llu", (unsigned long long)(tab->slo_ns[t] / 1000u));
		else
			snprintf(slo, sizeof(slo), "default");
		fprintf(f, "%s: %s %s: requests=%llu tagged=%llu slo_us=%s\n", prog, kind, label,
			(unsigned long long)req, (unsigned long long)tagged, slo);
	}
}
