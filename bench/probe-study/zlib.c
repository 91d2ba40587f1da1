/*
 * bench/probe-study/zlib.c - zlib: deflate, then inflate, generated text.
 *
 * Owns: the "zlib" program: TEXT_BYTES of study_text() compressed at level 6 (zlib's default)
 * and decompressed again, each in one call (zlib's own loops do the streaming). The checksum
 * covers the compressed stream and the round trip; a round trip that differs from the input
 * returns a checksum that cannot match.
 */
#include <stdio.h>
#include <stdlib.h>

#include <zlib.h>

#include "study.h"

#define TEXT_BYTES (6u << 20)

const char study_program[] = "zlib";

static char *text;
static unsigned char *packed, *unpacked;
static uLong packed_cap;
static uint64_t text_hash;

void study_prepare(void)
{
	text = study_text(TEXT_BYTES, 1);
	text_hash = study_hash(STUDY_HASH_SEED, text, TEXT_BYTES);
	packed_cap = compressBound(TEXT_BYTES);
	packed = study_alloc(packed_cap);
	unpacked = study_alloc(TEXT_BYTES);
}

uint64_t work(void)
{
	z_stream d = {0};
	if (deflateInit(&d, 6) != Z_OK)
		abort();
	d.next_in = (unsigned char *)text;
	d.avail_in = TEXT_BYTES;
	d.next_out = packed;
	d.avail_out = (uInt)packed_cap;
	if (deflate(&d, Z_FINISH) != Z_STREAM_END)
		abort();
	uLong packed_len = d.total_out;
	deflateEnd(&d);

	z_stream i = {0};
	if (inflateInit(&i) != Z_OK)
		abort();
	i.next_in = packed;
	i.avail_in = (uInt)packed_len;
	i.next_out = unpacked;
	i.avail_out = TEXT_BYTES;
	if (inflate(&i, Z_FINISH) != Z_STREAM_END || i.total_out != TEXT_BYTES)
		abort();
	inflateEnd(&i);

	uint64_t h = study_hash(STUDY_HASH_SEED, packed, packed_len);
	uint64_t round_trip = study_hash(STUDY_HASH_SEED, unpacked, TEXT_BYTES);
	return study_mix(study_mix(h, packed_len), round_trip ^ text_hash);
}
