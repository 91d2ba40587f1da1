/*
 * bench/probe-study/common.c - helpers the drivers share: hashing, generated text, buffers.
 *
 * Owns: study_hash(), study_text(), study_alloc() (study.h). Compiled like the drivers (with the
 * probes in the probes build), so the checksum loops that run inside work() poll too.
 */
#include <stdlib.h>
#include <string.h>

#include "study.h"

uint64_t study_hash(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, b + i, 8);
		h = study_mix(h, w);
	}
	uint64_t tail = 0;
	memcpy(&tail, b + i, len - i);
	return study_mix(h, tail ^ (uint64_t)len << 56);
}

void *study_alloc(size_t len)
{
	unsigned char *p = malloc(len ? len : 1);
	if (!p)
		abort();
	memset(p, 0, len);
	return p;
}

enum { VOCAB = 4096, MAX_WORD = 24 };

static const char *const syllables[] = {
	"the", "an", "in", "er", "on", "at", "ing", "re", "st", "ent", "ion", "al", "or",
	"ti", "es", "con", "ver", "pro", "com", "de", "ble", "ly", "sub", "tra", "men",
	"ca", "po", "ri", "la", "mo", "ne", "si", "ta", "vo", "gu", "ba", "ke", "du",
};
#define NSYL (sizeof(syllables) / sizeof(syllables[0]))

char *study_text(size_t len, uint64_t seed)
{
	static char vocab[VOCAB][MAX_WORD];
	uint64_t st = seed;
	for (int w = 0; w < VOCAB; w++) {
		int n = 1 + (int)(study_rand(&st) % 4), at = 0;
		for (int s = 0; s < n; s++) {
			const char *syl = syllables[study_rand(&st) % NSYL];
			size_t l = strlen(syl);
			if (at + l >= MAX_WORD)
				break;
			memcpy(vocab[w] + at, syl, l);
			at += (int)l;
		}
		vocab[w][at] = 0;
	}

	char *out = malloc(len + 1);
	if (!out)
		abort();
	size_t at = 0, line = 0;
	int in_sentence = 0, left = 0;
	while (at < len) {
		uint64_t r = study_rand(&st);
		/* The product of two uniforms: common words are much more common (roughly Zipf). */
		unsigned idx = (unsigned)(((r & 0xfff) * ((r >> 12) & 0xfff)) >> 12);
		const char *w = vocab[idx];
		char word[MAX_WORD + 4];
		size_t l = strlen(w);
		memcpy(word, w, l);
		if (!in_sentence) {
			word[0] = (char)(word[0] - 'a' + 'A');
			left = 6 + (int)((r >> 24) % 15);
			in_sentence = 1;
		}
		if (--left == 0) {
			word[l++] = '.';
			in_sentence = 0;
		} else if (((r >> 32) & 15) == 0) {
			word[l++] = ',';
		}
		char sep = line + l + 1 > 72 ? '\n' : ' ';
		word[l++] = sep;
		line = sep == '\n' ? 0 : line + l;
		size_t n = l < len - at ? l : len - at;
		memcpy(out + at, word, n);
		at += n;
	}
	out[len] = 0;
	return out;
}
