/*
 * apps/common/slo_flag.h - request types and their SLOs for the Jiffy servers: the --slo flag
 * and the per-type statistics printed at exit. Shared by jiffy-synth (type = the request's
 * klass byte) and jiffy-kv (type = the request's op).
 *
 * Owns: the syntax of --slo, what it accepts and refuses (with a message naming the flag; the
 * caller exits with status 2, apps/common/flags.h's rule), the table of per-type SLOs, and the
 * per-type counters with their report lines. Nothing here knows Jiffy: the servers copy a
 * type and its SLO into the handler uthread's struct jf_sched_attr (type, slo_ns), which is
 * what the central policy's MQ mode (src/sched/central.c) queues and ranks by.
 *
 *   --slo TYPE=US[,TYPE=US...]   TYPE: a number in [0, 255] or one of the server's names (jiffy-kv:
 *                                the op names); US: whole microseconds in [1, 10000000] (10 s).
 * A type given twice (also as a name and its number, or in two --slo flags) is refused; a type
 * without an SLO gets 0 in attr.slo_ns, which the central policy reads as JIFFY_CENTRAL_SLO_US.
 *
 * Invariant: slo_ns[t] == 0 means "no SLO given for t" (0 is never accepted as a value).
 */
#ifndef JIFFY_APPS_SLO_FLAG_H
#define JIFFY_APPS_SLO_FLAG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JP_SLO_TYPES 256u           /* a type is one byte of the request header */
#define JP_SLO_MAX_US 10000000ul    /* 10 s, the longest SPIN a server accepts */

/* A name a server accepts for a type (jiffy-kv: "get" for 2); a list ends with name == NULL. */
struct jp_slo_name {
	const char *name;
	unsigned type;
};

/* The SLO of each type in ns; 0: none given (the policy's default applies). */
struct jp_slo_table {
	uint64_t slo_ns[JP_SLO_TYPES];
};

/*
 * jp_slo_parse() - add the SLOs of @spec ("TYPE=US[,TYPE=US...]") to @tab. @names: the type
 * names the server accepts besides numbers (NULL: numbers only). On success return 0; on a
 * refusal return -1, leave @tab unchanged and write the reason (without the flag's name) to
 * @err (@errlen bytes, always terminated).
 */
int jp_slo_parse(const char *spec, const struct jp_slo_name *names, struct jp_slo_table *tab,
		 char *err, size_t errlen);

/*
 * jp_slo_flag() - jp_slo_parse() for the command line: on a refusal print
 * "<prog>: <flag>: <reason>, got '<value>'" to stderr (flags.h's style) and return -1 (the
 * caller exits with status 2). @value NULL (the flag was last) is refused with "needs a value".
 */
int jp_slo_flag(const char *prog, const char *flag, const char *value,
		const struct jp_slo_name *names, struct jp_slo_table *tab);

/* Requests per type, and how many of them ran in a uthread that carried the type's tags. */
struct jp_type_counts {
	_Atomic uint64_t requests[JP_SLO_TYPES];
	_Atomic uint64_t tagged[JP_SLO_TYPES];
};

/* Count one request of @type; @tagged: its uthread's attr had type == @type and its SLO. */
void jp_type_count(struct jp_type_counts *c, unsigned type, bool tagged);

/*
 * jp_slo_report() - one line per type that had requests or an SLO, in type order:
 *   "<prog>: <kind> <label>: requests=N tagged=N slo_us=<US|default>"
 * <label> is the type's name from @names if it has one, else its number. Nothing when no type
 * had either.
 */
void jp_slo_report(FILE *f, const char *prog, const char *kind, const struct jp_slo_name *names,
		   const struct jp_slo_table *tab, const struct jp_type_counts *c);

#endif /* JIFFY_APPS_SLO_FLAG_H */
