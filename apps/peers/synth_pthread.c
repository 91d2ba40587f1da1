/*
 * apps/peers/synth_pthread.c - synth-pthread, the synthetic server on Linux pthreads: the
 * kernel-scheduler peer of jiffy-synth. It owns nothing but itself: N kernel threads each block
 * in recvfrom on one shared UDP socket, serve PING and SPIN (the calibrated CPU loop of
 * apps/common/spin.c) per docs/protocol.md, and reply to the sender's address. KV ops get
 * UNSUPPORTED; malformed headers get BAD_REQUEST or TOO_LARGE; garbage (short, wrong magic,
 * over-long) is dropped and counted (apps/common/synth.c). errors= counts failed sends.
 *
 *   synth-pthread [--port P (7000; 0 = any)] [--threads N (1)] [--be N [--be-policy idle|nice]]
 *
 * --be N: N best-effort batch threads (apps/common/batch.c) at SCHED_IDLE (--be-policy idle,
 * the default) or nice 19 (nice) compute while the server serves: the Linux side of the LC/BE
 * co-location experiment; the statistics line then ends with the batch work done while the
 * load ran (be_work_s, be_window_s, be_share).
 *
 * Prints "READY synth-pthread udp=<port>" when listening; on SIGINT/SIGTERM prints one
 * statistics line to stderr and exits 0.
 */
#define _GNU_SOURCE
#include "../common/batch.h"
#include "../common/proto.h"
#include "../common/spin.h"
#include "../common/synth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_THREADS 1024

static int sock_fd = -1;
static atomic_bool stopping;
static atomic_ulong n_requests; /* well-formed datagrams received */
static atomic_ulong n_replies;  /* replies sent */
static atomic_ulong n_dropped;  /* garbage: no reply */
static atomic_ulong n_errors;   /* replies with a status other than OK, and failed sends */
static long n_be;               /* --be */
static int be_nice;             /* --be-policy nice: nice 19 instead of SCHED_IDLE */
static struct jp_batch batch;

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--port P] [--threads N] [--be N [--be-policy idle|nice]]\n",
		argv0);
	exit(2);
}

static long parse_long(const char *flag, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "synth-pthread: %s '%s': expected an integer in [%ld, %ld]\n", flag, s,
			lo, hi);
		exit(2);
	}
	return v;
}

static void *worker(void *arg)
{
	(void)arg;
	uint8_t buf[JP_MAX_DGRAM + 1];
	uint8_t reply[32];

	while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		/* MSG_TRUNC: the real length, so over-long datagrams are recognised and dropped */
		ssize_t n = recvfrom(sock_fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&from,
				     &fromlen);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break; /* the socket was shut down */
		}
		if (atomic_load_explicit(&stopping, memory_order_relaxed))
			break;
		if (n_be)
			jp_batch_lc_seen(&batch);
		if (!jp_synth_serve(buf, (size_t)n, reply, NULL)) {
			atomic_fetch_add_explicit(&n_dropped, 1, memory_order_relaxed);
			continue;
		}
		atomic_fetch_add_explicit(&n_requests, 1, memory_order_relaxed);
		if (sendto(sock_fd, reply, sizeof(reply), 0, (struct sockaddr *)&from, fromlen) ==
		    (ssize_t)sizeof(reply))
			atomic_fetch_add_explicit(&n_replies, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&n_errors, 1, memory_order_relaxed);
	}
	return NULL;
}

/* A best-effort batch thread: the lowest priority the kernel offers, then compute. */
static void *batch_thread(void *arg)
{
	(void)arg;
	if (be_nice) {
		if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) != 0)
			perror("synth-pthread: setpriority(19) for a --be thread");
	} else {
		struct sched_param sp = {.sched_priority = 0};
		if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
			fprintf(stderr, "synth-pthread: SCHED_IDLE for a --be thread refused\n");
	}
	jp_batch_run(&batch, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	long port = 7000, nthreads = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = parse_long("--port", argv[++i], 0, 65535);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = parse_long("--threads", argv[++i], 1, MAX_THREADS);
		else if (!strcmp(argv[i], "--be") && i + 1 < argc)
			n_be = parse_long("--be", argv[++i], 0, 64);
		else if (!strcmp(argv[i], "--be-policy") && i + 1 < argc) {
			const char *v = argv[++i];
			if (!strcmp(v, "idle"))
				be_nice = 0;
			else if (!strcmp(v, "nice"))
				be_nice = 1;
			else {
				fprintf(stderr, "synth-pthread: --be-policy '%s': expected idle or nice\n",
					v);
				exit(2);
			}
		}
		else
			usage(argv[0]);
	}

	/* Workers never see SIGINT/SIGTERM; the main thread waits for them with sigwait. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	double rate = jp_spin_calibrate();
	fprintf(stderr, "synth-pthread: spin loop calibrated: %.1f iterations/us\n", rate);

	sock_fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock_fd < 0) {
		perror("synth-pthread: socket");
		return 1;
	}
	int one = 1, buf = 4 << 20;
	setsockopt(sock_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(sock_fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(sock_fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	if (bind(sock_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "synth-pthread: bind port %ld: %s\n", port, strerror(errno));
		return 1;
	}
	socklen_t salen = sizeof(sa);
	getsockname(sock_fd, (struct sockaddr *)&sa, &salen);

	pthread_t *tids = calloc((size_t)(nthreads + n_be), sizeof(*tids));
	if (!tids) {
		fprintf(stderr, "synth-pthread: out of memory\n");
		return 1;
	}
	for (long i = 0; i < nthreads; i++) {
		int err = pthread_create(&tids[i], NULL, worker, NULL);
		if (err) {
			fprintf(stderr, "synth-pthread: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (long i = 0; i < n_be; i++) {
		int err = pthread_create(&tids[nthreads + i], NULL, batch_thread, NULL);
		if (err) {
			fprintf(stderr, "synth-pthread: pthread_create (--be): %s\n", strerror(err));
			return 1;
		}
	}
	printf("READY synth-pthread udp=%u\n", (unsigned)ntohs(sa.sin_port));
	fflush(stdout);

	int sig = 0;
	while (sigwait(&sigs, &sig) != 0)
		;
	atomic_store(&stopping, true);
	jp_batch_stop(&batch);
	shutdown(sock_fd, SHUT_RDWR); /* wakes the workers blocked in recvfrom */
	for (long i = 0; i < nthreads + n_be; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	close(sock_fd);
	(void)sig;
	char be[96] = "";
	if (n_be)
		jp_batch_report(&batch, be, sizeof(be));
	fprintf(stderr, "synth-pthread: requests=%lu replies=%lu dropped=%lu errors=%lu%s\n",
		atomic_load(&n_requests), atomic_load(&n_replies), atomic_load(&n_dropped),
		atomic_load(&n_errors), be);
	return 0;
}
