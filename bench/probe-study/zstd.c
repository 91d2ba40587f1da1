/*
 * bench/probe-study/zstd.c - Zstandard: compress at level 3, then decompress, generated text.
 *
 * Owns: the "zstd" program: ROUNDS one-shot round trips of TEXT_BYTES of study_text() through
 * ZSTD_compressCCtx (level 3, zstd's default) and ZSTD_decompressDCtx. zstd is built
 * single-threaded, as its library is by default; its x86-64 assembly Huffman decoder
 * (huf_decompress_amd64.S, the default on CPUs with BMI2) is not compiled C, so it has no probes.
 */
#include <stdlib.h>

#include <zstd.h>

#include "study.h"

#define TEXT_BYTES (16u << 20)
#define ROUNDS 3

const char study_program[] = "zstd";

static char *text;
static unsigned char *packed, *unpacked;
static size_t packed_cap;
static uint64_t text_hash;

void study_prepare(void)
{
	text = study_text(TEXT_BYTES, 2);
	text_hash = study_hash(STUDY_HASH_SEED, text, TEXT_BYTES);
	packed_cap = ZSTD_compressBound(TEXT_BYTES);
	packed = study_alloc(packed_cap);
	unpacked = study_alloc(TEXT_BYTES);
}

uint64_t work(void)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	if (!cc || !dc)
		abort();
	uint64_t h = STUDY_HASH_SEED;
	for (int r = 0; r < ROUNDS; r++) {
		size_t n = ZSTD_compressCCtx(cc, packed, packed_cap, text, TEXT_BYTES, 3);
		if (ZSTD_isError(n))
			abort();
		size_t m = ZSTD_decompressDCtx(dc, unpacked, TEXT_BYTES, packed, n);
		if (ZSTD_isError(m) || m != TEXT_BYTES)
			abort();
		h = study_mix(study_hash(h, packed, n), n);
		h = study_mix(h, study_hash(STUDY_HASH_SEED, unpacked, TEXT_BYTES) ^ text_hash);
	}
	ZSTD_freeCCtx(cc);
	ZSTD_freeDCtx(dc);
	return h;
}
