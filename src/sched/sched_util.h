/*
 * sched_util.h - small pieces every policy in src/sched/ shares.
 *
 * Owns: the per-worker pseudo-random stream that spreads steal victims (seeded from
 * jf_policy_params.seed, so the simulator and the conformance harness are deterministic), and
 * the weight arithmetic of the fair policies (cfs, eevdf): attr.weight with 1024 as nice 0, and
 * CPU time converted to virtual time.
 */
#ifndef JIFFY_SCHED_UTIL_H
#define JIFFY_SCHED_UTIL_H

#include <stdint.h>

#include <jiffy/policy.h>

/* The first state of worker @worker's victim stream (never 0: xorshift would stay at 0). */
static inline uint64_t sched_rng_seed(uint64_t seed, int worker)
{
	return (seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(worker + 1))) | 1;
}

/* xorshift64*: a per-worker stream to spread steal victims (quality is not critical). */
static inline uint64_t sched_next_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1Dull;
}

#define SCHED_NICE0_WEIGHT 1024u
#define SCHED_MAX_WEIGHT (1u << 20)

/* @t's weight: attr.weight, 0 meaning nice 0 (1024), capped at 2^20. */
static inline uint32_t sched_weight(const struct jf_task *t)
{
	uint32_t w = t->attr.weight;
	return w == 0 ? SCHED_NICE0_WEIGHT : w > SCHED_MAX_WEIGHT ? SCHED_MAX_WEIGHT : w;
}

/* @delta_ns of CPU time in virtual time for @weight. */
static inline uint64_t sched_vdelta(uint64_t delta_ns, uint32_t weight)
{
	return weight == SCHED_NICE0_WEIGHT ? delta_ns : delta_ns * SCHED_NICE0_WEIGHT / weight;
}

#endif /* JIFFY_SCHED_UTIL_H */
