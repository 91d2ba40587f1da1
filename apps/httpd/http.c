/*
 * apps/httpd/http.c - jiffy-httpd's HTTP/1.1 layer (see http.h): request framing and parsing by
 * libhttp-parser, the routes, the work, the responses.
 */
#define _GNU_SOURCE
#include "http.h"

#include <stdio.h>
#include <string.h>

static int on_message_begin(http_parser *p)
{
	struct hh_conn *c = p->data;
	c->url_len = 0;
	c->body_len = 0;
	c->error = 0;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct hh_conn *c = p->data;
	if (len > sizeof(c->url) - c->url_len) {
		c->error = 414;
		return -1;
	}
	memcpy(c->url + c->url_len, at, len);
	c->url_len += len;
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct hh_conn *c = p->data;
	if ((p->flags & F_CONTENTLENGTH) && p->content_length > HH_BODY_MAX) {
		c->error = 413;
		return -1;
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct hh_conn *c = p->data;
	(void)at;
	c->body_len += len; /* chunked bodies have no Content-Length: counted here */
	if (c->body_len > HH_BODY_MAX) {
		c->error = 413;
		return -1;
	}
	return 0;
}

static int on_chunk_header(http_parser *p)
{
	struct hh_conn *c = p->data;
	/* p->content_length is the size of the chunk announced: refuse it before it arrives */
	if (p->content_length > HH_BODY_MAX - c->body_len) {
		c->error = 413;
		return -1;
	}
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct hh_conn *c = p->data;
	c->complete = true;
	c->keep_alive = http_should_keep_alive(p) && !p->upgrade;
	http_parser_pause(p, 1); /* one request at a time: the rest of the buffer waits */
	return 0;
}

static http_parser_settings settings;

void hh_init(void)
{
	http_parser_settings_init(&settings);
	settings.on_message_begin = on_message_begin;
	settings.on_url = on_url;
	settings.on_headers_complete = on_headers_complete;
	settings.on_body = on_body;
	settings.on_chunk_header = on_chunk_header;
	settings.on_message_complete = on_message_complete;
	http_parser_set_max_header_size(HH_HEADER_MAX);
}

void hh_conn_init(struct hh_conn *c)
{
	memset(c, 0, sizeof(*c));
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
}

char *hh_conn_space(struct hh_conn *c, size_t *room)
{
	*room = sizeof(c->buf) - c->len;
	return c->buf + c->len;
}

void hh_conn_filled(struct hh_conn *c, size_t n)
{
	c->len += n;
}

/* ?seed=N among the query's key=value pairs (others are ignored). 0 or 400. */
static int parse_query(const char *q, size_t len, uint64_t *seed)
{
	const char *end = q + len;
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *pe = amp ? amp : end;
		if (pe - q > 5 && memcmp(q, "seed=", 5) == 0) {
			uint64_t v = 0;
			const char *d = q + 5;
			if (pe - d > 20)
				return 400;
			for (; d < pe; d++) {
				if (*d < '0' || *d > '9')
					return 400;
				uint64_t nv = v * 10 + (uint64_t)(*d - '0');
				if (nv / 10 != v)
					return 400; /* overflow */
				v = nv;
			}
			*seed = v;
		}
		q = amp ? amp + 1 : end;
	}
	return 0;
}

static void build_request(struct hh_conn *c, struct hh_request *req)
{
	struct http_parser_url u;
	const http_parser *p = &c->parser;

	memset(req, 0, sizeof(*req));
	req->seed = 1;
	req->keep_alive = c->keep_alive;
	req->http10 = p->http_major == 1 && p->http_minor == 0;
	if (p->http_major != 1) {
		req->status = 505;
		return;
	}
	if (p->method != HTTP_GET && p->method != HTTP_HEAD) {
		req->status = 405;
		return;
	}
	req->head = p->method == HTTP_HEAD;
	http_parser_url_init(&u);
	if (http_parser_parse_url(c->url, c->url_len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH))) {
		req->status = 400;
		return;
	}
	const char *path = c->url + u.field_data[UF_PATH].off;
	size_t plen = u.field_data[UF_PATH].len;
	if (plen == 6 && memcmp(path, "/short", 6) == 0)
		req->route = HH_SHORT;
	else if (plen == 5 && memcmp(path, "/long", 5) == 0)
		req->route = HH_LONG;
	else {
		req->status = 404;
		return;
	}
	if (u.field_set & (1 << UF_QUERY)) {
		int st = parse_query(c->url + u.field_data[UF_QUERY].off,
				     u.field_data[UF_QUERY].len, &req->seed);
		if (st) {
			req->status = st;
			return;
		}
	}
	req->status = 200;
}

enum hh_next hh_conn_next(struct hh_conn *c, struct hh_request *req)
{
	if (c->closed)
		return HH_MORE;
	if (!c->complete && c->off < c->len) {
		size_t n = http_parser_execute(&c->parser, &settings, c->buf + c->off,
					       c->len - c->off);
		enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
		c->off += n;
		if (e != HPE_OK && e != HPE_PAUSED) {
			memset(req, 0, sizeof(*req));
			req->status = c->error ? c->error : e == HPE_HEADER_OVERFLOW ? 431 : 400;
			c->closed = true;
			return HH_REQUEST;
		}
	}
	if (c->complete) {
		c->complete = false;
		http_parser_pause(&c->parser, 0);
		build_request(c, req);
		if (req->status != 200) {
			req->keep_alive = false;
			c->closed = true;
		}
		if (c->off == c->len)
			c->off = c->len = 0;
		return HH_REQUEST;
	}
	/* Not paused: the parser took every byte (it keeps what it needs of a partial request). */
	c->off = c->len = 0;
	return HH_MORE;
}

uint64_t hh_work(uint64_t iters, uint64_t seed, void (*check)(void))
{
	uint64_t x = seed | 1;
	while (iters) {
		uint64_t k = iters < 1024 ? iters : 1024;
		for (uint64_t i = 0; i < k; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x)); /* as apps/common/spin.c: each step is kept */
		}
		iters -= k;
		if (check)
			check();
	}
	return x;
}

const char *hh_route_name(enum hh_route r)
{
	return r == HH_LONG ? "long" : "short";
}

size_t hh_format_ok(char *out, const struct hh_request *req, uint64_t iters, uint64_t x,
		    unsigned slices)
{
	char body[128];
	int blen = snprintf(body, sizeof(body), "%s iters=%llu seed=%llu x=%016llx\n",
			    hh_route_name(req->route), (unsigned long long)iters,
			    (unsigned long long)req->seed, (unsigned long long)x);
	const char *conn = !req->keep_alive ? "Connection: close\r\n"
			   : req->http10    ? "Connection: keep-alive\r\n"
					    : "";
	int n = snprintf(out, HH_RESP_MAX,
			 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			 "X-Jiffy-Slices: %u\r\n%s\r\n%s",
			 blen, slices, conn, req->head ? "" : body);
	return (size_t)n;
}

static const char *reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

size_t hh_format_error(char *out, int status)
{
	char body[64];
	int blen = snprintf(body, sizeof(body), "%d %s\n", status, reason(status));
	int n = snprintf(out, HH_RESP_MAX,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			 "%sConnection: close\r\n\r\n%s",
			 status, reason(status), blen,
			 status == 405 ? "Allow: GET, HEAD\r\n" : "", body);
	return (size_t)n;
}
