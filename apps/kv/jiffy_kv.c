/*
 * apps/kv/jiffy_kv.c - jiffy-kv: a RocksDB server on Jiffy with two front ends, the UDP request
 * protocol of docs/protocol.md (for the load generator) and RESP2 (redis-cli, redis-benchmark).
 *
 * Owns: the server's uthread structure, flags, start-up and shutdown. Everything runs inside
 * jf_run()'s main uthread and the uthreads it spawns:
 *   - UDP: --receivers uthreads loop on jf_recvfrom() on one socket. With --udp-mode spawn (the
 *     default) each datagram is copied and handed to a new detached uthread that runs it and
 *     jf_sendto()s the reply, so a long SCAN never delays the next receive and the policy sees
 *     one uthread per request (what preemption acts on). With --udp-mode inline the receivers
 *     run requests themselves (a fixed pool of --receivers uthreads; no spawn per request).
 *     A spawned request's uthread carries its op (docs/protocol.md's number: GET 2, PUT 3, DEL 4,
 *     SCAN 5) as attr.sched.type and that op's --slo as attr.sched.slo_ns, so the central
 *     policy's MQ mode (JIFFY_CENTRAL=mq) keeps one queue per op; requests served inline (and
 *     after a failed spawn) keep the receiver's default attributes. At exit, before the
 *     statistics line, one line per op ("op get: requests=N tagged=N slo_us=..."; requests: those
 *     answered; tagged: those whose uthread read its own attributes back as its op and SLO).
 *   - RESP: an accept loop; one uthread per connection reads with jf_read(), parses every
 *     complete command in its buffer (pipelining), and writes all their replies with one jf_write().
 *     Connection uthreads keep the default attributes (--slo is for the UDP front end).
 *   - Signals: SIGINT/SIGTERM (and SIGQUIT, which prints the uthreads and counters and goes on)
 *     are blocked in every thread and read from a signalfd registered with
 *     the netpoller; the main uthread waits on it, then sets `stopping`. Loops wake at least every
 *     100 ms (netpoller timeouts) to notice it, finish, and the main uthread waits for every
 *     uthread (a waitgroup), closes the sockets and RocksDB, prints one statistics line on stderr
 *     and returns 0.
 * Every RocksDB call runs with preemption disabled (kvstore hooks; see kvstore.h for why); a SCAN
 * re-enables it between keys and calls jf_safepoint() there, so long SCANs are preemptible at key
 * boundaries under every mechanism (--rocksdb-preempt between-keys). With --rocksdb-preempt
 * inside, a SCAN's iterator steps run outside any region, preemptible inside RocksDB: at its
 * compiler probes in jiffy-kv-probes (RocksDB built with the pass: scripts/rocksdb-probes.sh,
 * where it is the default), by signals otherwise. The runtime's configuration comes from JIFFY_* variables.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>
#include <jiffy/net.h>

#include "flags.h"
#include "kvproto.h"
#include "kvstore.h"
#include "listen.h"
#include "resp.h"
#include "sigquit.h"
#include "slo_flag.h"

/* 1 in jiffy-kv-probes, whose RocksDB was compiled with Jiffy's probe pass (apps/kv/CMakeLists.txt,
 * scripts/rocksdb-probes.sh); it makes --rocksdb-preempt inside the default. */
#ifndef KV_ROCKSDB_PROBES
#define KV_ROCKSDB_PROBES 0
#endif

#define POLL_NS (100 * 1000 * 1000ll) /* how often blocked loops look at `stopping` */
#define CONN_BUF_MIN (16 * 1024)
#define CONN_BUF_MAX (RESP_MAX_REQUEST + 64 * 1024)
#define OUT_FLUSH (64 * 1024) /* write pipelined replies once this many bytes are pending */
/* One connection's buffers, input and output together, never hold more than this: the query
 * buffer's cap plus room for the largest reply a command builds (a SCAN of COUNT 10000 keys of
 * up to RESP_MAX_KEY bytes, built apart and then copied, each in a doubling buffer). */
#define CONN_SHARE (CONN_BUF_MAX + 44u * 1024 * 1024)
#define PASSWORD_MAX 512 /* bytes; Redis has no limit, but a password is not a document */
#define PASSWORD_ENV "JIFFY_KV_PASSWORD"

static const char *prog = "jiffy-kv";

