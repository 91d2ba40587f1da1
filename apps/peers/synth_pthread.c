/*
 * apps/peers/synth_pthread.c - synth-pthread, the synthetic server on Linux pthreads: the
 * kernel-scheduler peer of jiffy-synth. It owns nothing but itself: N kernel threads each block
 * in recvfrom on one shared UDP socket, serve PING and SPIN (the calibrated CPU loop of
 * apps/common/spin.c) per docs/protocol.md, and reply to the sender's address. KV ops get
 * UNSUPPORTED; malformed headers get BAD_REQUEST or TOO_LARGE; garbage (short, wrong magic,
 * over-long) is dropped and counted (apps/common/synth.c). errors= counts failed sends.
 *
 *   synth-pthread [--port P (7000; 0 = any)] [--bind ADDR (127.0.0.1)] [--protected-mode yes|no]
 *                 [--max-spin-us US (1000)] [--threads N (1)] [--be N [--be-policy idle|nice]]
 *
 * Safe by default, as jiffy-synth (docs/security.md): it listens on 127.0.0.1; the UDP protocol
 * has no authentication, so a non-loopback --bind (IPv4 or IPv6, apps/common/listen.c) is
 * refused unless --protected-mode no, which starts it with a WARNING; a SPIN over --max-spin-us
 * (1 ms by default) gets TOO_LARGE with the cap as its result.
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
/* synth-pthread does not link libjiffy: the header only for JIFFY_VERSION, glibc's errno kept. */
#define JIFFY_NO_ERRNO_MACRO
#include <jiffy/jiffy.h>

#include "../common/flags.h"
#include "../common/listen.h"
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

static const char *prog = "synth-pthread";

