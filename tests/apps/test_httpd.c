/*
 * tests/apps/test_httpd.c - apps.httpd: jiffy-httpd (apps/httpd/, the head-of-line web server of
 * preemptible functions) over real sockets on loopback, in each of its three modes.
 *
 * Owns: starting the server (argv[1]) on an ephemeral port and stopping it with SIGTERM (exit
 * status 0); checking that a long request and a short one on two connections both get complete,
 * correct answers (the work's result is recomputed here with jp_spin_iters), that in budget mode
 * the long handler was stopped by its budget and resumed (X-Jiffy-Slices > 1: 30 ms of work
 * under a 1 ms budget cannot finish in one slice), by its own uthread (--set-aside yield) and by
 * the background uthread it was handed to (--set-aside background), and handlers without a
 * budget report 0;
 * keep-alive with pipelined requests, HEAD, HTTP/1.0, Connection: close; malformed and refused
 * requests (400, 404, 405, 413, 414, 431), each answered and followed by the connection's close;
 * a few hundred mutated requests that must neither crash nor wedge the server. No timing is
 * asserted; the receive timeouts and alarm() only turn a hang into a failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jf_test.h"
#include "spin.h"

static const char *server_path;
static unsigned port;

/* ---- the server process ------------------------------------------------------------------- */

static pid_t start_server(const char *mode, const char *aside)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed check (_exit) takes the server along */
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		char *args[] = {(char *)server_path, "--mode", (char *)mode, "--port", "0",
				"--short-us", "200", "--long-us", "30000", "--budget-us", "1000",
				"--workers", "1", "--threads", "2", "--set-aside", (char *)aside,
				NULL};
		execv(server_path, args);
		perror("exec jiffy-httpd");
		_exit(127);
	}
	close(p[1]);
	char line[256];
	size_t len = 0;
	port = 0;
	while (len < sizeof(line) - 1) {
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		CHECK(poll(&pf, 1, 30000) == 1); /* a hang guard, not a timing check */
		ssize_t n = read(p[0], line + len, 1);
		CHECK(n == 1);
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	printf("server: %s\n", line);
	CHECK(sscanf(line, "READY jiffy-httpd port=%u", &port) == 1);
	CHECK(strstr(line, mode) != NULL);
	close(p[0]);
	return pid;
}

static void stop_server(pid_t pid)
{
	int st;
	CHECK(kill(pid, SIGTERM) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

/* ---- a client connection ------------------------------------------------------------------- */

struct client {
	int fd;
	char buf[65536];
	size_t len; /* bytes received and not yet consumed */
};

static void client_open(struct client *c)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 30};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(c->fd >= 0);
	CHECK(setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	CHECK(connect(c->fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	c->len = 0;
}

static void client_send(struct client *c, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) /* the server may close on an error before it has read everything */
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void client_sends(struct client *c, const char *s)
{
	client_send(c, s, strlen(s));
}

/* Receive more; 0 at EOF (or a reset, which ends the connection the same way). */
static size_t client_fill(struct client *c)
{
	CHECK(c->len < sizeof(c->buf));
	ssize_t n;
	do
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == ECONNRESET)
		n = 0;
	if (n < 0)
		fprintf(stderr, "recv: %s\n", strerror(errno));
	CHECK(n >= 0); /* EAGAIN here is the 30 s hang guard */
	c->len += (size_t)n;
	return (size_t)n;
}

struct response {
	int status;
	long content_length;
	int slices; /* X-Jiffy-Slices, -1 if absent */
	int close;  /* Connection: close */
	char body[512];
};

static const char *find_header(const char *head, const char *name)
{
	const char *p = strcasestr(head, name);
	return p ? p + strlen(name) : NULL;
}

/* One response (@head: a HEAD request's, without a body). 0, or -1 at EOF before any byte. */
static int client_response(struct client *c, struct response *r, int head)
{
	char *end;
	memset(r, 0, sizeof(*r));
	while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4))) {
		if (!client_fill(c)) {
			CHECK_EQ(c->len, 0); /* no half response before the close */
			return -1;
		}
	}
	size_t hlen = (size_t)(end - c->buf) + 4;
	char head_text[4096];
	CHECK(hlen < sizeof(head_text));
	memcpy(head_text, c->buf, hlen);
	head_text[hlen] = '\0';
	CHECK(sscanf(head_text, "HTTP/1.1 %d ", &r->status) == 1);
	const char *v = find_header(head_text, "\r\nContent-Length: ");
	CHECK(v != NULL);
	r->content_length = strtol(v, NULL, 10);
	CHECK(r->content_length >= 0 && r->content_length < (long)sizeof(r->body));
	v = find_header(head_text, "\r\nX-Jiffy-Slices: ");
	r->slices = v ? atoi(v) : -1;
	r->close = find_header(head_text, "\r\nConnection: close") != NULL;
	size_t blen = head ? 0 : (size_t)r->content_length;
	while (c->len < hlen + blen)
		CHECK(client_fill(c) > 0); /* the whole body, before any close */
	memcpy(r->body, c->buf + hlen, blen);
	r->body[blen] = '\0';
	memmove(c->buf, c->buf + hlen + blen, c->len - hlen - blen);
	c->len -= hlen + blen;
	return 0;
}

