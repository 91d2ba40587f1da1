/*
 * apps/common/breakdown.h - where a request's time goes inside a server (--breakdown).
 *
 * Owns: per-request timestamps taken by a server on its own path, and the summary printed at
 * exit. For each request: the kernel's receive time of its datagram (SIOCGSTAMPNS, taken by
 * the network stack when the datagram reached the socket), the time the server's receiver
 * got it from recvfrom (the worker woke, polled and ran the receiver), the time its handler
 * started (spawn and scheduling) and the time its reply was handed to the kernel. The summary
 * splits the requests by how long the server had been idle before the datagram arrived
 * (shorter or longer than the idle spin, JIFFY_SPIN_US): the second group found a parked
 * worker. All times are CLOCK_REALTIME, the clock of the kernel's timestamp.
 * Used by docs/performance.md's "low-load tail"; off by default (no cost when off).
 */
#ifndef JIFFY_APPS_BREAKDOWN_H
#define JIFFY_APPS_BREAKDOWN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct jp_bd_stamp {
	uint64_t arrival, received, started, replied; /* ns, CLOCK_REALTIME */
};

/* Start recording up to @max requests; @idle_split_ns: the idle time that splits the groups. */
int jp_bd_init(size_t max, uint64_t idle_split_ns);
bool jp_bd_enabled(void);
uint64_t jp_bd_now(void);
/* The kernel receive time of the last datagram read from @fd (now if it has none). */
uint64_t jp_bd_arrival(int fd);
/* Record one request (any thread; lock-free slot claim). */
void jp_bd_record(const struct jp_bd_stamp *s);
/* Print the summary to @f. */
void jp_bd_report(FILE *f, const char *prog);

#endif /* JIFFY_APPS_BREAKDOWN_H */
