/*
 * bench/ioreact_bench.c - reaction time to a message for a uthread blocked in jf_read() while
 * its workers compute long requests: xUI's Fig 2 trade-off (polling interval against reaction
 * time and the CPU spent polling), in software (docs/netpoll-irq.md).
 *
 * Owns: one measurement per run. Inside jf_run: one "hog" uthread per worker serving endless
 * CPU-bound requests (--req-us of computation in ~1 us chunks with a jf_safepoint() after each,
 * then a 1 us jf_sleep_ns(): the request's end is a scheduling point), and one server uthread
 * blocked in jf_read() on a loopback TCP connection, which answers each 8-byte message at once.
 * Outside: a plain pthread client with blocking sockets sends a message after a random pause
 * (uniform in [--gap-min-us, --gap-max-us]) and times the reply (CLOCK_MONOTONIC): the reaction
 * time. The client runs SCHED_FIFO where permitted (--client-fifo 0: not), so that the time its
 * own wake-up waits for a CPU behind the computing workers is not what is measured. The runtime's configuration comes from the JIFFY_* environment (JIFFY_PREEMPT,
 * JIFFY_QUANTUM_US, JIFFY_NETPOLL_US, JIFFY_NETPOLL_IRQ, JIFFY_WORKERS); --hogs 0 measures the
 * round trip with nothing computing (the floor).
 *
 * Prints one line of key=value pairs: the configuration, the reaction time's p50/p90/p99/max in
 * microseconds, and per second of the measurement: the workers' epoll polls (stats counter
 * netpolls) and those the interrupt thread asked for (netpoll_irqs), the mechanism's requests
 * (preempt_requests: its signals or safepoint slow paths, taken or skipped), preemptions, the
 * hogs' chunks of work (their throughput: what polling and interrupts cost them), and the process's
 * CPU time (getrusage: workers, client, interrupt thread) and the interrupt thread's own
 * (/proc/self/task/<tid>/schedstat of "jiffy-netirq"). bench/ioreact_sweep.sh runs the
 * sweep and summarizes it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

static struct {
	int samples;
	int warmup;
	int hogs; /* -1: one per worker */
	uint64_t req_ns;
	uint64_t gap_min_us, gap_max_us;
	unsigned seed;
	int client_fifo;
} opt = {400, 20, -1, 5000000, 500, 3000, 1, 1};
static int client_fifo;

static int listen_fd, server_fd, client_fd;
static atomic_int stop_hogs, client_done;
static atomic_uint_fast64_t hog_chunks;
static uint64_t chunks0, chunks1, irqcpu0, irqcpu1;
static uint64_t *lat_ns;
static struct jf_worker_stats st0, st1;
static double wall0, wall1, cpu0, cpu1;

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The CPU time (ns) of the interrupt thread "jiffy-netirq" so far (/proc schedstat), 0 if none. */
static uint64_t irq_thread_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;

	while (d && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "jiffy-netirq", 12))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		if ((f = fopen(path, "r"))) {
			unsigned long long v;
			if (fscanf(f, "%llu", &v) == 1)
				ns = v;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return ns;
}

/* ~1 us of arithmetic (calibrated once, outside the runtime). */
static unsigned chunk_iters = 300;

