/*
 * bench/netpoll_cost.c - what the netpoller's pieces cost on this machine:
 *  - a busy worker's poll: epoll_wait() with timeout 0 on an instance watching 64 idle sockets
 *    (what jf_netpoll_busy() pays at most once per JIFFY_NETPOLL_US);
 *  - jf_recv() on an empty socket with timeout 0 (the EAGAIN path: one recvfrom);
 *  - a UDP round trip between two uthreads on one worker through jf_sendto/jf_recv (two
 *    syscalls each way plus the park and wake of the receiver through the netpoller).
 * Best of 5 repetitions, to see the machine's cost rather than its noise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#define N 200000

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void epoll_cost(void)
{
	int ep = epoll_create1(0), fds[64];
	struct epoll_event ev[128];
	double best = 1e18;

	for (int i = 0; i < 64; i++) {
		struct epoll_event e = {.events = EPOLLIN | EPOLLET, .data.u64 = (uint64_t)i};
		fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e);
	}
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		for (int i = 0; i < N; i++)
			epoll_wait(ep, ev, 128, 0);
		double d = (now_ns() - t0) / N;
		best = d < best ? d : best;
	}
	printf("epoll_wait(timeout 0), 64 idle sockets:   %7.0f ns per call\n", best);
	for (int i = 0; i < 64; i++)
		close(fds[i]);
	close(ep);
}

static int a_fd, b_fd;
static struct sockaddr_in a_addr, b_addr;

static void *echo(void *arg)
{
	char c[8];
	int n = *(int *)arg;
	for (int i = 0; i < n; i++) {
		if (jf_recv(b_fd, c, sizeof(c), 0, JF_NO_TIMEOUT) < 0 ||
		    jf_sendto(b_fd, c, 1, 0, (struct sockaddr *)&a_addr, sizeof(a_addr),
			      JF_NO_TIMEOUT) < 0)
			break;
	}
	return NULL;
}

static int bind_any(struct sockaddr_in *a)
{
	int fd = jf_socket(AF_INET, SOCK_DGRAM, 0);
	socklen_t len = sizeof(*a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = 0;
	bind(fd, (struct sockaddr *)a, sizeof(*a));
	getsockname(fd, (struct sockaddr *)a, &len);
	return fd;
}

static void *bench_main(void *arg)
{
	char c[8] = "x";
	double best = 1e18, best_rt = 1e18;
	int n = 20000;
	(void)arg;

	a_fd = bind_any(&a_addr);
	b_fd = bind_any(&b_addr);
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		for (int i = 0; i < N; i++)
			jf_recv(a_fd, c, sizeof(c), 0, 0);
		double d = (now_ns() - t0) / N;
		best = d < best ? d : best;
	}
	printf("jf_recv(timeout 0) on an empty socket:    %7.0f ns per call\n", best);
	for (int r = 0; r < 5; r++) {
		jf_thread_t *t;
		jf_spawn(&t, NULL, echo, &n);
		double t0 = now_ns();
		for (int i = 0; i < n; i++) {
			jf_sendto(a_fd, c, 1, 0, (struct sockaddr *)&b_addr, sizeof(b_addr),
				  JF_NO_TIMEOUT);
			jf_recv(a_fd, c, sizeof(c), 0, JF_NO_TIMEOUT);
		}
		double d = (now_ns() - t0) / n;
		best_rt = d < best_rt ? d : best_rt;
		jf_join(t, NULL);
	}
	printf("UDP round trip, 2 uthreads on 1 worker:   %7.0f ns\n", best_rt);
	jf_close(a_fd);
	jf_close(b_fd);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	char err[256];

	epoll_cost();
	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "netpoll_cost: %s\n", err);
		return 2;
	}
	cfg.workers = 1;
	return jf_run(&cfg, bench_main, NULL, NULL) == 0 ? 0 : 1;
}
