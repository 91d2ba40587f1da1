/*
 * bench/probe-study/hashtab.c - an open-addressing hash table: build, then look up.
 *
 * Owns: the "hashtab" program: KEYS pseudo-random 64-bit keys inserted into a linear-probing
 * table of 2 x KEYS slots (load 0.5), then 2 x KEYS lookups, half of them hits. Memory-bound:
 * most probes of the table miss the caches.
 */
#include <stdint.h>

#include "study.h"

#define KEYS (4u << 20)
#define SLOTS (2 * KEYS) /* a power of two */

const char study_program[] = "hashtab";

struct slot {
	uint64_t key; /* 0: empty (keys are never 0) */
	uint64_t value;
};

static struct slot *table;

void study_prepare(void)
{
	table = study_alloc(sizeof(struct slot) * SLOTS); /* zeroed: every slot empty */
}

static uint64_t key_of(uint64_t i)
{
	uint64_t st = i * 0x2545f4914f6cdd1dull;
	return study_rand(&st) | 1; /* never 0 */
}

static uint64_t slot_of(uint64_t key)
{
	return (key * 0x9e3779b97f4a7c15ull) >> 40 & (SLOTS - 1);
}

static void insert(uint64_t key, uint64_t value)
{
	uint64_t s = slot_of(key);
	while (table[s].key && table[s].key != key)
		s = (s + 1) & (SLOTS - 1);
	table[s].key = key;
	table[s].value = value;
}

static int lookup(uint64_t key, uint64_t *value)
{
	for (uint64_t s = slot_of(key);; s = (s + 1) & (SLOTS - 1)) {
		if (table[s].key == key) {
			*value = table[s].value;
			return 1;
		}
		if (!table[s].key)
			return 0;
	}
}

uint64_t work(void)
{
	for (uint64_t i = 0; i < KEYS; i++)
		insert(key_of(i), i * 7 + 1);
	uint64_t h = STUDY_HASH_SEED, hits = 0;
	for (uint64_t i = 0; i < 2 * (uint64_t)KEYS; i++) {
		/* Even i: a key that was inserted; odd i: one from beyond the inserted range. */
		uint64_t v, k = key_of(i & 1 ? KEYS + i : i / 2);
		if (lookup(k, &v)) {
			hits++;
			h = study_mix(h, v);
		}
	}
	return study_mix(h, hits);
}
