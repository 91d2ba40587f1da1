/*
 * fuzz/fuzz_proto.c - libFuzzer target for the UDP request protocol (apps/common/proto.h,
 * docs/protocol.md): the input is one datagram, handed to both decoders of it:
 *  - kvproto_handle() (apps/kv/kvproto.c, jiffy-kv and kv-pthread), run against the in-memory
 *    store (fake_kvstore.c) instead of RocksDB, twice in a row (a PUT or DEL changes what the
 *    second sees); on datagrams whose id is odd the second call to the store fails, so
 *    SERVER_ERROR is reached too;
 *  - jp_synth_serve() (apps/common/synth.c, jiffy-synth and synth-pthread), with SPIN capped at
 *    MAX_SPIN_NS so that a datagram costs microseconds.
 *
 * Owns the checks of what docs/protocol.md promises of every datagram:
 *  - both servers drop exactly the same datagrams (shorter than the header, wrong magic, longer
 *    than JP_MAX_DGRAM), and reply to every other one;
 *  - a reply echoes magic, version, op, klass and id, has a known status, a payload only on a
 *    GET that is OK, within KVPROTO_REPLY_MAX, and never more than JP_MAX_AMPLIFICATION times
 *    the request's size;
 *  - the synthetic server's statuses follow its documented order of checks (synth.h).
 * A violated check calls abort(), which libFuzzer reports as a crash.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_kvstore.h"
#include "kvproto.h"
#include "proto.h"
#include "synth.h"

#define MAX_SPIN_NS 2000u

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz_proto: check failed: %s (line %d)\n", #cond,        \
				__LINE__);                                                      \
			abort();                                                                \
		}                                                                               \
	} while (0)

static void check_echo(const struct jp_req *q, const struct jp_resp *r)
{
	CHECK(r->magic == JP_MAGIC && r->version == JP_VERSION);
	CHECK(r->op == q->op && r->klass == q->klass && r->id == q->id);
	CHECK(r->status <= JP_TOO_LARGE);
}

static void fuzz_kv(const uint8_t *data, size_t size, const struct jp_req *q, int garbage)
{
	static struct kvproto_stats stats;
	_Alignas(8) uint8_t reply[KVPROTO_REPLY_MAX];
	struct jp_resp r;

	fake_kvstore_reset(16);
	if (!garbage && q->id % 2)
		fake_kvstore_fail_every(2); /* the second round's call fails */
	/* Twice: a PUT or DEL changes what the second GET/SCAN/DEL sees. */
	for (int round = 0; round < 2; round++) {
		memset(reply, 0xa5, sizeof(reply));
		size_t n = kvproto_handle(fake_kvstore(), data, size, reply, &stats);
		if (garbage) {
			CHECK(n == 0);
			continue;
		}
		CHECK(n >= sizeof(r) && n <= KVPROTO_REPLY_MAX);
		memcpy(&r, reply, sizeof(r));
		check_echo(q, &r);
		CHECK(n == sizeof(r) + r.payload_len);
		CHECK(n <= JP_MAX_AMPLIFICATION * size);
		CHECK(r.payload_len == 0 || (q->op == JP_GET && r.status == JP_OK));
		if (r.status == JP_OK && q->op == JP_GET)
			CHECK(r.result == r.payload_len);
	}
	fake_kvstore_reset(0); /* every allocation freed: else libFuzzer runs a leak check */
}

static void fuzz_synth(const uint8_t *data, size_t size, const struct jp_req *q, int garbage)
{
	_Alignas(8) uint8_t out[32];
	struct jp_resp r;

	memset(out, 0xa5, sizeof(out));
	bool replied = jp_synth_serve(data, size, out, MAX_SPIN_NS, NULL);
	CHECK(replied == !garbage);
	if (!replied)
		return;
	memcpy(&r, out, sizeof(r));
	check_echo(q, &r);
	CHECK(r.payload_len == 0 && r.reserved == 0 && r.reserved2 == 0);
	uint8_t want;
	if (q->version != JP_VERSION || size != sizeof(*q) + q->key_len + (size_t)q->val_len)
		want = JP_BAD_REQUEST;
	else if (q->key_len > JP_MAX_KEY || q->val_len > JP_MAX_VALUE)
		want = JP_TOO_LARGE;
	else if (q->op == JP_PING)
		want = JP_OK;
	else if (q->op == JP_SPIN)
		want = q->arg > MAX_SPIN_NS ? JP_TOO_LARGE : JP_OK;
	else
		want = JP_UNSUPPORTED;
	CHECK(r.status == want);
	if (q->op == JP_SPIN && want != JP_BAD_REQUEST && q->key_len <= JP_MAX_KEY &&
	    q->val_len <= JP_MAX_VALUE)
		CHECK(r.result == (q->arg > MAX_SPIN_NS ? MAX_SPIN_NS : q->arg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jp_req q;
	memset(&q, 0, sizeof(q));
	memcpy(&q, data, size < sizeof(q) ? size : sizeof(q));
	int garbage = size < sizeof(q) || size > JP_MAX_DGRAM || q.magic != JP_MAGIC;

	fuzz_kv(data, size, &q, garbage);
	fuzz_synth(data, size, &q, garbage);
	return 0;
}