static int sock_fd = -1;
static atomic_bool stopping;
static atomic_ulong n_requests; /* well-formed datagrams received */
static atomic_ulong n_replies;  /* replies sent */
static atomic_ulong n_dropped;  /* garbage: no reply */
static atomic_ulong n_errors;   /* failed sends */
static uint64_t max_spin_ns;    /* --max-spin-us, in ns */
static unsigned long n_be;      /* --be */
static int be_nice;             /* --be-policy nice: nice 19 instead of SCHED_IDLE */
static struct jp_batch batch;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--port P] [--bind ADDR] [--protected-mode yes|no] [--max-spin-us US]\n"
		"          [--threads N] [--be N [--be-policy idle|nice]]\n"
		"  --port P          UDP port (default 7000; 0: any free port)\n"
		JP_LISTEN_USAGE
		"                    The UDP protocol has no authentication: an address outside\n"
		"                    127.0.0.0/8 and ::1 needs --protected-mode no\n"
		JP_SPIN_CAP_USAGE
		"  --threads N       kernel threads receiving and serving (default 1, max %d)\n"
		"  --be N            N best-effort batch threads (0..64) compute while the server\n"
		"                    serves\n"
		"  --be-policy P     idle: SCHED_IDLE (default); nice: nice 19\n"
		JP_FLAGS_STD_USAGE,
		prog, MAX_THREADS);
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
		if (!jp_synth_serve(buf, (size_t)n, reply, max_spin_ns, NULL)) {
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

enum { F_PORT = 0x100, F_BIND, F_PROTECTED, F_MAX_SPIN, F_THREADS, F_BE, F_BE_POLICY };

static const struct option options[] = {
	{"port", required_argument, NULL, F_PORT},
	{"bind", required_argument, NULL, F_BIND},
	{"protected-mode", required_argument, NULL, F_PROTECTED},
	{"max-spin-us", required_argument, NULL, F_MAX_SPIN},
	{"threads", required_argument, NULL, F_THREADS},
	{"be", required_argument, NULL, F_BE},
	{"be-policy", required_argument, NULL, F_BE_POLICY},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	static const char *const be_policies[] = {"idle", "nice", NULL};
	unsigned long port = 7000, nthreads = 1, max_spin_us = JP_SPIN_CAP_DEFAULT_US;
	struct jp_listen listen;
	struct jp_flags fl;
	int c;

	jp_listen_default(&listen);
	jp_flags_init(&fl, prog, JIFFY_VERSION, usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		const char *a = fl.flag, *v = optarg;
		int bad = 0;
		switch (c) {
		case F_PORT:
			bad = jp_flag_port(prog, a, v, 0, &port);
			break;
		case F_BIND:
			bad = jp_bind_flag(prog, a, v, &listen);
			break;
		case F_PROTECTED:
			bad = jp_protected_flag(prog, a, v, &listen);
			break;
		case F_MAX_SPIN:
			bad = jp_flag_uint(prog, a, v, 1, JP_SPIN_CAP_MAX_US, &max_spin_us);
			break;
		case F_THREADS:
			bad = jp_flag_uint(prog, a, v, 1, MAX_THREADS, &nthreads);
			break;
		case F_BE:
			bad = jp_flag_uint(prog, a, v, 0, 64, &n_be);
			break;
		case F_BE_POLICY:
			bad = jp_flag_choice(prog, a, v, be_policies, &be_nice);
			break;
		}
		if (bad)
			return 2;
	}
	jp_flags_no_operands(&fl);
	if (jp_listen_check(stderr, prog, &listen, JP_SYNTH_OPEN) != 0)
		return 2;
	max_spin_ns = (uint64_t)max_spin_us * 1000u;

	/* Workers never see SIGINT/SIGTERM; the main thread waits for them with sigwait. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	double rate = jp_spin_calibrate();
	fprintf(stderr, "synth-pthread: spin loop calibrated: %.1f iterations/us\n", rate);

	struct sockaddr_storage sa;
	socklen_t salen;
	jp_listen_sockaddr(&listen, (unsigned)port, &sa, &salen);
	sock_fd = socket(sa.ss_family, SOCK_DGRAM, 0);
	if (sock_fd < 0) {
		perror("synth-pthread: socket");
		return 1;
	}
	int one = 1, buf = 4 << 20;
	setsockopt(sock_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(sock_fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(sock_fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (bind(sock_fd, (struct sockaddr *)&sa, salen) != 0) {
		fprintf(stderr, "%s: cannot listen on %s UDP port %lu (--bind, --port): %s\n", prog,
			listen.text, port, strerror(errno));
		return 1;
	}
	salen = sizeof(sa);
	if (getsockname(sock_fd, (struct sockaddr *)&sa, &salen) != 0) {
		perror("synth-pthread: getsockname");
		return 1;
	}
	fprintf(stderr, "%s: listening on %s udp=%u; SPIN capped at %lu us (--max-spin-us)\n", prog,
		listen.text, jp_sockaddr_port(&sa), max_spin_us);

	pthread_t *tids = calloc(nthreads + n_be, sizeof(*tids));
	if (!tids) {
		fprintf(stderr, "synth-pthread: out of memory\n");
		return 1;
	}
	for (unsigned long i = 0; i < nthreads; i++) {
		int err = pthread_create(&tids[i], NULL, worker, NULL);
		if (err) {
			fprintf(stderr, "synth-pthread: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (unsigned long i = 0; i < n_be; i++) {
		int err = pthread_create(&tids[nthreads + i], NULL, batch_thread, NULL);
		if (err) {
			fprintf(stderr, "synth-pthread: pthread_create (--be): %s\n", strerror(err));
			return 1;
		}
	}
	printf("READY synth-pthread udp=%u\n", jp_sockaddr_port(&sa));
	fflush(stdout);

	int sig = 0;
	while (sigwait(&sigs, &sig) != 0)
		;
	atomic_store(&stopping, true);
	jp_batch_stop(&batch);
	shutdown(sock_fd, SHUT_RDWR); /* wakes the workers blocked in recvfrom */
	for (unsigned long i = 0; i < nthreads + n_be; i++)
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