/* The connection ends: EOF with nothing more received. */
static void client_expect_eof(struct client *c)
{
	CHECK_EQ(c->len, 0);
	CHECK_EQ(client_fill(c), 0);
}

static void client_close(struct client *c)
{
	close(c->fd);
	c->fd = -1;
}

/* A 200 whose body is "<route> iters=N seed=S x=X\n" with X what the work gives. Return N. */
static uint64_t check_ok(const struct response *r, const char *route, uint64_t seed)
{
	char name[16];
	unsigned long long iters, s, x;
	CHECK_EQ(r->status, 200);
	CHECK_EQ((size_t)r->content_length, strlen(r->body));
	CHECK(sscanf(r->body, "%15s iters=%llu seed=%llu x=%llx", name, &iters, &s, &x) == 4);
	CHECK(strcmp(name, route) == 0);
	CHECK_EQ(s, seed);
	CHECK(iters > 0);
	CHECK_EQ(x, jp_spin_iters(iters, seed)); /* bit-exact after any number of resumes */
	return iters;
}

/* A request that must get @status and then the connection's close. */
static void expect_error(const char *req, size_t len, int status)
{
	struct client c;
	struct response r;
	client_open(&c);
	client_send(&c, req, len);
	CHECK_EQ(client_response(&c, &r, 0), 0);
	if (r.status != status)
		fprintf(stderr, "request %.60s...: status %d, expected %d\n", req, r.status, status);
	CHECK_EQ(r.status, status);
	CHECK(r.close);
	client_expect_eof(&c);
	client_close(&c);
}

/* ---- the checks ----------------------------------------------------------------------------- */

static void long_and_short(const char *mode)
{
	struct client a, b;
	struct response r;

	client_open(&a);
	client_open(&b);
	client_sends(&a, "GET /long?seed=7 HTTP/1.1\r\nHost: localhost\r\n\r\n");
	client_sends(&b, "GET /short?seed=9 HTTP/1.1\r\nHost: localhost\r\n\r\n");
	CHECK_EQ(client_response(&b, &r, 0), 0);
	uint64_t short_iters = check_ok(&r, "short", 9);
	CHECK(!r.close);
	if (strcmp(mode, "budget") == 0)
		CHECK(r.slices >= 1);
	else
		CHECK_EQ(r.slices, 0);
	CHECK_EQ(client_response(&a, &r, 0), 0);
	uint64_t long_iters = check_ok(&r, "long", 7);
	CHECK(long_iters > short_iters);
	if (strcmp(mode, "budget") == 0) {
		printf("%s: the long handler took %d budget slices\n", mode, r.slices);
		CHECK(r.slices > 1); /* stopped by its budget at least once, resumed, finished */
	} else {
		CHECK_EQ(r.slices, 0);
	}
	client_close(&a);
	client_close(&b);
}

static void keep_alive(void)
{
	struct client c;
	struct response r;

	/* Three pipelined requests in one write, the last asking to close. */
	client_open(&c);
	client_sends(&c, "GET /short?seed=1 HTTP/1.1\r\nHost: a\r\n\r\n"
			 "HEAD /short HTTP/1.1\r\nHost: a\r\n\r\n"
			 "GET /short?seed=3&x=y HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "short", 1);
	CHECK(!r.close);
	CHECK_EQ(client_response(&c, &r, 1), 0);
	CHECK_EQ(r.status, 200);
	CHECK(r.content_length > 0);
	CHECK(!r.close);
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "short", 3);
	CHECK(r.close);
	client_expect_eof(&c);
	client_close(&c);

	/* One request sent a byte at a time, then another on the same connection. */
	client_open(&c);
	const char *slow = "GET /short?seed=11 HTTP/1.1\r\nHost: a\r\n\r\n";
	for (const char *p = slow; *p; p++)
		client_send(&c, p, 1);
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "short", 11);
	client_sends(&c, "GET /long HTTP/1.1\r\n\r\n");
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "long", 1);
	client_close(&c);

	/* HTTP/1.0: closed after the response unless it asks for keep-alive. */
	client_open(&c);
	client_sends(&c, "GET /short HTTP/1.0\r\n\r\n");
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "short", 1);
	CHECK(r.close);
	client_expect_eof(&c);
	client_close(&c);
	client_open(&c);
	client_sends(&c, "GET /short?seed=5 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "short", 5);
	CHECK(!r.close);
	client_sends(&c, "GET /short?seed=6 HTTP/1.0\r\n\r\n");
	CHECK_EQ(client_response(&c, &r, 0), 0);
	check_ok(&r, "short", 6);
	client_expect_eof(&c);
	client_close(&c);

	/* A client that goes away in the middle of a request, and one that sends nothing. */
	client_open(&c);
	client_sends(&c, "GET /sh");
	client_close(&c);
	client_open(&c);
	client_close(&c);
}

