/*
 * apps/pfn/bomb.c - pfn-bomb: the decompression-bomb demo of preemptible functions (libinger,
 * ATC'20, §6.3 and Fig. 5; issue 17), with zlib instead of libpng. docs/pfn-bomb.md has the
 * results; scripts/pfn-bomb.py runs it under every mechanism and plots (make demo-bomb).
 *
 * Owns: the measurement. Inputs are made here (zjob.c): a benign payload (web-server log lines,
 * ~2 MiB, compressed ~7:1) and a bomb (1 GiB of zeros in ~1 MiB). Then, in one process:
 *   --alternatives, before jf_run, in plain kernel threads: the decode in a pthread bounded by
 *     pthread_timedjoin_np() and stopped by pthread_cancel() with asynchronous cancellation
 *     (cleanup handler pushed; once more without one, to show what it leaves behind, and once
 *     with deferred cancellation, which inflate never reaches a point of), and in a
 *     child process bounded by sigtimedwait() and stopped by kill(SIGKILL) + waitpid();
 *   under jf_run (JIFFY_PREEMPT picks the mechanism): the benign decode called directly and
 *     under jf_pfn_launch(budget), interleaved; the bomb under jf_pfn_launch(budget), timed from
 *     the call to its JF_PFN_TIMEOUT return, then jf_pfn_cancel() (timed), whose cleanup handler
 *     ends the stream and frees the output; the same at smaller budgets; and with zlib's state in
 *     the launch's arena. Leaks are counted (zlib and output bytes held, mallinfo2).
 * One CSV row per sample (--csv), and a summary on stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>
#include <jiffy/pfn.h>

#include "flags.h"
#include "zjob.h"

static const char *prog = "pfn-bomb";

static struct {
	unsigned reps;
	uint64_t budget_ns;
	unsigned long long benign_bytes;
	unsigned bomb_mib;
	int alternatives;
	int full_bomb;
	uint64_t gap_ns;
	const char *label;
	FILE *csv;
} opt = {
	.reps = 200,
	.budget_ns = 10 * 1000 * 1000,
	.benign_bytes = 2ull << 20,
	.bomb_mib = 1024,
	.label = NULL,
};

static unsigned char *benign, *benign_raw, *bomb;
static size_t benign_len, benign_raw_len, bomb_len;
static int failed;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void row(const char *method, const char *input, uint64_t budget_ns, unsigned rep,
		const char *status, uint64_t elapsed, uint64_t cancel, uint64_t total_out)
{
	if (opt.csv)
		fprintf(opt.csv, "%s,%s,%s,%llu,%u,%s,%llu,%llu,%llu\n", opt.label, method, input,
			(unsigned long long)(budget_ns / 1000), rep, status,
			(unsigned long long)elapsed, (unsigned long long)cancel,
			(unsigned long long)total_out);
}

static void fail(const char *fmt, const char *what)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	failed = 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* "median [p10..p90]" of @n samples, in µs, on stdout. */
static void summary(const char *what, uint64_t *v, unsigned n)
{
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("  %-44s median %9.1f us  [p10 %9.1f, p90 %9.1f, max %9.1f]  n=%u\n", what,
	       v[n / 2] / 1e3, v[n / 10] / 1e3, v[n * 9 / 10] / 1e3, v[n - 1] / 1e3, n);
}

static int64_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (int64_t)(mi.uordblks + mi.hblkhd);
}

/* ---- the alternatives: a pthread, a child process ------------------------------------------ */

static int cleanup_handlers = 1;

static void *pthread_decode(void *arg)
{
	struct zjob *j = arg;
	int old;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	if (cleanup_handlers) {
		pthread_cleanup_push(zjob_cleanup, j);
		zjob_decode(j);
		pthread_cleanup_pop(0);
	} else {
		zjob_decode(j);
	}
	pthread_setcanceltype(old, NULL);
	return j;
}

/* The same decode with the default (deferred) cancellation type and no cleanup handler. */
static void *plain_decode(void *arg)
{
	zjob_decode(arg);
	return arg;
}

