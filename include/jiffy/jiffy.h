/*
 * jiffy/jiffy.h - the whole public API of Jiffy, a user-space scheduler for latency-critical
 * servers: M:N user threads on one worker per core, scheduling policies chosen at run time.
 */
#ifndef JIFFY_JIFFY_H
#define JIFFY_JIFFY_H

#include <jiffy/export.h>

/* The version of these headers (semantic versioning; CHANGELOG.md). The build reads it from
 * here: the three "#define JIFFY_VERSION_<PART> N" lines are the only place it is written (keep
 * each alone on its line: CMake and the scripts match it exactly). */
/** JIFFY_VERSION_MAJOR - the major version (0: the API may still change in a minor release). */
#define JIFFY_VERSION_MAJOR 0
/** JIFFY_VERSION_MINOR - the minor version. */
#define JIFFY_VERSION_MINOR 1
/** JIFFY_VERSION_PATCH - the patch version. */
#define JIFFY_VERSION_PATCH 0
#define JIFFY__STR2(x) #x
#define JIFFY__STR(x) JIFFY__STR2(x)
/** JIFFY_VERSION - the version of these headers as a string, "MAJOR.MINOR.PATCH". */
#define JIFFY_VERSION                                                                              \
	JIFFY__STR(JIFFY_VERSION_MAJOR) "." JIFFY__STR(JIFFY_VERSION_MINOR) "." JIFFY__STR(         \
		JIFFY_VERSION_PATCH)
/** JIFFY_VERSION_NUMBER - one number that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define JIFFY_VERSION_NUMBER                                                                       \
	(JIFFY_VERSION_MAJOR * 10000 + JIFFY_VERSION_MINOR * 100 + JIFFY_VERSION_PATCH)

#include <jiffy/blocking.h>
#include <jiffy/chan.h>
#include <jiffy/config.h>
#include <jiffy/local.h>
#include <jiffy/net.h>
#include <jiffy/pfn.h>
#include <jiffy/policy.h>
#include <jiffy/preempt.h>
#include <jiffy/stats.h>
#include <jiffy/sync.h>
#include <jiffy/thread.h>
#include <jiffy/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * jf_version() - the version of the library linked in, "MAJOR.MINOR.PATCH".
 * @number: if not NULL, set to that version's JIFFY_VERSION_NUMBER.
 *
 * Compare with JIFFY_VERSION (the headers compiled against) to catch a program built against one
 * version and run with another (a shared library swapped underneath it).
 */
JF_API const char *jf_version(int *number);

#ifdef __cplusplus
}
#endif

#endif /* JIFFY_JIFFY_H */
