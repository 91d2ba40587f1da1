/*
 * parse.h - the strict number and yes/no parsers every JIFFY_* setting goes through.
 *
 * Owns: jf_parse_u64() and jf_parse_bool(), shared by the runtime's configuration (src/runtime/
 * config.c) and the policies' parameter tables (src/sched/params.c), so that a setting and a
 * policy parameter accept exactly the same spellings. No allocation, no locale beyond the C one.
 */
#ifndef JIFFY_PARSE_H
#define JIFFY_PARSE_H

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Digits only (no sign, no space), with an optional K/M/G suffix (powers of 1024, "KB"/"Ki"
 * accepted) if @suffixes. Return 0, or -1 for anything else or an overflow. */
static inline int jf_parse_u64(const char *s, bool suffixes, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (suffixes && *end) {
		switch (toupper((unsigned char)*end)) {
		case 'K': mul = 1024; break;
		case 'M': mul = 1024 * 1024; break;
		case 'G': mul = 1024 * 1024 * 1024; break;
		default: return -1;
		}
		end++;
		if (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I')
			end++;
	}
	if (*end)
		return -1;
	if (mul > 1 && v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* 1/true/yes/on or 0/false/no/off, any case. Return 0, or -1. */
static inline int jf_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

#endif /* JIFFY_PARSE_H */
