/*
 * apps/common/listen.h - where a server in apps/ listens, and whether it may (docs/security.md).
 *
 * Owns: the --bind ADDR and --protected-mode yes|no flags shared by the C servers (jiffy-kv,
 * jiffy-synth, synth-pthread, kv-pthread; the Go and Tokio peers follow the same rules in their
 * own language), the default (127.0.0.1: loopback only), the loopback test, and the start-up
 * rule for a non-loopback address: a front end without authentication there is refused while
 * protected mode is on (the default), and served with a warning naming the risk when the user
 * gives --protected-mode no. Sockets are the caller's (jiffy-kv uses the runtime's jf_socket).
 */
#ifndef JIFFY_APPS_LISTEN_H
#define JIFFY_APPS_LISTEN_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>

#define JP_BIND_DEFAULT "127.0.0.1"

struct jp_listen {
	struct sockaddr_storage addr; /* the address, port 0 */
	socklen_t len;
	char text[64];                /* as given, without [] brackets: "127.0.0.1", "::1" */
	bool protect;                 /* --protected-mode (default yes) */
};

/* 127.0.0.1, protected mode on. */
void jp_listen_default(struct jp_listen *l);

/*
 * --bind ADDR: a numeric IPv4 or IPv6 address ("::1", "[::1]" and "fe80::1%eth0" are accepted).
 * Host names are refused (a name that resolves to several addresses would make "where does it
 * listen" a question of DNS). Return 0, or -1 after a message naming the flag and the value.
 */
int jp_bind_flag(const char *prog, const char *flag, const char *value, struct jp_listen *l);

/* --protected-mode yes|no. Return 0, or -1 after a message. */
int jp_protected_flag(const char *prog, const char *flag, const char *value, struct jp_listen *l);

/* Is the address a loopback one (127.0.0.0/8, ::1, ::ffff:127.x.y.z)? 0.0.0.0 and :: are not. */
bool jp_listen_is_loopback(const struct jp_listen *l);

/*
 * jp_listen_check() - may the server start? @open names the front ends that would serve
 * clients without authentication, e.g. "the UDP request protocol (SPIN: any CPU time up to
 * --max-spin-us per datagram)"; NULL when every front end authenticates its clients.
 * On a loopback address, or with @open NULL: 0, silently. Otherwise, protected mode on: a
 * message saying what is refused and why, and how to override, then -1 (the caller exits 2);
 * protected mode off: a "WARNING" line naming the risk on @f, then 0.
 */
int jp_listen_check(FILE *f, const char *prog, const struct jp_listen *l, const char *open);

/* The address with @port, ready for bind(2); *len is set. */
void jp_listen_sockaddr(const struct jp_listen *l, unsigned port, struct sockaddr_storage *out,
			socklen_t *len);

/* The port of a bound socket address (IPv4 or IPv6). */
unsigned jp_sockaddr_port(const struct sockaddr_storage *a);

/* The usage lines of the two flags, for the servers' --help. */
#define JP_LISTEN_USAGE                                                                            \
	"  --bind ADDR       listen on this IPv4 or IPv6 address (default 127.0.0.1:\n"          \
	"                    loopback only; 0.0.0.0 or :: for every interface)\n"               \
	"  --protected-mode yes|no\n"                                                            \
	"                    yes (default): refuse to start on a non-loopback address while\n"  \
	"                    a front end there has no authentication; no: start anyway,\n"     \
	"                    with a warning (docs/security.md)\n"

#endif /* JIFFY_APPS_LISTEN_H */
