/*
 * kernels.c - the small kernels probe_bench times, compiled once per variant.
 *
 * Owns: four kernels shaped like the ones that hurt compiler instrumentation in the Aspen paper
 * (tight loops, many calls): a matrix multiply, a hash-table build, a byte loop over a string,
 * a recursive function. tools/probe-pass/bench/CMakeLists.txt compiles this file several times,
 * without the plugin and with it under different -mllvm options, with -DVARIANT=<name>; each
 * copy's functions carry the variant in their names (kernels_<variant>), so one process can
 * time all variants in interleaved order. Every kernel returns a checksum that must not depend
 * on the variant.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define K(name) CAT(name, VARIANT)

/* C += A * B, n x n doubles, i-k-j order (vectorized inner loop). */
static uint64_t K(matmul)(struct kernel_data *d)
{
	size_t n = d->n;
	for (size_t i = 0; i < n * n; i++)
		d->c[i] = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++) {
			double a = d->a[i * n + k];
			for (size_t j = 0; j < n; j++)
				d->c[i * n + j] += a * d->b[k * n + j];
		}
	double s = 0;
	for (size_t i = 0; i < n * n; i++)
		s += d->c[i] * (double)(i & 7);
	return (uint64_t)s;
}

/* Insert d->nkeys keys into an open-addressing table (linear probing), then look them all up. */
static uint64_t K(hashbuild)(struct kernel_data *d)
{
	size_t mask = d->slots - 1;
	uint64_t found = 0;
	for (size_t i = 0; i <= mask; i++)
		d->table[i] = 0;
	for (size_t i = 0; i < d->nkeys; i++) {
		uint64_t key = d->keys[i];
		size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;
		while (d->table[h] != 0 && d->table[h] != key)
			h = (h + 1) & mask;
		d->table[h] = key;
	}
	for (size_t i = 0; i < d->nkeys; i++) {
		uint64_t key = d->keys[i] ^ (i & 1); /* half present, half absent */
		size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;
		while (d->table[h] != 0 && d->table[h] != key)
			h = (h + 1) & mask;
		found += d->table[h] == key;
	}
	return found;
}

/* Words, upper-case letters and a rolling hash of a text, one byte at a time. */
static uint64_t K(strloop)(struct kernel_data *d)
{
	uint64_t words = 0, upper = 0, h = 0;
	int in_word = 0;
	for (const char *p = d->text; *p; p++) {
		unsigned char c = (unsigned char)*p;
		int letter = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
		words += letter && !in_word;
		in_word = letter;
		upper += c >= 'A' && c <= 'Z';
		h = h * 31 + c;
	}
	return words * 1000003 + upper + h;
}

static uint64_t K(fib)(unsigned n)
{
	return n < 2 ? n : K(fib)(n - 1) + K(fib)(n - 2);
}

static uint64_t K(recursive)(struct kernel_data *d)
{
	return K(fib)(d->fib_n);
}

const struct kernel_set K(kernels) = {
	.variant = VARIANT_NAME,
	.run = {K(matmul), K(hashbuild), K(strloop), K(recursive)},
};
