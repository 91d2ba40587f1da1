/*
 * bench/blocking_bench.c - what the blocking offload (jiffy/blocking.h) costs, and what it saves.
 *
 * Owns: the numbers of docs/blocking.md. Inside one jf_run() (JIFFY_* applies, e.g.
 * JIFFY_WORKERS), each case runs once per round, the cases interleaved, for --rounds rounds; one
 * line per case gives the median ns per operation and the min-max over the rounds:
 *   rt_1          jf_run_blocking() of an empty function, one caller: the round trip
 *   rt_N          the same, N callers at once (--callers, default 8): wall time per call
 *   pread_worker  pread(2) of 4 KiB (page cache) made by the uthread itself: how long its worker
 *                 is blocked per read, i.e. what every other uthread of that worker waits
 *   pread_file    jf_file_pread() of 4 KiB (page cache): answered on the worker by
 *                 preadv2(RWF_NOWAIT) (the fast path)
 *   pread_pool    the same pread(2) through jf_run_blocking(): the pool's path
 *   cold_worker   pread(2) of 4 KiB through an O_DIRECT descriptor (a read from the disk, no
 *                 page cache), on the worker: what a read that misses the cache blocks it for
 *   cold_pool     the same through jf_file_pread() (O_DIRECT: always the pool)
 *   uring_worker  the 4 KiB read through io_uring (raw system calls, no liburing): one
 *                 IORING_OP_READ submitted and waited for with io_uring_enter(), on the worker
 *                 (what a ring integration would pay at least per cached read; "n/a" where
 *                 io_uring_setup fails, e.g. kernel.io_uring_disabled)
 * Then, in a second jf_run() on ONE worker, what a blocked worker costs the others: a ticker
 * uthread sleeps 50 us in a loop and records how late each wake-up is, while another uthread
 * of that worker makes O_DIRECT reads on the worker (tick_worker) or through jf_file_pread
 * (tick_pool), alternating per round; the lines give the ticker's median and p99 lateness (us)
 * and its ticks per read.
 * The file is --file (default a 64 MiB file made in /var/tmp and removed at the end).
 *
 * usage: blocking_bench [--rounds R] [--iters N] [--callers N] [--file PATH]
 * Run it under `flock /tmp/jiffy-timing.lock` (the project's rule for timings).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#define FILE_SIZE (64u << 20)
#define BLOCK 4096u
#define MAX_ROUNDS 64

static unsigned rounds = 7, iters = 20000, callers = 8;
static const char *file_path;
static int file_fd = -1, direct_fd = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static off_t random_block(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (off_t)(rng_state % (FILE_SIZE / BLOCK)) * BLOCK;
}

/* --- io_uring by raw system calls ------------------------------------------------------------ */

struct uring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqe_len;
};

static struct uring ring = {.fd = -1};
static int uring_errno;

