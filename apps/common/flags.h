/*
 * apps/common/flags.h - command-line number parsing shared by the servers in apps/.
 *
 * Owns: the rule that a bad flag value is reported with the flag's name and makes the program
 * exit with status 2 (the callers do the exit).
 */
#ifndef JIFFY_APPS_FLAGS_H
#define JIFFY_APPS_FLAGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Parse @s as a decimal integer in [@min, @max] for @flag. Return 0, or -1 after a message. */
static inline int jp_flag_uint(const char *prog, const char *flag, const char *s, unsigned long min,
			      unsigned long max, unsigned long *out)
{
	char *end;
	if (!s) {
		fprintf(stderr, "%s: %s needs a value\n", prog, flag);
		return -1;
	}
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*s == '\0' || *s == '-' || *s == '+' || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		fprintf(stderr, "%s: invalid value '%s' for %s (expected an integer in [%lu, %lu])\n",
			prog, s, flag, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* Parse @s as a byte count with an optional K, M or G suffix (powers of 1024) in [@min, @max]
 * for @flag. Return 0, or -1 after a message. */
static inline int jp_flag_bytes(const char *prog, const char *flag, const char *s,
				unsigned long long min, unsigned long long max,
				unsigned long long *out)
{
	char *end;
	if (!s) {
		fprintf(stderr, "%s: %s needs a value\n", prog, flag);
		return -1;
	}
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10), mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1ull << 10, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1ull << 30, end++;
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v > max / mul ||
	    v * mul < min) {
		fprintf(stderr,
			"%s: invalid value '%s' for %s (expected bytes in [%llu, %llu], with an "
			"optional K, M or G suffix)\n",
			prog, s, flag, min, max);
		return -1;
	}
	*out = v * mul;
	return 0;
}

#endif /* JIFFY_APPS_FLAGS_H */
