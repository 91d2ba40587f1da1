/*
 * bench/probe-study/study.h - what each program of the probe study gives the harness.
 *
 * Owns: the driver interface. A driver (zlib.c, zstd.c, sqlite.c, lua.c, matmul.c, hashtab.c)
 * defines study_program, study_prepare() and work(); harness.c runs work() as the preempted
 * uthread and measures it. Drivers and the libraries they call are compiled twice by clang-14
 * -O2, with and without the probe pass; the harness and Jiffy never get probes.
 *
 * Invariants: work() is called once per process and is deterministic: the checksum it returns
 * depends on nothing but the code (no time, addresses, hash seeds or allocation order), so it
 * must be equal across builds, mechanisms and quanta. Everything that is not the measured work
 * (generating input, first-touching big buffers) belongs in study_prepare(), which runs before
 * the runtime starts and is not timed.
 */
#ifndef PROBE_STUDY_H
#define PROBE_STUDY_H

#include <stddef.h>
#include <stdint.h>

/* The program's name in the JSON output ("zlib", "zstd", ...). */
extern const char study_program[];

/* Build inputs and touch every page work() will write, before the runtime starts. */
void study_prepare(void);

/* The measured work. Return: a checksum of everything it produced. */
uint64_t work(void);

/* ---- helpers shared by the drivers (common.c, compiled like the drivers) ------------------ */

/* A 64-bit hash of @len bytes at @p, continuing from @h (start with STUDY_HASH_SEED). */
#define STUDY_HASH_SEED 0x6a09e667f3bcc909ull
uint64_t study_hash(uint64_t h, const void *p, size_t len);

/* Mix one 64-bit value into @h. */
static inline uint64_t study_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The splitmix64 sequence: deterministic pseudo-random numbers from @state. */
static inline uint64_t study_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * study_text() - @len bytes of English-like text (words from a fixed vocabulary with a skewed
 * frequency, punctuation, line breaks), the same for every call with the same @seed. Compresses
 * about as well as prose does (zlib level 6: ~3x). Returns malloc'd memory (touched).
 */
char *study_text(size_t len, uint64_t seed);

/* study_alloc() - @len bytes, every page written once (so work() takes no first-touch faults). */
void *study_alloc(size_t len);

#endif /* PROBE_STUDY_H */
