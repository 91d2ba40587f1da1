/*
 * apps/kv/kvproto.c - one UDP request in, one reply out (see kvproto.h, docs/protocol.md).
 *
 * Owns: the mapping of malformed input onto "drop" or an error status, and the limits that keep
 * a datagram cheap (docs/security.md). Dropped: shorter than the header, wrong magic, longer than
 * JP_MAX_DGRAM. Replied BAD_REQUEST: wrong version, lengths that do not add up to the datagram,
 * a value on an op other than PUT (unless flagged JP_F_PAD: padding), padding on a PUT, unknown
 * flags. TOO_LARGE: key or value over the limits; a stored value too big for one reply, or whose
 * reply would be more than JP_MAX_AMPLIFICATION times the request (GET: result = its length); a
 * SCAN of more than KVPROTO_MAX_SCAN keys (result = the cap). UNSUPPORTED: SPIN (this is not the
 * synthetic server) and unknown ops.
 */
#define _GNU_SOURCE
#include "kvproto.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kvstore.h"

struct get_ctx {
	char *dst;
	size_t vlen;
};

static void copy_value(void *ctx, const char *val, size_t vlen)
{
	struct get_ctx *g = ctx;
	g->vlen = vlen;
	if (vlen <= JP_MAX_VALUE)
		memcpy(g->dst, val, vlen);
}

size_t kvproto_handle(struct kvstore *kv, const void *req, size_t len, void *reply,
		      struct kvproto_stats *stats)
{
	struct jp_req q;
	struct jp_resp r;
	char *payload = (char *)reply + sizeof(r);
	char *err = NULL;

	kvproto_count(&stats->requests);
	if (len < sizeof(q) || len > JP_MAX_DGRAM) {
		kvproto_count(&stats->dropped);
		return 0;
	}
	memcpy(&q, req, sizeof(q));
	if (q.magic != JP_MAGIC) {
		kvproto_count(&stats->dropped);
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.magic = JP_MAGIC;
	r.version = JP_VERSION;
	r.op = q.op;
	r.klass = q.klass;
	r.id = q.id;
	r.status = JP_OK;

	const char *key = (const char *)req + sizeof(q);
	bool pad = q.flags & JP_F_PAD;
	if (q.version != JP_VERSION || (q.flags & ~JP_F_PAD) || (pad && q.op == JP_PUT)) {
		r.status = JP_BAD_REQUEST;
	} else if (q.key_len > JP_MAX_KEY || q.val_len > JP_MAX_VALUE) {
		r.status = JP_TOO_LARGE;
	} else if (sizeof(q) + (size_t)q.key_len + (size_t)q.val_len != len ||
		   (q.val_len != 0 && q.op != JP_PUT && !pad)) {
		r.status = JP_BAD_REQUEST;
	} else if (q.op == JP_SCAN && q.arg > KVPROTO_MAX_SCAN) {
		r.status = JP_TOO_LARGE;
		r.result = KVPROTO_MAX_SCAN;
	} else {
		switch (q.op) {
		case JP_PING:
			break;
		case JP_GET: {
			struct get_ctx g = {payload, 0};
			int f = kvstore_get(kv, key, q.key_len, copy_value, &g, &err);
			if (f < 0) {
				r.status = JP_SERVER_ERROR;
			} else if (f == 0) {
				r.status = JP_NOT_FOUND;
			} else {
				r.result = g.vlen;
				if (g.vlen > JP_MAX_VALUE ||
				    sizeof(r) + g.vlen > JP_MAX_AMPLIFICATION * len)
					r.status = JP_TOO_LARGE;
				else
					r.payload_len = (uint32_t)g.vlen;
			}
			break;
		}
		case JP_PUT:
			/* the value follows the key: formed only once the lengths were checked */
			if (kvstore_put(kv, key, q.key_len, key + q.key_len, q.val_len, &err) != 0)
				r.status = JP_SERVER_ERROR;
			break;
		case JP_DEL: {
			int d = kvstore_del(kv, key, q.key_len, &err);
			r.status = d < 0 ? JP_SERVER_ERROR : d == 0 ? JP_NOT_FOUND : JP_OK;
			break;
		}
		case JP_SCAN: {
			int64_t n = kvstore_scan(kv, key, q.key_len, q.arg, NULL, NULL, &err);
			if (n < 0)
				r.status = JP_SERVER_ERROR;
			else
				r.result = (uint64_t)n;
			break;
		}
		case JP_SPIN:
		default:
			r.status = JP_UNSUPPORTED;
			break;
		}
	}
	free(err);
	if (r.status == JP_OK || r.status == JP_NOT_FOUND) {
		if (q.op < 6)
			kvproto_count(&stats->ops[q.op]);
	} else {
		kvproto_count(&stats->errors);
	}
	memcpy(reply, &r, sizeof(r));
	return sizeof(r) + r.payload_len;
}
