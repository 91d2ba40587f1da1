/*
 * tests/apps/test_resp.c - the RESP front end of jiffy-kv (apps/kv/resp.c), without a network:
 * the parser on split buffers (every command fed a byte at a time), pipelining, malformed input
 * with the error each must produce, inline quoting, the commands against a small real store
 * (SCAN cursors walking the whole key space, errors, arity), and a deterministic random-mutation
 * loop (fixed seed, ~100k inputs, fed in random chunks and executed) that must never crash or
 * break the parser's invariants; CI runs it under ASan+UBSan. Authentication (AUTH, HELLO,
 * -NOAUTH, -WRONGPASS) and the output-buffer accounting hook (a reply over the limit is refused
 * and every accounted byte given back).
 *
 * Registered as apps.resp by apps/kv/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jf_test.h"

#include "kvstore.h"
#include "resp.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* A multibulk encoding of @argc strings. */
static size_t mb(char *out, size_t cap, int argc, const char *const *argv, const size_t *lens)
{
	size_t n = (size_t)snprintf(out, cap, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++) {
		size_t l = lens ? lens[i] : strlen(argv[i]);
		n += (size_t)snprintf(out + n, cap - n, "$%zu\r\n", l);
		CHECK(n + l + 2 < cap);
		memcpy(out + n, argv[i], l);
		n += l;
		memcpy(out + n, "\r\n", 2);
		n += 2;
	}
	return n;
}

/* Parse exactly one complete command from a copy of @s (len @n). */
static int parse1(struct resp_parser *p, const char *s, size_t n, char *copy, size_t *used)
{
	memcpy(copy, s, n);
	return resp_parse(p, copy, n, used);
}

static void check_args(const struct resp_parser *p, int argc, const char *const *want,
		       const size_t *lens)
{
	CHECK_EQ(p->argc, argc);
	for (int i = 0; i < argc; i++) {
		size_t l = lens ? lens[i] : strlen(want[i]);
		CHECK_EQ(p->argl[i], l);
		CHECK(memcmp(p->argv[i], want[i], l) == 0);
	}
}

/* ---- parser ----------------------------------------------------------------------------- */