static void abs_realtime(struct timespec *ts, uint64_t add_ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(add_ns / 1000000000ull);
	ts->tv_nsec += (long)(add_ns % 1000000000ull);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* One decode in a pthread: returns 1 when it finished within the budget, 0 when it was cancelled. */
static int run_pthread(struct zjob *j, uint64_t *elapsed, uint64_t *cancel)
{
	pthread_t t;
	struct timespec dl;
	void *rv;
	uint64_t t0 = now_ns(), t1;
	int rc;

	abs_realtime(&dl, opt.budget_ns);
	if (pthread_create(&t, NULL, pthread_decode, j)) {
		fail("%s", "pthread_create failed");
		return -1;
	}
	rc = pthread_timedjoin_np(t, &rv, &dl);
	t1 = now_ns();
	*elapsed = t1 - t0;
	*cancel = 0;
	if (rc == 0)
		return 1;
	pthread_cancel(t);
	pthread_join(t, &rv);
	*cancel = now_ns() - t1;
	if (rv != PTHREAD_CANCELED)
		return 1; /* it finished between the timeout and the cancel */
	return 0;
}

struct child_result {
	uint64_t total_out;
	uint32_t crc;
	int zrc;
};

/* One decode in a child process. Returns as run_pthread. */
static int run_fork(const unsigned char *in, size_t len, struct child_result *res,
		    uint64_t *elapsed, uint64_t *cancel)
{
	sigset_t chld;
	uint64_t t0 = now_ns(), dl = t0 + opt.budget_ns, t1;
	pid_t pid;
	int st;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	res->zrc = 0;
	pid = fork();
	if (pid < 0) {
		fail("%s", "fork failed");
		return -1;
	}
	if (pid == 0) {
		struct zjob j;
		zjob_init(&j, in, len, 0, ZJOB_PLAIN, 0);
		zjob_decode(&j);
		res->total_out = j.total_out;
		res->crc = (uint32_t)crc32(0, j.out, (uInt)j.out_len);
		res->zrc = j.zrc;
		_exit(0);
	}
	for (;;) {
		uint64_t now = now_ns();
		struct timespec ts;
		int sig;

		if (now >= dl)
			break;
		ts.tv_sec = (time_t)((dl - now) / 1000000000ull);
		ts.tv_nsec = (long)((dl - now) % 1000000000ull);
		sig = sigtimedwait(&chld, NULL, &ts);
		if (sig == SIGCHLD && waitpid(pid, &st, WNOHANG) == pid) {
			*elapsed = now_ns() - t0;
			*cancel = 0;
			return 1;
		}
		if (sig < 0 && errno == EAGAIN)
			break;
	}
	t1 = now_ns();
	*elapsed = t1 - t0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	*cancel = now_ns() - t1;
	/* the SIGCHLD of the killed child is pending: take it, so the next wait does not see it */
	{
		struct timespec zero = {0, 0};
		sigtimedwait(&chld, NULL, &zero);
	}
	return 0;
}

static void alternatives(void)
{
	unsigned n = opt.reps;
	uint64_t *el = calloc(n, sizeof(*el)), *ca = calloc(n, sizeof(*ca));
	struct child_result *shared;
	int64_t live0 = zjob_live_bytes(), heap0;
	unsigned done;

	printf("alternatives (plain kernel threads, before jf_run), budget %.1f ms:\n",
	       opt.budget_ns / 1e6);
	/* pthread, benign */
	done = 0;
	for (unsigned i = 0; i < n; i++) {
		struct zjob j;
		uint64_t c;
		zjob_init(&j, benign, benign_len, 0, ZJOB_PTHREAD, 0);
		int r = run_pthread(&j, &el[i], &c);
		if (r == 1 && i == 0 && (j.zrc != Z_STREAM_END || j.out_len != benign_raw_len ||
					 memcmp(j.out, benign_raw, benign_raw_len)))
			fail("%s", "pthread: the benign decode differs from the input");
		done += r == 1;
		row("pthread", "benign", opt.budget_ns, i, r == 1 ? "done" : "timeout", el[i], c,
		    j.total_out);
		zjob_release(&j);
	}
	summary("pthread benign (create+decode+join)", el, n);
	if (done != n)
		printf("    (%u of %u did not finish within the budget)\n", n - done, n);
	/* pthread, bomb, async cancel with a cleanup handler */
	heap0 = heap_in_use();
	done = 0;
	for (unsigned i = 0; i < n; i++) {
		struct zjob j;
		zjob_init(&j, bomb, bomb_len, 0, ZJOB_PTHREAD, 0);
		int r = run_pthread(&j, &el[i], &ca[i]);
		done += r == 1;
		if (r == 0 && j.cleanups != 1)
			fail("%s", "pthread: the cleanup handler did not run once");
		row("pthread", "bomb", opt.budget_ns, i, r == 1 ? "done" : "timeout", el[i], ca[i],
		    j.total_out);
		zjob_release(&j);
	}
	summary("pthread bomb: create -> timedjoin ETIMEDOUT", el, n);
	summary("pthread bomb: pthread_cancel + join", ca, n);
	printf("    held after %u cancels: zjob bytes %lld, heap delta %lld B\n", n,
	       (long long)(zjob_live_bytes() - live0), (long long)(heap_in_use() - heap0));
	/* once without a cleanup handler: what pthread_cancel leaves behind */
	{
		struct zjob j;
		uint64_t e, c;
		int64_t before = zjob_live_bytes();
		cleanup_handlers = 0;
		zjob_init(&j, bomb, bomb_len, 0, ZJOB_PTHREAD, 0);
		run_pthread(&j, &e, &c);
		printf("    without a cleanup handler one cancel leaves %lld bytes (zlib state, its "
		       "window and the output) unreachable but for this demo's bookkeeping\n",
		       (long long)(zjob_live_bytes() - before));
		if (opt.csv)
			fprintf(opt.csv, "#leak,pthread-no-cleanup,%lld\n",
				(long long)(zjob_live_bytes() - before));
		zjob_release(&j);
		cleanup_handlers = 1;
	}
	/* once with deferred cancellation (the default type): inflate has no cancellation point */
	{
		struct zjob j;
		pthread_t t;
		struct timespec dl;
		void *rv;
		uint64_t t0, t1;

		zjob_init(&j, bomb, bomb_len, 0, ZJOB_PLAIN, 64u << 20);
		abs_realtime(&dl, opt.budget_ns);
		t0 = now_ns();
		if (pthread_create(&t, NULL, plain_decode, &j) == 0) {
			pthread_timedjoin_np(t, &rv, &dl);
			pthread_cancel(t);
			t1 = now_ns();
			pthread_join(t, &rv);
			printf("    deferred pthread_cancel (no async type): the bomb ran on %.2f s after "
			       "the cancel, to its end (%llu bytes, %s)\n", (now_ns() - t1) / 1e9,
			       (unsigned long long)j.total_out,
			       rv == PTHREAD_CANCELED ? "then cancelled" : "not cancelled");
			row("pthread-deferred", "bomb", opt.budget_ns, 0,
			    rv == PTHREAD_CANCELED ? "timeout" : "done", now_ns() - t0, now_ns() - t1,
			    j.total_out);
		}
		zjob_release(&j);
	}
	/* fork */
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		fail("%s", "mmap failed");
		goto out;
	}
	done = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t c;
		int r = run_fork(benign, benign_len, shared, &el[i], &c);
		if (r == 1 && i == 0 &&
		    (shared->zrc != Z_STREAM_END || shared->total_out != benign_raw_len ||
		     shared->crc != (uint32_t)crc32(0, benign_raw, (uInt)benign_raw_len)))
			fail("%s", "fork: the benign decode differs from the input");
		done += r == 1;
		row("fork", "benign", opt.budget_ns, i, r == 1 ? "done" : "timeout", el[i], c,
		    shared->total_out);
	}
	summary("fork benign (fork+decode+exit+waitpid)", el, n);
	if (done != n)
		printf("    (%u of %u did not finish within the budget)\n", n - done, n);
	for (unsigned i = 0; i < n; i++) {
		int r = run_fork(bomb, bomb_len, shared, &el[i], &ca[i]);
		row("fork", "bomb", opt.budget_ns, i, r == 1 ? "done" : "timeout", el[i], ca[i], 0);
	}
	summary("fork bomb: fork -> sigtimedwait timeout", el, n);
	summary("fork bomb: kill(SIGKILL) + waitpid", ca, n);
	munmap(shared, 4096);
	if (opt.full_bomb) {
		struct zjob j;
		uint64_t t0 = now_ns();
		zjob_init(&j, bomb, bomb_len, 0, ZJOB_PLAIN, 64u << 20);
		zjob_decode(&j);
		uint64_t e = now_ns() - t0;
		printf("  the bomb decoded to its end, unbounded (64 MiB ring): %.2f s, %llu bytes, "
		       "%s\n", e / 1e9, (unsigned long long)j.total_out,
		       j.zrc == Z_STREAM_END ? "stream end" : "ERROR");
		if (j.zrc != Z_STREAM_END || j.total_out != (uint64_t)opt.bomb_mib << 20)
			fail("%s", "the bomb did not decode to its nominal size");
		row("unprotected", "bomb", 0, 0, "done", e, 0, j.total_out);
		zjob_release(&j);
	}
