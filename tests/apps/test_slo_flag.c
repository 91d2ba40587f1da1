/*
 * tests/apps/test_slo_flag.c - the --slo flag of jiffy-synth and jiffy-kv (apps/common/
 * slo_flag.c), without a server: every accepted form gives exactly the SLOs asked for and
 * nothing else; every refused form (garbage, a type or SLO out of range, an SLO of 0, a
 * duplicate, an empty item, a name the server does not know) is refused with a reason that
 * names what is wrong and leaves the table as it was; the command-line wrapper names the flag;
 * the per-type report prints exactly the documented lines. Deterministic, no timing.
 *
 * Registered as apps.slo_flag (label "unit") by apps/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jf_test.h"

#include "proto.h"
#include "slo_flag.h"

static const struct jp_slo_name kv_names[] = {
	{"ping", JP_PING}, {"get", JP_GET}, {"put", JP_PUT}, {"del", JP_DEL}, {"scan", JP_SCAN},
	{NULL, 0},
};

/* @tab holds exactly the (type, us) pairs of @want (n of them) and 0 elsewhere. */
static void expect_table(const struct jp_slo_table *tab, const unsigned (*want)[2], size_t n)
{
	for (unsigned t = 0; t < JP_SLO_TYPES; t++) {
		uint64_t ns = 0;
		for (size_t i = 0; i < n; i++)
			if (want[i][0] == t)
				ns = (uint64_t)want[i][1] * 1000u;
		if (tab->slo_ns[t] != ns) {
			fprintf(stderr, "type %u: slo_ns %llu, expected %llu\n", t,
				(unsigned long long)tab->slo_ns[t], (unsigned long long)ns);
			CHECK(0);
		}
	}
}

static void accepted(const char *spec, const struct jp_slo_name *names, const unsigned (*want)[2],
		     size_t n)
{
	struct jp_slo_table tab = {{0}};
	char err[256] = "";

	if (jp_slo_parse(spec, names, &tab, err, sizeof(err)) != 0) {
		fprintf(stderr, "'%s' refused: %s\n", spec, err);
		CHECK(0);
	}
	expect_table(&tab, want, n);
}

/* @spec is refused with a reason containing @why, and a table already holding 7=70 is kept. */
static void refused(const char *spec, const struct jp_slo_name *names, const char *why)
{
	struct jp_slo_table tab = {{0}};
	static const unsigned keep[][2] = {{7, 70}};
	char err[256] = "";

	tab.slo_ns[7] = 70000;
	if (jp_slo_parse(spec, names, &tab, err, sizeof(err)) == 0) {
		fprintf(stderr, "'%s' accepted\n", spec ? spec : "(null)");
		CHECK(0);
	}
	if (!strstr(err, why)) {
		fprintf(stderr, "'%s': reason '%s' does not say '%s'\n", spec ? spec : "(null)", err, why);
		CHECK(0);
	}
	CHECK(strlen(err) < 200); /* a bad item is quoted in part only */
	expect_table(&tab, keep, 1);
}

static void test_accepted(void)
{
	static const unsigned two[][2] = {{0, 10}, {1, 1000}};
	static const unsigned three[][2] = {{0, 10}, {1, 100}, {2, 1000}};
	static const unsigned edges[][2] = {{255, 10000000}, {0, 1}};
	static const unsigned kv[][2] = {{JP_GET, 20}, {JP_SCAN, 5000}};
	static const unsigned mixed[][2] = {{JP_GET, 1}, {5, 2}, {JP_PING, 3}};
	static const unsigned one[][2] = {{64, 5}};

	accepted("0=10,1=1000", NULL, two, 2);
	accepted("2=1000,0=10,1=100", NULL, three, 3); /* any order */
	accepted("255=10000000,0=1", NULL, edges, 2);  /* the limits */
	accepted("64=5", NULL, one, 1);
	accepted("get=20,scan=5000", kv_names, kv, 2);
	accepted("get=1,5=2,ping=3", kv_names, mixed, 3); /* names and numbers */
	accepted("2=1000,0=10,1=100", kv_names, three, 3); /* numbers with names too */
}

