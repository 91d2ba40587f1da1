/*
 * bench/bench_pin.h - where the peer benchmarks (pthreads, Boost.Fiber) put their threads: the
 * first two CPUs of the process's affinity mask, and pinning the calling thread to one of them.
 *
 * Owns: bench_find_cpus() and bench_pin_self(), shared by pthread_bench.c, pthread_sync_bench.c,
 * fiber_bench.cpp and fiber_sync_bench.cpp (each had its own copy). Static inline, for C and C++;
 * include it after defining _GNU_SOURCE (C++ compilers define it).
 */
#ifndef JIFFY_BENCH_PIN_H
#define JIFFY_BENCH_PIN_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>

/* The first and second CPU the process may run on (*@second -1 if only one). Return: 0 or an
 * errno value. */
static inline int bench_find_cpus(int *first, int *second)
{
	cpu_set_t set;

	*first = *second = -1;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return errno;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (*first < 0)
			*first = c;
		else if (*second < 0)
			*second = c;
	}
	return 0;
}

/* Pin the calling thread to @cpu. Return: 0 or pthread_setaffinity_np()'s error. */
static inline int bench_pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

#endif /* JIFFY_BENCH_PIN_H */
