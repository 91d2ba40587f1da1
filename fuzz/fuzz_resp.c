/*
 * fuzz/fuzz_resp.c - libFuzzer target for jiffy-kv's RESP front end (apps/kv/resp.c): the input
 * is the byte stream of one TCP connection.
 *
 * Owns three checks per input:
 *  1. resp_parse() on the whole stream, as the connection loop calls it (drop what a command
 *     consumed, call again), with the contract of resp.h asserted on every result: consumed
 *     within the buffer, arguments inside the command's bytes, argc within RESP_MAX_ARGS.
 *  2. The same stream fed in chunks (sizes drawn from the input itself, 1 byte upwards) must
 *     give the same sequence of results and arguments: the parser remembers how far it got, and
 *     that memory must never change what it parses.
 *  3. resp_exec() on every parsed command, against the in-memory store (fake_kvstore.c), once
 *     on a server without a password and once on one with a password ("secret"), each with its
 *     connection's state kept across commands; reply buffers are accounted and capped at
 *     OUT_LIMIT bytes, so the over-limit paths run too, and the store fails every 7th call on
 *     inputs whose length is odd (RocksDB errors). "SCAN next ..." is run with the cursor of
 *     the connection's last SCAN reply in place of "next": cursors are numbers derived from the
 *     time, which no input could guess, and this way an input can walk the key space.
 * A violated check calls abort(), which libFuzzer reports as a crash.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_kvstore.h"
#include "resp.h"

#define MAX_CMDS 4096
/* Two reply buffers of 4 KB (a reply and the SCAN/INFO body built apart) fit; a reply that grows
 * past 8 KB (key 7's value, fake_kvstore.h) does not: the over-limit path. */
#define OUT_LIMIT (12 * 1024)

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz_resp: check failed: %s (line %d)\n", #cond,         \
				__LINE__);                                                      \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* One parse result, as compared between the whole and the chunked feeding. */
struct parsed {
	int rc;
	int argc;
	size_t at;       /* the command's offset in the stream */
	size_t consumed;
	size_t first_len; /* argl[0], argl[argc - 1] and a hash of all the argument bytes */
	size_t last_len;
	uint64_t hash;
};

static uint64_t args_hash(const struct resp_parser *p)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < p->argc; i++) {
		for (size_t k = 0; k < p->argl[i]; k++)
			h = (h ^ (unsigned char)p->argv[i][k]) * 1099511628211ull;
		h = (h ^ 0x100u) * 1099511628211ull; /* argument boundary */
	}
	return h;
}

/* resp.h's promises about one result of resp_parse() on cmd[0, len). */
static void check_result(const struct resp_parser *p, int rc, const char *cmd, size_t len,
			 size_t consumed)
{
	CHECK(rc == RESP_ERROR || rc == RESP_NEED_MORE || rc == RESP_COMMAND);
	if (rc != RESP_COMMAND) {
		CHECK(consumed == 0);
		if (rc == RESP_ERROR)
			CHECK(memchr(p->err, '\0', sizeof(p->err)) && p->err[0]);
		return;
	}
	CHECK(consumed > 0 && consumed <= len);
	CHECK(p->argc >= 0 && p->argc <= RESP_MAX_ARGS);
	for (int i = 0; i < p->argc; i++) {
		CHECK(p->argv[i] >= cmd && p->argv[i] <= cmd + consumed);
		CHECK(p->argl[i] <= consumed && (size_t)(p->argv[i] - cmd) + p->argl[i] <= consumed);
	}
}

static struct parsed record(const struct resp_parser *p, int rc, size_t at, size_t consumed)
{
	struct parsed r = {rc, 0, at, consumed, 0, 0, 0};
	if (rc == RESP_COMMAND) {
		r.argc = p->argc;
		r.first_len = p->argc ? p->argl[0] : 0;
		r.last_len = p->argc ? p->argl[p->argc - 1] : 0;
		r.hash = args_hash(p);
	}
	return r;
}

static int account(void *ctx, size_t from, size_t to)
{
	size_t *held = ctx;
	if (to > from && *held + (to - from) > OUT_LIMIT)
		return -1;
	*held = *held + to - from;
	return 0;
}

/* A server's state across one connection's commands. */
struct server {
	struct resp_env env;
	struct resp_stats stats;
	struct resp_client client;
	size_t held; /* accounted reply bytes */
	int closed;  /* QUIT, a protocol error or a refused reply ended the connection */
	char cursor[24]; /* the last SCAN reply's cursor, for "SCAN next" */
};

/*
 * The SCAN cursor table, made at an input's first SCAN and destroyed after the input: making and
 * destroying one (4096 slots) for every input would cost more than the rest of the run.
 */
static struct resp_cursors *cursors;

static void server_init(struct server *s, const char *password)
{
	memset(s, 0, sizeof(*s));
	s->env.kv = fake_kvstore();
	s->env.server = "jiffy-kv-fuzz";
	s->env.tcp_port = 6379;
	s->env.stats = &s->stats;
	s->env.password = password;
	s->env.password_len = password ? strlen(password) : 0;
	s->env.maxclients = 100;
	s->client.authed = password == NULL;
	strcpy(s->cursor, "0");
}

static int is_scan(const struct resp_parser *p)
{
	return p->argc > 0 && p->argl[0] == 4 && !strncasecmp(p->argv[0], "SCAN", 4);
}

/* @p, or for "SCAN next ..." a copy of it in @copy with the last reply's cursor as argument 1. */
static const struct resp_parser *substitute_cursor(struct server *s, const struct resp_parser *p,
						   struct resp_parser *copy)
{
	static const char *argv[RESP_MAX_ARGS];
	static size_t argl[RESP_MAX_ARGS];

