/*
 * apps/common/flags.h - the command line of Jiffy's C programs: jiffy-kv, jiffy-synth, kv-bench,
 * the pthread peers (kv-pthread, synth-pthread), jiffy-sim, jiffy-calibrate, and the benchmarks
 * that take options (preempt_bench, schbench). Code: flags.c, which needs nothing but libc, so
 * programs that do not link libjiffy use it too.
 *
 * Owns: how options are read and what every program answers to its command line.
 *   - getopt_long: `--flag value` and `--flag=value`, an unambiguous prefix of a long flag
 *     (`--max-in` for `--max-inflight`), `-h`, flags and operands in any order.
 *   - `-h`/`--help`: the usage text on stdout, exit status 0.
 *   - `--version`: "<prog> (Jiffy) MAJOR.MINOR.PATCH" on stdout, exit status 0. Programs linked
 *     with libjiffy pass jf_version(NULL); the others JIFFY_VERSION (<jiffy/jiffy.h>).
 *   - Usage errors: one line "<prog>: <flag>: <problem>" on stderr and exit status 2: an
 *     unknown or ambiguous flag, a missing value, a value given to a flag that takes none, a bad
 *     value (what was expected and what was given: "jiffy-kv: --port: expected a port number
 *     from 0 to 65535, got 'x'"), an argument where none is taken.
 * The value parsers (jp_flag_*) print the message and return -1; their callers exit with status
 * 2 (jp_flags_fail() prints and exits in one call). Nothing is silently clamped or ignored.
 */
#ifndef JIFFY_APPS_FLAGS_H
#define JIFFY_APPS_FLAGS_H

#include <getopt.h>
#include <stdio.h>

/* The val of --help (also -h) and of --version in a struct option table. */
#define JP_FLAGS_HELP 'h'
#define JP_FLAGS_VERSION 0x7e01

/* The two entries every program's table has (put them before the terminating {0}). */
#define JP_FLAGS_STD_OPTIONS                                                                       \
	{"help", no_argument, NULL, JP_FLAGS_HELP}, {"version", no_argument, NULL, JP_FLAGS_VERSION}

/* Their lines in a usage text. */
#define JP_FLAGS_STD_USAGE                                                                         \
	"  -h, --help        this text\n"                                                           \
	"  --version         the program's name and the Jiffy version it belongs to\n"

/* The state of one command line's parse (one per process: getopt_long's is global). */
struct jp_flags {
	const char *prog;            /* the first word of every message */
	const char *version;         /* the Jiffy version --version prints */
	void (*usage)(FILE *f);      /* writes the usage text */
	const struct option *opts;   /* the long flags, ending with an all-zero entry */
	const char *shortopts;       /* getopt's short options, ':' first (":h" by default) */
	int argc;
	char **argv;
	const char *flag;            /* the flag jp_flags_next() returned: "--port", "-v" */
	char flag_buf[64];
};

/*
 * jp_flags_init() - prepare to parse @argc/@argv. @opts must contain JP_FLAGS_STD_OPTIONS;
 * @shortopts: NULL for ":h", else getopt's string starting with ':' (e.g. ":hv").
 */
void jp_flags_init(struct jp_flags *f, const char *prog, const char *version,
		   void (*usage)(FILE *f), const struct option *opts, const char *shortopts,
		   int argc, char **argv);

/*
 * jp_flags_next() - the next flag: its val from @opts (or its short option character), with
 * f->flag its name as "--long" or "-c" and optarg its value (NULL for a flag without one); -1
 * after the last flag, when the operands (arguments that are not flags) are argv[optind..argc).
 * --help and --version are answered here (exit 0), and usage errors end the process (exit 2).
 */
int jp_flags_next(struct jp_flags *f);

/* jp_flags_no_operands() - after the last flag: exit 2 naming the first operand, if any. */
void jp_flags_no_operands(const struct jp_flags *f);

/* jp_flags_fail() - "<prog>: <f->flag>: <message>" on stderr, then exit(2). */
_Noreturn void jp_flags_fail(const struct jp_flags *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* jp_flag_error() - "<prog>: <flag>: <message>" on stderr (the caller exits 2). */
void jp_flag_error(const char *prog, const char *flag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* jp_flags_print_version() - "<prog> (Jiffy) <version>" and a newline on @out. */
void jp_flags_print_version(FILE *out, const char *prog, const char *version);

/*
 * The value parsers: each checks @s as the value of @flag, stores it in *@out and returns 0, or
 * prints "<prog>: <flag>: expected ..., got '<s>'" and returns -1 (leaving *@out alone). A
 * NULL @s is "needs a value". Numbers are decimal, without sign or surrounding space.
 */

/* An integer in [@min, @max] (@max ULONG_MAX: no upper bound). */
int jp_flag_uint(const char *prog, const char *flag, const char *s, unsigned long min,
		 unsigned long max, unsigned long *out);

/* A UDP/TCP port in [@min, 65535] (@min 0: "any free port" is the caller's meaning of 0). */
int jp_flag_port(const char *prog, const char *flag, const char *s, unsigned long min,
		 unsigned long *out);

/* A byte count with an optional K, M or G suffix (powers of 1024), in [@min, @max]. */
int jp_flag_bytes(const char *prog, const char *flag, const char *s, unsigned long long min,
		  unsigned long long max, unsigned long long *out);

/* A finite real number in [@min, @max] (strtod's syntax: 1.5, 2e3). */
int jp_flag_double(const char *prog, const char *flag, const char *s, double min, double max,
		   double *out);

/* A finite real number > 0. */
int jp_flag_positive(const char *prog, const char *flag, const char *s, double *out);

/*
 * One of the words @choices (NULL-terminated): *@out is its index. The message lists them:
 * "expected spawn or inline, got 'x'".
 */
int jp_flag_choice(const char *prog, const char *flag, const char *s,
		   const char *const *choices, int *out);

#endif /* JIFFY_APPS_FLAGS_H */
