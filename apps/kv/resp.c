/*
 * apps/kv/resp.c - RESP2 parser, reply writer and the commands of jiffy-kv (see resp.h).
 *
 * Owns: protocol limits and error messages, inline-command splitting (double and single quotes,
 * backslash escapes, as redis-cli and telnet users expect), the SCAN cursor table, and the
 * mapping of commands onto kvstore calls. Nothing here knows about Jiffy: the server passes
 * hooks (resp_env.enter/leave) for its non-preemptible regions.
 *
 * SCAN cursors: redis-cli --scan reads the cursor with strtoull(), so a cursor must be a decimal
 * number; a RocksDB key does not fit in one. The server therefore remembers, for each of the last
 * RESP_CURSORS cursors it handed out, the key at which the next call starts (a copy); a cursor
 * older than that, or one never issued, gets "-ERR invalid cursor". Ids start at a value derived
 * from the start-up time, so cursors of an earlier run are (almost certainly) rejected, not
 * misread. "0" starts an iteration, and a reply cursor of "0" ends it.
 */
#define _GNU_SOURCE
#include "resp.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "kvstore.h"

/* ---------------------------------------------------------------------------------------- */
/* parser                                                                                   */

int resp_parser_init(struct resp_parser *p)
{
	memset(p, 0, sizeof(*p));
	p->nargs = -1;
	p->cap = 16;
	p->argv = malloc(sizeof(*p->argv) * (size_t)p->cap);
	p->argl = malloc(sizeof(*p->argl) * (size_t)p->cap);
	p->off = malloc(sizeof(*p->off) * (size_t)p->cap);
	if (!p->argv || !p->argl || !p->off) {
		resp_parser_free(p);
		return -1;
	}
	return 0;
}

void resp_parser_free(struct resp_parser *p)
{
	free(p->argv);
	free(p->argl);
	free(p->off);
	p->argv = NULL;
	p->argl = NULL;
	p->off = NULL;
	p->cap = 0;
}

static int reserve(struct resp_parser *p, long n)
{
	if (n <= p->cap)
		return 0;
	int cap = p->cap ? p->cap : 16;
	while (cap < n)
		cap *= 2;
	const char **a = realloc(p->argv, sizeof(*a) * (size_t)cap);
	if (a)
		p->argv = a;
	size_t *l = realloc(p->argl, sizeof(*l) * (size_t)cap);
	if (l)
		p->argl = l;
	size_t *o = realloc(p->off, sizeof(*o) * (size_t)cap);
	if (o)
		p->off = o;
	if (!a || !l || !o)
		return -1;
	p->cap = cap;
	return 0;
}

static void reset(struct resp_parser *p)
{
	p->pos = 0;
	p->nargs = -1;
	p->mode = 0;
}

static int fail(struct resp_parser *p, size_t *consumed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct resp_parser *p, size_t *consumed, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(p->err, sizeof(p->err), "Protocol error: ");
	va_start(ap, fmt);
	vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
	va_end(ap);
	reset(p);
	p->argc = 0;
	*consumed = 0;
	return RESP_ERROR;
}

/*
 * A "<number>\r\n" line starting at @start: optional '-', then 1..18 digits.
 * Return 1 (value in *v, *next after the CRLF), 0 (incomplete), -1 (malformed or too long).
 */