static int uring_setup(struct uring *r)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	r->fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (r->fd < 0)
		return -errno;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->sqe_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			 IORING_OFF_SQ_RING);
	r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			 IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, r->sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (r->sq_map == MAP_FAILED || r->cq_map == MAP_FAILED || r->sqes == MAP_FAILED)
		return -errno;
	r->sq_tail = (unsigned *)((char *)r->sq_map + p.sq_off.tail);
	r->sq_mask = (unsigned *)((char *)r->sq_map + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)((char *)r->sq_map + p.sq_off.array);
	r->cq_head = (unsigned *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (unsigned *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (unsigned *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + p.cq_off.cqes);
	return 0;
}

/* One read, submitted and waited for. Return: its result (bytes or -errno). */
static int uring_pread(struct uring *r, void *buf, unsigned len, off_t off)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	int res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->fd = file_fd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = len;
	sqe->off = (uint64_t)off;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -errno;
	head = *r->cq_head;
	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		; /* GETEVENTS with min_complete 1 returned: it is there */
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

/* --- the cases --------------------------------------------------------------------------------- */

static void *empty(void *arg)
{
	return arg;
}

static uint64_t case_rt_1(void)
{
	uint64_t t0 = now_ns();

	for (unsigned i = 0; i < iters; i++)
		if (jf_run_blocking(empty, NULL, NULL) != 0)
			abort();
	return (now_ns() - t0) / iters;
}

static void *rt_caller(void *arg)
{
	unsigned n = *(unsigned *)arg;

	for (unsigned i = 0; i < n; i++)
		if (jf_run_blocking(empty, NULL, NULL) != 0)
			abort();
	return NULL;
}

static uint64_t case_rt_n(void)
{
	jf_thread_t *t[256];
	unsigned each = iters / callers;
	uint64_t t0 = now_ns();

	for (unsigned i = 0; i < callers; i++)
		if (jf_spawn(&t[i], NULL, rt_caller, &each) != 0)
			abort();
	for (unsigned i = 0; i < callers; i++)
		jf_join(t[i], NULL);
	return (now_ns() - t0) / ((uint64_t)each * callers);
}

static char buf[BLOCK] __attribute__((aligned(4096)));

struct pread_call {
	int fd;
	off_t off;
	ssize_t ret;
};

static void *pread_fn(void *arg)
{
	struct pread_call *c = arg;

	c->ret = pread(c->fd, buf, BLOCK, c->off);
	return NULL;
}

static ssize_t pool_pread(int fd, off_t off)
{
	struct pread_call c = {.fd = fd, .off = off};

	if (jf_run_blocking(pread_fn, &c, NULL) != 0)
		abort();
	return c.ret;
}

static uint64_t case_pread(int how, bool cold)
{
	unsigned n = cold ? iters / 20 : iters;
	uint64_t t0;

	if (!n)
		n = 1;
	t0 = now_ns();
	for (unsigned i = 0; i < n; i++) {
		off_t off = random_block();
		ssize_t r;

		int fd = cold ? direct_fd : file_fd;

		if (how == 0)
			r = pread(fd, buf, BLOCK, off);
		else if (how == 1)
			r = jf_file_pread(fd, buf, BLOCK, off);
		else if (how == 3)
			r = pool_pread(fd, off);
		else
			r = uring_pread(&ring, buf, BLOCK, off);
		if (r != (ssize_t)BLOCK) {
			fprintf(stderr, "blocking_bench: read returned %zd (%s)\n", r,
				strerror(r < 0 ? (how == 2 ? (int)-r : errno) : 0));
			abort();
		}
	}
	return (now_ns() - t0) / n;
}

enum { C_RT1, C_RTN, C_PW, C_PF, C_PP, C_CW, C_CP, C_UR, NCASES };
static const char *const case_names[NCASES] = {"rt_1",        "rt_N",      "pread_worker",
					       "pread_file",  "pread_pool", "cold_worker",
					       "cold_pool",   "uring_worker"};
static uint64_t results[NCASES][MAX_ROUNDS];

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void *bench_main(void *arg)
{
	(void)arg;
	/* Warm: the pool's threads started, the file in the page cache. */
	case_rt_n();
	for (off_t off = 0; off < FILE_SIZE; off += BLOCK)
		if (pread(file_fd, buf, BLOCK, off) != BLOCK)
			abort();
	for (unsigned r = 0; r < rounds; r++) {
		results[C_RT1][r] = case_rt_1();
		results[C_RTN][r] = case_rt_n();
		results[C_PW][r] = case_pread(0, false);
		results[C_PF][r] = case_pread(1, false);
		results[C_PP][r] = case_pread(3, false);
		results[C_CW][r] = direct_fd >= 0 ? case_pread(0, true) : 0;
		results[C_CP][r] = direct_fd >= 0 ? case_pread(1, true) : 0;
		results[C_UR][r] = ring.fd >= 0 ? case_pread(2, false) : 0;
	}
	return NULL;
}

/* --- the ticker on one worker ---------------------------------------------------------------- */

#define MAX_TICKS 200000
static uint64_t lateness[MAX_TICKS];
static unsigned nticks;
static atomic_int tick_stop;
static double tick_p50[2][MAX_ROUNDS], tick_p99[2][MAX_ROUNDS], tick_per_read[2][MAX_ROUNDS];

static void *ticker(void *arg)
{
	(void)arg;
	while (!atomic_load(&tick_stop)) {
		uint64_t due = jf_now_ns() + 50000;

		jf_sleep_until(due);
		if (nticks < MAX_TICKS)
			lateness[nticks++] = jf_now_ns() - due;
	}
	return NULL;
}

static void *tick_main(void *arg)
{
	unsigned reads = iters / 20 ? iters / 20 : 1;

	(void)arg;
	for (unsigned r = 0; r < rounds; r++) {
		for (int how = 0; how < 2; how++) {
			jf_thread_t *t;

			nticks = 0;
			atomic_store(&tick_stop, 0);
			if (jf_spawn(&t, NULL, ticker, NULL) != 0)
				abort();
			jf_yield();
			for (unsigned i = 0; i < reads; i++) {
				off_t off = random_block();
				ssize_t n = how ? jf_file_pread(direct_fd, buf, BLOCK, off)
						: pread(direct_fd, buf, BLOCK, off);
				if (n != BLOCK)
					abort();
			}
			atomic_store(&tick_stop, 1);
			jf_join(t, NULL);
			qsort(lateness, nticks, sizeof(lateness[0]), cmp_u64);
			tick_p50[how][r] = nticks ? (double)lateness[nticks / 2] / 1e3 : 0;
			tick_p99[how][r] = nticks ? (double)lateness[nticks * 99 / 100] / 1e3 : 0;
			tick_per_read[how][r] = (double)nticks / reads;
		}
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *v)
{
	qsort(v, rounds, sizeof(v[0]), cmp_double);
	return v[rounds / 2];
}

static int make_file(void)
{
	static char path[] = "/var/tmp/jiffy-blocking-bench-XXXXXX";
	char *chunk;
	int fd;

	if (file_path) {
		fd = open(file_path, O_RDONLY);
		if (fd < 0 || lseek(fd, 0, SEEK_END) < (off_t)FILE_SIZE) {
			fprintf(stderr, "blocking_bench: %s: need a readable file of 64 MiB\n",
				file_path);
			exit(1);
		}
		return fd;
	}
	fd = mkstemp(path);
	if (fd < 0) {
		perror("blocking_bench: mkstemp");
		exit(1);
	}
	file_path = path;
	chunk = malloc(1u << 20);
	if (!chunk)
		exit(1);
	for (unsigned i = 0; i < (1u << 20); i++)
		chunk[i] = (char)(i * 31);
	for (unsigned i = 0; i < FILE_SIZE >> 20; i++)
		if (write(fd, chunk, 1u << 20) != (ssize_t)(1u << 20)) {
			perror("blocking_bench: write");
			exit(1);
		}
	free(chunk);
	fsync(fd);
	return fd;
}

int main(int argc, char **argv)
{
	bool made;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--callers") && i + 1 < argc)
			callers = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--file") && i + 1 < argc)
			file_path = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--rounds R] [--iters N] [--callers N] [--file PATH]\n",
				argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || iters < 20 || callers < 1 || callers > 256) {
		fprintf(stderr, "blocking_bench: --rounds 1..%d, --iters >= 20, --callers 1..256\n",
			MAX_ROUNDS);
		return 2;
	}
	made = !file_path;
	file_fd = make_file();
	direct_fd = open(file_path, O_RDONLY | O_DIRECT);
	rc = uring_setup(&ring);
	if (rc) {
		uring_errno = -rc;
		ring.fd = -1;
	}
	rc = jf_run(NULL, bench_main, NULL, NULL);
	if (rc == 0 && direct_fd >= 0) {
		struct jf_config cfg;
		char err[256];

		jf_config_default(&cfg);
		if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
			fprintf(stderr, "blocking_bench: %s\n", err);
			return 1;
		}
		cfg.workers = 1;
		rc = jf_run(&cfg, tick_main, NULL, NULL);
	}
	if (made)
		unlink(file_path);
	if (rc) {
		fprintf(stderr, "blocking_bench: jf_run: %s\n", strerror(-rc));
		return 1;
	}
	printf("# blocking_bench: %u rounds, %u iterations (cold: %u), %u callers for rt_N; ns per "
	       "operation: median, min-max over the rounds\n",
	       rounds, iters, iters / 20 ? iters / 20 : 1, callers);
	for (int c = 0; c < NCASES; c++) {
		uint64_t *v = results[c];

		if ((c == C_CW || c == C_CP) && direct_fd < 0) {
			printf("%-14s n/a (O_DIRECT refused by the file system)\n", case_names[c]);
			continue;
		}
		if (c == C_UR && ring.fd < 0) {
			printf("%-14s n/a (io_uring_setup: %s)\n", case_names[c], strerror(uring_errno));
			continue;
		}
		qsort(v, rounds, sizeof(v[0]), cmp_u64);
		printf("%-14s %8llu  %llu-%llu\n", case_names[c], (unsigned long long)v[rounds / 2],
		       (unsigned long long)v[0], (unsigned long long)v[rounds - 1]);
	}
	if (direct_fd >= 0) {
		for (int how = 0; how < 2; how++)
			printf("%-14s ticker lateness p50 %.1f us, p99 %.1f us, %.2f ticks per read "
			       "(medians over the rounds)\n",
			       how ? "tick_pool" : "tick_worker", median_of(tick_p50[how]),
			       median_of(tick_p99[how]), median_of(tick_per_read[how]));
	}
	{
		struct jf_blocking_stats s;
		jf_stats_blocking(&s);
		printf("# pool: %llu calls, threads max %llu of %llu, queued max %llu\n",
		       (unsigned long long)s.submitted, (unsigned long long)s.threads_max,
		       (unsigned long long)s.max_threads, (unsigned long long)s.queued_max);
	}
	return 0;
}
