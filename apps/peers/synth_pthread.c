/*
 * apps/peers/synth_pthread.c - synth-pthread, the synthetic server on Linux pthreads: the
 * kernel-scheduler peer of jiffy-synth. It owns nothing but itself: N kernel threads each block
 * in recvfrom on one shared UDP socket, serve PING and SPIN (the calibrated CPU loop of
 * apps/common/spin.c) per docs/protocol.md, and reply to the sender's address. KV ops get
 * UNSUPPORTED; malformed headers get BAD_REQUEST or TOO_LARGE; garbage (short, wrong magic,
 * over-long) is dropped and counted (apps/common/synth.c). errors= counts failed sends.
 *
 *   synth-pthread [--port P (7000; 0 = any)] [--threads N (1)]
 *
 * Prints "READY synth-pthread udp=<port>" when listening; on SIGINT/SIGTERM prints one
 * statistics line to stderr and exits 0.
 */
#define _GNU_SOURCE
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
#include <sys/socket.h>
#include <unistd.h>

#define MAX_THREADS 1024

static int sock_fd = -1;
static atomic_bool stopping;
static atomic_ulong n_requests; /* well-formed datagrams received */
static atomic_ulong n_replies;  /* replies sent */
static atomic_ulong n_dropped;  /* garbage: no reply */
static atomic_ulong n_errors;   /* replies with a status other than OK, and failed sends */

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--port P] [--threads N]\n", argv0);
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

int main(int argc, char **argv)
{
	long port = 7000, nthreads = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = parse_long("--port", argv[++i], 0, 65535);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = parse_long("--threads", argv[++i], 1, MAX_THREADS);
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

	pthread_t *tids = calloc((size_t)nthreads, sizeof(*tids));
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
	printf("READY synth-pthread udp=%u\n", (unsigned)ntohs(sa.sin_port));
	fflush(stdout);

	int sig = 0;
	while (sigwait(&sigs, &sig) != 0)
		;
	atomic_store(&stopping, true);
	shutdown(sock_fd, SHUT_RDWR); /* wakes the workers blocked in recvfrom */
	for (long i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	close(sock_fd);
	(void)sig;
	fprintf(stderr, "synth-pthread: requests=%lu replies=%lu dropped=%lu errors=%lu\n",
		atomic_load(&n_requests), atomic_load(&n_replies), atomic_load(&n_dropped),
		atomic_load(&n_errors));
	return 0;
}