	if (!is_scan(p) || p->argc < 2 || p->argl[1] != 4 || strncasecmp(p->argv[1], "next", 4))
		return p;
	memcpy(argv, p->argv, sizeof(*argv) * (size_t)p->argc);
	memcpy(argl, p->argl, sizeof(*argl) * (size_t)p->argc);
	argv[1] = s->cursor;
	argl[1] = strlen(s->cursor);
	*copy = *p;
	copy->argv = argv;
	copy->argl = argl;
	return copy;
}

/* Keep the cursor of a SCAN reply, "*2\r\n$<n>\r\n<cursor>\r\n...". */
static void remember_cursor(struct server *s, const struct resp_out *o)
{
	char *end;
	if (o->len < 8 || memcmp(o->buf, "*2\r\n$", 5))
		return;
	unsigned long n = strtoul(o->buf + 5, &end, 10);
	size_t at = (size_t)(end - o->buf) + 2;
	CHECK(n > 0 && n < sizeof(s->cursor) && at + n + 2 <= o->len);
	memcpy(s->cursor, o->buf + at, n);
	s->cursor[n] = '\0';
}

static void server_exec(struct server *s, const struct resp_parser *parsed)
{
	struct resp_parser copy;
	const struct resp_parser *p = substitute_cursor(s, parsed, &copy);
	struct resp_out o;

	if (s->closed)
		return;
	if (!s->env.cursors && is_scan(p)) {
		if (!cursors)
			CHECK((cursors = resp_cursors_create()) != NULL);
		s->env.cursors = cursors;
	}
	resp_out_init(&o);
	o.account = account;
	o.account_ctx = &s->held;
	if (resp_exec(&s->env, &s->client, p, &o) == RESP_CLOSE || o.oom)
		s->closed = 1;
	CHECK(o.len <= o.cap);
	CHECK(o.over_limit ? o.oom : 1);
	/* A reply starts with a RESP type byte and ends with CRLF (none for argc 0). */
	if (!o.oom && p->argc > 0) {
		CHECK(o.len >= 3 && strchr("+-:$*", o.buf[0]));
		CHECK(o.buf[o.len - 2] == '\r' && o.buf[o.len - 1] == '\n');
		if (is_scan(p))
			remember_cursor(s, &o);
	}
	resp_out_free(&o);
	CHECK(s->held == 0); /* every accounted byte given back */
}

/* Parse @data as one connection; fill @out (up to MAX_CMDS results); run commands if @servers. */
static size_t parse_whole(const uint8_t *data, size_t size, struct parsed *out,
			  struct server *servers, int nservers)
{
	struct resp_parser p;
	char *buf = malloc(size ? size : 1);
	size_t start = 0, n = 0;

	CHECK(buf && resp_parser_init(&p) == 0);
	memcpy(buf, data, size);
	while (n < MAX_CMDS) {
		size_t consumed;
		int rc = resp_parse(&p, buf + start, size - start, &consumed);
		check_result(&p, rc, buf + start, size - start, consumed);
		out[n++] = record(&p, rc, start, consumed);
		if (rc != RESP_COMMAND)
			break;
		for (int i = 0; i < nservers; i++)
			server_exec(&servers[i], &p);
		start += consumed;
	}
	resp_parser_free(&p);
	free(buf);
	return n;
}

/* The same, the bytes arriving in chunks of pseudo-random sizes seeded by the input. */
static size_t parse_chunked(const uint8_t *data, size_t size, struct parsed *out)
{
	struct resp_parser p;
	char *buf = malloc(size ? size : 1);
	size_t start = 0, avail = 0, n = 0;
	uint64_t seed = size * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < size && i < 16; i++)
		seed = (seed ^ data[i]) * 0x100000001b3ull;
	CHECK(buf && resp_parser_init(&p) == 0);
	memcpy(buf, data, size);
	while (n < MAX_CMDS) {
		size_t consumed;
		int rc = resp_parse(&p, buf + start, avail - start, &consumed);
		check_result(&p, rc, buf + start, avail - start, consumed);
		if (rc == RESP_NEED_MORE && avail < size) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size_t chunk = (seed >> 33) % 3 == 0 ? 1 + (seed >> 40) % 64 : 1;
			avail = avail + chunk < size ? avail + chunk : size;
			continue;
		}
		out[n++] = record(&p, rc, start, consumed);
		if (rc != RESP_COMMAND)
			break;
		start += consumed;
	}
	resp_parser_free(&p);
	free(buf);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct parsed whole[MAX_CMDS], chunked[MAX_CMDS];
	struct server servers[2];

	fake_kvstore_reset(40);
	server_init(&servers[0], NULL);
	server_init(&servers[1], "secret");
	if (size % 2)
		fake_kvstore_fail_every(7);
	size_t nw = parse_whole(data, size, whole, servers, 2);
	size_t nc = parse_chunked(data, size, chunked);
	/* Free all that this input allocated: libFuzzer runs a leak check whenever it did not. */
	resp_cursors_destroy(cursors);
	cursors = NULL;
	fake_kvstore_reset(0);

	CHECK(nw == nc);
	for (size_t i = 0; i < nw; i++) {
		CHECK(whole[i].rc == chunked[i].rc);
		CHECK(whole[i].at == chunked[i].at);
		CHECK(whole[i].consumed == chunked[i].consumed);
		CHECK(whole[i].argc == chunked[i].argc);
		CHECK(whole[i].first_len == chunked[i].first_len);
		CHECK(whole[i].last_len == chunked[i].last_len);
		CHECK(whole[i].hash == chunked[i].hash);
	}
	return 0;
}