static void test_basic(void)
{
	struct resp_parser p;
	char buf[256];
	size_t used;
	CHECK_EQ(resp_parser_init(&p), 0);

	const char *ping = "*1\r\n$4\r\nPING\r\n";
	CHECK_EQ(parse1(&p, ping, strlen(ping), buf, &used), RESP_COMMAND);
	CHECK_EQ(used, strlen(ping));
	const char *w1[] = {"PING"};
	check_args(&p, 1, w1, NULL);

	/* a binary-safe bulk with CRLF and NUL inside */
	const char *a[] = {"SET", "k\r\n", "v\0\r\nx"};
	size_t al[] = {3, 3, 5};
	size_t n = mb(buf, sizeof(buf), 3, a, al);
	CHECK_EQ(resp_parse(&p, buf, n, &used), RESP_COMMAND);
	CHECK_EQ(used, n);
	check_args(&p, 3, a, al);

	/* empty commands: no arguments, consumed */
	CHECK_EQ(parse1(&p, "\r\n", 2, buf, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, 0);
	CHECK_EQ(used, 2);
	CHECK_EQ(parse1(&p, "*0\r\n", 4, buf, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, 0);
	CHECK_EQ(used, 4);
	CHECK_EQ(parse1(&p, "*-1\r\n", 5, buf, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, 0);
	CHECK_EQ(used, 5);
	/* an empty bulk string */
	CHECK_EQ(parse1(&p, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", 19, buf, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, 2);
	CHECK_EQ(p.argl[1], 0);

	/* incomplete */
	const char *parts[] = {"*", "*1", "*1\r", "*1\r\n", "*1\r\n$", "*1\r\n$4", "*1\r\n$4\r",
			       "*1\r\n$4\r\nPI", "*1\r\n$4\r\nPING", "*1\r\n$4\r\nPING\r", "PIN"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		struct resp_parser q;
		CHECK_EQ(resp_parser_init(&q), 0);
		CHECK_EQ(parse1(&q, parts[i], strlen(parts[i]), buf, &used), RESP_NEED_MORE);
		CHECK_EQ(used, 0);
		resp_parser_free(&q);
	}
	resp_parser_free(&p);
}

static void test_inline(void)
{
	struct resp_parser p;
	char buf[256];
	size_t used;
	CHECK_EQ(resp_parser_init(&p), 0);

	const char *s = "  set   \"a b\" 'c\\'d'  \"\\x41\\n\\\"\"\tx\r\n";
	CHECK_EQ(parse1(&p, s, strlen(s), buf, &used), RESP_COMMAND);
	CHECK_EQ(used, strlen(s));
	const char *w[] = {"set", "a b", "c'd", "A\n\"", "x"};
	check_args(&p, 5, w, NULL);

	/* telnet sends \r\n, netcat may send only \n */
	CHECK_EQ(parse1(&p, "PING\n", 5, buf, &used), RESP_COMMAND);
	const char *w2[] = {"PING"};
	check_args(&p, 1, w2, NULL);
	/* empty quoted argument */
	CHECK_EQ(parse1(&p, "ECHO \"\"\n", 8, buf, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, 2);
	CHECK_EQ(p.argl[1], 0);

	const char *bad[] = {"SET a \"b\r\n", "SET a 'b\r\n", "SET \"a\"b c\r\n", "GET 'x'y\n",
			     "ECHO \"abc\\\"\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(parse1(&p, bad[i], strlen(bad[i]), buf, &used), RESP_ERROR);
		CHECK_STR_CONTAINS(p.err, "unbalanced quotes");
	}
	resp_parser_free(&p);
}

static void test_malformed(void)
{
	static const struct {
		const char *in;
		const char *err;
	} cases[] = {
		{"*abc\r\n", "invalid multibulk length"},
		{"*-5\r\n", "invalid multibulk length"},
		{"*-\r\n", "invalid multibulk length"},
		{"*\r\n", "invalid multibulk length"},
		{"*1 \r\n", "invalid multibulk length"},
		{"*+1\r\n", "invalid multibulk length"},
		{"*1\n$4\r\nPING\r\n", "invalid multibulk length"},
		{"*1\rx", "invalid multibulk length"},
		{"*12345678901234567890\r\n", "invalid multibulk length"},
		{"*9223372036854775807\r\n", "invalid multibulk length"},
		{"*1\r\n$9223372036854775807\r\n", "invalid bulk length"},
		{"*1\r\n$-923372036854775807\r\n", "invalid bulk length"},
		{"*99999999\r\n", "too many arguments"},
		{"*1025\r\n", "too many arguments"},
		{"*1\r\n$-1\r\n", "invalid bulk length"},
		{"*1\r\n$abc\r\n", "invalid bulk length"},
		{"*1\r\n$4\n", "invalid bulk length"},
		{"*1\r\n$999999999\r\n", "invalid bulk length"},
		{"*1\r\n$524289\r\n", "invalid bulk length"},
		{"*1\r\n$1111111111111111111111111111", "invalid bulk length"},
		{"*1\r\n$4\r\nPINGxx", "expected CRLF"},
		{"*1\r\n$4\r\nPING\rX", "expected CRLF"},
		{"*1\r\nPING\r\n", "expected '$', got 'P'"},
		{"*2\r\n$3\r\nGET\r\n:1\r\n", "expected '$', got ':'"},
		{"*1\r\n\x01", "expected '$', got byte 0x01"},
	};
	struct resp_parser p;
	char buf[256];
	size_t used;
	CHECK_EQ(resp_parser_init(&p), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *want = cases[i].err;
		int rc = parse1(&p, cases[i].in, strlen(cases[i].in), buf, &used);
		if (rc != RESP_ERROR)
			fprintf(stderr, "case %zu: %d\n", i, rc);
		CHECK_EQ(rc, RESP_ERROR);
		CHECK_EQ(used, 0);
		CHECK(strncmp(p.err, "Protocol error: ", 16) == 0);
		CHECK_STR_CONTAINS(p.err, want);
	}
	/* "$-0" is a length of 0: an empty bulk whose CRLF has not arrived yet */
	CHECK_EQ(parse1(&p, "*1\r\n$-0\r\n", 9, buf, &used), RESP_NEED_MORE);
	CHECK_EQ(parse1(&p, "*1\r\n$-0\r\n\r\n", 11, buf, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, 1);
	CHECK_EQ(p.argl[0], 0);
	/* an inline line over the limit, with and without its newline */
	size_t big = RESP_MAX_INLINE + 10;
	char *line = malloc(big + 1);
	memset(line, 'a', big);
	CHECK_EQ(resp_parse(&p, line, big, &used), RESP_ERROR);
	CHECK_STR_CONTAINS(p.err, "too big inline request");
	line[big - 1] = '\n';
	CHECK_EQ(resp_parse(&p, line, big, &used), RESP_ERROR);
	CHECK_STR_CONTAINS(p.err, "too big inline request");
	/* but one just under it is fine */
	memset(line, 'a', big);
	line[RESP_MAX_INLINE - 1] = '\n';
	CHECK_EQ(resp_parse(&p, line, RESP_MAX_INLINE, &used), RESP_COMMAND);
	CHECK_EQ(used, RESP_MAX_INLINE);
	free(line);
	size_t n;
	/* a command over RESP_MAX_REQUEST is refused as soon as its size is known */
	{
		size_t cap = (size_t)RESP_MAX_REQUEST / RESP_MAX_BULK * 16 + 64, k = 0;
		char *big = malloc(RESP_MAX_REQUEST + cap);
		size_t n = (size_t)sprintf(big, "*%d\r\n", RESP_MAX_ARGS);
		int rc = RESP_NEED_MORE;
		while (rc == RESP_NEED_MORE && n < (size_t)RESP_MAX_REQUEST + 64) {
			n += (size_t)sprintf(big + n, "$%d\r\n", RESP_MAX_BULK);
			rc = resp_parse(&p, big, n, &used);
			if (rc == RESP_NEED_MORE) {
				memset(big + n, 'y', RESP_MAX_BULK);
				memcpy(big + n + RESP_MAX_BULK, "\r\n", 2);
				n += RESP_MAX_BULK + 2;
			}
			k++;
		}
		CHECK_EQ(rc, RESP_ERROR);
		CHECK_STR_CONTAINS(p.err, "request too big");
		CHECK_EQ(k, RESP_MAX_REQUEST / RESP_MAX_BULK);
		free(big);
	}
	/* the largest bulk and the most arguments are accepted */
	size_t bl = RESP_MAX_BULK;
	char *bulk = malloc(bl + 64);
	n = (size_t)sprintf(bulk, "*1\r\n$%zu\r\n", bl);
	memset(bulk + n, 'x', bl);
	memcpy(bulk + n + bl, "\r\n", 2);
	CHECK_EQ(resp_parse(&p, bulk, n + bl + 2, &used), RESP_COMMAND);
	CHECK_EQ(p.argl[0], bl);
	free(bulk);
	char *many = malloc(RESP_MAX_ARGS * 8 + 32);
	n = (size_t)sprintf(many, "*%d\r\n", RESP_MAX_ARGS);
	for (int i = 0; i < RESP_MAX_ARGS; i++)
		n += (size_t)sprintf(many + n, "$1\r\nx\r\n");
	CHECK_EQ(resp_parse(&p, many, n, &used), RESP_COMMAND);
	CHECK_EQ(p.argc, RESP_MAX_ARGS);
	CHECK_EQ(used, n);
	free(many);
	resp_parser_free(&p);
}

/* A pipelined stream of mixed commands, fed whole, then one byte at a time. */
static void test_pipeline_split(void)
{
	char stream[4096];
	size_t n = 0;
	const char *c1[] = {"SET", "key\r\n1", "value"};
	const char *c2[] = {"GET", "key\r\n1"};
	n += mb(stream + n, sizeof(stream) - n, 3, c1, NULL);
	n += mb(stream + n, sizeof(stream) - n, 2, c2, NULL);
	n += (size_t)sprintf(stream + n, "ECHO \"hi there\"\r\n");
	n += (size_t)sprintf(stream + n, "*0\r\n");
	n += (size_t)sprintf(stream + n, "PING\n");
	const char *c3[] = {"DEL", "a", "b", "c"};
	n += mb(stream + n, sizeof(stream) - n, 4, c3, NULL);
	const int want_argc[] = {3, 2, 2, 0, 1, 4};
	const int ncmds = 6;

	for (int mode = 0; mode < 3; mode++) {
		struct resp_parser p;
		CHECK_EQ(resp_parser_init(&p), 0);
		char buf[4096];
		size_t have = 0, fed = 0;
		int got = 0;
		uint64_t seed = 7;
		while (got < ncmds) {
			/* mode 0: everything at once; 1: a byte at a time; 2: random chunks */
			size_t step = mode == 0 ? n : mode == 1 ? 1 : 1 + jft_splitmix64(&seed) % 9;
			if (fed < n) {
				if (step > n - fed)
					step = n - fed;
				memcpy(buf + have, stream + fed, step);
				have += step;
				fed += step;
			}
			while (got < ncmds) {
				size_t used;
				int rc = resp_parse(&p, buf, have, &used);
				CHECK(rc != RESP_ERROR);
				if (rc == RESP_NEED_MORE) {
					CHECK(fed < n);
					break;
				}
				CHECK(got < ncmds);
				CHECK_EQ(p.argc, want_argc[got]);
				if (got == 0)
					check_args(&p, 3, c1, NULL);
				if (got == 1)
					check_args(&p, 2, c2, NULL);
				if (got == 2) {
					const char *w[] = {"ECHO", "hi there"};
					check_args(&p, 2, w, NULL);
				}
				if (got == 5)
					check_args(&p, 4, c3, NULL);
				got++;
				memmove(buf, buf + used, have - used);
				have -= used;
			}
		}
		CHECK_EQ(have, 0);
		CHECK_EQ(fed, n);
		resp_parser_free(&p);
	}
}

/* ---- commands --------------------------------------------------------------------------- */

static struct resp_env env;
static struct resp_stats stats;
static struct resp_client *client; /* the connection runv() speaks for (NULL: never authed) */

/* Run one command given as an argument vector; return the reply (static buffer, NUL-ended). */
static const char *runv(int argc, const char *const *argv, int *closed)
{
	static char reply[1 << 20];
	char *buf = malloc(1 << 16);
	struct resp_parser p;
	struct resp_out o;
	size_t used;
	CHECK_EQ(resp_parser_init(&p), 0);
	resp_out_init(&o);
	size_t n = mb(buf, 1 << 16, argc, argv, NULL);
	CHECK_EQ(resp_parse(&p, buf, n, &used), RESP_COMMAND);
	int rc = resp_exec(&env, client, &p, &o);
	if (closed)
		*closed = rc == RESP_CLOSE;
	CHECK(!o.oom);
	CHECK(o.len < sizeof(reply));
	memcpy(reply, o.buf, o.len);
	reply[o.len] = '\0';
	resp_out_free(&o);
	resp_parser_free(&p);
	free(buf);
	return reply;
}

#define RUN(...)                                                                              \
	({                                                                                    \
		const char *a_[] = {__VA_ARGS__};                                             \
		runv((int)(sizeof(a_) / sizeof(a_[0])), a_, NULL);                            \
	})

#define EXPECT(reply, want)                                                                   \
	do {                                                                                  \
		const char *r_ = (reply);                                                     \
		if (strcmp(r_, want) != 0) {                                                  \
			fprintf(stderr, "%s:%d: reply '%s', want '%s'\n", __FILE__, __LINE__, \
				r_, want);                                                    \
			jft_fail();                                                           \
		}                                                                             \
	} while (0)

/* Walk the whole key space with SCAN (COUNT @count, optional MATCH); return keys seen. */
static long scan_all(unsigned count, const char *pattern)
{
	char cursor[32] = "0", cnt[16];
	long total = 0;
	int calls = 0;
	snprintf(cnt, sizeof(cnt), "%u", count);
	do {
		const char *r = pattern ? RUN("SCAN", cursor, "COUNT", cnt, "MATCH", pattern)
					: RUN("SCAN", cursor, "COUNT", cnt);
		/* *2\r\n$<n>\r\n<cursor>\r\n*<m>\r\n... */
		CHECK(strncmp(r, "*2\r\n$", 5) == 0);
		const char *c = strstr(r + 4, "\r\n") + 2;
		size_t cl = strcspn(c, "\r");
		CHECK(cl < sizeof(cursor));
		memcpy(cursor, c, cl);
		cursor[cl] = '\0';
		const char *arr = c + cl + 2;
		CHECK(*arr == '*');
		long m = strtol(arr + 1, NULL, 10);
		CHECK(m >= 0 && m <= (long)count);
		total += m;
		CHECK(++calls < 100000);
	} while (strcmp(cursor, "0") != 0);
	return total;
}

static void test_commands(void)
{
	int closed = 0;
	EXPECT(RUN("PING"), "+PONG\r\n");
	EXPECT(RUN("ping", "hello"), "$5\r\nhello\r\n");
	EXPECT(RUN("PING", "a", "b"), "-ERR wrong number of arguments for 'ping' command\r\n");
	EXPECT(RUN("ECHO", "x y"), "$3\r\nx y\r\n");
	EXPECT(RUN("GET", "key000000000007"), "$8\r\nkey00000\r\n");
	EXPECT(RUN("GET", "nope"), "$-1\r\n");
	EXPECT(RUN("GET"), "-ERR wrong number of arguments for 'get' command\r\n");
	EXPECT(RUN("SET", "k1", "v\r\n1"), "+OK\r\n");
	EXPECT(RUN("GET", "k1"), "$4\r\nv\r\n1\r\n");
	EXPECT(RUN("DBSIZE"), ":1001\r\n");
	EXPECT(RUN("SET", "k1", "v2"), "+OK\r\n");
	EXPECT(RUN("DBSIZE"), ":1001\r\n");
	EXPECT(RUN("EXISTS", "k1", "k2", "k1"), ":2\r\n");
	EXPECT(RUN("DEL", "k1", "k2"), ":1\r\n");
	EXPECT(RUN("DEL", "k1"), ":0\r\n");
	EXPECT(RUN("DBSIZE"), ":1000\r\n");
	CHECK_STR_CONTAINS(RUN("SET", "a", "b", "EX", "10"), "-ERR SET options");
	char longkey[RESP_MAX_KEY + 2];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	CHECK_STR_CONTAINS(RUN("SET", longkey, "v"), "-ERR key too long");
	EXPECT(RUN("FLUSHALL"), "-ERR unknown command 'FLUSHALL'\r\n");
	EXPECT(RUN("foo\r\nbar", "x"), "-ERR unknown command 'foo??bar'\r\n");
	EXPECT(RUN("COMMAND", "DOCS"), "*0\r\n");
	EXPECT(RUN("COMMAND"), "*0\r\n");
	EXPECT(RUN("CONFIG", "GET", "save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
	EXPECT(RUN("CONFIG", "GET", "appendonly"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
	EXPECT(RUN("CONFIG", "GET", "maxmemory"), "*0\r\n");
	CHECK_STR_CONTAINS(RUN("CONFIG", "SET", "a", "b"), "-ERR CONFIG SET is not supported");
	EXPECT(RUN("SELECT", "0"), "+OK\r\n");
	CHECK_STR_CONTAINS(RUN("SELECT", "1"), "-ERR DB index is out of range");
	EXPECT(RUN("CLIENT", "SETNAME", "me"), "+OK\r\n");
	CHECK_STR_CONTAINS(RUN("CLIENT", "KILL", "x"), "-ERR unsupported CLIENT subcommand");
	const char *info = RUN("INFO");
	CHECK_STR_CONTAINS(info, "# Keyspace\r\ndb0:keys=1000,");
	CHECK_STR_CONTAINS(info, "server_name:jiffy-kv-test");
	CHECK_STR_CONTAINS(RUN("INFO", "keyspace"), "db0:keys=1000");

	/* SCAN: cursors walk every key exactly once, for any COUNT */
	CHECK_EQ(scan_all(10, NULL), 1000);
	CHECK_EQ(scan_all(7, NULL), 1000);
	CHECK_EQ(scan_all(1, NULL), 1000);
	CHECK_EQ(scan_all(5000, NULL), 1000);
	CHECK_EQ(scan_all(33, "key0000000001*"), 100); /* key000000000100..199 */
	CHECK_EQ(scan_all(33, "nothing*"), 0);
	EXPECT(RUN("SCAN", "12345"), "-ERR invalid cursor\r\n");
	EXPECT(RUN("SCAN", "abc"), "-ERR invalid cursor\r\n");
	EXPECT(RUN("SCAN", "-1"), "-ERR invalid cursor\r\n");
	EXPECT(RUN("SCAN", "0", "COUNT"), "-ERR syntax error\r\n");
	EXPECT(RUN("SCAN", "0", "COUNT", "0"), "-ERR syntax error\r\n");
	EXPECT(RUN("SCAN", "0", "COUNT", "x"), "-ERR value is not an integer or out of range\r\n");
	EXPECT(RUN("SCAN", "0", "FOO", "1"), "-ERR syntax error\r\n");
	const char *r = RUN("SCAN", "0", "TYPE", "hash");
	CHECK_STR_CONTAINS(r, "*0\r\n");
	r = RUN("SCAN", "0", "COUNT", "2");
	CHECK_STR_CONTAINS(r, "$15\r\nkey000000000000\r\n$15\r\nkey000000000001\r\n");

	runv(1, (const char *[]){"QUIT"}, &closed);
	CHECK(closed);
	CHECK(atomic_load(&stats.errors) > 0);
	CHECK(atomic_load(&stats.requests) > 30);
}

/* ---- random mutation -------------------------------------------------------------------- */

static void test_fuzz(void)
{
	static const char *corpus[] = {
		"*1\r\n$4\r\nPING\r\n",
		"*2\r\n$3\r\nGET\r\n$15\r\nkey000000000003\r\n",
		"*3\r\n$3\r\nSET\r\n$2\r\nfz\r\n$5\r\nhello\r\n",
		"*2\r\n$3\r\nDEL\r\n$2\r\nfz\r\n",
		"*4\r\n$4\r\nSCAN\r\n$1\r\n0\r\n$5\r\nCOUNT\r\n$1\r\n5\r\n",
		"*1\r\n$6\r\nDBSIZE\r\n",
		"*2\r\n$6\r\nEXISTS\r\n$2\r\nfz\r\n",
		"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
		"PING\r\n",
		"SET \"a b\" 'c d'\r\n",
		"ECHO \"\\x41\\n\"\n",
		"SCAN 0 MATCH key*1 COUNT 3\r\n",
		"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n",
		"*0\r\n",
		"\r\n",
	};
	const size_t ncorpus = sizeof(corpus) / sizeof(corpus[0]);
	const int inputs = 100000; /* ~1 s under ASan */
	uint64_t seed = 0x5eed;
	char *in = malloc(8192), *buf = malloc(8192);
	struct resp_parser p;
	struct resp_out o;
	long cmds = 0, errors = 0;
	CHECK_EQ(resp_parser_init(&p), 0);
	resp_out_init(&o);

	for (int it = 0; it < inputs; it++) {
		/* 1-4 corpus commands concatenated, then 1-8 mutations */
		size_t n = 0;
		int parts = 1 + (int)(jft_splitmix64(&seed) % 4);
		for (int k = 0; k < parts; k++) {
			const char *c = corpus[jft_splitmix64(&seed) % ncorpus];
			size_t l = strlen(c);
			memcpy(in + n, c, l);
			n += l;
		}
		int muts = 1 + (int)(jft_splitmix64(&seed) % 8);
		for (int m = 0; m < muts && n > 0; m++) {
			uint64_t r = jft_splitmix64(&seed);
			size_t at = (size_t)(r >> 8) % n;
			switch (r % 7) {
			case 0: /* flip a byte */
				in[at] = (char)(r >> 40);
				break;
			case 1: /* insert a byte, often a special one */
				if (n < 8000) {
					static const char special[] = "*$\r\n-0123456789\"'\\ x";
					memmove(in + at + 1, in + at, n - at);
					in[at] = special[(r >> 32) % (sizeof(special) - 1)];
					n++;
				}
				break;
			case 2: /* delete a byte */
				memmove(in + at, in + at + 1, n - at - 1);
				n--;
				break;
			case 3: /* truncate */
				n = at;
				break;
			case 4: /* a big or negative number after a '*' or '$' */
				if (n < 7900) {
					char num[24];
					static const char *nums[] = {"99999999", "-7", "524289", "1024",
								     "1025", "9223372036854775807", "0",
								     "18446744073709551616"};
					int l = snprintf(num, sizeof(num), "%s", nums[(r >> 32) % 8]);
					memmove(in + at + l, in + at, n - at);
					memcpy(in + at, num, (size_t)l);
					n += (size_t)l;
				}
				break;
			case 5: /* duplicate a chunk */
				if (n < 4000) {
					size_t len = (r >> 32) % (n - at) + 1;
					memcpy(in + n, in + at, len);
					n += len;
				}
				break;
			default: /* a NUL or a high byte */
				in[at] = (r >> 33) & 1 ? '\0' : (char)0xff;
				break;
			}
		}
		/* feed in random chunks, as reads from a socket would deliver it */
		size_t have = 0, fed = 0;
		for (;;) {
			if (fed < n) {
				size_t step = 1 + jft_splitmix64(&seed) % 64;
				if (step > n - fed)
					step = n - fed;
				memcpy(buf + have, in + fed, step);
				have += step;
				fed += step;
			}
			int stop = 0;
			for (;;) {
				size_t used = 99999;
				int rc = resp_parse(&p, buf, have, &used);
				if (rc == RESP_ERROR) {
					CHECK_EQ(used, 0);
					CHECK(strncmp(p.err, "Protocol error: ", 16) == 0);
					errors++;
					stop = 1; /* the server closes the connection */
					break;
				}
				if (rc == RESP_NEED_MORE) {
					CHECK_EQ(used, 0);
					break;
				}
				CHECK(used > 0 && used <= have);
				CHECK(p.argc >= 0 && p.argc <= RESP_MAX_ARGS);
				for (int a = 0; a < p.argc; a++) {
					CHECK(p.argv[a] >= buf && p.argv[a] + p.argl[a] <= buf + have);
					CHECK(p.argl[a] <= RESP_MAX_BULK);
				}
				o.len = 0;
				if (resp_exec(&env, NULL, &p, &o) == RESP_CLOSE)
					stop = 1;
				CHECK(!o.oom);
				if (p.argc > 0)
					CHECK(o.len > 0 && strchr("+-:$*", o.buf[0]));
				cmds++;
				memmove(buf, buf + used, have - used);
				have -= used;
				if (stop)
					break;
			}
			if (stop || fed == n)
				break;
		}
		/* a new connection: fresh parser state */
		resp_parser_free(&p);
		CHECK_EQ(resp_parser_init(&p), 0);
	}
	printf("fuzz: %d inputs, %ld commands run, %ld protocol errors\n", inputs, cmds, errors);
	CHECK(cmds > inputs / 2);
	CHECK(errors > inputs / 10);
	resp_out_free(&o);
	resp_parser_free(&p);
	free(in);
	free(buf);
}

/* AUTH, HELLO and -NOAUTH in Redis's words (docs/security.md). */
static void test_auth(void)
{
	struct resp_client c = {0};
	EXPECT(RUN("AUTH", "x"), "-ERR AUTH <password> called without any password configured for "
				 "the default user. Are you sure your configuration is correct?\r\n");
	env.password = "s3cret pass";
	env.password_len = strlen(env.password);
	client = &c;
	EXPECT(RUN("GET", "key000000000001"), "-NOAUTH Authentication required.\r\n");
	EXPECT(RUN("SET", "a", "b"), "-NOAUTH Authentication required.\r\n");
	EXPECT(RUN("SCAN", "0"), "-NOAUTH Authentication required.\r\n");
	EXPECT(RUN("INFO"), "-NOAUTH Authentication required.\r\n");
	EXPECT(RUN("PING"), "+PONG\r\n");
	EXPECT(RUN("HELLO", "2"),
	       "-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
	       "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
	       "select the RESP protocol version at the same time\r\n");
	EXPECT(RUN("HELLO", "3"),
	       "-NOPROTO sorry, this protocol version is not supported (jiffy-kv speaks RESP2)\r\n");
	EXPECT(RUN("HELLO", "9"), "-NOPROTO unsupported protocol version\r\n");
	uint64_t failures = stats.auth_failures;
	EXPECT(RUN("AUTH", "s3cret pas"),
	       "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	EXPECT(RUN("AUTH", "s3cret passs"),
	       "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	EXPECT(RUN("AUTH", "S3cret pass"),
	       "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	EXPECT(RUN("AUTH", "admin", "s3cret pass"),
	       "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	EXPECT(RUN("AUTH", "a", "b", "c"), "-ERR syntax error\r\n");
	CHECK_EQ(stats.auth_failures, failures + 4);
	CHECK_EQ(c.authed, 0);
	EXPECT(RUN("GET", "key000000000001"), "-NOAUTH Authentication required.\r\n");
	client = NULL; /* a connection without state never authenticates */
	EXPECT(RUN("AUTH", "s3cret pass"), "+OK\r\n");
	EXPECT(RUN("DBSIZE"), "-NOAUTH Authentication required.\r\n");
	client = &c;
	EXPECT(RUN("AUTH", "s3cret pass"), "+OK\r\n");
	CHECK_EQ(c.authed, 1);
	EXPECT(RUN("GET", "key000000000001"), "$8\r\nkey00000\r\n");
	struct resp_client c2 = {0};
	client = &c2;
	EXPECT(RUN("AUTH", "default", "s3cret pass"), "+OK\r\n");
	EXPECT(RUN("DBSIZE"), ":1000\r\n");
	struct resp_client c3 = {0};
	client = &c3;
	const char *hello = RUN("HELLO", "2", "AUTH", "default", "s3cret pass", "SETNAME", "x");
	CHECK(strncmp(hello, "*14\r\n$6\r\nserver\r\n", 17) == 0);
	CHECK(strstr(hello, "$5\r\nproto\r\n:2\r\n") != NULL);
	CHECK_EQ(c3.authed, 1);
	EXPECT(RUN("HELLO", "2", "AUTH", "default"), "-ERR Syntax error in HELLO option\r\n");
	env.password = NULL;
	env.password_len = 0;
	client = NULL;
}

/* A reply that does not fit the connection's buffer limit marks the output over_limit. */
static size_t budget_left;
static int budget(void *ctx, size_t from, size_t to)
{
	(void)ctx;
	if (to <= from) {
		budget_left += from - to;
		return 0;
	}
	if (to - from > budget_left)
		return -1;
	budget_left -= to - from;
	return 0;
}

static void test_out_limit(void)
{
	char *buf = malloc(1 << 16);
	struct resp_parser p;
	struct resp_out o;
	size_t used;
	const char *scan[] = {"SCAN", "0", "COUNT", "1000"};
	CHECK_EQ(resp_parser_init(&p), 0);
	size_t n = mb(buf, 1 << 16, 4, scan, NULL);
	CHECK_EQ(resp_parse(&p, buf, n, &used), RESP_COMMAND);

	budget_left = 64 * 1024; /* 1000 keys: ~21 KB, built apart then copied: fits */
	resp_out_init(&o);
	o.account = budget;
	resp_exec(&env, NULL, &p, &o);
	CHECK(!o.oom && !o.over_limit);
	CHECK(strncmp(o.buf, "*2\r\n", 4) == 0);
	resp_out_free(&o);
	CHECK_EQ(budget_left, 64 * 1024); /* every byte given back */

	budget_left = 16 * 1024; /* too small for the reply */
	resp_out_init(&o);
	o.account = budget;
	resp_exec(&env, NULL, &p, &o);
	CHECK(o.oom && o.over_limit);
	resp_out_free(&o);
	CHECK_EQ(budget_left, 16 * 1024);
	resp_parser_free(&p);
	free(buf);
}

int main(void)
{
	test_basic();
	test_inline();
	test_malformed();
	test_pipeline_split();

	struct kvstore_opts ko;
	char *err = NULL;
	kvstore_opts_default(&ko);
	ko.keys = 1000;
	ko.value_size = 8;
	ko.quiet = 1;
	struct kvstore *kv = kvstore_open(&ko, &err);
	if (!kv)
		fprintf(stderr, "kvstore_open: %s\n", err);
	CHECK(kv != NULL);
	env.kv = kv;
	env.server = "jiffy-kv-test";
	env.stats = &stats;
	env.cursors = resp_cursors_create();
	CHECK(env.cursors != NULL);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	env.start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;

	test_commands();
	test_auth();
	test_out_limit();
	test_fuzz();

	resp_cursors_destroy(env.cursors);
	kvstore_close(kv);
	printf("test_resp: ok\n");
	return 0;
}
