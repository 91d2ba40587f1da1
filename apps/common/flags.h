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

#endif /* JIFFY_APPS_FLAGS_H */