static uint64_t chunk(uint64_t x)
{
	for (unsigned i = 0; i < chunk_iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void calibrate_chunk(void)
{
	volatile uint64_t sink = 1;
	uint64_t t0 = mono_ns(), n = 0;

	while (mono_ns() - t0 < 20000000u) {
		sink = chunk(sink);
		n++;
	}
	chunk_iters = (unsigned)((double)chunk_iters * (double)n * 1000.0 / 20000000.0);
	if (chunk_iters < 10)
		chunk_iters = 10;
}

static void *hog(void *arg)
{
	volatile uint64_t sink = (uintptr_t)arg;
	uint64_t chunks = 0;

	while (!atomic_load_explicit(&stop_hogs, memory_order_relaxed)) {
		uint64_t end = jf_now_ns() + opt.req_ns;
		while (jf_now_ns() < end) {
			sink = chunk(sink);
			chunks++;
			jf_safepoint();
		}
		atomic_fetch_add_explicit(&hog_chunks, chunks, memory_order_relaxed);
		chunks = 0;
		jf_sleep_ns(1000); /* the request is over: a scheduling point */
	}
	return NULL;
}

static void *server(void *arg)
{
	uint64_t m;
	(void)arg;

	for (;;) {
		ssize_t n = jf_read(server_fd, &m, sizeof(m), JF_NO_TIMEOUT);
		if (n != (ssize_t)sizeof(m))
			break; /* the client closed: done */
		if (jf_write(server_fd, &m, sizeof(m), JF_NO_TIMEOUT) != (ssize_t)sizeof(m))
			break;
	}
	return NULL;
}

static void *client(void *arg)
{
	unsigned seed = opt.seed;
	(void)arg;

	/* The instrument: its own wake-up (the reply's arrival) should not wait for a CPU behind
	 * the workers' computation; SCHED_FIFO where permitted (client_fifo= says). */
	if (opt.client_fifo)
		client_fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO,
						    &(struct sched_param){.sched_priority = 1}) == 0;

	for (int i = 0; i < opt.warmup + opt.samples; i++) {
		uint64_t gap = opt.gap_min_us +
			       (uint64_t)rand_r(&seed) % (opt.gap_max_us - opt.gap_min_us + 1);
		uint64_t m = (uint64_t)i, r = 0, t0;

		usleep((useconds_t)gap);
		if (i == opt.warmup) {
			jf_stats_total(&st0); /* a read of counters: safe from any thread */
			wall0 = mono_s();
			cpu0 = cpu_s();
			chunks0 = atomic_load(&hog_chunks);
			irqcpu0 = irq_thread_cpu_ns();
		}
		t0 = mono_ns();
		if (write(client_fd, &m, sizeof(m)) != (ssize_t)sizeof(m) ||
		    read(client_fd, &r, sizeof(r)) != (ssize_t)sizeof(r) || r != m) {
			fprintf(stderr, "ioreact_bench: client: exchange %d failed: %s\n", i,
				strerror(errno));
			exit(1);
		}
		if (i >= opt.warmup)
			lat_ns[i - opt.warmup] = mono_ns() - t0;
	}
	jf_stats_total(&st1);
	wall1 = mono_s();
	cpu1 = cpu_s();
	chunks1 = atomic_load(&hog_chunks);
	irqcpu1 = irq_thread_cpu_ns();
	atomic_store(&client_done, 1);
	return NULL;
}

static void *bench_main(void *arg)
{
	int hogs = opt.hogs < 0 ? jf_nworkers() : opt.hogs;
	jf_thread_t *h[64], *srv;
	pthread_t cl;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int one = 1;
	(void)arg;

	/* The connection: the client's end blocking, the server's through the netpoller. */
	listen_fd = jf_socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (listen_fd < 0 || jf_bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    jf_listen(listen_fd, 1) != 0 || getsockname(listen_fd, (struct sockaddr *)&a, &len)) {
		perror("ioreact_bench: listen");
		exit(1);
	}
	client_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(client_fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("ioreact_bench: connect");
		exit(1);
	}
	server_fd = jf_accept(listen_fd, NULL, NULL, JF_NO_TIMEOUT);
	if (server_fd < 0) {
		perror("ioreact_bench: accept");
		exit(1);
	}
	setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	if (jf_spawn(&srv, NULL, server, NULL) != 0)
		exit(1);
	jf_sleep_ns(1000000); /* the server waits in jf_read */
	for (int i = 0; i < hogs && i < 64; i++) {
		struct jf_attr at;
		jf_attr_init(&at);
		at.sched.worker = i % jf_nworkers();
		if (jf_spawn(&h[i], &at, hog, (void *)(uintptr_t)(i + 1)) != 0)
			exit(1);
	}
	if (pthread_create(&cl, NULL, client, NULL) != 0)
		exit(1);
	while (!atomic_load(&client_done))
		jf_sleep_ns(5000000);
	atomic_store(&stop_hogs, 1);
	shutdown(client_fd, SHUT_WR); /* the server's read returns 0 */
	jf_join(srv, NULL);
	for (int i = 0; i < hogs && i < 64; i++)
		jf_join(h[i], NULL);
	pthread_join(cl, NULL);
	jf_close(server_fd);
	jf_close(listen_fd);
	close(client_fd);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, int n, double p)
{
	int i = (int)(p / 100.0 * (n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1] / 1000.0;
}

static void usage(void)
{
	fprintf(stderr, "usage: ioreact_bench [--samples N] [--warmup N] [--hogs N (default: one "
			"per worker)] [--req-us N] [--gap-min-us N] [--gap-max-us N] [--seed N]\n"
			"  [--client-fifo 0|1 (default 1)]\n"
			"  the runtime's configuration comes from JIFFY_* (JIFFY_PREEMPT, "
			"JIFFY_QUANTUM_US, JIFFY_NETPOLL_US, JIFFY_NETPOLL_IRQ, JIFFY_WORKERS)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct jf_config cfg;
	char err[256];
	double secs;
	int rc;

	for (int i = 1; i < argc; i++) {
		char *end;
		unsigned long long v;

		if (!strcmp(argv[i], "--help"))
			usage();
		if (i + 1 >= argc)
			usage();
		errno = 0;
		v = strtoull(argv[i + 1], &end, 10);
		if (errno || *end || end == argv[i + 1])
			usage();
		if (!strcmp(argv[i], "--samples") && v >= 10 && v <= 1000000)
			opt.samples = (int)v;
		else if (!strcmp(argv[i], "--warmup") && v <= 100000)
			opt.warmup = (int)v;
		else if (!strcmp(argv[i], "--hogs") && v <= 64)
			opt.hogs = (int)v;
		else if (!strcmp(argv[i], "--req-us") && v >= 1 && v <= 10000000)
			opt.req_ns = v * 1000u;
		else if (!strcmp(argv[i], "--gap-min-us") && v <= 10000000)
			opt.gap_min_us = v;
		else if (!strcmp(argv[i], "--gap-max-us") && v <= 10000000)
			opt.gap_max_us = v;
		else if (!strcmp(argv[i], "--seed"))
			opt.seed = (unsigned)v;
		else if (!strcmp(argv[i], "--client-fifo") && v <= 1)
			opt.client_fifo = (int)v;
		else
			usage();
		i++;
	}
	if (opt.gap_max_us < opt.gap_min_us)
		usage();
	lat_ns = calloc((size_t)opt.samples, sizeof(*lat_ns));
	if (!lat_ns)
		return 1;
	calibrate_chunk();
	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "ioreact_bench: %s\n", err);
		return 2;
	}
	rc = jf_run(&cfg, bench_main, NULL, NULL);
	if (rc != 0) {
		fprintf(stderr, "ioreact_bench: jf_run: %d\n", rc);
		return 1;
	}
	qsort(lat_ns, (size_t)opt.samples, sizeof(*lat_ns), cmp_u64);
	secs = wall1 - wall0;
	printf("ioreact preempt=%s quantum_us=%s netpoll_us=%" PRIu64 " irq=%d workers=%u hogs=%d "
	       "req_us=%" PRIu64 " samples=%d p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f "
	       "netpolls_per_s=%.0f irq_polls_per_s=%.0f requests_per_s=%.0f preempts_per_s=%.0f "
	       "hog_kchunks_per_s=%.1f cpu_per_s=%.3f irq_thread_cpu_per_s=%.4f client_fifo=%d\n",
	       cfg.preempt, getenv("JIFFY_QUANTUM_US") ? getenv("JIFFY_QUANTUM_US") : "default",
	       cfg.netpoll_ns / 1000u, (int)cfg.netpoll_irq, cfg.workers,
	       opt.hogs < 0 ? (int)cfg.workers : opt.hogs, opt.req_ns / 1000u, opt.samples,
	       pct_us(lat_ns, opt.samples, 50), pct_us(lat_ns, opt.samples, 90),
	       pct_us(lat_ns, opt.samples, 99), (double)lat_ns[opt.samples - 1] / 1000.0,
	       (double)(st1.netpolls - st0.netpolls) / secs,
	       (double)(st1.netpoll_irqs - st0.netpoll_irqs) / secs,
	       (double)(st1.preempt_requests - st0.preempt_requests) / secs,
	       (double)(st1.preempts - st0.preempts) / secs,
	       (double)(chunks1 - chunks0) / 1000.0 / secs, (cpu1 - cpu0) / secs,
	       (double)(irqcpu1 - irqcpu0) * 1e-9 / secs, client_fifo);
	free(lat_ns);
	return 0;
}
