/*
 * net/test_netpoll.c - proves the netpoller's promises (jiffy/net.h):
 *  - UDP: many uthreads do request/reply through one server socket; every datagram is received
 *    exactly once even with several receivers waiting on one descriptor;
 *  - TCP: listen/accept/connect and 8 MiB each way through small socket buffers, so writers
 *    really block on EAGAIN and are woken by the poller;
 *  - timeouts: 0 gives EAGAIN at once, a timeout gives ETIMEDOUT no earlier than asked;
 *  - jf_close() wakes a waiting uthread with EBADF;
 *  - errors come back as errors: bad descriptors, regular files, double registration, bad
 *    event masks, refused connections, descriptors closed with close(2) behind its back;
 *  - closing races: receivers that keep calling jf_recvfrom() on a descriptor while another
 *    uthread closes it all end with EBADF (none adopts the closing descriptor again and waits
 *    on it forever); sockets made and closed in a loop while uthreads wait on descriptors and
 *    preemption requests poll the netpoller (none deadlocks on a descriptor lock its own
 *    uthread holds). Both were hangs, 1 run in ~10 of this file under ASan + preemption;
 *  - the calls also work outside the runtime (poll(2));
 *  - a busy worker notices a datagram for a waiting uthread at its scheduling points: on one
 *    worker whose other uthread computes without blocking, the receiver gets the datagram
 *    while the computation is still running. With a preemption mechanism the computation
 *    reaches only safepoints; under "none" (run to completion: a safepoint is no scheduling
 *    point there, and the datagram would wait for the end of the computation by design) it
 *    yields instead, and a yield with nothing else runnable must still poll the netpoller
 *    (registered as net.netpoll.ws.none). The receiver waits with a timeout: with
 *    JF_NO_TIMEOUT, jf_yield() finds no policy work and no timer and returns without polling,
 *    so under "none" the datagram waits for the end of the computation (issue 16, reported).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "jf_test.h"

#define MS 1000000ll

static struct sockaddr_in loopback(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/* A socket bound to 127.0.0.1 on a free port. */
static int bound_socket(int type)
{
	int fd = jf_socket(AF_INET, type, 0);
	struct sockaddr_in a = loopback(0);
	CHECK(fd >= 0);
	CHECK_EQ(jf_bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* --- UDP request/reply -------------------------------------------------------------------- */

#define UDP_CLIENTS 16
#define UDP_ROUNDS 200
#define UDP_RECEIVERS 4

static int udp_server_fd;
static atomic_int udp_served, udp_receivers_done;

static void *udp_receiver(void *arg)
{
	char buf[64];
	(void)arg;
	for (;;) {
		struct sockaddr_in src;
		socklen_t sl = sizeof(src);
		ssize_t n = jf_recvfrom(udp_server_fd, buf, sizeof(buf), 0, (struct sockaddr *)&src,
					&sl, JF_NO_TIMEOUT);
		if (n < 0) {
			CHECK_EQ(errno, EBADF); /* the test closes the socket at the end */
			break;
		}
		CHECK_EQ(n, 8);
		buf[8] = 'R';
		atomic_fetch_add(&udp_served, 1); /* before the reply: the client may finish at once */
		CHECK_EQ(jf_sendto(udp_server_fd, buf, 9, 0, (struct sockaddr *)&src, sl,
				   JF_NO_TIMEOUT),
			 9);
	}
	atomic_fetch_add(&udp_receivers_done, 1);
	return NULL;
}

static void *udp_client(void *arg)
{
	uint16_t port = (uint16_t)(uintptr_t)arg;
	struct sockaddr_in dst = loopback(port);
	int fd = bound_socket(SOCK_DGRAM);
	char buf[64];

	for (uint32_t i = 0; i < UDP_ROUNDS; i++) {
		uint64_t tag = ((uint64_t)fd << 32) | i;
		ssize_t n;
		memcpy(buf, &tag, 8);
		CHECK_EQ(jf_sendto(fd, buf, 8, 0, (struct sockaddr *)&dst, sizeof(dst), JF_NO_TIMEOUT),
			 8);
		/* Loopback does not lose datagrams unless a buffer overflows; 5 s is generous. */
		n = jf_recv(fd, buf, sizeof(buf), 0, 5000 * MS);
		if (n < 0)
			fprintf(stderr, "client %d round %u: %s\n", fd, i, strerror(errno));
		CHECK_EQ(n, 9);
		CHECK_EQ(memcmp(buf, &tag, 8), 0);
		CHECK_EQ(buf[8], 'R');
	}
	CHECK_EQ(jf_close(fd), 0);
	return NULL;
}

static void test_udp(void)
{
	jf_thread_t *recv[UDP_RECEIVERS], *cli[UDP_CLIENTS];
	uint16_t port;

	atomic_store(&udp_served, 0);
	atomic_store(&udp_receivers_done, 0);
	udp_server_fd = bound_socket(SOCK_DGRAM);
	port = bound_port(udp_server_fd);
	for (int i = 0; i < UDP_RECEIVERS; i++)
		CHECK_EQ(jf_spawn(&recv[i], NULL, udp_receiver, NULL), 0);
	for (int i = 0; i < UDP_CLIENTS; i++)
		CHECK_EQ(jf_spawn(&cli[i], NULL, udp_client, (void *)(uintptr_t)port), 0);
	for (int i = 0; i < UDP_CLIENTS; i++)
		CHECK_EQ(jf_join(cli[i], NULL), 0);
	CHECK_EQ(atomic_load(&udp_served), UDP_CLIENTS * UDP_ROUNDS);
	/* Closing wakes every receiver still waiting, with EBADF. */
	CHECK_EQ(jf_close(udp_server_fd), 0);
	for (int i = 0; i < UDP_RECEIVERS; i++)
		CHECK_EQ(jf_join(recv[i], NULL), 0);
	CHECK_EQ(atomic_load(&udp_receivers_done), UDP_RECEIVERS);
	printf("udp: %d request/replies through %d receivers: ok\n", UDP_CLIENTS * UDP_ROUNDS,
	       UDP_RECEIVERS);
}

/* --- TCP bulk transfer --------------------------------------------------------------------- */

#define TCP_BYTES (8u << 20)

static void small_buffers(int fd)
{
	int sz = 16 * 1024;
	CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131u + (i >> 11));
}

/* One end's writer: TCP_BYTES of the pattern in 64 KiB writes, then half-close. */
static void *tcp_writer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	size_t chunk = 64 * 1024;
	uint8_t *buf = malloc(chunk);

	CHECK(buf != NULL);
	for (size_t off = 0; off < TCP_BYTES; off += chunk) {
		for (size_t i = 0; i < chunk; i++)
			buf[i] = pattern(off + i);
		CHECK_EQ(jf_write(fd, buf, chunk, JF_NO_TIMEOUT), (ssize_t)chunk);
	}
	CHECK_EQ(shutdown(fd, SHUT_WR), 0);
	free(buf);
	return NULL;
}