static struct {
	/* flags */
	unsigned long port, resp_port, keys, value_size, receivers;
	const char *db;
	int spawn; /* --udp-mode spawn (1) or inline (0) */
	int udp_on; /* 0 with --no-udp */
	int rocksdb_inside; /* --rocksdb-preempt inside */
	struct jp_slo_table slo; /* --slo, per op */
	struct jp_listen listen; /* --bind, --protected-mode */
	char *password;          /* --requirepass-file, --requirepass or $JIFFY_KV_PASSWORD */
	unsigned long maxclients, timeout_s, max_inflight;
	unsigned long long maxmem; /* --maxmemory-clients, bytes */
	/* runtime */
	struct kvstore *kv;
	int udp_fd, tcp_fd, sig_fd;
	unsigned udp_port_bound, resp_port_bound;
	atomic_int stopping;
	jf_waitgroup_t wg; /* every uthread but main */
	struct kvproto_stats udp;
	struct jp_type_counts ops; /* answered UDP requests per op, and how many ran tagged */
	_Atomic uint64_t spawn_failures;
	_Atomic uint64_t inflight;     /* spawned UDP requests not finished */
	_Atomic uint64_t udp_shed;     /* datagrams dropped because --max-inflight were running */
	struct resp_stats resp;
	struct resp_env env;
	int exit_code;
	int signo; /* the signal that stopped us */
} S = {.port = 7100, .resp_port = 6380, .keys = 100000, .value_size = 64, .receivers = 1,
       .spawn = 1, .udp_on = 1, .udp_fd = -1, .tcp_fd = -1, .sig_fd = -1, .maxclients = 1000,
       .timeout_s = 300, .max_inflight = 4096, .maxmem = 256ull << 20};

static void kv_enter(void)
{
	jf_preempt_disable();
}

static void kv_leave(void)
{
	jf_preempt_enable();
}

static void kv_check(void)
{
	jf_safepoint();
}

static int stopping(void)
{
	return atomic_load_explicit(&S.stopping, memory_order_relaxed);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int transient(int e)
{
	return e == ETIMEDOUT || e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}

/* ---- UDP ---------------------------------------------------------------------------------- */

/* --slo's names for the ops jiffy-kv serves (numbers are accepted too). */
static const struct jp_slo_name op_names[] = {
	{"ping", JP_PING}, {"get", JP_GET}, {"put", JP_PUT}, {"del", JP_DEL}, {"scan", JP_SCAN},
	{NULL, 0},
};

struct udp_req {
	struct sockaddr_storage src;
	socklen_t slen;
	bool spawned; /* runs in its own uthread, tagged with its op */
	size_t len;
	char data[];
};

/* The type of a datagram: its op byte, or 0 when it is too short to have one (garbage). */
static unsigned op_of(const char *req, size_t len)
{
	return len >= sizeof(struct jp_req) ? (uint8_t)req[offsetof(struct jp_req, op)] : 0;
}

/* Does the calling uthread carry @op and its SLO, as the policy reads them? */
static bool carries_op(unsigned op)
{
	struct jf_sched_attr a;

	jf_thread_get_sched_attr(jf_self(), &a);
	return a.type == (int32_t)op && a.slo_ns == S.slo.slo_ns[op];
}

/* @spawned: called in the request's own uthread (which should carry its op). */
static void udp_reply(const char *req, size_t len, const struct sockaddr *src, socklen_t slen,
		      bool spawned)
{
	char reply[KVPROTO_REPLY_MAX];
	size_t rl = kvproto_handle(S.kv, req, len, reply, &S.udp);
	if (rl == 0)
		return;
	jp_type_count(&S.ops, op_of(req, len), spawned && carries_op(op_of(req, len)));
	if (jf_sendto(S.udp_fd, reply, rl, 0, src, slen, POLL_NS * 10) == (ssize_t)rl)
		kvproto_count(&S.udp.replies);
	else
		kvproto_count(&S.udp.errors);
}

static void *udp_handler(void *arg)
{
	struct udp_req *r = arg;
	udp_reply(r->data, r->len, (struct sockaddr *)&r->src, r->slen, r->spawned);
	free(r);
	atomic_fetch_sub_explicit(&S.inflight, 1, memory_order_relaxed);
	jf_waitgroup_done(&S.wg);
	return NULL;
}

static void *udp_receiver(void *arg)
{
	char *buf = malloc(KVPROTO_RECV_BUF);
	struct jf_attr attr;
	(void)arg;
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "udp-req";
	while (buf && !stopping()) {
		struct sockaddr_storage src;
		socklen_t slen = sizeof(src);
		ssize_t n = jf_recvfrom(S.udp_fd, buf, KVPROTO_RECV_BUF, 0, (struct sockaddr *)&src,
					&slen, POLL_NS);
		if (n < 0) {
			if (transient(errno))
				continue;
			if (errno == EBADF)
				break;
			kvproto_count(&S.udp.errors);
			continue;
		}
		if (!S.spawn) {
			udp_reply(buf, (size_t)n, (struct sockaddr *)&src, slen, false);
			continue;
		}
		/* --max-inflight: past it, shed the datagram as a full socket buffer would, rather
		 * than let a flood turn into an unbounded number of uthreads (and their stacks). */
		/* (take a slot, give it back if over: exact with several receivers) */
		struct udp_req *r = NULL;
		if (atomic_fetch_add_explicit(&S.inflight, 1, memory_order_relaxed) >= S.max_inflight)
			kvproto_count(&S.udp_shed);
		else
			r = malloc(sizeof(*r) + (size_t)n);
		if (!r) {
			atomic_fetch_sub_explicit(&S.inflight, 1, memory_order_relaxed);
			kvproto_count(&S.udp.requests);
			kvproto_count(&S.udp.dropped);
			continue;
		}
		memcpy(&r->src, &src, slen);
		r->slen = slen;
		r->spawned = true;
		r->len = (size_t)n;
		memcpy(r->data, buf, (size_t)n);
		attr.sched.type = (int32_t)op_of(buf, (size_t)n);
		attr.sched.slo_ns = S.slo.slo_ns[attr.sched.type];
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, udp_handler, r) != 0) {
			/* out of memory for a uthread: serve it here rather than drop it */
			kvproto_count(&S.spawn_failures);
			r->spawned = false;
			udp_handler(r);
		}
	}
	free(buf);
	jf_waitgroup_done(&S.wg);
	return NULL;
}

