/*
 * apps/kv/resp.h - the Redis protocol (RESP2) front end of jiffy-kv, independent of the runtime.
 *
 * Owns: the incremental request parser (arrays of bulk strings, and inline commands so that
 * redis-cli and telnet work), the reply writer, and the commands jiffy-kv serves on top of
 * kvstore (PING, ECHO, GET, SET, DEL, EXISTS, SCAN, DBSIZE, INFO, COMMAND, CONFIG GET, QUIT,
 * SELECT, CLIENT, AUTH, HELLO). A connection loop (jiffy_kv.c) feeds bytes to resp_parse(), runs
 * each complete command with resp_exec() into one output buffer and writes it once.
 *
 * Authentication, in Redis's manner (docs/security.md): when resp_env.password is set, a client
 * that has not sent the right password (AUTH password, AUTH default password, or HELLO's AUTH
 * option) gets "-NOAUTH Authentication required." for every command but AUTH, HELLO, PING and
 * QUIT; a wrong password gets "-WRONGPASS ...". The comparison takes the same time whatever
 * the bytes.
 *
 * Limits (a client over one gets "-ERR Protocol error: ..." and the connection is closed, as
 * Redis does): RESP_MAX_ARGS arguments, RESP_MAX_BULK bytes per argument, RESP_MAX_INLINE bytes
 * per inline command line, RESP_MAX_REQUEST bytes per command (so a connection never buffers more
 * than that). Keys stored with SET are at most RESP_MAX_KEY bytes.
 */
#ifndef JIFFY_APPS_RESP_H
#define JIFFY_APPS_RESP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RESP_MAX_ARGS 1024
#define RESP_MAX_BULK (512 * 1024)
#define RESP_MAX_INLINE (64 * 1024)
#define RESP_MAX_REQUEST (4 * 1024 * 1024) /* one whole multibulk command (the query buffer) */
#define RESP_MAX_KEY 1024
#define RESP_SCAN_MAX_COUNT 10000 /* COUNT is a hint: larger values are capped */
#define RESP_CURSORS 4096          /* live SCAN cursors remembered (see resp_exec SCAN) */

enum resp_result {
	RESP_ERROR = -1,    /* protocol error: reply "-ERR <p->err>" and close */
	RESP_NEED_MORE = 0, /* the command is incomplete: read more, call again (same start) */
	RESP_COMMAND = 1,   /* a complete command: p->argc, p->argv[], p->argl[] */
};

/*
 * struct resp_parser - state of one connection's parser. The caller keeps the unconsumed bytes
 * contiguous and passes them again from the same start on every call (more bytes appended);
 * the parser remembers how far it got, so feeding a byte at a time costs O(1) per byte.
 * After RESP_COMMAND, argv[i] points into the caller's buffer (argl[i] bytes, not
 * NUL-terminated); argc may be 0 (an empty line, "*0"): nothing to run, no reply.
 */
struct resp_parser {
	/* results */
	int argc;
	const char **argv;
	size_t *argl;
	char err[128];
	/* private */
	size_t pos;     /* bytes of the pending command parsed so far */
	long nargs;     /* multibulk: arguments announced, -1 before the header is parsed */
	int mode;       /* 0 unknown, 1 multibulk, 2 inline */
	int cap;        /* allocated entries of argv/argl/off */
	size_t *off;    /* argument offsets from the command's start */
};

int resp_parser_init(struct resp_parser *p);
void resp_parser_free(struct resp_parser *p);
/*
 * resp_parse() - parse the command at the start of @buf (@len bytes). Inline commands are
 * unescaped in place, so @buf must be writable. On RESP_COMMAND *@consumed is the command's
 * length (drop those bytes before the next call); on RESP_NEED_MORE and RESP_ERROR it is 0.
 */
int resp_parse(struct resp_parser *p, char *buf, size_t len, size_t *consumed);

/*
 * A growable output buffer of replies. @account, if set, is asked before the buffer grows
 * (@from -> @to bytes of capacity) and told when it shrinks or is freed (@to smaller, 0 at free):
 * it returns -1 to refuse a growth, which marks the buffer over_limit (and oom) instead of
 * allocating. jiffy-kv uses it to keep every connection's buffers inside --maxmemory-clients.
 */
