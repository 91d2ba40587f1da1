/*
 * apps/common/flags.c - the shared command-line parser and value checks (flags.h).
 *
 * Owns: the translation of getopt_long's error returns into this project's messages (getopt's
 * own are turned off: opterr = 0), the answers to --help and --version, and the wording of
 * every "expected ..., got '...'" message. libc only: kv-bench and the pthread peers link it
 * without libjiffy.
 */
#define _GNU_SOURCE
#include "flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void vmessage(const char *prog, const char *flag, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s: ", prog, flag);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void jp_flag_error(const char *prog, const char *flag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(prog, flag, fmt, ap);
	va_end(ap);
}

_Noreturn void jp_flags_fail(const struct jp_flags *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(f->prog, f->flag ? f->flag : "(command line)", fmt, ap);
	va_end(ap);
	exit(2);
}

void jp_flags_print_version(FILE *out, const char *prog, const char *version)
{
	fprintf(out, "%s (Jiffy) %s\n", prog, version);
}

void jp_flags_init(struct jp_flags *f, const char *prog, const char *version,
		   void (*usage)(FILE *f), const struct option *opts, const char *shortopts,
		   int argc, char **argv)
{
	memset(f, 0, sizeof(*f));
	f->prog = prog;
	f->version = version;
	f->usage = usage;
	f->opts = opts;
	f->shortopts = shortopts ? shortopts : ":h";
	f->argc = argc;
	f->argv = argv;
	optind = 1;
	opterr = 0; /* the messages are ours */
}

/* "--name" of @arg ("--name=value" or "--name"), in f->flag_buf. */
static const char *long_name(struct jp_flags *f, const char *arg)
{
	size_t n = strcspn(arg, "=");

	if (n > sizeof(f->flag_buf) - 1)
		n = sizeof(f->flag_buf) - 1;
	memcpy(f->flag_buf, arg, n);
	f->flag_buf[n] = '\0';
	return f->flag_buf;
}

/* How many long flags start with @name (without its dashes, @len characters)? The first
 * such flag's name goes to *@first. An exact match counts alone. */
static int prefix_matches(const struct option *opts, const char *name, size_t len,
			  const char **first)
{
	int n = 0;

	*first = NULL;
	for (const struct option *o = opts; o->name; o++) {
		if (strncmp(o->name, name, len) != 0)
			continue;
		if (strlen(o->name) == len) {
			*first = o->name;
			return 1;
		}
		if (!*first)
			*first = o->name;
		n++;
	}
	return n;
}

static const struct option *first_match(const struct option *opts, const char *name, size_t len)
{
	for (const struct option *o = opts; o->name; o++)
		if (strncmp(o->name, name, len) == 0)
			return o;
	return NULL;
}

/* Unknown or ambiguous "--name[=value]": say which, naming the candidates. */
static _Noreturn void bad_long(struct jp_flags *f, const char *arg)
{
	const char *name = long_name(f, arg), *first;
	size_t len = strlen(name + 2);
	int n = prefix_matches(f->opts, name + 2, len, &first);

	f->flag = name;
	if (n < 2)
		jp_flags_fail(f, "unknown flag (see --help)");
	fprintf(stderr, "%s: %s: ambiguous flag, could be", f->prog, name);
	for (const struct option *o = f->opts; o->name; o++)
		if (strncmp(o->name, name + 2, len) == 0)
			fprintf(stderr, "%s --%s", o == first_match(f->opts, name + 2, len) ? "" : ",",
				o->name);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

/* Unknown short option @c from the word @arg ("-x", or "-port": a long flag with one dash). */
static _Noreturn void bad_short(struct jp_flags *f, int c, const char *arg)
{
	const char *first = NULL;

	if (arg && arg[0] == '-' && arg[1] != '-' && strlen(arg) > 2) {
		const char *name = long_name(f, arg);
		if (prefix_matches(f->opts, name + 1, strlen(name + 1), &first) >= 1) {
			f->flag = name;
			jp_flags_fail(f, "unknown flag (long flags take two dashes: --%s)", first);
		}
	}
	snprintf(f->flag_buf, sizeof(f->flag_buf), "-%c", c);
	f->flag = f->flag_buf;
	jp_flags_fail(f, "unknown flag (see --help)");
}

int jp_flags_next(struct jp_flags *f)
{
	int idx = -1;
	int c = getopt_long(f->argc, f->argv, f->shortopts, f->opts, &idx);
	/* the word getopt just read: the next one while it is inside a cluster of short options */
	const char *word = optind > 0 && optind <= f->argc ? f->argv[optind - 1] : NULL;

	if (c == -1) {
		f->flag = NULL;
		return -1;
	}
	if (c == '?' || c == ':') {
		if (optind < f->argc && f->argv[optind][0] == '-' && f->argv[optind][1] != '-' &&
		    optopt > 0 && optopt < 0x100 && strchr(f->argv[optind] + 1, optopt))
			word = f->argv[optind];
		if (word && strncmp(word, "--", 2) == 0) {
			f->flag = long_name(f, word);
			if (c == ':')
				jp_flags_fail(f, "needs a value (see --help)");
			if (optopt != 0) /* a known flag given "=value" */
				jp_flags_fail(f, "takes no value, got '%s'", strchr(word, '=') ?
					      strchr(word, '=') + 1 : "");
			bad_long(f, word);
		}
		if (c == ':') {
			snprintf(f->flag_buf, sizeof(f->flag_buf), "-%c", optopt);
			f->flag = f->flag_buf;
			jp_flags_fail(f, "needs a value (see --help)");
		}
		bad_short(f, optopt, word);
	}
	if (idx >= 0) {
		snprintf(f->flag_buf, sizeof(f->flag_buf), "--%s", f->opts[idx].name);
	} else {
		snprintf(f->flag_buf, sizeof(f->flag_buf), "-%c", c);
	}
	f->flag = f->flag_buf;
	if (c == JP_FLAGS_HELP) {
		f->usage(stdout);
		exit(0);
	}
	if (c == JP_FLAGS_VERSION) {
		jp_flags_print_version(stdout, f->prog, f->version);
		exit(0);
	}
	return c;
}

void jp_flags_no_operands(const struct jp_flags *f)
{
	if (optind < f->argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (this program takes only flags; see "
				"--help)\n", f->prog, f->argv[optind]);
		exit(2);
	}
}

/* --- values ------------------------------------------------------------------------------- */

static bool missing(const char *prog, const char *flag, const char *s)
{
	if (s)
		return false;
	jp_flag_error(prog, flag, "needs a value (see --help)");
	return true;
}

/* @s as an unsigned decimal (no sign, no space); *@end: the first character after it. */
static bool decimal(const char *s, unsigned long long *v, char **end)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno == 0;
}