/* ---- RESP --------------------------------------------------------------------------------- */

/*
 * The limits of docs/security.md. Every byte of a connection's buffers is accounted in
 * S.resp.buffer_bytes before it is allocated: a growth that would pass --maxmemory-clients, or
 * the connection's own CONN_SHARE, is refused and the connection closed with an error. A
 * connection is also closed when --timeout seconds pass without it completing a command (idle,
 * or trickling bytes: slowloris) or without a byte of its replies being taken (a client that
 * never reads). --maxclients bounds how many are open; the acceptor refuses the rest with
 * Redis's "-ERR max number of clients reached" without spawning anything for them.
 */
struct conn {
	int fd;
	size_t held; /* bytes of buffers this connection holds (its share of buffer_bytes) */
};

static int buf_account(void *ctx, size_t from, size_t to)
{
	struct conn *c = ctx;
	if (to <= from) {
		atomic_fetch_sub_explicit(&S.resp.buffer_bytes, from - to, memory_order_relaxed);
		c->held -= from - to;
		return 0;
	}
	size_t d = to - from;
	if (c->held + d > CONN_SHARE)
		return -1;
	uint64_t now = atomic_fetch_add_explicit(&S.resp.buffer_bytes, d, memory_order_relaxed) + d;
	if (now > S.maxmem) {
		atomic_fetch_sub_explicit(&S.resp.buffer_bytes, d, memory_order_relaxed);
		return -1;
	}
	c->held += d;
	return 0;
}

/*
 * A short error to a client being turned away, then our FIN; never blocks. Best effort: a client
 * still sending when the socket closes gets a reset, which may overtake the message.
 */
static void turn_away(int fd, const char *msg)
{
	(void)send(fd, msg, strlen(msg), MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_WR);
}

#define MSG_MAXCLIENTS "-ERR max number of clients reached\r\n"
#define MSG_MAXMEM                                                                                 \
	"-ERR client buffers would exceed the server's limit (--maxmemory-clients or the "         \
	"per-connection share); connection closed\r\n"

static uint64_t timeout_ns(void)
{
	return (uint64_t)S.timeout_s * 1000000000u;
}

/* Write it all, or give up: error, stopping, or --timeout without a byte taken (-2). */
static int write_all(int fd, const char *p, size_t n)
{
	uint64_t stalled = 0; /* when the current stall began: the clock is read only in stalls */
	while (n > 0) {
		ssize_t w = jf_write(fd, p, n, POLL_NS);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			stalled = 0;
			continue;
		}
		if (w < 0 && transient(errno) && !stopping()) {
			uint64_t now = mono_ns();
			if (!stalled)
				stalled = now;
			if (S.timeout_s && now - stalled > timeout_ns())
				return -2;
			continue;
		}
		return -1;
	}
	return 0;
}