struct resp_out {
	char *buf;
	size_t len, cap;
	int oom;        /* an allocation failed or was refused: the connection should be closed */
	int over_limit; /* ... and it was refused by @account */
	int (*account)(void *ctx, size_t from, size_t to);
	void *account_ctx;
};
void resp_out_init(struct resp_out *o);
/* An empty buffer that grows under the same accounting as @like (for a reply built apart). */
void resp_out_init_like(struct resp_out *o, const struct resp_out *like);
void resp_out_free(struct resp_out *o);
void resp_add_raw(struct resp_out *o, const void *p, size_t n);
void resp_add_simple(struct resp_out *o, const char *s);  /* +s */
void resp_add_error(struct resp_out *o, const char *fmt, ...) /* -<fmt> (CR/LF become spaces) */
	__attribute__((format(printf, 2, 3)));
void resp_add_int(struct resp_out *o, long long v);      /* :v */
void resp_add_bulk(struct resp_out *o, const void *p, size_t n);
void resp_add_nil(struct resp_out *o);                   /* $-1 */
void resp_add_array(struct resp_out *o, long n);         /* *n */

/* Counters of the RESP front end (relaxed atomics: updated from any worker). */
struct resp_stats {
	_Atomic uint64_t connections; /* accepted */
	_Atomic uint64_t connected;   /* open now */
	_Atomic uint64_t requests;    /* commands parsed */
	_Atomic uint64_t replies;     /* replies written (a pipelined batch counts each) */
	_Atomic uint64_t errors;      /* error replies (unknown command, arity, RocksDB...) */
	_Atomic uint64_t dropped;     /* connections closed on a protocol error */
	_Atomic uint64_t auth_failures;  /* AUTH/HELLO with a wrong password */
	_Atomic uint64_t noauth;         /* commands refused with -NOAUTH */
	_Atomic uint64_t rejected;       /* connections refused: --maxclients, or no buffer memory */
	_Atomic uint64_t timeouts;       /* connections closed by --timeout (idle, or not reading) */
	_Atomic uint64_t over_memory;    /* connections closed: their buffers would pass the limit */
	_Atomic uint64_t buffer_bytes;   /* bytes every connection's buffers hold now */
};

/* One connection's state across commands. */
struct resp_client {
	int authed; /* sent the password (or none is needed) */
};

struct resp_cursors; /* the SCAN cursor table */

/*
 * struct resp_env - what the commands run against.
 * @enter/@leave: bracket the cursor table's critical section (a pthread mutex): jiffy-kv passes
 * jf_preempt_disable/enable so no uthread is preempted while holding it. May be NULL.
 * @info: appends server-specific "name:value\r\n" lines to INFO (e.g. the UDP front end).
 */
struct resp_env {
	struct kvstore *kv;
	const char *server; /* "jiffy-kv" */
	int tcp_port;
	uint64_t start_ns;  /* CLOCK_MONOTONIC at start, for uptime */
	struct resp_stats *stats;
	struct resp_cursors *cursors;
	void (*enter)(void);
	void (*leave)(void);
	void (*info)(void *ctx, struct resp_out *o);
	void *info_ctx;
	const char *password; /* NULL: no authentication (then every client is trusted) */
	size_t password_len;
	int maxclients;       /* for CONFIG GET maxclients and INFO (0: not reported) */
};

struct resp_cursors *resp_cursors_create(void);
void resp_cursors_destroy(struct resp_cursors *c);

enum { RESP_KEEP_OPEN = 0, RESP_CLOSE = 1 };
/*
 * resp_exec() - run the command in @p (after RESP_COMMAND) for client @c (its authentication
 * state; NULL: a client that never authenticated), appending its reply to @o.
 * Return RESP_CLOSE after QUIT (its +OK is in @o: write it, then close), else RESP_KEEP_OPEN.
 */
int resp_exec(struct resp_env *env, struct resp_client *c, const struct resp_parser *p,
	      struct resp_out *o);

#endif /* JIFFY_APPS_RESP_H */
