/*
 * apps/kv/kv_bench.c - kv-bench: what a GET and a SCAN of n keys cost inside the server, i.e. the
 * service times jiffy-kv's GET/SCAN experiments see, measured in-process on the same store
 * (kvstore.c, same options and preload) without any network or scheduler in the way.
 *
 * Owns: nothing but this measurement. Usage (usage() below; flags parsed by apps/common/flags.c):
 *   kv-bench [--keys N] [--value-size B] [--iters N] [--scan n[,n...]] [--db PATH]
 * Prints, per operation, the mean, median and 99th percentile over --iters calls (uniformly
 * random keys; SCANs start at a random key at least n keys before the end).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* kv-bench does not link libjiffy: the header only for JIFFY_VERSION, glibc's errno kept. */
#define JIFFY_NO_ERRNO_MACRO
#include <jiffy/jiffy.h>

#include "flags.h"
#include "kvstore.h"
#include "../common/proto.h"

static const char *prog = "kv-bench";

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t)(rng % n) : 0;
}

static void report(const char *what, uint64_t *t, unsigned n)
{
	double sum = 0;
	qsort(t, n, sizeof(*t), cmp_u64);
	for (unsigned i = 0; i < n; i++)
		sum += (double)t[i];
	printf("%-12s mean %9.2f us  p50 %9.2f us  p99 %9.2f us  (%u calls)\n", what,
	       sum / n / 1000.0, t[n / 2] / 1000.0, t[(size_t)n * 99 / 100] / 1000.0, n);
}

static void sink_value(void *ctx, const char *val, size_t vlen)
{
	*(size_t *)ctx += vlen + (vlen ? (unsigned char)val[0] : 0);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--keys N] [--value-size B] [--iters N] [--scan n[,n...]] [--db PATH]\n"
		"What a GET and a SCAN of n keys cost in-process on jiffy-kv's store (no network,\n"
		"no scheduler): mean, median and 99th percentile per operation.\n"
		"  --keys N          preload key%%012u for i < N (default 100000)\n"
		"  --value-size B    bytes per preloaded value (default 64, max %u)\n"
		"  --iters N         GETs timed (default 5000; SCANs of >= 1000 keys: N/10)\n"
		"  --scan n[,n...]   SCAN lengths to time (default 10,100,1000,2000,5000,10000;\n"
		"                    lengths over --keys are left out)\n"
		"  --db PATH         RocksDB directory, kept (default: a scratch directory in\n"
		"                    /dev/shm, removed at exit)\n"
		JP_FLAGS_STD_USAGE,
		prog, JP_MAX_VALUE);
}

enum { F_KEYS = 0x100, F_VALUE_SIZE, F_ITERS, F_SCAN, F_DB };

static const struct option options[] = {
	{"keys", required_argument, NULL, F_KEYS},
	{"value-size", required_argument, NULL, F_VALUE_SIZE},
	{"iters", required_argument, NULL, F_ITERS},
	{"scan", required_argument, NULL, F_SCAN},
	{"db", required_argument, NULL, F_DB},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

/* --scan: comma-separated lengths, each in [1, 100000000]. */
static void check_scans(const struct jp_flags *fl, const char *v)
{
	char *list = strdup(v), *save = NULL;
	unsigned long n;
	int items = 0;

	if (!list) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save), items++)
		if (jp_flag_uint(prog, fl->flag, tok, 1, 100000000, &n) != 0) {
			free(list);
			exit(2);
		}
	free(list);
	if (items == 0)
		jp_flags_fail(fl, "expected SCAN lengths n[,n...], got '%s'", v);
}

int main(int argc, char **argv)
{
	unsigned long keys = 100000, vsize = 64, iters = 5000;
	const char *scans = "10,100,1000,2000,5000,10000";
	const char *db = NULL;
	struct jp_flags fl;
	int c;

	jp_flags_init(&fl, prog, JIFFY_VERSION, usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		const char *a = fl.flag, *v = optarg;
		int bad = 0;
		switch (c) {
		case F_KEYS:
			bad = jp_flag_uint(prog, a, v, 1, 100000000, &keys);
			break;
		case F_VALUE_SIZE:
			bad = jp_flag_uint(prog, a, v, 1, JP_MAX_VALUE, &vsize);
			break;
		case F_ITERS:
			bad = jp_flag_uint(prog, a, v, 1, 10000000, &iters);
			break;
		case F_SCAN:
			check_scans(&fl, v);
			scans = v;
			break;
		case F_DB:
			if (!*v)
				jp_flags_fail(&fl, "expected a directory, got ''");
			db = v;
			break;
		}
		if (bad)
			return 2;
	}
	jp_flags_no_operands(&fl);
	struct kvstore_opts o;
	char *err = NULL;
	kvstore_opts_default(&o);
	o.keys = (uint32_t)keys;
	o.value_size = (uint32_t)vsize;
	o.path = db;
	uint64_t t0 = now_ns();
	struct kvstore *kv = kvstore_open(&o, &err);
	if (!kv) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	printf("open+preload+compact: %.1f ms\n", (now_ns() - t0) / 1e6);
	uint64_t *t = malloc(sizeof(*t) * iters);
	char key[JP_KEY_LEN + 1];
	size_t sink = 0;

	for (unsigned w = 0; w < 2; w++) { /* first pass: warm-up, not reported */
		for (unsigned i = 0; i < iters; i++) {
			size_t kl = kvstore_key(key, rnd((uint32_t)keys));
			uint64_t s = now_ns();
			if (kvstore_get(kv, key, kl, sink_value, &sink, &err) != 1) {
				fprintf(stderr, "%s: GET %s failed\n", prog, key);
				return 1;
			}
			t[i] = now_ns() - s;
		}
	}
	report("GET", t, (unsigned)iters);

	char *list = strdup(scans);
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		unsigned long n = strtoul(tok, NULL, 10);
		if (n == 0 || n > keys)
			continue;
		unsigned calls = (unsigned)(n >= 1000 ? iters / 10 : iters);
		if (calls < 50)
			calls = 50;
		if (calls > iters)
			calls = (unsigned)iters;
		for (unsigned i = 0; i < calls; i++) {
			size_t kl = kvstore_key(key, rnd((uint32_t)(keys - n + 1)));
			uint64_t s = now_ns();
			int64_t v = kvstore_scan(kv, key, kl, n, NULL, NULL, &err);
			t[i] = now_ns() - s;
			if (v != (int64_t)n) {
				fprintf(stderr, "%s: SCAN %lu visited %lld\n", prog, n, (long long)v);
				return 1;
			}
		}
		char what[32];
		snprintf(what, sizeof(what), "SCAN %lu", n);
		report(what, t, calls);
	}
	free(list);
	free(t);
	kvstore_close(kv);
	return sink == 42 ? 3 : 0;
}
