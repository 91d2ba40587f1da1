/*
 * core/test_parkwake.c - the park/wake stress: every wake-up of a parked worker arrives, in both
 * ways a worker parks (on its futex, and in epoll as the netpoller's parked poller).
 *
 * PAIRS pairs of uthreads, one of each pinned to worker 0 and the other to worker 1 (policy fifo
 * keeps attr.worker and never steals), pass a turn back and forth ROUNDS times through a mutex
 * and a condition variable. Each pass wakes a uthread whose worker has nothing else to run, so
 * nearly every pass is a park on one side and a kick from the other (the idle spin is off).
 * Mode "epoll": a uthread waits for ever on a socket that stays silent until the end, so the
 * netpoller is active and one idle worker parks in epoll_wait while the other, idle too, polls
 * the same epoll instance without blocking on every round of its spin (a 5 us spin in this
 * mode): a kick's eventfd edge must reach the parked poller, not the spinner.
 *
 * A watchdog (a plain pthread) fails the run when no pass completes for HANG_S seconds (the
 * passes are ~20 us apart; under CPU hogs a pass can take milliseconds, never seconds) and
 * reports the longest gap between two passes (a pass waiting on a parked worker), which
 * tests/stress/parkwake.sh collects over many runs under CPU hogs (docs/design.md).
 *
 * usage: test_core_parkwake [futex|epoll] [rounds]   (default: futex, then epoll; 20000 rounds)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/net.h>

#include "jf_test.h"

#define PAIRS 2
#define HANG_S 10

struct pair {
	jf_mutex_t m;
	jf_cond_t c;
	long turn; /* even: the worker-0 side's turn, odd: the worker-1 side's */
};

static struct pair pairs[PAIRS];
static long rounds;
static atomic_ulong passes;
static atomic_int done;
static uint64_t max_gap_ns;
static const char *mode;
static struct jf_worker_stats stats; /* at the end of the run */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *player(void *arg)
{
	struct pair *p = &pairs[(uintptr_t)arg / 2];
	long parity = (long)((uintptr_t)arg % 2);

	for (long i = 0; i < rounds; i++) {
		jf_mutex_lock(&p->m);
		while ((p->turn & 1) != parity)
			CHECK_EQ(jf_cond_wait(&p->c, &p->m), 0);
		p->turn++;
		jf_cond_signal(&p->c);
		CHECK_EQ(jf_mutex_unlock(&p->m), 0);
		atomic_fetch_add_explicit(&passes, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *listener(void *arg)
{
	char b;
	/* Wakes at the end, when main writes a byte. */
	CHECK_EQ(jf_read((int)(intptr_t)arg, &b, 1, JF_NO_TIMEOUT), 1);
	return NULL;
}

static void *watchdog(void *arg)
{
	unsigned long last = 0;
	uint64_t since = mono_ns();

	(void)arg;
	while (!atomic_load(&done)) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
		unsigned long now_passes = atomic_load_explicit(&passes, memory_order_relaxed);
		uint64_t now = mono_ns();
		if (now_passes != last) {
			if (now - since > max_gap_ns && last != 0)
				max_gap_ns = now - since;
			last = now_passes;
			since = now;
		} else if (now - since > HANG_S * 1000000000ull) {
			fprintf(stderr, "test_parkwake (%s): no pass for %d s after %lu of %ld: a "
					"parked worker was not woken\n", mode, HANG_S, now_passes,
				rounds * 2 * PAIRS);
			abort();
		}
	}
	return NULL;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[2 * PAIRS], *l = NULL;
	struct jf_attr attr;
	int sv[2] = {-1, -1};

	(void)arg;
	if (strcmp(mode, "epoll") == 0) {
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		CHECK_EQ(jf_fd_register(sv[0]), 0);
		CHECK_EQ(jf_spawn(&l, NULL, listener, (void *)(intptr_t)sv[0]), 0);
		CHECK_EQ(jf_sleep_ns(1000000), 0); /* the listener blocks: the netpoller is active */
	}
	jf_attr_init(&attr);
	for (int i = 0; i < PAIRS; i++) {
		jf_mutex_init(&pairs[i].m);
		jf_cond_init(&pairs[i].c);
		pairs[i].turn = 0;
	}
	for (uintptr_t i = 0; i < 2 * PAIRS; i++) {
		attr.sched.worker = (int32_t)(i % 2);
		CHECK_EQ(jf_spawn(&t[i], &attr, player, (void *)i), 0);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		CHECK_EQ(jf_join(t[i], NULL), 0);
	if (l) {
		CHECK_EQ(write(sv[1], "x", 1), 1);
		CHECK_EQ(jf_join(l, NULL), 0);
		jf_close(sv[0]);
		close(sv[1]);
	}
	CHECK_EQ(jf_stats_total(&stats), 0);
	return NULL;
}

static void run(const char *m)
{
	struct jf_config cfg;
	pthread_t wd;

	mode = m;
	atomic_store(&passes, 0);
	atomic_store(&done, 0);
	max_gap_ns = 0;
	jft_config_fixed(&cfg, 2, "fifo", "none");
	/* futex: every idle moment is a park. epoll: a short spin, so that parks are frequent and
	 * the other worker often polls without blocking (every spin round) meanwhile. */
	cfg.spin_ns = strcmp(m, "futex") == 0 ? 0 : 5000;
	cfg.spin_max_ns = 0;
	cfg.stats = false;
	CHECK_EQ(pthread_create(&wd, NULL, watchdog, NULL), 0);
	uint64_t t0 = mono_ns();
	CHECK_EQ(jf_run(&cfg, main_fn, NULL, NULL), 0);
	atomic_store(&done, 1);
	CHECK_EQ(pthread_join(wd, NULL), 0);
	CHECK_EQ(atomic_load(&passes), (unsigned long)(rounds * 2 * PAIRS));
	printf("parkwake %s: %lu passes in %.2f s, %llu parks, %llu kicks, longest gap between "
	       "passes %.3f ms\n", m, atomic_load(&passes), (double)(mono_ns() - t0) / 1e9,
	       (unsigned long long)stats.parks, (unsigned long long)stats.unparks,
	       (double)max_gap_ns / 1e6);
}

int main(int argc, char **argv)
{
	rounds = argc > 2 ? atol(argv[2]) : JFT_SCALE(20000L, 5000L);
	if (rounds <= 0) {
		fprintf(stderr, "usage: %s [futex|epoll] [rounds > 0]\n", argv[0]);
		return 2;
	}
	if (argc > 1 && strcmp(argv[1], "futex") != 0 && strcmp(argv[1], "epoll") != 0) {
		fprintf(stderr, "usage: %s [futex|epoll] [rounds]\n", argv[0]);
		return 2;
	}
	if (argc == 1 || strcmp(argv[1], "futex") == 0)
		run("futex");
	if (argc == 1 || strcmp(argv[1], "epoll") == 0)
		run("epoll");
	printf("core.parkwake: ok\n");
	return 0;
}
