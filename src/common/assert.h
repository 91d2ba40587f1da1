/*
 * assert.h - the runtime's invariant checks: JF_ASSERT() and JF_BUG_ON().
 *
 * Owns: how a broken invariant is reported. JF_ASSERT(cond, fmt, ...) is compiled in when
 * JF_ASSERTS is 1: by default in builds without NDEBUG (Debug: the ASan and TSan builds CI runs,
 * and debug builds), off in Release/RelWithDebInfo unless -DJIFFY_ASSERTS=ON (CMake) turns it
 * on; use it on hot paths. JF_BUG_ON(cond, fmt, ...) is always on; use it on slow paths where
 * the check costs nothing next to the work around it. Either prints the file, line, the failed
 * condition and a message, then aborts (a core for gdb: tools/gdb/jiffy-gdb.py). Header-only,
 * so policy code that uses it still builds into the simulator.
 */
#ifndef JIFFY_ASSERT_H
#define JIFFY_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#ifndef JF_ASSERTS
#ifdef NDEBUG
#define JF_ASSERTS 0
#else
#define JF_ASSERTS 1
#endif
#endif

#define JF__CHECK_FAIL(kind, cond, ...)                                                           \
	do {                                                                                       \
		fprintf(stderr, "jiffy: %s failed at %s:%d: %s: ", kind, __FILE__, __LINE__, cond); \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#define JF_BUG_ON(cond, ...)                                                                      \
	do {                                                                                       \
		if (__builtin_expect(!!(cond), 0))                                                 \
			JF__CHECK_FAIL("JF_BUG_ON", #cond, __VA_ARGS__);                           \
	} while (0)

#define JF_ASSERT(cond, ...)                                                                      \
	do {                                                                                       \
		if (JF_ASSERTS && __builtin_expect(!(cond), 0))                                    \
			JF__CHECK_FAIL("JF_ASSERT", #cond, __VA_ARGS__);                           \
	} while (0)

#endif /* JIFFY_ASSERT_H */
