/*
 * apps/httpd/http.h - the HTTP/1.1 layer of jiffy-httpd (the head-of-line web-server demo of
 * preemptible functions, docs/pfn-http.md), shared by its three modes.
 *
 * Owns: one connection's request stream: the bytes read so far, parsed by Debian's
 * libhttp-parser (nodejs http-parser 2.9.4; no hand-written parsing), one complete request at
 * a time (keep-alive and pipelining: several requests may sit in one read); the routes and
 * their work (GET or HEAD /short and /long, optional ?seed=N); the status of a bad request
 * (400, 404, 405, 413, 414, 431, 505) and the text of every response. It owns no socket: the caller
 * reads into hh_conn_space(), says how much came with hh_conn_filled(), takes requests with
 * hh_conn_next() and writes what hh_format_*() produced. Nothing here blocks or allocates.
 *
 * The work of a request is a chain of dependent multiply-adds (the LCG step of
 * apps/common/spin.c, so jp_spin_iters(iters, seed) recomputes the same value) whose length
 * the server calibrated at start-up from --short-us/--long-us: its result goes into the reply,
 * so a client can check that a handler stopped and resumed any number of times computed
 * exactly what one run to completion does.
 */
#ifndef JIFFY_APPS_HTTPD_HTTP_H
#define JIFFY_APPS_HTTPD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

#define HH_BUF_SIZE 8192   /* one connection's read buffer: a request line and headers fit */
#define HH_URL_MAX 1024    /* longer URLs get 414 */
#define HH_HEADER_MAX 8192 /* header bytes of one request (http_parser's limit); more: 431 */
#define HH_BODY_MAX 65536  /* request bodies are read and dropped; a longer one gets 413 */
#define HH_RESP_MAX 512    /* the longest response hh_format_*() writes */

enum hh_route { HH_SHORT = 0, HH_LONG = 1, HH_NROUTES };

/* A request, as hh_conn_next() hands it over: either a route to serve or a status to send. */
struct hh_request {
	int status;          /* 200: serve @route; otherwise the error status to send */
	enum hh_route route;
	uint64_t seed;       /* ?seed=N (default 1) */
	bool head;           /* HEAD: the same headers, no body */
	bool http10;         /* an HTTP/1.0 request (keep-alive only if it asked for it) */
	bool keep_alive;     /* false: close after the response (HTTP/1.0, Connection: close) */
};

/* One connection's parsing state (embed it; no allocation). */
struct hh_conn {
	http_parser parser;
	char buf[HH_BUF_SIZE];
	size_t off, len;     /* buf[off..len) not yet given to the parser */
	char url[HH_URL_MAX];
	size_t url_len;
	uint64_t body_len;
	int error;           /* an HTTP status found by a callback (413, 414), 0 if none */
	bool complete;       /* on_message_complete ran; the request waits in the fields */
	bool keep_alive;
	bool closed;         /* a bad request was answered: nothing more is read */
};

/* Once per process, before any connection: the parser's limits. */
void hh_init(void);

void hh_conn_init(struct hh_conn *c);

/* Where the caller may read into, and how much (never 0 while hh_conn_next() says HH_MORE). */
char *hh_conn_space(struct hh_conn *c, size_t *room);
/* @n bytes were read into hh_conn_space(). */
void hh_conn_filled(struct hh_conn *c, size_t n);

enum hh_next {
	HH_MORE = 0, /* no complete request in what was read: read more */
	HH_REQUEST,  /* *req holds one (status 200 or an error to answer and then close) */
};
/* The next request in what was read. After an error status, the connection must be closed. */
enum hh_next hh_conn_next(struct hh_conn *c, struct hh_request *req);

/*
 * The work: @iters steps of the LCG chain from @seed (as jp_spin_iters(@iters, @seed)), calling
 * @check (if not NULL) about every 1,000 steps (~1 µs): a jf_safepoint() or nothing.
 */
uint64_t hh_work(uint64_t iters, uint64_t seed, void (*check)(void));

/*
 * The 200 response to @req, whose work of @iters steps gave @x; @slices is how many budget
 * slices the handler took (1 when it was not stopped; 0 when it ran without a budget), sent as
 * the X-Jiffy-Slices header. Return its length (< HH_RESP_MAX).
 */
size_t hh_format_ok(char *out, const struct hh_request *req, uint64_t iters, uint64_t x,
		    unsigned slices);
/* The error response with @status (the connection is closed after it). Return its length. */
size_t hh_format_error(char *out, int status);

/* "short" / "long" */
const char *hh_route_name(enum hh_route r);

#endif /* JIFFY_APPS_HTTPD_HTTP_H */
