/*
 * bench/idle_spin.c - how long an idle worker should spin before parking (JIFFY_SPIN_US).
 *
 * Owns: the measurement behind the default of jf_config.spin_ns. Two workers, policy fifo:
 * uthread S on worker 0 busy-waits and signals uthread R on worker 1 every @gap microseconds
 * through a mutex+condvar; worker 1 has nothing else to do, so between signals it spins for
 * spin_us and then parks on its futex. Each event waits for the previous one to be handled, so
 * the idle gap before every wakeup is at least @gap. We report R's wakeup latency (signal -> R running) and the
 * CPU time worker 1's kernel thread burned, for several spin settings and gaps. A parked worker
 * costs a futex wake (~20 us on a KVM guest); a spinning one burns its CPU.
 * Usage: idle_spin [events-per-cell]   (prints a table; not a test)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jiffy/jiffy.h>

struct cell {
	uint64_t gap_ns;
	int events;
	jf_mutex_t m;
	jf_cond_t c;
	uint64_t seq;
	uint64_t ack; /* last seq the receiver handled: the sender waits for it, no coalescing */
	uint64_t t_signal;
	uint64_t *lat;
	double cpu_ns, wall_ns;
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *receiver(void *arg)
{
	struct cell *c = arg;
	uint64_t last = 0, cpu0 = thread_cpu_ns(), t0 = jf_now_ns();

	for (int i = 0; i < c->events; i++) {
		jf_mutex_lock(&c->m);
		while (c->seq == last)
			jf_cond_wait(&c->c, &c->m);
		c->lat[i] = jf_now_ns() - c->t_signal;
		last = c->seq;
		__atomic_store_n(&c->ack, last, __ATOMIC_RELEASE);
		jf_mutex_unlock(&c->m);
	}
	/* Worker 1 ran only this uthread and its idle loop: its CPU time is the idle cost. */
	c->cpu_ns = (double)(thread_cpu_ns() - cpu0);
	c->wall_ns = (double)(jf_now_ns() - t0);
	return NULL;
}

static void *sender(void *arg)
{
	struct cell *c = arg;
	uint64_t start = jf_now_ns() + 1000000; /* let the receiver block first */

	for (int i = 0; i < c->events; i++) {
		uint64_t due = start + (uint64_t)i * c->gap_ns;
		/* Busy-wait (worker 0 stays busy; only worker 1 idles) for the previous event to be
		 * handled and the next one to be due; each event is a separate wakeup. */
		while (__atomic_load_n(&c->ack, __ATOMIC_ACQUIRE) != (uint64_t)i)
			;
		while (jf_now_ns() < due)
			;
		if (jf_now_ns() > due + c->gap_ns)
			start += jf_now_ns() - due; /* a slow wakeup: keep the gap after it */
		jf_mutex_lock(&c->m);
		c->seq++;
		c->t_signal = jf_now_ns();
		jf_cond_signal(&c->c);
		jf_mutex_unlock(&c->m);
	}
	return NULL;
}

static void *cell_main(void *arg)
{
	struct cell *c = arg;
	struct jf_attr a;
	jf_thread_t *s, *r;

	jf_attr_init(&a);
	a.sched.worker = 1;
	jf_spawn(&r, &a, receiver, c);
	a.sched.worker = 0;
	jf_spawn(&s, &a, sender, c);
	jf_join(s, NULL);
	jf_join(r, NULL);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const unsigned spins_us[] = {0, 10, 25, 50, 100, 200};
	static const unsigned gaps_us[] = {10, 40, 100, 400};
	int events = argc > 1 ? atoi(argv[1]) : 1000;

	if (events < 10) {
		fprintf(stderr, "idle_spin: events per cell must be >= 10\n");
		return 2;
	}
	printf("%-8s %-7s %10s %10s %10s %12s\n", "spin_us", "gap_us", "p50_us", "p99_us",
	       "max_us", "w1_cpu_pct");
	for (size_t i = 0; i < sizeof(spins_us) / sizeof(spins_us[0]); i++) {
		for (size_t j = 0; j < sizeof(gaps_us) / sizeof(gaps_us[0]); j++) {
			struct jf_config cfg;
			struct cell c;
			int rc;

			memset(&c, 0, sizeof(c));
			c.gap_ns = gaps_us[j] * 1000ull;
			c.events = events;
			c.lat = calloc((size_t)events, sizeof(uint64_t));
			jf_config_default(&cfg);
			cfg.workers = 2;
			cfg.pin_workers = true;
			cfg.spin_ns = spins_us[i] * 1000ull;
			snprintf(cfg.policy, sizeof(cfg.policy), "fifo");
			rc = jf_run(&cfg, cell_main, &c, NULL);
			if (rc) {
				fprintf(stderr, "idle_spin: jf_run: %d\n", rc);
				return 1;
			}
			qsort(c.lat, (size_t)events, sizeof(uint64_t), cmp_u64);
			printf("%-8u %-7u %10.1f %10.1f %10.1f %12.1f\n", spins_us[i], gaps_us[j],
			       c.lat[events / 2] / 1e3, c.lat[events * 99 / 100] / 1e3,
			       c.lat[events - 1] / 1e3, 100.0 * c.cpu_ns / c.wall_ns);
			free(c.lat);
		}
	}
	return 0;
}
