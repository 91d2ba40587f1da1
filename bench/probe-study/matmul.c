/*
 * bench/probe-study/matmul.c - naive matrix multiply (Aspen's matrix_multiply: tight loops).
 *
 * Owns: the "matmul" program: C = A x B on N x N doubles, the textbook i-j-k loops (the inner
 * loop is a dependent multiply-add chain over a column of B, so it is neither vectorised nor
 * reassociated at -O2), ROUNDS times with B taken from the previous product's scaled rows.
 */
#include <stdint.h>
#include <string.h>

#include "study.h"

#define N 384
#define ROUNDS 12

const char study_program[] = "matmul";

static double (*a)[N], (*b)[N], (*c)[N];

void study_prepare(void)
{
	a = study_alloc(sizeof(double[N][N]));
	b = study_alloc(sizeof(double[N][N]));
	c = study_alloc(sizeof(double[N][N]));
	uint64_t st = 42;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			a[i][j] = (double)(study_rand(&st) % 2001) / 1000.0 - 1.0;
			b[i][j] = (double)(study_rand(&st) % 2001) / 1000.0 - 1.0;
		}
}

static void multiply(void)
{
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double sum = 0.0;
			for (int k = 0; k < N; k++)
				sum += a[i][k] * b[k][j];
			c[i][j] = sum;
		}
}

uint64_t work(void)
{
	uint64_t h = STUDY_HASH_SEED;
	for (int r = 0; r < ROUNDS; r++) {
		multiply();
		h = study_hash(h, c, sizeof(double[N][N]));
		/* The next B: this product scaled back to [-1, 1] (keeps the values finite). */
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++)
				b[i][j] = c[i][j] / (double)N;
	}
	return h;
}
