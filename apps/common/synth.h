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
 * key/value over the limits (TOO_LARGE); then the op: PING, SPIN (over 10 s: BAD_REQUEST),
 * everything else UNSUPPORTED. @check, if not NULL, runs about every microsecond of SPIN (a safepoint).
 * out[5] is the reply's status.
 */
bool jp_synth_serve(const uint8_t *in, size_t len, uint8_t out[32], void (*check)(void));

#endif /* JIFFY_APPS_SYNTH_H */
