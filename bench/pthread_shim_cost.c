/*
 * bench/pthread_shim_cost.c - what src/shim/pthread_shim.c adds to an uncontended pthread lock
 * (docs/performance.md, "pthread lock holders are not preempted").
 *
 * Owns: one uthread on one worker taking and releasing a pthread mutex, a rwlock (as writer)
 * and a spin lock N times each, and printing ns per lock/unlock pair. Run it with
 * JIFFY_PTHREAD_SHIM=1 and =0 alternately (the shim's regions on and off; the functions are
 * the shim's in both cases, so the difference is the two counter updates and their branch).
 * Built a second time as pthread_lock_glibc (-DJF_BENCH_PLAIN: no Jiffy, no jf_run, glibc's
 * functions directly), the baseline for what going through the shim costs at all.
 *
 *   pthread_shim_cost [N (10000000)]      pthread_lock_glibc [N]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef JF_BENCH_PLAIN
#include <jiffy/jiffy.h>
#endif

static unsigned long n = 10000000;

static double ns_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *run(void *arg)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	static pthread_spinlock_t s;
	(void)arg;
	pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
	double t0 = ns_now();
	for (unsigned long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	double t1 = ns_now();
	for (unsigned long i = 0; i < n; i++) {
		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	double t2 = ns_now();
	for (unsigned long i = 0; i < n; i++) {
		pthread_spin_lock(&s);
		pthread_spin_unlock(&s);
	}
	double t3 = ns_now();
	printf("%s mutex %.2f rwlock %.2f spin %.2f ns/pair\n",
#ifdef JF_BENCH_PLAIN
	       "glibc",
#else
	       "shim",
#endif
	       (t1 - t0) / (double)n,
	       (t2 - t1) / (double)n, (t3 - t2) / (double)n);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		n = strtoul(argv[1], NULL, 10);
#ifdef JF_BENCH_PLAIN
	run(NULL);
	return 0;
#else
	return jf_run(NULL, run, NULL, NULL) == 0 ? 0 : 1;
#endif
}
