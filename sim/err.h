/*
 * err.h - the simulator's one way of refusing input: a message into the caller's buffer.
 *
 * Owns: sim_fail(), shared by the parsers and checks of sim/ (dist.c, costs.c, sim.c) that
 * report what is wrong with a description, a distribution or a cost model as text and -EINVAL.
 */
#ifndef JIFFY_SIM_ERR_H
#define JIFFY_SIM_ERR_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the reason into @err (@errlen bytes, either may be 0) and return -EINVAL. */
static inline int sim_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int sim_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

#endif /* JIFFY_SIM_ERR_H */