static int number_line(const char *buf, size_t len, size_t start, long long *v, size_t *next)
{
	const size_t maxlen = 19;
	size_t i = start;
	while (i < len && buf[i] != '\r') {
		char c = buf[i];
		if (!(c >= '0' && c <= '9') && !(c == '-' && i == start))
			return -1;
		if (i - start >= maxlen)
			return -1;
		i++;
	}
	if (i == len)
		return 0;
	if (i + 1 == len)
		return 0;
	if (buf[i + 1] != '\n')
		return -1;
	size_t n = i - start;
	const char *s = buf + start;
	int neg = 0;
	if (n && s[0] == '-') {
		neg = 1;
		s++;
		n--;
	}
	if (n == 0 || n > 18)
		return -1;
	long long x = 0;
	for (size_t k = 0; k < n; k++)
		x = x * 10 + (s[k] - '0'); /* at most 18 digits: no overflow */
	*v = neg ? -x : x;
	*next = i + 2;
	return 1;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Split the inline line buf[0, e) into arguments, unescaping in place. */
static int split_inline(struct resp_parser *p, char *buf, size_t e, size_t *consumed)
{
	size_t r = 0;
	p->argc = 0;
	for (;;) {
		while (r < e && is_space(buf[r]))
			r++;
		if (r >= e)
			break;
		size_t w = r, start = r;
		int inq = 0; /* 1 "...", 2 '...' */
		for (;;) {
			if (inq == 1) {
				if (r >= e)
					return fail(p, consumed, "unbalanced quotes in request");
				char c = buf[r];
				if (c == '\\' && r + 3 < e && buf[r + 1] == 'x' &&
				    hexval(buf[r + 2]) >= 0 && hexval(buf[r + 3]) >= 0) {
					buf[w++] = (char)(hexval(buf[r + 2]) * 16 + hexval(buf[r + 3]));
					r += 4;
				} else if (c == '\\' && r + 1 < e) {
					char d = buf[r + 1];
					switch (d) {
					case 'n': d = '\n'; break;
					case 'r': d = '\r'; break;
					case 't': d = '\t'; break;
					case 'b': d = '\b'; break;
					case 'a': d = '\a'; break;
					default: break;
					}
					buf[w++] = d;
					r += 2;
				} else if (c == '"') {
					if (r + 1 < e && !is_space(buf[r + 1]))
						return fail(p, consumed, "unbalanced quotes in request");
					r++;
					break;
				} else {
					buf[w++] = c;
					r++;
				}
			} else if (inq == 2) {
				if (r >= e)
					return fail(p, consumed, "unbalanced quotes in request");
				char c = buf[r];
				if (c == '\\' && r + 1 < e && buf[r + 1] == '\'') {
					buf[w++] = '\'';
					r += 2;
				} else if (c == '\'') {
					if (r + 1 < e && !is_space(buf[r + 1]))
						return fail(p, consumed, "unbalanced quotes in request");
					r++;
					break;
				} else {
					buf[w++] = c;
					r++;
				}
			} else {
				if (r >= e || is_space(buf[r]))
					break;
				char c = buf[r];
				if (c == '"') {
					inq = 1;
					r++;
				} else if (c == '\'') {
					inq = 2;
					r++;
				} else {
					buf[w++] = c;
					r++;
				}
			}
		}
		if (p->argc >= RESP_MAX_ARGS)
			return fail(p, consumed, "too many arguments (max %d)", RESP_MAX_ARGS);
		if (reserve(p, p->argc + 1) != 0)
			return fail(p, consumed, "out of memory");
		p->off[p->argc] = start;
		p->argl[p->argc] = w - start;
		p->argc++;
	}
	return RESP_COMMAND;
}

int resp_parse(struct resp_parser *p, char *buf, size_t len, size_t *consumed)
{
	*consumed = 0;
	if (p->pos > len) /* the caller lost bytes: start over */
		reset(p);
	if (p->mode == 0) {
		if (len == 0)
			return RESP_NEED_MORE;
		p->mode = buf[0] == '*' ? 1 : 2;
		p->pos = p->mode == 1 ? 1 : 0;
		p->nargs = -1;
		p->argc = 0;
	}
	if (p->mode == 2) {
		const char *nl = p->pos < len ? memchr(buf + p->pos, '\n', len - p->pos) : NULL;
		if (!nl) {
			p->pos = len;
			if (len > RESP_MAX_INLINE)
				return fail(p, consumed, "too big inline request");
			return RESP_NEED_MORE;
		}
		size_t i = (size_t)(nl - buf);
		if (i > RESP_MAX_INLINE)
			return fail(p, consumed, "too big inline request");
		size_t e = i;
		if (e > 0 && buf[e - 1] == '\r')
			e--;
		int rc = split_inline(p, buf, e, consumed);
		if (rc != RESP_COMMAND)
			return rc;
		*consumed = i + 1;
		goto done;
	}
	/* multibulk */
	if (p->nargs < 0) {
		long long v;
		size_t next;
		int r = number_line(buf, len, 1, &v, &next);
		if (r == 0)
			return RESP_NEED_MORE;
		if (r < 0 || v < -1)
			return fail(p, consumed, "invalid multibulk length");
		if (v > RESP_MAX_ARGS)
			return fail(p, consumed, "too many arguments (%lld, max %d)", v, RESP_MAX_ARGS);
		if (v <= 0) { /* "*0" and "*-1": an empty command, skipped like Redis does */
			p->argc = 0;
			*consumed = next;
			reset(p);
			return RESP_COMMAND;
		}
		if (reserve(p, (long)v) != 0)
			return fail(p, consumed, "out of memory");
		p->nargs = (long)v;
		p->pos = next;
		p->argc = 0;
	}
	while (p->argc < p->nargs) {
		size_t pos = p->pos;
		if (pos >= len)
			return RESP_NEED_MORE;
		if (buf[pos] != '$') {
			unsigned char c = (unsigned char)buf[pos];
			if (isprint(c))
				return fail(p, consumed, "expected '$', got '%c'", c);
			return fail(p, consumed, "expected '$', got byte 0x%02x", c);
		}
		long long v;
		size_t next;
		int r = number_line(buf, len, pos + 1, &v, &next);
		if (r == 0)
			return RESP_NEED_MORE;
		if (r < 0 || v < 0)
			return fail(p, consumed, "invalid bulk length");
		if (v > RESP_MAX_BULK)
			return fail(p, consumed, "invalid bulk length (%lld bytes, max %d)", v,
				    RESP_MAX_BULK);
		size_t n = (size_t)v;
		if (next + n + 2 > RESP_MAX_REQUEST)
			return fail(p, consumed, "request too big (max %d bytes)", RESP_MAX_REQUEST);
		if (len - next < n + 2)
			return RESP_NEED_MORE;
		if (buf[next + n] != '\r' || buf[next + n + 1] != '\n')
			return fail(p, consumed, "expected CRLF after the bulk string");
		p->off[p->argc] = next;
		p->argl[p->argc] = n;
		p->argc++;
		p->pos = next + n + 2;
	}
	*consumed = p->pos;
done:
	for (int i = 0; i < p->argc; i++)
		p->argv[i] = buf + p->off[i];
	reset(p);
	return RESP_COMMAND;
}

/* ---------------------------------------------------------------------------------------- */
/* reply writer                                                                             */

void resp_out_init(struct resp_out *o)
{
	memset(o, 0, sizeof(*o));
}

void resp_out_init_like(struct resp_out *o, const struct resp_out *like)
{
	memset(o, 0, sizeof(*o));
	o->account = like->account;
	o->account_ctx = like->account_ctx;
}

void resp_out_free(struct resp_out *o)
{
	if (o->account && o->cap)
		o->account(o->account_ctx, o->cap, 0);
	free(o->buf);
	int (*account)(void *, size_t, size_t) = o->account;
	void *ctx = o->account_ctx;
	memset(o, 0, sizeof(*o));
	o->account = account;
	o->account_ctx = ctx;
}

void resp_add_raw(struct resp_out *o, const void *p, size_t n)
{
	if (o->oom || n == 0)
		return;
	if (o->cap - o->len < n) {
		size_t cap = o->cap ? o->cap : 4096;
		while (cap - o->len < n)
			cap *= 2;
		if (o->account && o->account(o->account_ctx, o->cap, cap) != 0) {
			o->oom = 1;
			o->over_limit = 1;
			return;
		}
		char *b = realloc(o->buf, cap);
		if (!b) {
			if (o->account)
				o->account(o->account_ctx, cap, o->cap);
			o->oom = 1;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void add_line(struct resp_out *o, char type, const char *s, size_t n)
{
	resp_add_raw(o, &type, 1);
	resp_add_raw(o, s, n);
	resp_add_raw(o, "\r\n", 2);
}

void resp_add_simple(struct resp_out *o, const char *s)
{
	add_line(o, '+', s, strlen(s));
}

void resp_add_error(struct resp_out *o, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	for (int i = 0; i < n; i++)
		if (msg[i] == '\r' || msg[i] == '\n')
			msg[i] = ' ';
	add_line(o, '-', msg, (size_t)n);
}

static void add_num(struct resp_out *o, char type, long long v)
{
	char s[32];
	int n = snprintf(s, sizeof(s), "%lld", v);
	add_line(o, type, s, (size_t)n);
}

void resp_add_int(struct resp_out *o, long long v)
{
	add_num(o, ':', v);
}

void resp_add_bulk(struct resp_out *o, const void *p, size_t n)
{
	add_num(o, '$', (long long)n);
	resp_add_raw(o, p, n);
	resp_add_raw(o, "\r\n", 2);
}

void resp_add_nil(struct resp_out *o)
{
	resp_add_raw(o, "$-1\r\n", 5);
}

void resp_add_array(struct resp_out *o, long n)
{
	add_num(o, '*', n);
}

/* ---------------------------------------------------------------------------------------- */
/* SCAN cursors                                                                             */

struct cursor_slot {
	uint64_t id;
	char *key;
	size_t klen;
};

struct resp_cursors {
	pthread_mutex_t lock;
	uint64_t next;
	struct cursor_slot slot[RESP_CURSORS];
};

struct resp_cursors *resp_cursors_create(void)
{
	struct resp_cursors *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	/* Distinct across runs; far below 2^64 so ids never wrap to 0. */
	c->next = ((uint64_t)time(NULL) & 0xffffffffu) << 16 | 1u;
	return c;
}

void resp_cursors_destroy(struct resp_cursors *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < RESP_CURSORS; i++)
		free(c->slot[i].key);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void crit_enter(const struct resp_env *env)
{
	if (env->enter)
		env->enter();
}

static void crit_leave(const struct resp_env *env)
{
	if (env->leave)
		env->leave();
}

/* Remember @key; return its cursor (0 if out of memory: the caller reports an error). */
static uint64_t cursor_save(struct resp_env *env, const char *key, size_t klen)
{
	char *copy = malloc(klen ? klen : 1);
	if (!copy)
		return 0;
	memcpy(copy, key, klen);
	struct resp_cursors *c = env->cursors;
	char *old;
	crit_enter(env);
	pthread_mutex_lock(&c->lock);
	uint64_t id = c->next++;
	struct cursor_slot *s = &c->slot[id % RESP_CURSORS];
	old = s->key;
	s->id = id;
	s->key = copy;
	s->klen = klen;
	pthread_mutex_unlock(&c->lock);
	crit_leave(env);
	free(old);
	return id;
}

/* The key cursor @id starts at (malloc'd into *key), or -1 if unknown. */
static int cursor_load(struct resp_env *env, uint64_t id, char **key, size_t *klen)
{
	struct resp_cursors *c = env->cursors;
	int rc = -1;
	*key = NULL;
	crit_enter(env);
	pthread_mutex_lock(&c->lock);
	struct cursor_slot *s = &c->slot[id % RESP_CURSORS];
	if (s->id == id && s->key) {
		*key = malloc(s->klen ? s->klen : 1);
		if (*key) {
			memcpy(*key, s->key, s->klen);
			*klen = s->klen;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&c->lock);
	crit_leave(env);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* commands                                                                                 */

static int is(const struct resp_parser *p, int i, const char *name)
{
	size_t n = strlen(name);
	return p->argl[i] == n && strncasecmp(p->argv[i], name, n) == 0;
}

/* A printable, bounded copy of argument @i for error messages. */
static const char *shown(const struct resp_parser *p, int i, char *buf, size_t size)
{
	size_t n = p->argl[i] < size - 1 ? p->argl[i] : size - 1;
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)p->argv[i][k];
		buf[k] = isprint(c) && c != '\'' ? (char)c : '?';
	}
	buf[n] = '\0';
	return buf;
}

/* A non-negative decimal integer argument (strict). Return 0 or -1. */
static int arg_u64(const struct resp_parser *p, int i, uint64_t *v)
{
	size_t n = p->argl[i];
	const char *s = p->argv[i];
	if (n == 0 || n > 20)
		return -1;
	uint64_t x = 0;
	for (size_t k = 0; k < n; k++) {
		if (s[k] < '0' || s[k] > '9')
			return -1;
		unsigned d = (unsigned)(s[k] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void db_error(struct resp_env *env, struct resp_out *o, char *err)
{
	resp_add_error(o, "ERR storage error: %s", err ? err : "unknown");
	free(err);
	if (env->stats)
		count(&env->stats->errors);
}

static void get_value(void *ctx, const char *val, size_t vlen)
{
	resp_add_bulk(ctx, val, vlen);
}

struct scan_ctx {
	uint64_t want;    /* COUNT */
	uint64_t seen;    /* keys visited */
	uint64_t matched; /* keys in the reply */
	const char *pattern;
	int all_types;    /* TYPE string (or none): 1; another type: 0 */
	struct resp_out body;
	char *next;       /* the key after the last one visited */
	size_t next_len;
	int oom;
};

static int match(const char *pattern, const char *key, size_t klen)
{
	if (!pattern || strcmp(pattern, "*") == 0)
		return 1;
	if (memchr(key, '\0', klen))
		return 0;
	char small[256];
	char *k = klen < sizeof(small) ? small : malloc(klen + 1);
	if (!k)
		return 0;
	memcpy(k, key, klen);
	k[klen] = '\0';
	int m = fnmatch(pattern, k, 0) == 0;
	if (k != small)
		free(k);
	return m;
}

static int scan_visit(void *ctx, const char *key, size_t klen, const char *val, size_t vlen)
{
	struct scan_ctx *s = ctx;
	(void)val, (void)vlen;
	if (s->seen == s->want) { /* one past COUNT: where the next call starts */
		s->next = malloc(klen ? klen : 1);
		if (!s->next) {
			s->oom = 1;
			return 0;
		}
		memcpy(s->next, key, klen);
		s->next_len = klen;
		return 0;
	}
	s->seen++;
	if (s->all_types && match(s->pattern, key, klen)) {
		resp_add_bulk(&s->body, key, klen);
		s->matched++;
	}
	return 1;
}

static void cmd_scan(struct resp_env *env, const struct resp_parser *p, struct resp_out *o)
{
	uint64_t cursor, want = 10;
	struct scan_ctx s;
	char *start = NULL, *pattern = NULL, *err = NULL;
	size_t start_len = 0;

	memset(&s, 0, sizeof(s));
	s.all_types = 1;
	if (arg_u64(p, 1, &cursor) != 0) {
		resp_add_error(o, "ERR invalid cursor");
		goto out_err;
	}
	for (int i = 2; i < p->argc; i += 2) {
		if (i + 1 >= p->argc) {
			resp_add_error(o, "ERR syntax error");
			goto out_err;
		}
		if (is(p, i, "COUNT")) {
			if (arg_u64(p, i + 1, &want) != 0 || want > INT64_MAX) {
				resp_add_error(o, "ERR value is not an integer or out of range");
				goto out_err;
			}
			if (want < 1) {
				resp_add_error(o, "ERR syntax error");
				goto out_err;
			}
		} else if (is(p, i, "MATCH")) {
			free(pattern);
			pattern = strndup(p->argv[i + 1], p->argl[i + 1]);
			if (!pattern) {
				resp_add_error(o, "ERR out of memory");
				goto out_err;
			}
		} else if (is(p, i, "TYPE")) {
			s.all_types = is(p, i + 1, "string"); /* every value here is a string */
		} else {
			resp_add_error(o, "ERR syntax error");
			goto out_err;
		}
	}
	if (want > RESP_SCAN_MAX_COUNT)
		want = RESP_SCAN_MAX_COUNT;
	if (cursor != 0 && cursor_load(env, cursor, &start, &start_len) != 0) {
		resp_add_error(o, "ERR invalid cursor");
		goto out_err;
	}
	s.want = want;
	s.pattern = pattern;
	resp_out_init_like(&s.body, o);
	int64_t n = kvstore_scan(env->kv, start, start_len, want + 1, scan_visit, &s, &err);
	if (n < 0) {
		db_error(env, o, err);
		goto out;
	}
	if (s.body.over_limit) {
		o->oom = o->over_limit = 1; /* the reply does not fit the client's buffer limit */
		goto out_err;
	}
	if (s.oom || s.body.oom) {
		resp_add_error(o, "ERR out of memory");
		goto out_err;
	}
	uint64_t next = 0;
	if (s.next) {
		next = cursor_save(env, s.next, s.next_len);
		if (next == 0) {
			resp_add_error(o, "ERR out of memory");
			goto out_err;
		}
	}
	char num[32];
	int nl = snprintf(num, sizeof(num), "%llu", (unsigned long long)next);
	resp_add_array(o, 2);
	resp_add_bulk(o, num, (size_t)nl);
	resp_add_array(o, (long)s.matched);
	resp_add_raw(o, s.body.buf, s.body.len);
	goto out;
out_err:
	if (env->stats)
		count(&env->stats->errors);
out:
	resp_out_free(&s.body);
	free(s.next);
	free(start);
	free(pattern);
}

static void info_line(struct resp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info_line(struct resp_out *o, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	resp_add_raw(o, line, (size_t)n);
	resp_add_raw(o, "\r\n", 2);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cmd_info(struct resp_env *env, struct resp_out *o)
{
	struct resp_out b;
	struct resp_stats *st = env->stats;
	resp_out_init_like(&b, o);
	info_line(&b, "# Server");
	info_line(&b, "redis_version:7.0.0");
	info_line(&b, "server_name:%s", env->server ? env->server : "jiffy-kv");
	info_line(&b, "storage:rocksdb %s", env->kv ? kvstore_path(env->kv) : "-");
	info_line(&b, "process_id:%d", (int)getpid());
	info_line(&b, "tcp_port:%d", env->tcp_port);
	info_line(&b, "uptime_in_seconds:%llu",
		  (unsigned long long)((mono_ns() - env->start_ns) / 1000000000u));
	if (st) {
		info_line(&b, "%s", "");
		info_line(&b, "# Clients");
		info_line(&b, "connected_clients:%llu", (unsigned long long)atomic_load(&st->connected));
		if (env->maxclients)
			info_line(&b, "maxclients:%d", env->maxclients);
		info_line(&b, "clients_buffer_bytes:%llu",
			  (unsigned long long)atomic_load(&st->buffer_bytes));
		info_line(&b, "%s", "");
		info_line(&b, "# Stats");
		info_line(&b, "total_connections_received:%llu",
			  (unsigned long long)atomic_load(&st->connections));
		info_line(&b, "total_commands_processed:%llu",
			  (unsigned long long)atomic_load(&st->requests));
		info_line(&b, "total_replies:%llu", (unsigned long long)atomic_load(&st->replies));
		info_line(&b, "total_error_replies:%llu", (unsigned long long)atomic_load(&st->errors));
		info_line(&b, "protocol_error_disconnects:%llu",
			  (unsigned long long)atomic_load(&st->dropped));
		info_line(&b, "rejected_connections:%llu",
			  (unsigned long long)atomic_load(&st->rejected));
		info_line(&b, "timeout_disconnects:%llu",
			  (unsigned long long)atomic_load(&st->timeouts));
		info_line(&b, "buffer_limit_disconnects:%llu",
			  (unsigned long long)atomic_load(&st->over_memory));
		info_line(&b, "auth_failures:%llu",
			  (unsigned long long)atomic_load(&st->auth_failures));
		info_line(&b, "noauth_refusals:%llu", (unsigned long long)atomic_load(&st->noauth));
	}
	if (env->info)
		env->info(env->info_ctx, &b);
	info_line(&b, "%s", "");
	info_line(&b, "# Keyspace");
	info_line(&b, "db0:keys=%llu,expires=0,avg_ttl=0",
		  (unsigned long long)(env->kv ? kvstore_dbsize(env->kv) : 0));
	if (b.over_limit)
		o->oom = o->over_limit = 1;
	else if (b.oom)
		resp_add_error(o, "ERR out of memory");
	else
		resp_add_bulk(o, b.buf, b.len);
	resp_out_free(&b);
}

static void cmd_config(struct resp_env *env, const struct resp_parser *p, struct resp_out *o)
{
	if (!is(p, 1, "GET")) {
		resp_add_error(o, "ERR CONFIG %s is not supported by jiffy-kv (only CONFIG GET)",
			       is(p, 1, "SET") ? "SET" : "subcommand");
		return;
	}
	if (p->argc < 3) {
		resp_add_error(o, "ERR wrong number of arguments for 'config|get' command");
		return;
	}
	/* What clients ask for at start-up (redis-benchmark: save, appendonly). */
	char maxclients[16];
	snprintf(maxclients, sizeof(maxclients), "%d", env->maxclients);
	const char *const known[][2] = {
		{"save", ""}, {"appendonly", "no"}, {"databases", "1"}, {"maxclients", maxclients},
	};
	struct resp_out b;
	long n = 0;
	resp_out_init_like(&b, o);
	for (int i = 2; i < p->argc; i++)
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (is(p, i, known[k][0])) {
				resp_add_bulk(&b, known[k][0], strlen(known[k][0]));
				resp_add_bulk(&b, known[k][1], strlen(known[k][1]));
				n += 2;
			}
	resp_add_array(o, n);
	resp_add_raw(o, b.buf, b.len);
	resp_out_free(&b);
}

struct command {
	const char *name;
	int arity; /* > 0: exactly; < 0: at least -arity */
};

static const struct command commands[] = {
	{"PING", -1},  {"ECHO", 2},    {"GET", 2},     {"SET", -3},    {"DEL", -2},
	{"EXISTS", -2}, {"SCAN", -2},  {"DBSIZE", 1},  {"INFO", -1},   {"COMMAND", -1},
	{"CONFIG", -2}, {"QUIT", -1},  {"SELECT", 2},  {"CLIENT", -2}, {"AUTH", -2},
	{"HELLO", -1},
};

/*
 * Does @a (@n bytes) equal the password? In time that depends on @n only, not on where the
 * bytes differ (a wrong length still walks @n bytes, against the password repeated).
 */
static int password_ok(const struct resp_env *env, const char *a, size_t n)
{
	size_t m = env->password_len ? env->password_len : 1;
	unsigned char diff = n != env->password_len;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(a[i] ^ env->password[i % m]);
	return diff == 0;
}

/*
 * Check the credentials in arguments @u (the user, -1: none) and @pw of @p. Redis has one
 * user unless ACLs are configured: "default". Return 1 (authenticated), or 0 after the error.
 */
static int authenticate(struct resp_env *env, struct resp_client *c, const struct resp_parser *p,
			int u, int pw, struct resp_out *o)
{
	if (!env->password) {
		resp_add_error(o, "ERR AUTH <password> called without any password configured for "
				  "the default user. Are you sure your configuration is correct?");
		return 0;
	}
	int ok = password_ok(env, p->argv[pw], p->argl[pw]);
	if (u >= 0 && !is(p, u, "default"))
		ok = 0;
	if (!ok) {
		if (env->stats)
			count(&env->stats->auth_failures);
		resp_add_error(o, "WRONGPASS invalid username-password pair or user is disabled.");
		return 0;
	}
	if (c)
		c->authed = 1;
	return 1;
}

/* HELLO [protover [AUTH username password] [SETNAME clientname]]: RESP2 only. */
static int cmd_hello(struct resp_env *env, struct resp_client *c, const struct resp_parser *p,
		     struct resp_out *o)
{
	uint64_t proto = 2;
	int auth_at = -1;
	if (p->argc >= 2 && (arg_u64(p, 1, &proto) != 0 || proto < 2 || proto > 3)) {
		resp_add_error(o, "NOPROTO unsupported protocol version");
		return -1;
	}
	for (int i = 2; i < p->argc; i++) {
		if (is(p, i, "AUTH") && i + 2 < p->argc) {
			auth_at = i + 1;
			i += 2;
		} else if (is(p, i, "SETNAME") && i + 1 < p->argc) {
			i += 1;
		} else {
			resp_add_error(o, "ERR Syntax error in HELLO option");
			return -1;
		}
	}
	if (proto == 3) {
		resp_add_error(o, "NOPROTO sorry, this protocol version is not supported "
				  "(jiffy-kv speaks RESP2)");
		return -1;
	}
	if (auth_at >= 0 && !authenticate(env, c, p, auth_at, auth_at + 1, o))
		return -1;
	if (env->password && !(c && c->authed)) {
		if (env->stats)
			count(&env->stats->noauth);
		resp_add_error(o, "NOAUTH HELLO must be called with the client already authenticated, "
				  "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
				  "authenticate the client and select the RESP protocol version at the "
				  "same time");
		return -1;
	}
	const char *server = env->server ? env->server : "jiffy-kv";
	resp_add_array(o, 14);
	resp_add_bulk(o, "server", 6);
	resp_add_bulk(o, server, strlen(server));
	resp_add_bulk(o, "version", 7);
	resp_add_bulk(o, "7.0.0", 5);
	resp_add_bulk(o, "proto", 5);
	resp_add_int(o, 2);
	resp_add_bulk(o, "id", 2);
	resp_add_int(o, 0);
	resp_add_bulk(o, "mode", 4);
	resp_add_bulk(o, "standalone", 10);
	resp_add_bulk(o, "role", 4);
	resp_add_bulk(o, "master", 6);
	resp_add_bulk(o, "modules", 7);
	resp_add_array(o, 0);
	return 0;
}

int resp_exec(struct resp_env *env, struct resp_client *cl, const struct resp_parser *p,
	      struct resp_out *o)
{
	char shown_buf[64];
	char *err = NULL;
	const struct command *c = NULL;
	size_t before = o->len;
	int rc = RESP_KEEP_OPEN;

	if (p->argc == 0)
		return RESP_KEEP_OPEN; /* empty line or "*0": no reply */
	if (env->stats)
		count(&env->stats->requests);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (is(p, 0, commands[i].name)) {
			c = &commands[i];
			break;
		}
	if (!c) {
		resp_add_error(o, "ERR unknown command '%s'", shown(p, 0, shown_buf, sizeof(shown_buf)));
		goto error;
	}
	if ((c->arity > 0 && p->argc != c->arity) || (c->arity < 0 && p->argc < -c->arity) ||
	    (is(p, 0, "PING") && p->argc > 2)) {
		char lower[16];
		size_t n = strlen(c->name);
		for (size_t k = 0; k <= n; k++)
			lower[k] = (char)tolower((unsigned char)c->name[k]);
		resp_add_error(o, "ERR wrong number of arguments for '%s' command", lower);
		goto error;
	}
	if (env->password && !(cl && cl->authed) && !is(p, 0, "AUTH") && !is(p, 0, "HELLO") &&
	    !is(p, 0, "PING") && !is(p, 0, "QUIT")) {
		if (env->stats)
			count(&env->stats->noauth);
		resp_add_error(o, "NOAUTH Authentication required.");
		goto error;
	}

	if (is(p, 0, "PING")) {
		if (p->argc == 2)
			resp_add_bulk(o, p->argv[1], p->argl[1]);
		else
			resp_add_simple(o, "PONG");
	} else if (is(p, 0, "ECHO")) {
		resp_add_bulk(o, p->argv[1], p->argl[1]);
	} else if (is(p, 0, "GET")) {
		int r = kvstore_get(env->kv, p->argv[1], p->argl[1], get_value, o, &err);
		if (r < 0) {
			db_error(env, o, err);
			goto done;
		}
		if (r == 0)
			resp_add_nil(o);
	} else if (is(p, 0, "SET")) {
		if (p->argc > 3) {
			resp_add_error(o, "ERR SET options (EX, PX, NX, XX, KEEPTTL, GET...) are not "
					  "supported by jiffy-kv");
			goto error;
		}
		if (p->argl[1] > RESP_MAX_KEY) {
			resp_add_error(o, "ERR key too long (%zu bytes, max %d)", p->argl[1],
				       RESP_MAX_KEY);
			goto error;
		}
		if (kvstore_put(env->kv, p->argv[1], p->argl[1], p->argv[2], p->argl[2], &err) != 0) {
			db_error(env, o, err);
			goto done;
		}
		resp_add_simple(o, "OK");
	} else if (is(p, 0, "DEL") || is(p, 0, "EXISTS")) {
		int del = is(p, 0, "DEL");
		long long n = 0;
		for (int i = 1; i < p->argc; i++) {
			int r = del ? kvstore_del(env->kv, p->argv[i], p->argl[i], &err)
				    : kvstore_get(env->kv, p->argv[i], p->argl[i], NULL, NULL, &err);
			if (r < 0) {
				db_error(env, o, err);
				goto done;
			}
			n += r;
		}
		resp_add_int(o, n);
	} else if (is(p, 0, "SCAN")) {
		cmd_scan(env, p, o);
	} else if (is(p, 0, "DBSIZE")) {
		resp_add_int(o, (long long)kvstore_dbsize(env->kv));
	} else if (is(p, 0, "INFO")) {
		cmd_info(env, o);
	} else if (is(p, 0, "COMMAND")) {
		/* redis-cli 7 asks for COMMAND DOCS at start-up: nothing to document is fine. */
		if (p->argc >= 2 && is(p, 1, "COUNT"))
			resp_add_int(o, 0);
		else
			resp_add_array(o, 0);
	} else if (is(p, 0, "CONFIG")) {
		size_t len0 = o->len;
		cmd_config(env, p, o);
		if (o->len > len0 && o->buf[len0] == '-')
			goto error;
	} else if (is(p, 0, "QUIT")) {
		resp_add_simple(o, "OK");
		rc = RESP_CLOSE;
	} else if (is(p, 0, "SELECT")) {
		if (p->argl[1] == 1 && p->argv[1][0] == '0') {
			resp_add_simple(o, "OK");
		} else {
			resp_add_error(o, "ERR DB index is out of range (jiffy-kv has only db 0)");
			goto error;
		}
	} else if (is(p, 0, "AUTH")) {
		if (p->argc > 3) {
			resp_add_error(o, "ERR syntax error");
			goto error;
		}
		if (!authenticate(env, cl, p, p->argc == 3 ? 1 : -1, p->argc - 1, o))
			goto error;
		resp_add_simple(o, "OK");
	} else if (is(p, 0, "HELLO")) {
		if (cmd_hello(env, cl, p, o) != 0)
			goto error;
	} else if (is(p, 0, "CLIENT")) {
		if (is(p, 1, "SETNAME") && p->argc == 3) {
			resp_add_simple(o, "OK"); /* accepted, not kept */
		} else if (is(p, 1, "SETINFO") && p->argc == 4) {
			resp_add_simple(o, "OK");
		} else if (is(p, 1, "GETNAME") && p->argc == 2) {
			resp_add_nil(o);
		} else {
			resp_add_error(o, "ERR unsupported CLIENT subcommand or wrong number of "
					  "arguments ('%s')",
				       shown(p, 1, shown_buf, sizeof(shown_buf)));
			goto error;
		}
	}
done:
	if (env->stats && o->len > before)
		count(&env->stats->replies);
	return rc;
error:
	if (env->stats) {
		count(&env->stats->errors);
		count(&env->stats->replies);
	}
	return rc;
}
