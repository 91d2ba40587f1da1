/*
 * apps/common/listen.c - --bind and --protected-mode for the C servers (see listen.h).
 *
 * Owns: parsing a numeric address with getaddrinfo(AI_NUMERICHOST) (so the C library, not this
 * file, decides what an IPv6 literal is), the loopback test, and the words of the refusal and of
 * the warning, which docs/security.md quotes.
 */
#define _GNU_SOURCE
#include "listen.h"

#include "flags.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

void jp_listen_default(struct jp_listen *l)
{
	struct sockaddr_in *a = (struct sockaddr_in *)&l->addr;
	memset(l, 0, sizeof(*l));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->len = sizeof(*a);
	snprintf(l->text, sizeof(l->text), "%s", JP_BIND_DEFAULT);
	l->protect = true;
}

int jp_bind_flag(const char *prog, const char *flag, const char *value, struct jp_listen *l)
{
	struct addrinfo hints, *res = NULL;
	char host[sizeof(l->text)];
	size_t n;

	if (!value || !*value) {
		jp_flag_error(prog, flag, "expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, "
			      "::1, 0.0.0.0), got '%s'", value ? value : "");
		return -1;
	}
	n = strlen(value);
	if (n >= sizeof(host)) {
		jp_flag_error(prog, flag, "expected a numeric IPv4 or IPv6 address, got '%s' (too "
			      "long)", value);
		return -1;
	}
	if (value[0] == '[' && n > 2 && value[n - 1] == ']') { /* [::1] */
		memcpy(host, value + 1, n - 2);
		host[n - 2] = '\0';
	} else {
		memcpy(host, value, n + 1);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
	hints.ai_socktype = SOCK_DGRAM;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0 || !res || res->ai_addrlen > sizeof(l->addr)) {
		jp_flag_error(prog, flag, "expected a numeric IPv4 or IPv6 address, got '%s' (%s)",
			      value, rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return -1;
	}
	memset(&l->addr, 0, sizeof(l->addr));
	memcpy(&l->addr, res->ai_addr, res->ai_addrlen);
	l->len = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(l->text, sizeof(l->text), "%s", host);
	return 0;
}

int jp_protected_flag(const char *prog, const char *flag, const char *value, struct jp_listen *l)
{
	static const char *const yes_no[] = {"yes", "no", NULL};
	int i;

	if (jp_flag_choice(prog, flag, value, yes_no, &i) != 0)
		return -1;
	l->protect = i == 0;
	return 0;
}

bool jp_listen_is_loopback(const struct jp_listen *l)
{
	if (l->addr.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&l->addr;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (l->addr.ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)&l->addr)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
	}
	return false;
}

int jp_listen_check(FILE *f, const char *prog, const struct jp_listen *l, const char *open)
{
	if (!open || jp_listen_is_loopback(l))
		return 0;
	if (l->protect) {
		fprintf(f,
			"%s: refusing to listen on %s (not a loopback address) without "
			"authentication: anyone who can reach %s could use %s. Listen on a loopback "
			"address (the default, --bind 127.0.0.1), or give --protected-mode no to "
			"accept the risk (docs/security.md)\n",
			prog, l->text, l->text, open);
		return -1;
	}
	fprintf(f,
		"%s: WARNING: listening on %s with --protected-mode no, without authentication: "
		"anyone who can reach %s can use %s (docs/security.md)\n",
		prog, l->text, l->text, open);
	return 0;
}

void jp_listen_sockaddr(const struct jp_listen *l, unsigned port, struct sockaddr_storage *out,
			socklen_t *len)
{
	memcpy(out, &l->addr, sizeof(*out));
	*len = l->len;
	if (out->ss_family == AF_INET6)
		((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
}

unsigned jp_sockaddr_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return ntohs(((const struct sockaddr_in *)a)->sin_port);
}
