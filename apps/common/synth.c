/*
 * apps/common/synth.c - the synthetic server's request handling, shared by jiffy-synth (on
 * Jiffy) and synth-pthread (on Linux threads), so both answer every datagram identically:
 * validation order, status codes and the SPIN loop (docs/protocol.md). The cap on a SPIN is the
 * server's --max-spin-us (docs/security.md).
 */
#include "synth.h"

#include <string.h>

#include "proto.h"
#include "spin.h"

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

bool jp_synth_serve(const uint8_t *in, size_t len, uint8_t out[32], uint64_t max_spin_ns,
		    void (*check)(void))
{
	if (len < sizeof(struct jp_req) || len > JP_MAX_DGRAM || get16(in) != JP_MAGIC)
		return false;
	uint8_t version = in[2], op = in[3], klass = in[4];
	uint16_t key_len = get16(in + 6);
	uint32_t val_len = get32(in + 8);
	uint64_t id = get64(in + 16), arg = get64(in + 24);
	uint8_t status = JP_OK;
	uint64_t result = 0;

	if (version != JP_VERSION || len != sizeof(struct jp_req) + key_len + (size_t)val_len)
		status = JP_BAD_REQUEST;
	else if (key_len > JP_MAX_KEY || val_len > JP_MAX_VALUE)
		status = JP_TOO_LARGE;
	else if (op == JP_PING)
		result = 0;
	else if (op == JP_SPIN && arg > max_spin_ns)
		status = JP_TOO_LARGE, result = max_spin_ns; /* the client learns the cap */
	else if (op == JP_SPIN)
		jp_spin_ns(arg, check), result = arg;
	else
		status = JP_UNSUPPORTED; /* GET, PUT, DEL, SCAN, unknown ops: not served here */

	memset(out, 0, 32);
	put16(out, JP_MAGIC);
	out[2] = JP_VERSION;
	out[3] = op;
	out[4] = klass;
	out[5] = status;
	put32(out + 8, 0); /* payload_len */
	put64(out + 16, id);
	put64(out + 24, result);
	return true;
}