int jp_flag_uint(const char *prog, const char *flag, const char *s, unsigned long min,
		 unsigned long max, unsigned long *out)
{
	unsigned long long v;
	char *end;

	if (missing(prog, flag, s))
		return -1;
	if (!decimal(s, &v, &end) || *end != '\0' || v < min || v > max) {
		if (max == ULONG_MAX)
			jp_flag_error(prog, flag, "expected an integer >= %lu, got '%s'", min, s);
		else
			jp_flag_error(prog, flag, "expected an integer from %lu to %lu, got '%s'",
				      min, max, s);
		return -1;
	}
	*out = (unsigned long)v;
	return 0;
}

int jp_flag_port(const char *prog, const char *flag, const char *s, unsigned long min,
		 unsigned long *out)
{
	unsigned long long v;
	char *end;

	if (missing(prog, flag, s))
		return -1;
	if (!decimal(s, &v, &end) || *end != '\0' || v < min || v > 65535) {
		jp_flag_error(prog, flag, "expected a port number from %lu to 65535, got '%s'", min,
			      s);
		return -1;
	}
	*out = (unsigned long)v;
	return 0;
}

int jp_flag_bytes(const char *prog, const char *flag, const char *s, unsigned long long min,
		  unsigned long long max, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (missing(prog, flag, s))
		return -1;
	if (!decimal(s, &v, &end))
		goto bad;
	if (*end == 'K' || *end == 'k')
		mul = 1ull << 10, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1ull << 30, end++;
	if (*end != '\0' || v > max / mul || v * mul < min)
		goto bad;
	*out = v * mul;
	return 0;
bad:
	jp_flag_error(prog, flag,
		      "expected a byte count from %llu to %llu (K, M or G: times 1024, 1024^2, "
		      "1024^3), got '%s'", min, max, s);
	return -1;
}

/* @s as a finite real number, nothing after it. */
static bool real(const char *s, double *v)
{
	char *end;

	if (!*s || *s == ' ' || *s == '\t')
		return false;
	errno = 0;
	*v = strtod(s, &end);
	return *end == '\0' && errno == 0 && isfinite(*v);
}

int jp_flag_double(const char *prog, const char *flag, const char *s, double min, double max,
		   double *out)
{
	double v;

	if (missing(prog, flag, s))
		return -1;
	if (!real(s, &v) || v < min || v > max) {
		jp_flag_error(prog, flag, "expected a number from %g to %g, got '%s'", min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

int jp_flag_positive(const char *prog, const char *flag, const char *s, double *out)
{
	double v;

	if (missing(prog, flag, s))
		return -1;
	if (!real(s, &v) || !(v > 0)) {
		jp_flag_error(prog, flag, "expected a number > 0, got '%s'", s);
		return -1;
	}
	*out = v;
	return 0;
}

int jp_flag_choice(const char *prog, const char *flag, const char *s,
		   const char *const *choices, int *out)
{
	int n = 0;

	if (missing(prog, flag, s))
		return -1;
	for (; choices[n]; n++)
		if (strcmp(s, choices[n]) == 0) {
			*out = n;
			return 0;
		}
	fprintf(stderr, "%s: %s: expected ", prog, flag);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
	fprintf(stderr, ", got '%s'\n", s);
	return -1;
}