/* A literal request (NULs included) that must get @status. */
#define EXPECT_ERROR(lit, status) expect_error(lit, sizeof(lit) - 1, status)

static void errors(void)
{
	static char big[20000];
	EXPECT_ERROR("GARBAGE\r\n\r\n", 400);
	EXPECT_ERROR("GET /short HTTP/1.1\r\nHost: a\r\nNo colon here\r\n\r\n", 400);
	EXPECT_ERROR("GET /short HTTP/9.9\r\n\r\n", 505);
	EXPECT_ERROR("GET /short?seed=x HTTP/1.1\r\n\r\n", 400);
	EXPECT_ERROR("GET /short?seed=99999999999999999999999 HTTP/1.1\r\n\r\n", 400);
	EXPECT_ERROR("GET /short HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400);
	EXPECT_ERROR("GET /nope HTTP/1.1\r\n\r\n", 404);
	EXPECT_ERROR("GET /short/ HTTP/1.1\r\n\r\n", 404);
	EXPECT_ERROR("POST /short HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 405);
	EXPECT_ERROR("GET /short HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n", 413);
	EXPECT_ERROR("GET /short HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		     "20000\r\n", 413);
	EXPECT_ERROR("\x01\x02\x00\xff\r\n\r\n", 400);

	/* A URL of 2,000 bytes: 414. */
	int n = snprintf(big, sizeof(big), "GET /short?pad=");
	memset(big + n, 'a', 2000);
	n += 2000;
	n += snprintf(big + n, sizeof(big) - (size_t)n, " HTTP/1.1\r\n\r\n");
	expect_error(big, (size_t)n, 414);
	/* 12,000 bytes of headers: 431. */
	n = snprintf(big, sizeof(big), "GET /short HTTP/1.1\r\nX-Pad: ");
	memset(big + n, 'b', 12000);
	n += 12000;
	n += snprintf(big + n, sizeof(big) - (size_t)n, "\r\n\r\n");
	expect_error(big, (size_t)n, 431);
}

/* Mutations of a valid request: any answer or a close, never a crash or a hang. */
static void mutations(void)
{
	const char *base = "GET /short?seed=2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	char req[256];
	int answered = 0;

	for (int i = 0; i < 300; i++) {
		size_t len = strlen(base);
		memcpy(req, base, len);
		int edits = 1 + (int)(jft_splitmix64(&rng) % 4);
		for (int e = 0; e < edits && len > 1; e++) {
			size_t at = jft_splitmix64(&rng) % len;
			switch (jft_splitmix64(&rng) % 3) {
			case 0:
				req[at] = (char)jft_splitmix64(&rng);
				break;
			case 1: /* drop a byte */
				memmove(req + at, req + at + 1, len - at - 1);
				len--;
				break;
			default: /* cut it short */
				len = at + 1;
				break;
			}
		}
		struct client c;
		struct response r;
		client_open(&c);
		client_send(&c, req, len);
		shutdown(c.fd, SHUT_WR); /* a request cut short ends in EOF, not a wait */
		if (client_response(&c, &r, 0) == 0) {
			CHECK(r.status == 200 || (r.status >= 400 && r.status < 500) || r.status == 505);
			answered++;
		}
		client_close(&c);
	}
	printf("mutations: %d of 300 answered (the rest closed without an answer)\n", answered);
	CHECK(answered > 0);
}

int main(int argc, char **argv)
{
	/* budget twice: handlers set aside by yielding, and handed to the background uthread */
	static const char *const modes[] = {"budget", "budget", "nobudget", "pool"};
	static const char *const asides[] = {"yield", "background", "yield", "yield"};

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-jiffy-httpd\n", argv[0]);
		return 2;
	}
	server_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	alarm(50); /* a hang ends the test within CTest's timeout, with a message */
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		pid_t pid = start_server(modes[m], asides[m]);
		long_and_short(modes[m]);
		keep_alive();
		errors();
		if (m == 0)
			mutations();
		long_and_short(modes[m]); /* still serving */
		stop_server(pid);
		printf("%s (--set-aside %s): ok\n", modes[m], asides[m]);
	}
	printf("apps.httpd: ok\n");
	return 0;
}