out:
	free(el);
	free(ca);
}

/* ---- under jf_run ----------------------------------------------------------------------------- */

/* The bomb under launch at @budget, @n times, then cancel. */
static void bomb_launch(uint64_t budget, unsigned n, int arena, const char *method)
{
	uint64_t *el = calloc(n, sizeof(*el)), *ca = calloc(n, sizeof(*ca));
	uint64_t *over = calloc(n, sizeof(*over));
	unsigned nt = 0;
	char what[96];

	for (unsigned i = 0; i < n; i++) {
		struct zjob j;
		jf_pfn_t *cont = NULL;
		void *rv;
		uint64_t t0, t1, t2;
		int rc;

		zjob_init(&j, bomb, bomb_len, 0, ZJOB_PFN, 0);
		j.arena = arena;
		if (opt.gap_ns)
			jf_sleep_ns(opt.gap_ns);
		t0 = now_ns();
		rc = jf_pfn_launch(zjob_decode_pfn, &j, budget, &rv, &cont);
		t1 = now_ns();
		if (rc != JF_PFN_TIMEOUT) {
			fprintf(stderr, "%s: bomb under launch: %d, not JF_PFN_TIMEOUT\n", prog, rc);
			failed = 1;
			if (rc == JF_PFN_DONE)
				zjob_release(&j);
			continue;
		}
		uint64_t got = j.total_out;
		t2 = now_ns();
		rc = jf_pfn_cancel(cont);
		ca[nt] = now_ns() - t2;
		if (rc != 0 || j.cleanups > 1 || (j.pushed && j.cleanups != 1) || j.out) {
			fprintf(stderr, "%s: cancel: %d, cleanup ran %d times\n", prog, rc, j.cleanups);
			failed = 1;
		}
		el[nt] = t1 - t0;
		over[nt] = el[nt] > budget ? el[nt] - budget : 0;
		nt++;
		row(method, "bomb", budget, i, "timeout", t1 - t0, ca[nt - 1], got);
	}
	snprintf(what, sizeof(what), "%s bomb %6.2f ms: launch -> TIMEOUT", method, budget / 1e6);
	summary(what, el, nt);
	snprintf(what, sizeof(what), "%s bomb %6.2f ms: overshoot", method, budget / 1e6);
	summary(what, over, nt);
	snprintf(what, sizeof(what), "%s bomb %6.2f ms: jf_pfn_cancel", method, budget / 1e6);
	summary(what, ca, nt);
	free(el);
	free(ca);
	free(over);
}