static void *resp_conn(void *arg)
{
	struct conn *c = arg;
	int fd = c->fd;
	struct resp_parser p;
	struct resp_out o;
	struct resp_client client = {.authed = S.password == NULL};
	size_t cap = CONN_BUF_MIN, have = 0; /* CONN_BUF_MIN was accounted by the acceptor */
	char *buf = malloc(cap);
	int close_after = 0, over = 0, timed_out = 0;
	uint64_t last_cmd = mono_ns();

	atomic_fetch_add(&S.resp.connections, 1);
	resp_out_init(&o);
	o.account = buf_account;
	o.account_ctx = c;
	if (!buf || resp_parser_init(&p) != 0) {
		free(buf);
		buf = NULL;
		p.argv = NULL;
		p.argl = NULL;
		p.off = NULL;
		close_after = 1;
	}
	while (!close_after && !stopping()) {
		if (have == cap) {
			size_t ncap = cap * 2 > CONN_BUF_MAX ? CONN_BUF_MAX : cap * 2;
			if (ncap <= cap)
				break; /* cannot happen within the parser's limits; be safe */
			if (buf_account(c, cap, ncap) != 0) {
				over = 1;
				break;
			}
			char *nb = realloc(buf, ncap);
			if (!nb) {
				buf_account(c, ncap, cap);
				break;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t n = jf_read(fd, buf + have, cap - have, POLL_NS);
		if (n < 0 && transient(errno)) {
			if (S.timeout_s && mono_ns() - last_cmd > timeout_ns()) {
				timed_out = 1;
				break;
			}
			continue;
		}
		if (n <= 0)
			break; /* EOF or error */
		have += (size_t)n;
		size_t off = 0;
		bool done_cmd = false;
		o.len = 0;
		while (off < have) {
			size_t used;
			int rc = resp_parse(&p, buf + off, have - off, &used);
			if (rc == RESP_NEED_MORE)
				break;
			if (rc == RESP_ERROR) {
				resp_add_error(&o, "ERR %s", p.err);
				atomic_fetch_add(&S.resp.errors, 1);
				atomic_fetch_add(&S.resp.replies, 1);
				atomic_fetch_add(&S.resp.dropped, 1);
				close_after = 1;
				break;
			}
			done_cmd = true;
			if (resp_exec(&S.env, &client, &p, &o) == RESP_CLOSE)
				close_after = 1;
			off += used;
			if (close_after || o.oom)
				break;
			if (o.len >= OUT_FLUSH) {
				int w = write_all(fd, o.buf, o.len);
				if (w != 0) {
					timed_out = w == -2;
					close_after = 2;
					break;
				}
				o.len = 0;
			}
		}
		if (done_cmd) /* --timeout: one clock read per read that completed commands */
			last_cmd = mono_ns();
		if (o.over_limit) {
			over = 1;
			break;
		}
		if (o.oom)
			break;
		if (close_after != 2 && o.len) {
			int w = write_all(fd, o.buf, o.len);
			if (w != 0) {
				timed_out = w == -2;
				break;
			}
		}
		if (close_after)
			break;
		memmove(buf, buf + off, have - off);
		have -= off;
		if (cap > CONN_BUF_MIN && have < CONN_BUF_MIN / 2) { /* give big buffers back */
			char *nb = realloc(buf, CONN_BUF_MIN);
			if (nb) {
				buf_account(c, cap, CONN_BUF_MIN);
				buf = nb;
				cap = CONN_BUF_MIN;
			}
		}
		if (o.cap > 4 * OUT_FLUSH)
			resp_out_free(&o); /* keeps the accounting hook */
	}
	if (over) {
		atomic_fetch_add(&S.resp.over_memory, 1);
		turn_away(fd, MSG_MAXMEM);
	}
	if (timed_out)
		atomic_fetch_add(&S.resp.timeouts, 1);
	jf_close(fd);
	resp_out_free(&o);
	resp_parser_free(&p);
	free(buf);
	buf_account(c, cap, 0);
	free(c);
	atomic_fetch_sub(&S.resp.connected, 1);
	jf_waitgroup_done(&S.wg);
	return NULL;
}

/* Refuse @fd (over --maxclients, or no memory for its buffers): a reason, then close. */
static void reject(int fd, const char *msg)
{
	atomic_fetch_add(&S.resp.rejected, 1);
	turn_away(fd, msg);
	jf_close(fd);
}

static void *resp_acceptor(void *arg)
{
	struct jf_attr attr;
	(void)arg;
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "resp-conn";
	while (!stopping()) {
		int fd = jf_accept(S.tcp_fd, NULL, NULL, POLL_NS);
		if (fd < 0) {
			if (transient(errno) || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				jf_sleep_ns(10 * 1000 * 1000); /* let connections close */
				continue;
			}
			fprintf(stderr, "%s: accept: %s\n", prog, strerror(errno));
			break;
		}
		if (atomic_load(&S.resp.connected) >= S.maxclients) {
			reject(fd, MSG_MAXCLIENTS);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c || buf_account(c, 0, CONN_BUF_MIN) != 0) {
			free(c);
			reject(fd, MSG_MAXMEM);
			continue;
		}
		c->fd = fd;
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		atomic_fetch_add(&S.resp.connected, 1); /* here, so the next accept sees it */
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, resp_conn, c) != 0) {
			jf_close(fd);
			buf_account(c, CONN_BUF_MIN, 0);
			free(c);
			atomic_fetch_sub(&S.resp.connected, 1);
			atomic_fetch_add(&S.resp.dropped, 1);
			jf_waitgroup_done(&S.wg);
		}
	}
	jf_waitgroup_done(&S.wg);
	return NULL;
}

/* INFO's extra section: the runtime and the UDP front end. */
static void info_extra(void *ctx, struct resp_out *o)
{
	char line[256];
	(void)ctx;
	int n = snprintf(line, sizeof(line),
			 "\r\n# Jiffy\r\nworkers:%d\r\npreempt_mechanism:%s\r\nudp_port:%u\r\n"
			 "udp_mode:%s\r\nudp_receivers:%lu\r\nrocksdb_probes:%d\r\n"
			 "rocksdb_preempt:%s\r\n",
			 jf_nworkers(), jf_preempt_mechanism(), S.udp_port_bound,
			 S.spawn ? "spawn" : "inline", S.receivers, KV_ROCKSDB_PROBES,
			 S.rocksdb_inside ? "inside" : "between-keys");
	resp_add_raw(o, line, (size_t)n);
	n = snprintf(line, sizeof(line),
		     "udp_requests:%llu\r\nudp_replies:%llu\r\nudp_dropped:%llu\r\nudp_errors:%llu\r\n",
		     (unsigned long long)atomic_load(&S.udp.requests),
		     (unsigned long long)atomic_load(&S.udp.replies),
		     (unsigned long long)atomic_load(&S.udp.dropped),
		     (unsigned long long)atomic_load(&S.udp.errors));
	resp_add_raw(o, line, (size_t)n);
}

