/*
 * sim/rng.h - the simulator's pseudo-random streams.
 *
 * Owns: xoshiro256** (Blackman & Vigna) seeded by splitmix64, and the uniform doubles drawn
 * from it. Each purpose (inter-arrival gaps, service times, placement, blocking, mechanism
 * jitter) has its own stream derived from the run's seed and a stream number, so that changing
 * one part of a configuration (the policy, blocking, the mechanism) never changes the arrivals
 * or the service times another configuration sees: curves compare the same requests.
 * Invariant: a stream is a pure function of (seed, stream number).
 */
#ifndef JIFFY_SIM_RNG_H
#define JIFFY_SIM_RNG_H

#include <stdint.h>

struct sim_rng {
	uint64_t s[4];
};

enum sim_stream {
	SIM_STREAM_GAPS = 1,
	SIM_STREAM_SERVICE,
	SIM_STREAM_PLACEMENT,
	SIM_STREAM_BLOCK,
	SIM_STREAM_MECH,
};

static inline uint64_t sim_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static inline void sim_rng_seed(struct sim_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
	for (int i = 0; i < 4; i++)
		r->s[i] = sim_splitmix64(&x);
}

static inline uint64_t sim_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = sim_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = sim_rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1): 53 random bits. */
static inline double sim_rng_uniform(struct sim_rng *r)
{
	return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in (0, 1]: safe to take the logarithm of. */
static inline double sim_rng_uniform_pos(struct sim_rng *r)
{
	return (double)((sim_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

/* Uniform integer in [0, n) (n > 0), by multiply-shift (bias < n / 2^64). */
static inline uint32_t sim_rng_below(struct sim_rng *r, uint32_t n)
{
	return (uint32_t)(((unsigned __int128)sim_rng_next(r) * n) >> 64);
}

#endif /* JIFFY_SIM_RNG_H */
