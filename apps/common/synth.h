/*
 * apps/common/synth.h - serving one request of the synthetic workload (PING, SPIN).
 */
#ifndef JIFFY_APPS_SYNTH_H
#define JIFFY_APPS_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Serve one datagram of @len bytes (its real length, possibly more than the buffer holds).
 * Fill the 32-byte reply in @out and return true; return false when the datagram is garbage
 * (short, wrong magic, over-long) and is dropped without a reply. Order of checks, the same in
 * the Go and Tokio peers: garbage; wrong version or lengths that do not add up (BAD_REQUEST);
 * key/value over the limits (TOO_LARGE); then the op: PING, SPIN (over @max_spin_ns: TOO_LARGE
 * with result = @max_spin_ns), everything else UNSUPPORTED. @check, if not NULL, runs about every microsecond of SPIN (a safepoint).
 * out[5] is the reply's status.
 */
bool jp_synth_serve(const uint8_t *in, size_t len, uint8_t out[32], uint64_t max_spin_ns,
		    void (*check)(void));

/* --max-spin-us: the default cap (1 ms: far above every experiment's service times, far below
 * what lets a stranger pin a CPU) and the largest a user may set (10 s). */
#define JP_SPIN_CAP_DEFAULT_US 1000ul
#define JP_SPIN_CAP_MAX_US 10000000ul
/* What a non-loopback --bind exposes on a synthetic server (jp_listen_check's @open). */
#define JP_SYNTH_OPEN "the UDP request protocol (SPIN: any CPU time up to --max-spin-us per datagram)"

#define JP_SPIN_CAP_USAGE                                                                          \
	"  --max-spin-us US  the longest SPIN a datagram may ask for (default 1000, max\n"         \
	"                    10000000); longer ones get TOO_LARGE (docs/security.md)\n"

#endif /* JIFFY_APPS_SYNTH_H */
