/*
 * apps/peers/kv_pthread.c - kv-pthread: jiffy-kv's UDP front end on plain pthreads, the baseline
 * the Jiffy server is compared with (same store: apps/kv/kvstore.c; same request handling:
 * apps/kv/kvproto.c).
 *
 * Owns: the thread model of the peer: --threads N kernel threads all blocking in recvfrom(2) on
 * one shared UDP socket, each running the request it received to completion and replying. The
 * kernel wakes one blocked thread per datagram; a long SCAN holds its thread until it is done
 * (no preemption beyond what the kernel scheduler does between threads).
 *
 * Flags: --port (7100), --bind (127.0.0.1), --protected-mode (yes), --threads (1), --keys (100000),
 * --value-size (64), --db PATH, --help, --version (apps/common/flags.h's rules). The UDP protocol has no authentication, so a non-loopback
 * --bind (IPv4 or IPv6, apps/common/listen.c) is refused unless --protected-mode no, which starts
 * the server with a WARNING (docs/security.md); the check runs before the store is opened.
 * Prints "READY kv-pthread udp=<port>"; on SIGINT/SIGTERM prints one stats line to stderr,
 * closes RocksDB and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* kv-pthread does not link libjiffy: the header only for JIFFY_VERSION, glibc's errno kept. */
#define JIFFY_NO_ERRNO_MACRO
#include <jiffy/jiffy.h>

#include "../common/flags.h"
#include "../common/listen.h"
#include "../kv/kvproto.h"
#include "../kv/kvstore.h"

static const char *prog = "kv-pthread";

/* What a non-loopback --bind would expose (jp_listen_check). */
#define OPEN_FRONT_END "the UDP request protocol (GET, PUT, DEL and SCAN of every key)"

static struct kvstore *store;
static int sock = -1;
static atomic_int stopping;
static struct kvproto_stats stats;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--port P] [--bind ADDR] [--protected-mode yes|no] [--threads N]\n"
		"          [--keys N] [--value-size B] [--db PATH]\n"
		"  --port P          UDP port (default 7100; 0: any free port)\n"
		JP_LISTEN_USAGE
		"                    The UDP protocol has no authentication: an address outside\n"
		"                    127.0.0.0/8 and ::1 needs --protected-mode no\n"
		"  --threads N       kernel threads receiving and serving (default 1)\n"
		"  --keys N          preload key%%012u for i < N (default 100000)\n"
		"  --value-size B    bytes per preloaded value (default 64, max %u)\n"
		"  --db PATH         RocksDB directory, kept (default: a scratch dir in /dev/shm,\n"
		"                    removed at exit)\n"
		JP_FLAGS_STD_USAGE,
		prog, JP_MAX_VALUE);
}

static void *serve(void *arg)
{
	char *buf = malloc(KVPROTO_RECV_BUF);
	char *reply = malloc(KVPROTO_REPLY_MAX);
	(void)arg;
	if (!buf || !reply) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	while (!atomic_load(&stopping)) {
		struct sockaddr_storage src;
		socklen_t slen = sizeof(src);
		ssize_t n = recvfrom(sock, buf, KVPROTO_RECV_BUF, 0, (struct sockaddr *)&src, &slen);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				kvproto_count(&stats.errors);
			continue;
		}
		size_t rl = kvproto_handle(store, buf, (size_t)n, reply, &stats);
		if (rl == 0)
			continue;
		if (sendto(sock, reply, rl, 0, (struct sockaddr *)&src, slen) == (ssize_t)rl)
			kvproto_count(&stats.replies);
		else
			kvproto_count(&stats.errors);
	}
	free(buf);
	free(reply);
	return NULL;
}

enum { F_PORT = 0x100, F_BIND, F_PROTECTED, F_THREADS, F_KEYS, F_VALUE_SIZE, F_DB };

static const struct option options[] = {
	{"port", required_argument, NULL, F_PORT},
	{"bind", required_argument, NULL, F_BIND},
	{"protected-mode", required_argument, NULL, F_PROTECTED},
	{"threads", required_argument, NULL, F_THREADS},
	{"keys", required_argument, NULL, F_KEYS},
	{"value-size", required_argument, NULL, F_VALUE_SIZE},
	{"db", required_argument, NULL, F_DB},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	unsigned long port = 7100, threads = 1, keys = 100000, vsize = 64;
	const char *db = NULL;
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
		case F_THREADS:
			bad = jp_flag_uint(prog, a, v, 1, 1024, &threads);
			break;
		case F_KEYS:
			bad = jp_flag_uint(prog, a, v, 0, 100000000, &keys);
			break;
		case F_VALUE_SIZE:
			bad = jp_flag_uint(prog, a, v, 1, JP_MAX_VALUE, &vsize);
			break;
		case F_DB:
			if (!*v)
				jp_flags_fail(&fl, "expected a directory, got ''");
			db = v;
			break;
		}
		if (bad)
			return 2;
	}
	jp_flags_no_operands(&fl);
	if (jp_listen_check(stderr, prog, &listen, OPEN_FRONT_END) != 0)
		return 2;

	/* Every thread, RocksDB's included, inherits this mask: only sigwait() sees the signals. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	struct kvstore_opts o;
	char *err = NULL;
	kvstore_opts_default(&o);
	o.path = db;
	o.keys = (uint32_t)keys;
	o.value_size = (uint32_t)vsize;
	store = kvstore_open(&o, &err);
	if (!store) {
		fprintf(stderr, "%s: cannot open the database: %s\n", prog, err ? err : "?");
		free(err);
		return 1;
	}

	struct sockaddr_storage addr, bound;
	socklen_t alen, blen = sizeof(bound);
	jp_listen_sockaddr(&listen, (unsigned)port, &addr, &alen);
	sock = socket(addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100 * 1000}; /* to notice a stop request */
	int rcvbuf = 4 << 20;
	if (sock < 0 || bind(sock, (struct sockaddr *)&addr, alen) != 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    getsockname(sock, (struct sockaddr *)&bound, &blen) != 0) {
		fprintf(stderr, "%s: cannot listen on %s UDP port %lu (--bind, --port): %s\n", prog,
			listen.text, port, strerror(errno));
		kvstore_close(store);
		return 1;
	}
	(void)setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)); /* best effort */

	pthread_t *tids = calloc(threads, sizeof(*tids));
	for (unsigned long i = 0; i < threads; i++)
		if (!tids || pthread_create(&tids[i], NULL, serve, NULL) != 0) {
			fprintf(stderr, "%s: cannot start thread %lu\n", prog, i);
			return 1;
		}
	fprintf(stderr, "%s: listening on %s udp=%u\n", prog, listen.text,
		jp_sockaddr_port(&bound));
	printf("READY kv-pthread udp=%u\n", jp_sockaddr_port(&bound));
	fflush(stdout);

	int sig = 0;
	sigwait(&sigs, &sig);
	atomic_store(&stopping, 1);
	for (unsigned long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	close(sock);
	fprintf(stderr,
		"kv-pthread: stopped by %s; udp requests=%llu replies=%llu dropped=%llu "
		"errors=%llu (get=%llu scan=%llu put=%llu del=%llu ping=%llu)\n",
		sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)stats.requests,
		(unsigned long long)stats.replies, (unsigned long long)stats.dropped,
		(unsigned long long)stats.errors, (unsigned long long)stats.ops[JP_GET],
		(unsigned long long)stats.ops[JP_SCAN], (unsigned long long)stats.ops[JP_PUT],
		(unsigned long long)stats.ops[JP_DEL], (unsigned long long)stats.ops[JP_PING]);
	kvstore_close(store);
	return 0;
}
