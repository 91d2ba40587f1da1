/*
 * errf.h - refusing input with a reason: a message into the caller's buffer and -EINVAL.
 *
 * Owns: jf_errf(), shared by the configuration parser of the runtime (src/runtime/config.c) and the
 * simulator's parsers and checks (sim/dist.c, costs.c, sim.c), which report what is wrong with
 * a value, a distribution or a cost model as text.
 */
#ifndef JIFFY_COMMON_ERRF_H
#define JIFFY_COMMON_ERRF_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the reason into @err (@errlen bytes, either may be 0) and return -EINVAL. */
static inline int jf_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int jf_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

#endif /* JIFFY_COMMON_ERRF_H */