static void *app_main(void *arg)
{
	unsigned n = opt.reps;
	uint64_t *d = calloc(n, sizeof(*d)), *l = calloc(n, sizeof(*l));
	int64_t live0 = zjob_live_bytes(), heap0;
	unsigned resumed = 0;
	(void)arg;

	printf("under jf_run: mechanism %s, budget %.1f ms:\n", jf_preempt_mechanism(),
	       opt.budget_ns / 1e6);
	/* benign: direct and launched, interleaved (which goes first alternates) */
	for (unsigned i = 0; i < n + 5; i++) {
		for (int k = 0; k < 2; k++) {
			int launched = (k + (int)i) & 1;
			struct zjob j;
			uint64_t t0, e;
			zjob_init(&j, benign, benign_len, 0, launched ? ZJOB_PFN : ZJOB_PLAIN, 0);
			t0 = now_ns();
			if (launched) {
				jf_pfn_t *cont = NULL;
				void *rv;
				int rc = jf_pfn_launch(zjob_decode_pfn, &j, opt.budget_ns, &rv, &cont);
				while (rc == JF_PFN_TIMEOUT || rc == JF_PFN_PAUSED) {
					resumed++;
					rc = jf_pfn_resume(cont, opt.budget_ns, &rv);
				}
				if (rc != JF_PFN_DONE) {
					fprintf(stderr, "%s: benign launch: %d\n", prog, rc);
					failed = 1;
				}
			} else {
				zjob_decode(&j);
			}
			e = now_ns() - t0;
			if (j.zrc != Z_STREAM_END || j.out_len != benign_raw_len ||
			    (i == 0 && memcmp(j.out, benign_raw, benign_raw_len))) {
				fail("%s", "the benign decode differs from the input");
			}
			if (i >= 5) { /* the first 5 warm up */
				(launched ? l : d)[i - 5] = e;
				row(launched ? "launch" : "direct", "benign",
				    launched ? opt.budget_ns : 0, i - 5, "done", e, 0, j.total_out);
			}
			zjob_release(&j);
		}
	}
	{
		uint64_t *ds = malloc(n * sizeof(*ds)), *ls = malloc(n * sizeof(*ls));
		memcpy(ds, d, n * sizeof(*ds));
		memcpy(ls, l, n * sizeof(*ls));
		qsort(ds, n, sizeof(*ds), cmp_u64);
		qsort(ls, n, sizeof(*ls), cmp_u64);
		summary("direct benign (decode)", d, n);
		summary("launch benign (launch+decode)", l, n);
		printf("    launch - direct: median %+.1f us (%+.2f %%)%s\n",
		       ((double)ls[n / 2] - (double)ds[n / 2]) / 1e3,
		       100.0 * ((double)ls[n / 2] - (double)ds[n / 2]) / (double)ds[n / 2],
		       resumed ? " (some launches timed out and were resumed)" : "");
		if (resumed)
			printf("    %u timeouts+resumes on the benign input\n", resumed);
		free(ds);
		free(ls);
	}
	/* the bomb */
	heap0 = heap_in_use();
	bomb_launch(opt.budget_ns, n, 0, "launch");
	bomb_launch(opt.budget_ns / 10, n, 0, "launch");
	bomb_launch(opt.budget_ns / 100, n, 0, "launch");
	bomb_launch(opt.budget_ns, n / 4 ? n / 4 : 1, 1, "launch-arena");
	printf("    held after the cancels: zjob bytes %lld, heap delta %lld B, zlib allocations "
	       "freed by the handler rather than zlib: %llu\n",
	       (long long)(zjob_live_bytes() - live0), (long long)(heap_in_use() - heap0),
	       (unsigned long long)zjob_rescued());
	if (opt.csv)
		fprintf(opt.csv, "#leak,%s,%lld,%lld,%llu\n", opt.label,
			(long long)(zjob_live_bytes() - live0), (long long)(heap_in_use() - heap0),
			(unsigned long long)zjob_rescued());
	if (zjob_live_bytes() != live0)
		fail("%s", "zjob bytes are still held after the cancels (a leak)");
	free(d);
	free(l);
	return NULL;
}