/* ---- start-up and shutdown ---------------------------------------------------------------- */

static int open_socket(int type, unsigned long port, unsigned *bound)
{
	struct sockaddr_storage a;
	socklen_t alen;
	int one = 1, rcvbuf = 4 << 20;
	jp_listen_sockaddr(&S.listen, (unsigned)port, &a, &alen);
	int fd = jf_socket(a.ss_family, type, 0);
	if (fd < 0)
		return -1;
	if (type == SOCK_STREAM)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	else
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)); /* best effort */
	if (jf_bind(fd, (struct sockaddr *)&a, alen) != 0 ||
	    (type == SOCK_STREAM && jf_listen(fd, 511) != 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &(socklen_t){sizeof(a)}) != 0) {
		int e = errno;
		jf_close(fd);
		errno = e;
		return -1;
	}
	*bound = jp_sockaddr_port(&a);
	return fd;
}

static void *app_main(void *arg)
{
	sigset_t *sigs = arg;
	char *err = NULL;
	struct kvstore_opts o;
	struct jf_attr attr;
	uint64_t start = mono_ns();

	S.exit_code = 1;
	kvstore_opts_default(&o);
	o.path = S.db;
	o.keys = (uint32_t)S.keys;
	o.value_size = (uint32_t)S.value_size;
	o.hooks.enter = kv_enter;
	o.hooks.leave = kv_leave;
	o.hooks.check = kv_check;
	o.hooks.steps_unguarded = S.rocksdb_inside;
	jf_preempt_disable(); /* RocksDB start-up must not be split by a preemption either */
	S.kv = kvstore_open(&o, &err);
	jf_preempt_enable();
	if (!S.kv) {
		fprintf(stderr, "%s: cannot open the database: %s\n", prog, err ? err : "?");
		free(err);
		return NULL;
	}

	S.sig_fd = signalfd(-1, sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (S.sig_fd < 0 || jf_fd_register(S.sig_fd) != 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		goto out;
	}
	if (S.udp_on) {
		S.udp_fd = open_socket(SOCK_DGRAM, S.port, &S.udp_port_bound);
		if (S.udp_fd < 0) {
			fprintf(stderr, "%s: UDP port %lu (--port) on %s: %s\n", prog, S.port,
				S.listen.text, strerror(errno));
			goto out;
		}
	}
	if (S.resp_port) {
		S.tcp_fd = open_socket(SOCK_STREAM, S.resp_port, &S.resp_port_bound);
		if (S.tcp_fd < 0) {
			fprintf(stderr, "%s: TCP port %lu (--resp-port) on %s: %s\n", prog, S.resp_port,
				S.listen.text, strerror(errno));
			goto out;
		}
	}

	S.env.kv = S.kv;
	S.env.server = prog;
	S.env.tcp_port = (int)S.resp_port_bound;
	S.env.start_ns = start;
	S.env.stats = &S.resp;
	S.env.cursors = resp_cursors_create();
	S.env.enter = kv_enter;
	S.env.leave = kv_leave;
	S.env.info = info_extra;
	S.env.password = S.password;
	S.env.password_len = S.password ? strlen(S.password) : 0;
	S.env.maxclients = (int)S.maxclients;
	if (!S.env.cursors) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}

	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "udp-recv";
	for (unsigned long i = 0; S.udp_fd >= 0 && i < S.receivers; i++) {
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, udp_receiver, NULL) != 0) {
			jf_waitgroup_done(&S.wg);
			fprintf(stderr, "%s: cannot start the UDP receivers\n", prog);
			atomic_store(&S.stopping, 1);
			goto wait;
		}
	}
	if (S.tcp_fd >= 0) {
		attr.name = "resp-accept";
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, resp_acceptor, NULL) != 0) {
			jf_waitgroup_done(&S.wg);
			fprintf(stderr, "%s: cannot start the RESP acceptor\n", prog);
			atomic_store(&S.stopping, 1);
			goto wait;
		}
	}

	if (S.tcp_fd >= 0)
		printf("READY jiffy-kv udp=%u resp=%u\n", S.udp_port_bound, S.resp_port_bound);
	else
		printf("READY jiffy-kv udp=%u resp=0\n", S.udp_port_bound);
	fflush(stdout);

	int signo = 0;
	while (!signo) {
		struct signalfd_siginfo si;
		int r = jf_fd_wait(S.sig_fd, POLLIN, JF_NO_TIMEOUT);
		if (r < 0 && !transient(errno)) {
			fprintf(stderr, "%s: waiting for signals: %s\n", prog, strerror(errno));
			break;
		}
		while (read(S.sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (jp_sigquit_dump(&si))
				continue;
			signo = (int)si.ssi_signo;
		}
	}
	atomic_store(&S.stopping, 1);
	S.signo = signo;
	S.exit_code = 0;
wait:
	jf_waitgroup_wait(&S.wg); /* receivers, handlers, acceptor, connections */
	jp_slo_report(stderr, prog, "op", op_names, &S.slo, &S.ops);
	fprintf(stderr,
		"%s: stopped by %s; udp requests=%llu replies=%llu dropped=%llu errors=%llu "
		"(get=%llu scan=%llu put=%llu del=%llu ping=%llu spawn_failures=%llu shed=%llu); "
		"resp connections=%llu requests=%llu replies=%llu dropped=%llu errors=%llu "
		"(rejected=%llu timeouts=%llu over_memory=%llu auth_failures=%llu noauth=%llu)\n",
		prog, S.signo == SIGINT ? "SIGINT" : S.signo == SIGTERM ? "SIGTERM" : "an error",
		(unsigned long long)S.udp.requests, (unsigned long long)S.udp.replies,
		(unsigned long long)S.udp.dropped, (unsigned long long)S.udp.errors,
		(unsigned long long)S.udp.ops[JP_GET], (unsigned long long)S.udp.ops[JP_SCAN],
		(unsigned long long)S.udp.ops[JP_PUT], (unsigned long long)S.udp.ops[JP_DEL],
		(unsigned long long)S.udp.ops[JP_PING], (unsigned long long)S.spawn_failures,
		(unsigned long long)S.udp_shed, (unsigned long long)S.resp.connections,
		(unsigned long long)S.resp.requests, (unsigned long long)S.resp.replies,
		(unsigned long long)S.resp.dropped, (unsigned long long)S.resp.errors,
		(unsigned long long)S.resp.rejected, (unsigned long long)S.resp.timeouts,
		(unsigned long long)S.resp.over_memory, (unsigned long long)S.resp.auth_failures,
		(unsigned long long)S.resp.noauth);
out:
	if (S.tcp_fd >= 0)
		jf_close(S.tcp_fd);
	if (S.udp_fd >= 0)
		jf_close(S.udp_fd);
	if (S.sig_fd >= 0)
		jf_close(S.sig_fd);
	resp_cursors_destroy(S.env.cursors);
	jf_preempt_disable();
	kvstore_close(S.kv); /* data stored in a --db directory persists */
	jf_preempt_enable();
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--port P] [--resp-port P] [--bind ADDR] [--keys N] [--value-size B]\n"
		"          [--db PATH] [--receivers N] [--udp-mode spawn|inline] [--slo OP=US,...]\n"
		"          [--requirepass-file FILE] [--maxclients N] [--timeout S]\n"
		"          [--maxmemory-clients BYTES] [--max-inflight N] [--no-udp]\n"
		"          [--protected-mode yes|no] [--rocksdb-preempt between-keys|inside]\n"
		"  --port P          UDP port of the request protocol (default 7100; 0: any free port)\n"
		"  --resp-port P     TCP port of the Redis protocol (default 6380; 0: disabled)\n"
		"  --no-udp          no UDP front end (the Redis protocol only)\n"
		JP_LISTEN_USAGE
		"  --requirepass-file FILE\n"
		"                    the Redis protocol's password: the first line of FILE.\n"
		"                    Clients must AUTH before anything but PING, QUIT, HELLO.\n"
		"                    Also from $" PASSWORD_ENV "; --requirepass PASS works\n"
		"                    too but shows the password to anyone running ps\n"
		"  --maxclients N    Redis-protocol connections open at once (default 1000);\n"
		"                    more get \"-ERR max number of clients reached\"\n"
		"  --timeout S       close a connection that completes no command, or takes no\n"
		"                    byte of its replies, for S seconds (default 300; 0: never)\n"
		"  --maxmemory-clients BYTES\n"
		"                    all connections' buffers together (default 256M; K/M/G);\n"
		"                    a connection that would pass it is closed with an error\n"
		"  --max-inflight N  UDP requests running at once in spawn mode (default 4096);\n"
		"                    datagrams past it are dropped (counted as shed)\n"
		"  --keys N          preload key%%012u for i < N (default 100000)\n"
		"  --value-size B    bytes per preloaded value (default 64, max %u)\n"
		"  --db PATH         RocksDB directory, kept (default: a scratch directory in\n"
		"                    /dev/shm, removed at exit)\n"
		"  --receivers N     uthreads receiving UDP datagrams (default 1)\n"
		"  --udp-mode M      spawn: one uthread per request (default); inline: the\n"
		"                    receivers serve requests themselves\n"
		"  --slo OP=US,...   the SLO in microseconds (1..10000000) of a UDP request op\n"
		"                    (ping, get, put, del, scan, or the op's number 0..255). Each\n"
		"                    spawned request's uthread carries its op in attr.type and\n"
		"                    the op's SLO in attr.slo_ns: JIFFY_POLICY=central\n"
		"                    JIFFY_CENTRAL=mq keeps one queue per op; an op without an\n"
		"                    SLO gets JIFFY_CENTRAL_SLO_US. Per-op counts at exit\n"
		"  --rocksdb-preempt M  where a SCAN may be preempted: between-keys (each\n"
		"                    iterator step a non-preemptible region, a safepoint between\n"
		"                    keys) or inside (steps run preemptible: at RocksDB's own\n"
		"                    compiler probes when it was built with them, by signals\n"
		"                    otherwise). GET, PUT and DEL are regions either way.\n"
		"                    Default: %s (this binary's RocksDB %s probes)\n"
		JP_FLAGS_STD_USAGE
		"The runtime is configured with JIFFY_* variables (JIFFY_WORKERS, JIFFY_POLICY,\n"
		"JIFFY_PREEMPT, JIFFY_QUANTUM_US, ...; see include/jiffy/config.h).\n"
		"Security (defaults, limits, what is out of scope): docs/security.md.\n",
		prog, JP_MAX_VALUE, KV_ROCKSDB_PROBES ? "inside" : "between-keys",
		KV_ROCKSDB_PROBES ? "has" : "has no");
}