/* One end: its writer runs beside; this uthread reads TCP_BYTES, checks them, sees EOF. */
static void *tcp_peer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	size_t chunk = 64 * 1024, got = 0;
	uint8_t *buf = malloc(chunk);
	jf_thread_t *writer;

	CHECK(buf != NULL);
	CHECK_EQ(jf_spawn(&writer, NULL, tcp_writer, arg), 0);
	while (got < TCP_BYTES) {
		ssize_t n = jf_read(fd, buf, chunk, 10000 * MS);
		if (n <= 0)
			fprintf(stderr, "read at %zu: %zd %s\n", got, n, strerror(errno));
		CHECK(n > 0);
		for (ssize_t i = 0; i < n; i++)
			CHECK_EQ(buf[i], pattern(got + (size_t)i));
		got += (size_t)n;
	}
	CHECK_EQ(jf_read(fd, buf, chunk, 10000 * MS), 0); /* EOF */
	CHECK_EQ(jf_join(writer, NULL), 0);
	free(buf);
	return NULL;
}

static void test_tcp(void)
{
	int lfd = bound_socket(SOCK_STREAM), cfd, afd;
	struct sockaddr_in a = loopback(0), peer;
	socklen_t pl = sizeof(peer);
	jf_thread_t *t1, *t2;

	CHECK_EQ(jf_listen(lfd, 16), 0);
	a.sin_port = htons(bound_port(lfd));
	/* accept with nothing pending: timeout 0 and a short timeout */
	CHECK_EQ(jf_accept(lfd, NULL, NULL, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	cfd = jf_socket(AF_INET, SOCK_STREAM, 0);
	CHECK(cfd >= 0);
	small_buffers(cfd);
	CHECK_EQ(jf_connect(cfd, (struct sockaddr *)&a, sizeof(a), 5000 * MS), 0);
	afd = jf_accept(lfd, (struct sockaddr *)&peer, &pl, 5000 * MS);
	CHECK(afd >= 0);
	CHECK_EQ(peer.sin_family, AF_INET);
	CHECK(fcntl(afd, F_GETFL) & O_NONBLOCK);
	small_buffers(afd);
	CHECK_EQ(jf_spawn(&t1, NULL, tcp_peer, (void *)(intptr_t)cfd), 0);
	CHECK_EQ(jf_spawn(&t2, NULL, tcp_peer, (void *)(intptr_t)afd), 0);
	CHECK_EQ(jf_join(t1, NULL), 0);
	CHECK_EQ(jf_join(t2, NULL), 0);
	CHECK_EQ(jf_close(cfd), 0);
	CHECK_EQ(jf_close(afd), 0);

	/* A refused connection is an error, not a hang: the listener's port after it closed. */
	CHECK_EQ(jf_close(lfd), 0);
	cfd = jf_socket(AF_INET, SOCK_STREAM, 0);
	CHECK_EQ(jf_connect(cfd, (struct sockaddr *)&a, sizeof(a), 5000 * MS), -1);
	CHECK_EQ(errno, ECONNREFUSED);
	CHECK_EQ(jf_close(cfd), 0);
	printf("tcp: 8 MiB each way through 16 KiB buffers, refused connect: ok\n");
}

/* --- timeouts, close, errors ---------------------------------------------------------------- */

static int close_fd;
static atomic_int close_waiting;

static void *wait_for_close(void *arg)
{
	char b;
	(void)arg;
	atomic_store(&close_waiting, 1);
	CHECK_EQ(jf_recv(close_fd, &b, 1, 0, JF_NO_TIMEOUT), -1);
	CHECK_EQ(errno, EBADF);
	return NULL;
}

static void test_timeouts_and_errors(void)
{
	int fd = bound_socket(SOCK_DGRAM), pfd[2], file;
	char b[8];
	uint64_t t0;
	jf_thread_t *t;
	char path[] = "/tmp/jiffy-netpoll-XXXXXX";

	CHECK_EQ(jf_recv(fd, b, sizeof(b), 0, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	t0 = jf_now_ns();
	CHECK_EQ(jf_recv(fd, b, sizeof(b), 0, 30 * MS), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK(jf_now_ns() - t0 >= 30 * MS);
	CHECK_EQ(jf_fd_wait(fd, POLLIN, 20 * MS), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_EQ(jf_fd_wait(fd, POLLOUT, 20 * MS), POLLOUT);
	CHECK_EQ(jf_fd_wait(fd, 0, 0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(jf_fd_wait(fd, POLLPRI, 0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(jf_fd_register(fd), -1); /* made by jf_socket: registered already */
	CHECK_EQ(errno, EEXIST);

	/* jf_close() wakes a waiter with EBADF. */
	close_fd = fd;
	CHECK_EQ(jf_spawn(&t, NULL, wait_for_close, NULL), 0);
	while (!atomic_load(&close_waiting))
		jf_yield();
	jf_sleep_ns(5 * MS); /* let it block (if it has not, it sees EBADF from recv) */
	CHECK_EQ(jf_close(fd), 0);
	CHECK_EQ(jf_join(t, NULL), 0);

	/* Bad descriptors. */
	CHECK_EQ(jf_recv(-1, b, 1, 0, 0), -1);
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(jf_recv(fd, b, 1, 0, 10 * MS), -1); /* closed above */
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(jf_fd_register(-5), -1);
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(jf_fd_register(1 << 30), -1);
	CHECK_EQ(errno, EBADF);

	/* A regular file cannot be watched: EPERM; reads of it just work. */
	file = mkstemp(path);
	CHECK(file >= 0);
	unlink(path);
	CHECK_EQ(jf_fd_register(file), -1);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(jf_write(file, "abc", 3, JF_NO_TIMEOUT), 3);
	CHECK_EQ(lseek(file, 0, SEEK_SET), 0);
	CHECK_EQ(jf_read(file, b, sizeof(b), JF_NO_TIMEOUT), 3);
	close(file);

	/* A pipe, adopted: jf_fd_wait, then a read; then close(2) behind the netpoller's back and
	 * a new pipe on the same numbers must work (the stale registration is noticed). */
	CHECK_EQ(pipe(pfd), 0);
	CHECK_EQ(jf_fd_register(pfd[0]), 0);
	CHECK_EQ(jf_fd_wait(pfd[0], POLLIN, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(write(pfd[1], "x", 1), 1);
	CHECK_EQ(jf_fd_wait(pfd[0], POLLIN, 1000 * MS), POLLIN);
	CHECK_EQ(jf_read(pfd[0], b, sizeof(b), 0), 1);
	close(pfd[0]);
	close(pfd[1]);
	CHECK_EQ(pipe(pfd), 0);
	CHECK_EQ(jf_read(pfd[0], b, sizeof(b), 20 * MS), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_EQ(write(pfd[1], "yz", 2), 2);
	CHECK_EQ(jf_read(pfd[0], b, sizeof(b), 1000 * MS), 2);
	CHECK_EQ(jf_close(pfd[0]), 0);
	CHECK_EQ(jf_close(pfd[1]), 0);
	printf("timeouts, close wakes waiters, errors: ok\n");
}

/* --- a busy worker polls --------------------------------------------------------------------- */

static atomic_int spin_done, spin_stop, got_while_spinning;
static int busy_fd;
static bool spin_yields; /* under "none": the computation's scheduling points are yields */

static void *spinner(void *arg)
{
	uint64_t end = jf_now_ns() + 5000 * MS;
	(void)arg;
	/* Compute without blocking (at safepoints, or yielding under "none") until told or 5 s
	 * pass. */
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed) && jf_now_ns() < end) {
		if (spin_yields)
			jf_yield();
		else
			jf_safepoint();
	}
	atomic_store(&spin_done, 1);
	return NULL;
}

static void *busy_receiver(void *arg)
{
	char b[8];
	(void)arg;
	CHECK_EQ(jf_recv(busy_fd, b, sizeof(b), 0, 10000 * MS), 1);
	atomic_store(&got_while_spinning, !atomic_load(&spin_done));
	atomic_store(&spin_stop, 1);
	return NULL;
}

static void *external_sender(void *arg)
{
	struct sockaddr_in dst = loopback((uint16_t)(uintptr_t)arg);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	usleep(50 * 1000); /* the receiver is waiting and the spinner spinning by now */
	CHECK_EQ(sendto(fd, "!", 1, 0, (struct sockaddr *)&dst, sizeof(dst)), 1);
	close(fd);
	return NULL;
}

static void test_busy_worker_polls(const char *mech)
{
	jf_thread_t *r, *s;
	pthread_t ext;

	busy_fd = bound_socket(SOCK_DGRAM);
	CHECK_EQ(jf_spawn(&r, NULL, busy_receiver, NULL), 0);
	jf_yield(); /* let it block in jf_recv */
	CHECK_EQ(jf_spawn(&s, NULL, spinner, NULL), 0);
	CHECK_EQ(pthread_create(&ext, NULL, external_sender,
				(void *)(uintptr_t)bound_port(busy_fd)), 0);
	CHECK_EQ(jf_join(r, NULL), 0);
	CHECK_EQ(jf_join(s, NULL), 0);
	pthread_join(ext, NULL);
	CHECK_EQ(jf_close(busy_fd), 0);
	printf("busy worker (%s, computing %s): datagram received %s the computation ended\n",
	       mech, spin_yields ? "with yields" : "with safepoints only",
	       atomic_load(&got_while_spinning) ? "before" : "after");
	CHECK(atomic_load(&got_while_spinning));
}

/* --- closing races ------------------------------------------------------------------------- */

#define RACE_ROUNDS 150
#define RACE_RECEIVERS 4
#define CHURN_SOCKETS 3000

static atomic_int race_fd;

static void *race_receiver(void *arg)
{
	char buf[16];
	(void)arg;
	for (;;) {
		ssize_t n = jf_recvfrom(atomic_load(&race_fd), buf, sizeof(buf), 0, NULL, NULL,
					2000 * MS);
		if (n < 0) {
			if (errno == EBADF)
				return (void *)1;
			CHECK_EQ(errno, EAGAIN); /* a timeout would be a lost wakeup: ETIMEDOUT fails */
		}
	}
}

/* Sockets made and closed without end while @arg (a counter) is below the goal. */
static void *churn(void *arg)
{
	atomic_int *made = arg;
	while (atomic_load(made) < CHURN_SOCKETS) {
		int fd = jf_socket(AF_INET, SOCK_DGRAM, 0);
		CHECK(fd >= 0);
		CHECK_EQ(jf_close(fd), 0);
		atomic_fetch_add(made, 1);
	}
	return NULL;
}

static void test_close_races(void)
{
	jf_thread_t *r[RACE_RECEIVERS], *c;
	atomic_int made = 0;
	int pfd[2];

	for (int round = 0; round < RACE_ROUNDS; round++) {
		int fd = bound_socket(SOCK_DGRAM), cfd = jf_socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in a = loopback(bound_port(fd));

		atomic_store(&race_fd, fd);
		for (int i = 0; i < RACE_RECEIVERS; i++)
			CHECK_EQ(jf_spawn(&r[i], NULL, race_receiver, NULL), 0);
		for (int i = 0; i < 8; i++) /* receivers busy receiving, waking and re-waiting */
			CHECK_EQ(jf_sendto(cfd, "x", 1, 0, (struct sockaddr *)&a, sizeof(a), JF_NO_TIMEOUT),
				 1);
		jf_yield();
		CHECK_EQ(jf_close(fd), 0);
		for (int i = 0; i < RACE_RECEIVERS; i++)
			CHECK(jf_join(r[i], NULL) == 0);
		CHECK_EQ(jf_close(cfd), 0);
	}
	/* Socket churn while a uthread waits on a pipe: every preemption request polls. */
	CHECK_EQ(pipe(pfd), 0);
	CHECK_EQ(jf_fd_register(pfd[0]), 0);
	atomic_store(&race_fd, pfd[0]);
	CHECK_EQ(jf_spawn(&c, NULL, churn, &made), 0);
	while (atomic_load(&made) < CHURN_SOCKETS) {
		char b;
		CHECK_EQ(jf_read(pfd[0], &b, 1, 1 * MS), -1); /* waits: the netpoller is active */
		CHECK_EQ(errno, ETIMEDOUT);
	}
	CHECK_EQ(jf_join(c, NULL), 0);
	CHECK_EQ(jf_close(pfd[0]), 0);
	close(pfd[1]);
	printf("closing races: %d rounds of %d receivers closed under them, %d sockets churned: "
	       "ok\n", RACE_ROUNDS, RACE_RECEIVERS, CHURN_SOCKETS);
}

/* --- outside the runtime --------------------------------------------------------------------- */

static void test_outside_runtime(void)
{
	int fd = bound_socket(SOCK_DGRAM), cfd;
	struct sockaddr_in a = loopback(bound_port(fd));
	char b[4];
	uint64_t t0 = jf_now_ns();

	CHECK_EQ(jf_recv(fd, b, sizeof(b), 0, 20 * MS), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK(jf_now_ns() - t0 >= 19 * MS); /* poll(2) has ms resolution */
	cfd = jf_socket(AF_INET, SOCK_DGRAM, 0);
	CHECK_EQ(jf_sendto(cfd, "ok", 2, 0, (struct sockaddr *)&a, sizeof(a), JF_NO_TIMEOUT), 2);
	CHECK_EQ(jf_recv(fd, b, sizeof(b), 0, 1000 * MS), 2);
	CHECK_EQ(jf_fd_wait(fd, POLLIN, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(jf_close(fd), 0);
	CHECK_EQ(jf_close(cfd), 0);
	printf("outside the runtime: ok\n");
}

static void *main_many(void *arg)
{
	(void)arg;
	test_udp();
	test_tcp();
	test_timeouts_and_errors();
	test_close_races();
	return NULL;
}

static void *main_one(void *arg)
{
	test_busy_worker_polls(arg);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	test_outside_runtime();

	jft_config(&cfg, 2);
	CHECK_EQ(jf_run(&cfg, main_many, NULL, NULL), 0);

	/* One worker: the receiver and the spinner share it. */
	jft_config(&cfg, 1);
	spin_yields = strcmp(cfg.preempt, "none") == 0;
	CHECK_EQ(jf_run(&cfg, main_one, cfg.preempt, NULL), 0);

	/* And once more after a runtime came and went: the netpoller outlives runtimes. */
	jft_config(&cfg, 2);
	CHECK_EQ(jf_run(&cfg, main_many, NULL, NULL), 0);
	return 0;
}
