/*
 * apps/kv/kvproto.h - the UDP request protocol (docs/protocol.md) on top of kvstore, shared by
 * jiffy-kv and kv-pthread so both answer every datagram byte for byte the same way.
 *
 * Owns: validation of a request datagram, running it against the store, building the reply, and
 * the front end's counters. Sockets are the caller's business.
 */
#ifndef JIFFY_APPS_KVPROTO_H
#define JIFFY_APPS_KVPROTO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/proto.h"

struct kvstore;

/* Receive into a buffer of KVPROTO_RECV_BUF bytes: a datagram that fills it is over the limit. */
#define KVPROTO_RECV_BUF (JP_MAX_DGRAM + 1)
/* The most keys one SCAN datagram may visit (more: TOO_LARGE, result = this), so that no
 * datagram buys more than a few milliseconds of CPU; RESP's SCAN COUNT has the same cap. */
#define KVPROTO_MAX_SCAN 10000u
/* The largest reply: header + a GET value. */
#define KVPROTO_REPLY_MAX (sizeof(struct jp_resp) + JP_MAX_VALUE)

struct kvproto_stats {
	_Atomic uint64_t requests; /* datagrams received */
	_Atomic uint64_t replies;  /* replies sent */
	_Atomic uint64_t dropped;  /* malformed datagrams dropped without a reply */
	_Atomic uint64_t errors;   /* replies with an error status, and failed sends */
	_Atomic uint64_t ops[6];   /* requests per op (enum jp_op) that got an OK/NOT_FOUND */
};

/*
 * kvproto_handle() - run the request in @req (@len bytes as received) and build its reply in
 * @reply (KVPROTO_REPLY_MAX bytes). Return the reply's length, or 0 if the datagram is dropped
 * (too short, wrong magic, too long: counted in stats->dropped). Counts requests and errors;
 * the caller counts replies (after its send succeeded) and failed sends.
 */
size_t kvproto_handle(struct kvstore *kv, const void *req, size_t len, void *reply,
		      struct kvproto_stats *stats);

static inline void kvproto_count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

#endif /* JIFFY_APPS_KVPROTO_H */
