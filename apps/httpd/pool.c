/*
 * apps/httpd/pool.c - jiffy-httpd --mode pool: the thread-pool server on plain pthreads, the
 * peer of the Jiffy modes (httpd.c) with the same HTTP layer (http.c) and the same work.
 *
 * Owns: a fixed pool of --threads threads sharing one epoll instance; the listening socket and
 * every connection are registered one-shot (EPOLLONESHOT), so one thread at a time owns a
 * connection: it reads what is there, serves every complete request in it to completion (the
 * handler computes on that thread; only the kernel's scheduler preempts it), writes the
 * responses and re-arms the connection. A long request holds one thread; with fewer threads
 * than long requests in progress, short ones wait (head-of-line blocking at the pool's size).
 * No Jiffy runtime: the kernel threads are the pool's and the main thread's, which waits for
 * SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "httpd.h"

struct pconn {
	int fd;
	struct hh_conn c;
};

static int ep = -1, lfd = -1;
static atomic_int pool_stopping;

static int pool_socket(int domain, int type, int proto)
{
	return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
}

static void rearm(int fd, void *ptr)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = ptr};
	(void)epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

static void close_conn(struct pconn *pc)
{
	close(pc->fd); /* leaves the epoll set with its last descriptor */
	free(pc);
	atomic_fetch_sub(&hd_count.open, 1);
}

static void accept_all(void)
{
	int one = 1;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* EAGAIN, or out of descriptors: the next event tries again */
		}
		struct pconn *pc = atomic_load(&hd_count.open) < hd.max_conns ? malloc(sizeof(*pc))
									     : NULL;
		if (!pc) {
			atomic_fetch_add(&hd_count.refused, 1);
			close(fd);
			continue;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pc->fd = fd;
		hh_conn_init(&pc->c);
		atomic_fetch_add(&hd_count.conns, 1);
		atomic_fetch_add(&hd_count.open, 1);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT,
					 .data.ptr = pc};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
			close_conn(pc);
	}
	rearm(lfd, NULL);
}

/* One readiness event of @pc: read once, serve what is complete. 0: keep it; -1: close it. */
static int serve(struct pconn *pc)
{
	char out[HH_RESP_MAX];
	struct hh_request req;
	size_t room;

	char *p = hh_conn_space(&pc->c, &room);
	ssize_t n = recv(pc->fd, p, room, 0);
	if (n == 0)
		return -1;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		if (errno != ECONNRESET)
			atomic_fetch_add(&hd_count.io_errors, 1);
		return -1;
	}
	hh_conn_filled(&pc->c, (size_t)n);
	while (hh_conn_next(&pc->c, &req) == HH_REQUEST) {
		size_t len;
		if (req.status != 200) {
			atomic_fetch_add(&hd_count.bad, 1);
			len = hh_format_error(out, req.status);
			(void)hd_write_all(pc->fd, out, len);
			return -1;
		}
		uint64_t t0 = hd_thread_cpu_ns();
		uint64_t x = hh_work(hd.iters[req.route], req.seed, NULL);
		atomic_fetch_add(&hd_count.cpu_ns[req.route], hd_thread_cpu_ns() - t0);
		atomic_fetch_add(&hd_count.requests[req.route], 1);
		len = hh_format_ok(out, &req, hd.iters[req.route], x, 0);
		if (hd_write_all(pc->fd, out, len) != 0) {
			atomic_fetch_add(&hd_count.io_errors, 1);
			return -1;
		}
		if (!req.keep_alive)
			return -1;
	}
	return 0;
}

static void *pool_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&pool_stopping)) {
		struct epoll_event ev;
		int n = epoll_wait(ep, &ev, 1, (int)(HD_POLL_NS / 1000000));
		if (n <= 0)
			continue;
		if (!ev.data.ptr) {
			accept_all();
			continue;
		}
		struct pconn *pc = ev.data.ptr;
		if (serve(pc) != 0)
			close_conn(pc);
		else
			rearm(pc->fd, pc);
	}
	return NULL;
}

int hd_pool_main(const sigset_t *sigs)
{
	pthread_t *th;
	unsigned bound = 0;
	unsigned long started = 0;
	int signo = 0;

	lfd = hd_open_listener(pool_socket, &bound);
	if (lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s TCP port %lu (--bind, --port): %s\n", hd_prog,
			hd.listen.text, hd.port, strerror(errno));
		return 1;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = NULL};
	th = calloc(hd.threads, sizeof(*th));
	if (ep < 0 || !th || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0) {
		fprintf(stderr, "%s: epoll: %s\n", hd_prog, strerror(errno));
		return 1;
	}
	for (; started < hd.threads; started++) {
		if (pthread_create(&th[started], NULL, pool_thread, NULL) != 0) {
			fprintf(stderr, "%s: cannot start the pool's threads\n", hd_prog);
			signo = -1;
			break;
		}
	}
	if (!signo) {
		fprintf(stderr, "%s: listening on %s port %u, a pool of %lu threads\n", hd_prog,
			hd.listen.text, bound, hd.threads);
		printf("READY jiffy-httpd port=%u mode=pool\n", bound);
		fflush(stdout);
		while (sigwait(sigs, &signo) != 0 || signo <= 0)
			;
	}
	atomic_store(&pool_stopping, 1);
	for (unsigned long i = 0; i < started; i++)
		pthread_join(th[i], NULL); /* each finishes the request it serves (within 100 ms) */
	free(th);
	close(lfd);
	close(ep);
	hd_report();
	return signo > 0 ? 0 : 1;
}