static void test_refused(void)
{
	refused(NULL, NULL, "empty");
	refused("", NULL, "empty");
	refused("x", NULL, "expected TYPE=US");
	refused("10", NULL, "expected TYPE=US");
	refused("0:10", NULL, "expected TYPE=US");
	refused("0=0", NULL, "SLO of 0");
	refused("0=10,1=0", NULL, "SLO of 0");
	refused("256=5", NULL, "out of range");
	refused("99999999999999999999999=5", NULL, "out of range");
	refused("0=10000001", NULL, "[1, 10000000]");
	refused("0=99999999999999999999999", NULL, "[1, 10000000]");
	refused("0=", NULL, "whole microseconds");
	refused("0=1e3", NULL, "whole microseconds");
	refused("0=1.5", NULL, "whole microseconds");
	refused("0=+5", NULL, "whole microseconds");
	refused("0=-5", NULL, "whole microseconds");
	refused("0= 5", NULL, "whole microseconds");
	refused("0=5us", NULL, "whole microseconds");
	refused("1=2=3", NULL, "whole microseconds");
	refused("0=10,0=5", NULL, "twice");
	refused("7=5", NULL, "twice"); /* against what the table already holds (an earlier --slo) */
	refused("get=1,2=3", kv_names, "twice");
	refused("0=10,", NULL, "empty item");
	refused(",0=10", NULL, "empty item");
	refused("0=10,,1=5", NULL, "empty item");
	refused("=5", NULL, "unknown type");
	refused("-1=5", NULL, "unknown type");
	refused("+1=5", NULL, "unknown type");
	refused(" 1=5", NULL, "unknown type");
	refused("get=5", NULL, "unknown type");         /* jiffy-synth has no names */
	refused("GET=5", kv_names, "ping, get, put, del, scan"); /* names are lower case */
	refused("spin=5", kv_names, "unknown type 'spin'");
	/* a long garbage value: refused, the message stays bounded */
	char big[2000];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	refused(big, NULL, "expected TYPE=US");
	big[5] = '=';
	refused(big, NULL, "unknown type");
}

/* Two flags add up; a refused value in between changes nothing. */
static void test_merge(void)
{
	struct jp_slo_table tab = {{0}};
	static const unsigned both[][2] = {{0, 10}, {1, 1000}};
	char err[256];

	CHECK_EQ(jp_slo_parse("0=10", NULL, &tab, err, sizeof(err)), 0);
	CHECK_EQ(jp_slo_parse("1=1000,2=0", NULL, &tab, err, sizeof(err)), -1);
	CHECK_EQ(jp_slo_parse("1=1000", NULL, &tab, err, sizeof(err)), 0);
	expect_table(&tab, both, 2);
	CHECK_EQ(jp_slo_parse("1=5", NULL, &tab, err, sizeof(err)), -1);
	CHECK(strstr(err, "twice") != NULL);
	expect_table(&tab, both, 2);
}

/* Run @fn with stderr sent to a file; return what it wrote (malloc'd). */
static char *capture_stderr(int (*fn)(const char *), const char *arg, int *rc)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	char *out = calloc(1, 4096);

	CHECK(tmp && saved >= 0 && out);
	fflush(stderr);
	CHECK(dup2(fileno(tmp), 2) == 2);
	*rc = fn(arg);
	fflush(stderr);
	CHECK(dup2(saved, 2) == 2);
	close(saved);
	rewind(tmp);
	(void)!fread(out, 1, 4095, tmp);
	fclose(tmp);
	return out;
}

static int flag_synth(const char *v)
{
	static struct jp_slo_table tab;
	return jp_slo_flag("jiffy-synth", "--slo", v, NULL, &tab);
}

static void test_flag_messages(void)
{
	int rc;
	char *msg = capture_stderr(flag_synth, "0=0", &rc);
	CHECK_EQ(rc, -1);
	CHECK(strstr(msg, "jiffy-synth: --slo: ") == msg); /* apps/common/flags.h's style */
	CHECK(strstr(msg, ", got '0=0'\n") != NULL);
	free(msg);
	msg = capture_stderr(flag_synth, NULL, &rc);
	CHECK_EQ(rc, -1);
	CHECK(strstr(msg, "jiffy-synth: --slo: needs a value") == msg);
	free(msg);
	msg = capture_stderr(flag_synth, "0=10,1=1000", &rc);
	CHECK_EQ(rc, 0);
	CHECK_EQ(msg[0], '\0'); /* nothing printed on success */
	free(msg);
}

static void test_report(void)
{
	static struct jp_type_counts c;
	struct jp_slo_table tab = {{0}};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	char err[64];

	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	jp_slo_report(f, "jiffy-kv", "op", kv_names, &tab, &c); /* nothing to say */
	fflush(f);
	CHECK_EQ(len, (size_t)0);

	CHECK_EQ(jp_slo_parse("get=20,scan=5000,200=7", kv_names, &tab, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		jp_type_count(&c, JP_GET, true);
	jp_type_count(&c, JP_GET, false);
	jp_type_count(&c, JP_PUT, true);
	jp_type_count(&c, 9, false);
	jp_slo_report(f, "jiffy-kv", "op", kv_names, &tab, &c);
	fclose(f);
	CHECK(strcmp(buf, "jiffy-kv: op get: requests=4 tagged=3 slo_us=20\n"
			  "jiffy-kv: op put: requests=1 tagged=1 slo_us=default\n"
			  "jiffy-kv: op scan: requests=0 tagged=0 slo_us=5000\n"
			  "jiffy-kv: op 9: requests=1 tagged=0 slo_us=default\n"
			  "jiffy-kv: op 200: requests=0 tagged=0 slo_us=7\n") == 0);
	free(buf);
}

int main(void)
{
	test_accepted();
	test_refused();
	test_merge();
	test_flag_messages();
	test_report();
	printf("apps.slo_flag: ok\n");
	return 0;
}