/* ---- main ----------------------------------------------------------------------------------- */

enum { F_REPS = 0x100, F_BUDGET, F_BENIGN, F_BOMB, F_ALT, F_FULL, F_CSV, F_LABEL, F_GAP };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"The decompression-bomb demo of preemptible functions (docs/pfn-bomb.md): zlib decodes\n"
		"under jf_pfn_launch() with a budget, against a pthread + pthread_cancel and fork + kill.\n"
		"JIFFY_PREEMPT picks the preemption mechanism (jf_run reads the environment).\n"
		"  --reps N             samples per measurement (default 200)\n"
		"  --budget-us US       the budget (default 10000, libinger's 10 ms); the bomb is also\n"
		"                       run at a tenth and a hundredth of it\n"
		"  --benign-bytes SIZE  the benign payload's decoded size (default 2M)\n"
		"  --bomb-mib N         the bomb's decoded size in MiB (default 1024)\n"
		"  --alternatives       also the pthread and fork alternatives (before jf_run)\n"
		"  --full-bomb          also decode the bomb once to its end, unprotected\n"
		"  --gap-us US          sleep this long before each launch of the bomb (default 0:\n"
		"                       back to back, so a budget timer left armed by the previous\n"
		"                       launch may fire inside the next one)\n"
		"  --csv FILE           append one row per sample to FILE\n"
		"  --label NAME         the first CSV column (default: the mechanism)\n" JP_FLAGS_STD_USAGE,
		prog);
}

