/*
 * bench/local_bench.c - what a read and a write of uthread-local storage cost (docs/local.md):
 * Jiffy's fast slots (jf_local_get/jf_local_set, inline), its keys (jf_getspecific /
 * jf_setspecific), and, in the same uthread, the kernel-thread storage they replace:
 * pthread_getspecific / pthread_setspecific and a __thread variable (which a uthread must not
 * rely on unless pinned: jiffy/local.h).
 *
 * Owns: one run on one worker (a uthread, run to completion: nothing interrupts the loops),
 * ROUNDS rounds interleaving every variant, each round timing N operations of each; prints per
 * variant the median over rounds of ns per operation, with the smallest and largest round.
 * Every loop iteration has a compiler barrier (asm volatile "" : : : "memory"), the same in
 * every variant, so that no read is hoisted out of its loop; the values read are summed so that
 * none is discarded.
 *
 * usage: local_bench [--rounds R] [--ops N]   (run under flock /tmp/jiffy-timing.lock)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jiffy/jiffy.h>

#define MAXR 64

enum { V_FAST_GET, V_FAST_SET, V_KEY_GET, V_KEY_SET, V_PT_GET, V_PT_SET, V_TLS_GET, V_TLS_SET, NV };

static const char *names[NV] = {
	"jf_local_get (fast slot)", "jf_local_set (fast slot)", "jf_getspecific",
	"jf_setspecific",	    "pthread_getspecific",      "pthread_setspecific",
	"__thread read",	    "__thread write",
};

static int rounds = 9;
static long nops = 5000000;
static jf_key_t jkey;
static pthread_key_t pkey;
static __thread void *tls_var;
static double res[NV][MAXR];
static volatile uintptr_t sink;

#define BARRIER() __asm__ volatile("" ::: "memory")

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double run(int v)
{
	uintptr_t sum = 0;
	uint64_t t0 = now_ns();

	switch (v) {
	case V_FAST_GET:
		for (long i = 0; i < nops; i++) {
			sum += (uintptr_t)jf_local_get(1);
			BARRIER();
		}
		break;
	case V_FAST_SET:
		for (long i = 0; i < nops; i++) {
			jf_local_set(1, (void *)(uintptr_t)i);
			BARRIER();
		}
		break;
	case V_KEY_GET:
		for (long i = 0; i < nops; i++) {
			sum += (uintptr_t)jf_getspecific(jkey);
			BARRIER();
		}
		break;
	case V_KEY_SET:
		for (long i = 0; i < nops; i++) {
			jf_setspecific(jkey, (void *)(uintptr_t)i);
			BARRIER();
		}
		break;
	case V_PT_GET:
		for (long i = 0; i < nops; i++) {
			sum += (uintptr_t)pthread_getspecific(pkey);
			BARRIER();
		}
		break;
	case V_PT_SET:
		for (long i = 0; i < nops; i++) {
			pthread_setspecific(pkey, (void *)(uintptr_t)i);
			BARRIER();
		}
		break;
	case V_TLS_GET:
		for (long i = 0; i < nops; i++) {
			sum += (uintptr_t)tls_var;
			BARRIER();
		}
		break;
	case V_TLS_SET:
		for (long i = 0; i < nops; i++) {
			tls_var = (void *)(uintptr_t)i;
			BARRIER();
		}
		break;
	}
	sink += sum;
	return (double)(now_ns() - t0) / (double)nops;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void *bench_main(void *arg)
{
	(void)arg;
	if (jf_setspecific(jkey, (void *)1) || jf_local_set(1, (void *)1) ||
	    pthread_setspecific(pkey, (void *)1)) {
		fprintf(stderr, "local_bench: setting the first values failed\n");
		return (void *)1;
	}
	for (int v = 0; v < NV; v++) /* warm-up */
		run(v);
	for (int r = 0; r < rounds; r++) /* interleaved, starting from another variant each round */
		for (int k = 0; k < NV; k++) {
			int v = (k + r) % NV;
			res[v][r] = run(v);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	struct jf_config cfg;
	char err[256];
	void *ret = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			nops = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--rounds R (1..%d)] [--ops N]\n", argv[0], MAXR);
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAXR || nops < 1) {
		fprintf(stderr, "%s: --rounds must be 1..%d and --ops positive\n", argv[0], MAXR);
		return 2;
	}
	if (jf_key_create(&jkey, NULL) || pthread_key_create(&pkey, NULL)) {
		fprintf(stderr, "%s: key creation failed\n", argv[0]);
		return 1;
	}
	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	cfg.workers = 1;
	snprintf(cfg.preempt, sizeof(cfg.preempt), "none");
	if (jf_run(&cfg, bench_main, NULL, &ret) || ret) {
		fprintf(stderr, "%s: run failed\n", argv[0]);
		return 1;
	}
	printf("uthread-local storage, ns per operation (%d rounds of %ld ops, one uthread on one "
	       "worker, preemption none): median [min, max] of the round means\n",
	       rounds, nops);
	for (int v = 0; v < NV; v++) {
		qsort(res[v], (size_t)rounds, sizeof(double), cmp_d);
		printf("  %-26s %6.2f  [%.2f, %.2f]\n", names[v], res[v][rounds / 2], res[v][0],
		       res[v][rounds - 1]);
	}
	return 0;
}