/* A password from a flag, a file or the environment: non-empty, one line, <= PASSWORD_MAX. */
static int set_password(const char *p, size_t n, const char *from)
{
	if (S.password) {
		fprintf(stderr, "%s: a password is given twice (%s and an earlier source); give one of "
				"--requirepass-file, --requirepass or $%s\n", prog, from, PASSWORD_ENV);
		return -1;
	}
	if (n == 0 || n > PASSWORD_MAX || memchr(p, '\n', n) || memchr(p, '\r', n) ||
	    memchr(p, '\0', n)) {
		jp_flag_error(prog, from, "expected a password of 1 to %d bytes on one line",
			      PASSWORD_MAX);
		return -1;
	}
	S.password = strndup(p, n);
	return S.password ? 0 : -1;
}

static int password_file(const char *path)
{
	char buf[PASSWORD_MAX + 2];
	struct stat st;
	FILE *f = path && *path ? fopen(path, "r") : NULL;
	if (!f) {
		jp_flag_error(prog, "--requirepass-file", "cannot read '%s': %s", path ? path : "",
			      path && *path ? strerror(errno) : "expected a file name");
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
		fprintf(stderr, "%s: warning: the password file %s can be read by other users "
				"(chmod 600 it)\n", prog, path);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	int rd_err = ferror(f);
	fclose(f);
	if (rd_err) {
		jp_flag_error(prog, "--requirepass-file", "cannot read '%s': read error", path);
		return -1;
	}
	buf[n] = '\0';
	size_t line = strcspn(buf, "\r\n"); /* the first line; a trailing newline is not part */
	if (line == n && n == sizeof(buf) - 1) {
		jp_flag_error(prog, "--requirepass-file", "'%s': the first line is over %d bytes",
			      path, PASSWORD_MAX);
		return -1;
	}
	return set_password(buf, line, "--requirepass-file");
}

/* Make room for --maxclients descriptors (raise the soft limit; or lower maxclients, saying so). */
static void fit_maxclients(void)
{
	struct rlimit rl;
	const rlim_t reserve = 64; /* sockets, RocksDB files, the signalfd, the netpoller */
	rlim_t want = (rlim_t)S.maxclients + reserve;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rlim_t cur = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		cur = rl.rlim_cur;
	if (cur < want) {
		unsigned long fit = cur > reserve + 1 ? (unsigned long)(cur - reserve) : 1;
		fprintf(stderr, "%s: warning: --maxclients %lu lowered to %lu: the open-files limit "
				"is %llu (ulimit -n)\n", prog, S.maxclients, fit, (unsigned long long)cur);
		S.maxclients = fit;
	}
}

enum {
	F_PORT = 0x100, F_RESP_PORT, F_KEYS, F_VALUE_SIZE, F_RECEIVERS, F_UDP_MODE, F_SLO, F_BIND,
	F_PROTECTED, F_PASSFILE, F_PASS, F_MAXCLIENTS, F_TIMEOUT, F_INFLIGHT, F_MAXMEM,
	F_ROCKSDB_PREEMPT, F_NO_UDP, F_DB,
};

static const struct option options[] = {
	{"port", required_argument, NULL, F_PORT},
	{"resp-port", required_argument, NULL, F_RESP_PORT},
	{"keys", required_argument, NULL, F_KEYS},
	{"value-size", required_argument, NULL, F_VALUE_SIZE},
	{"receivers", required_argument, NULL, F_RECEIVERS},
	{"udp-mode", required_argument, NULL, F_UDP_MODE},
	{"slo", required_argument, NULL, F_SLO},
	{"bind", required_argument, NULL, F_BIND},
	{"protected-mode", required_argument, NULL, F_PROTECTED},
	{"requirepass-file", required_argument, NULL, F_PASSFILE},
	{"requirepass", required_argument, NULL, F_PASS},
	{"maxclients", required_argument, NULL, F_MAXCLIENTS},
	{"timeout", required_argument, NULL, F_TIMEOUT},
	{"max-inflight", required_argument, NULL, F_INFLIGHT},
	{"maxmemory-clients", required_argument, NULL, F_MAXMEM},
	{"rocksdb-preempt", required_argument, NULL, F_ROCKSDB_PREEMPT},
	{"no-udp", no_argument, NULL, F_NO_UDP},
	{"db", required_argument, NULL, F_DB},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	static const char *const udp_modes[] = {"inline", "spawn", NULL};
	static const char *const rocksdb_modes[] = {"between-keys", "inside", NULL};
	struct jp_flags fl;
	int c;

	jp_listen_default(&S.listen);
	S.rocksdb_inside = KV_ROCKSDB_PROBES;
	jp_flags_init(&fl, prog, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		const char *a = fl.flag, *v = optarg;
		int bad = 0;
		switch (c) {
		case F_PORT:
			bad = jp_flag_port(prog, a, v, 0, &S.port);
			break;
		case F_RESP_PORT:
			bad = jp_flag_port(prog, a, v, 0, &S.resp_port);
			break;
		case F_KEYS:
			bad = jp_flag_uint(prog, a, v, 0, 100000000, &S.keys);
			break;
		case F_VALUE_SIZE:
			bad = jp_flag_uint(prog, a, v, 1, JP_MAX_VALUE, &S.value_size);
			break;
		case F_RECEIVERS:
			bad = jp_flag_uint(prog, a, v, 1, 64, &S.receivers);
			break;
		case F_UDP_MODE:
			bad = jp_flag_choice(prog, a, v, udp_modes, &S.spawn);
			break;
		case F_SLO:
			bad = jp_slo_flag(prog, a, v, op_names, &S.slo);
			break;
		case F_BIND:
			bad = jp_bind_flag(prog, a, v, &S.listen);
			break;
		case F_PROTECTED:
			bad = jp_protected_flag(prog, a, v, &S.listen);
			break;
		case F_PASSFILE:
			bad = password_file(v);
			break;
		case F_PASS:
			bad = set_password(v, strlen(v), a);
			if (!bad)
				fprintf(stderr, "%s: warning: --requirepass shows the password to anyone "
						"who can run ps; prefer --requirepass-file or $%s\n",
					prog, PASSWORD_ENV);
			break;
		case F_MAXCLIENTS:
			bad = jp_flag_uint(prog, a, v, 1, 1000000, &S.maxclients);
			break;
		case F_TIMEOUT:
			bad = jp_flag_uint(prog, a, v, 0, 31536000, &S.timeout_s);
			break;
		case F_INFLIGHT:
			bad = jp_flag_uint(prog, a, v, 1, 1000000, &S.max_inflight);
			break;
		case F_MAXMEM:
			bad = jp_flag_bytes(prog, a, v, 1ull << 20, 1ull << 40, &S.maxmem);
			break;
		case F_ROCKSDB_PREEMPT:
			bad = jp_flag_choice(prog, a, v, rocksdb_modes, &S.rocksdb_inside);
			break;
		case F_NO_UDP:
			S.udp_on = 0;
			break;
		case F_DB:
			if (!*v)
				jp_flags_fail(&fl, "expected a directory, got ''");
			S.db = v;
			break;
		}
		if (bad)
			return 2;
	}
	jp_flags_no_operands(&fl);

	const char *envpw = getenv(PASSWORD_ENV);
	if (envpw && !S.password && set_password(envpw, strlen(envpw), "$" PASSWORD_ENV) != 0)
		return 2;
	unsetenv(PASSWORD_ENV); /* not inherited by anything this process might start */
	if (!S.udp_on && !S.resp_port) {
		fprintf(stderr, "%s: --no-udp with --resp-port 0 leaves nothing to serve\n", prog);
		return 2;
	}
	char open[256] = "";
	if (S.udp_on)
		snprintf(open, sizeof(open), "the UDP request protocol (--port: GET, PUT, DEL and "
					     "SCAN of every key; --no-udp turns it off)");
	if (S.resp_port && !S.password)
		snprintf(open + strlen(open), sizeof(open) - strlen(open),
			 "%sthe Redis protocol without a password (--requirepass-file)",
			 S.udp_on ? " and " : "");
	if (jp_listen_check(stderr, prog, &S.listen, open[0] ? open : NULL) != 0)
		return 2;
	if (S.resp_port)
		fit_maxclients();

	/* Blocked before any thread exists: workers and RocksDB's threads inherit the mask, so the
	 * signals stay pending for the signalfd. SIGPIPE: a client closing mid-reply is an EPIPE. */
	static sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGQUIT); /* not a stop: jf_dump_threads() and the counters on stderr */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	int rc = jf_run(NULL, app_main, &sigs, NULL); /* NULL: defaults + JIFFY_* environment */
	if (rc != 0) {
		fprintf(stderr, "%s: jf_run failed: %s\n", prog, strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	return S.exit_code;
}