static const struct option options[] = {
	{"reps", required_argument, NULL, F_REPS},
	{"budget-us", required_argument, NULL, F_BUDGET},
	{"benign-bytes", required_argument, NULL, F_BENIGN},
	{"bomb-mib", required_argument, NULL, F_BOMB},
	{"alternatives", no_argument, NULL, F_ALT},
	{"full-bomb", no_argument, NULL, F_FULL},
	{"csv", required_argument, NULL, F_CSV},
	{"label", required_argument, NULL, F_LABEL},
	{"gap-us", required_argument, NULL, F_GAP},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	struct jp_flags fl;
	unsigned long v;
	const char *csv = NULL;
	sigset_t chld;
	int c, rc;

	jp_flags_init(&fl, prog, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		switch (c) {
		case F_REPS:
			if (jp_flag_uint(prog, fl.flag, optarg, 10, 100000, &v))
				exit(2);
			opt.reps = (unsigned)v;
			break;
		case F_BUDGET:
			if (jp_flag_uint(prog, fl.flag, optarg, 100, 10000000, &v))
				exit(2);
			opt.budget_ns = (uint64_t)v * 1000;
			break;
		case F_BENIGN:
			if (jp_flag_bytes(prog, fl.flag, optarg, 4096, 1ull << 30, &opt.benign_bytes))
				exit(2);
			break;
		case F_BOMB:
			if (jp_flag_uint(prog, fl.flag, optarg, 2, 4096, &v))
				exit(2);
			opt.bomb_mib = (unsigned)v;
			break;
		case F_ALT:
			opt.alternatives = 1;
			break;
		case F_FULL:
			opt.full_bomb = 1;
			break;
		case F_CSV:
			csv = optarg;
			break;
		case F_LABEL:
			opt.label = optarg;
			break;
		case F_GAP:
			if (jp_flag_uint(prog, fl.flag, optarg, 0, 1000000, &v))
				exit(2);
			opt.gap_ns = (uint64_t)v * 1000;
			break;
		}
	}
	jp_flags_no_operands(&fl);
	if (csv && !(opt.csv = fopen(csv, "a"))) {
		perror(csv);
		return 1;
	}
	if (!opt.label) {
		const char *m = getenv("JIFFY_PREEMPT");
		opt.label = m && *m ? m : "auto";
	}
	/* SIGCHLD is taken with sigtimedwait (the fork alternative): blocked in every thread */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, NULL);

	if (zjob_make_benign(opt.benign_bytes, &benign, &benign_len, &benign_raw, &benign_raw_len) ||
	    zjob_make_bomb(opt.bomb_mib, &bomb, &bomb_len, NULL)) {
		perror("pfn-bomb: making the inputs");
		return 1;
	}
	printf("inputs: benign %zu bytes -> %zu (%.1f:1); bomb %zu bytes -> %u MiB (%.0f:1)\n",
	       benign_len, benign_raw_len, (double)benign_raw_len / (double)benign_len, bomb_len,
	       opt.bomb_mib, (double)opt.bomb_mib * 1048576.0 / (double)bomb_len);
	if (opt.alternatives)
		alternatives();
	fflush(stdout);
	rc = jf_run(NULL, app_main, NULL, NULL);
	if (rc) {
		fprintf(stderr, "%s: jf_run: %s\n", prog, strerror(-rc));
		return 1;
	}
	if (opt.csv)
		fclose(opt.csv);
	free(benign);
	free(benign_raw);
	free(bomb);
	return failed ? 1 : 0;
}
