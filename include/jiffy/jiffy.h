/*
 * jiffy/jiffy.h - the whole public API of Jiffy, a user-space scheduler for latency-critical
 * servers: M:N user threads on one worker per core, scheduling policies chosen at run time.
 */
#ifndef JIFFY_JIFFY_H
#define JIFFY_JIFFY_H

#define JIFFY_VERSION_MAJOR 0
#define JIFFY_VERSION_MINOR 1
#define JIFFY_VERSION_PATCH 0
#define JIFFY_VERSION "0.1.0"

#include <jiffy/config.h>
#include <jiffy/net.h>
#include <jiffy/policy.h>
#include <jiffy/preempt.h>
#include <jiffy/stats.h>
#include <jiffy/sync.h>
#include <jiffy/thread.h>
#include <jiffy/time.h>

#endif /* JIFFY_JIFFY_H */
