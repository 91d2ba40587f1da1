/*
 * tools/jiffy-calibrate.c - measure what preemption costs on this machine and recommend a
 * quantum for every mechanism.
 *
 * Owns: the calibration run and its two outputs: a table on stdout and, with --out FILE, a JSON
 * file (format below) that other programs (the simulator's "measured" cost preset) read.
 *
 * What it runs (the workload of bench/preempt_bench part "slowdown", shorter): 2 uthreads on one
 * pinned worker, each computing a fixed number of ~1 us chunks with jf_safepoint() after each,
 * once with mechanism "none" and once per available mechanism and quantum (1000, 200, 100, 50,
 * 20, 10, 5 us), best of N runs, interleaved so that drift hits every mechanism alike:
 *   slowdown(q)   = T_mech(q) / T_none - 1
 *   receiver cost = least-squares slope of (T_mech(q) - T_none) against the preemptions counted
 *                   (jf_stats_total().preempts), over the quanta
 *   sender cost   = timer thread CPU time / (signals + flags), over the same runs (mechanisms with
 *                   a timer thread; a thread that busy-polls shows its polling here)
 *   recommended quantum = the smallest quantum whose slowdown, and that of every larger quantum,
 *                   is <= --max-slowdown (default 5 %).
 * It also measures the raw costs the signal mechanisms are built on (signal to self, a signal to
 * a thread spinning on another CPU, a per-thread POSIX timer expiry, timer_settime).
 *
 * Mechanisms: timer, dispatcher, safepoint, hybrid, uintr, and "<name>+spin" for those with a timer
 * thread: the same with JIFFY_TIMER_SPIN=1 (the thread spins on a CPU of its own).
 *
 * JSON (--out): {"format": "jiffy-calibrate/1", "jiffy_version", "date", "machine": {...},
 *   "method": {...}, "raw": {...}, "mechanisms": {"<name>": {"mechanism": str (the JIFFY_PREEMPT
 *   value), "timer_spin": bool, "available": bool, "why": str|null,
 *   "failed": str|null, "crashed_runs": int, "crash": str|null,
 *   "cost_ns": {"receiver": num|null, "sender": num|null},
 *   "slowdown_pct": {"<quantum_us>": num|null, ...}, "preempts_per_s": {...},
 *   "recommended_quantum_us": num|null}, ...}}. Times are ns, quanta us, slowdowns percent.
 *
 * T is the CPU time of the worker's kernel thread over the run (the computing, the signal
 * handling and the switches; not what other processes on the machine take), or with --wall the
 * wall time; the raw receivers are timed the same way.
 *
 * Usage: jiffy-calibrate [--quick] [--out FILE] [--max-slowdown PCT] [--reps N] [--wall]
 * (read by apps/common/flags.c, the parser of every Jiffy program: --help, --version, exit 2 on
 * a usage error).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jiffy/jiffy.h>

#include "flags.h"
#include "preempt_harness.h"
#include "../src/common/json_out.h"

#define NQ 7
static const uint64_t quanta_us[NQ] = {1000, 200, 100, 50, 20, 10, 5};

/* "+spin": the timer thread spins on a CPU of its own (JIFFY_TIMER_SPIN=1) instead of sleeping. */
static const char *const mech_names[] = {
	"timer", "dispatcher", "dispatcher+spin", "safepoint", "safepoint+spin",
	"deadline", "hybrid", "hybrid+spin", "uintr",
};
#define NMECH (sizeof(mech_names) / sizeof(mech_names[0]))

struct mech_result {
	const char *name;
	int available;
	char why[200];
	int failed; /* hung, or refused by jf_run: skipped from then on */
	char fail_why[200];
	int crashes; /* crashed runs (the mechanism still runs at other quanta) */
	char crash_why[240];
	struct ph_run_res best[NQ];
	double slowdown[NQ], preempts_per_s[NQ];
	double receiver_ns, sender_ns;
	int recommended; /* index into quanta_us, -1 none */
};

static struct {
	int quick, reps, wall;
	double max_slowdown;
	const char *out;
	uint64_t chunks, chunk_iters;
	double chunk_ns;
} opt = {.max_slowdown = 5.0, .chunk_ns = 1000};

static struct mech_result res[NMECH];
static uint64_t t_none = UINT64_MAX;
static char none_fail[200];

static struct {
	double self_ns, getpid_ns, settime_ns;
	struct ph_xcpu x;
	struct ph_ptimer pt;
} raw;

/* T of a run: the worker's CPU time (other processes do not count), or with --wall wall time. */
static uint64_t T(const struct ph_run_res *r)
{
	return opt.wall ? r->wall_ns : r->worker_cpu_ns;
}

static int run_one(const char *mech, uint64_t q_us, struct ph_run_res *r)
{
	struct ph_run_cfg c = {
		.mech = mech,
		.quantum_ns = q_us * 1000u,
		.safepoints = 1,
		.nthreads = 2,
		.chunks = opt.chunks,
		.chunk_iters = opt.chunk_iters,
		.timeout_s = 30,
	};
	return ph_run(&c, r);
}

static void measure(void)
{
	struct ph_run_res r;
	int reps = opt.reps ? opt.reps : (opt.quick ? 3 : 5);

	for (int qi = 0; qi < NQ; qi++) {
		for (int k = 0; k < reps; k++) {
			if (run_one("none", 100, &r) == 0) {
				if (T(&r) < t_none)
					t_none = T(&r);
			} else if (!none_fail[0]) {
				snprintf(none_fail, sizeof(none_fail), "%s", r.why);
			}
			for (size_t i = 0; i < NMECH; i++) {
				struct mech_result *m = &res[i];
				if (!m->available || m->failed)
					continue;
				if (run_one(m->name, quanta_us[qi], &r) != 0) {
					if (strncmp(r.why, "crashed", 7) == 0) {
						if (!m->crashes++)
							snprintf(m->crash_why, sizeof(m->crash_why),
								 "%s (first at %" PRIu64 " us)", r.why,
								 quanta_us[qi]);
					} else {
						m->failed = 1;
						snprintf(m->fail_why, sizeof(m->fail_why), "%s", r.why);
					}
					fprintf(stderr, "jiffy-calibrate: %s at %" PRIu64 " us: %s\n",
						m->name, quanta_us[qi], r.why);
					continue;
				}
				if (!m->best[qi].ok || T(&r) < T(&m->best[qi]))
					m->best[qi] = r;
			}
		}
		fprintf(stderr, "jiffy-calibrate: quantum %" PRIu64 " us done\n", quanta_us[qi]);
	}
}

static void analyse(void)
{
	for (size_t i = 0; i < NMECH; i++) {
		struct mech_result *m = &res[i];
		double sxy = 0, sxx = 0, cpu = 0, req = 0;
		m->receiver_ns = m->sender_ns = NAN;
		m->recommended = -1;
		for (int qi = 0; qi < NQ; qi++) {
			const struct ph_run_res *b = &m->best[qi];
			m->slowdown[qi] = m->preempts_per_s[qi] = NAN;
			if (!b->ok || t_none == UINT64_MAX)
				continue;
			double dt = (double)T(b) - (double)t_none, p = (double)b->st.preempts;
			m->slowdown[qi] = 100.0 * dt / (double)t_none;
			m->preempts_per_s[qi] = p * 1e9 / (double)T(b);
			sxy += dt * p;
			sxx += p * p;
			cpu += (double)b->timer_cpu_ns;
			req += (double)(b->signals_sent + b->flags_set);
		}
		if (sxx > 0)
			m->receiver_ns = sxy / sxx;
		if (cpu > 0 && req > 0)
			m->sender_ns = cpu / req;
		/* Smallest quantum such that it and every larger one stay within the tolerance. */
		for (int qi = 0; qi < NQ; qi++) {
			if (isnan(m->slowdown[qi]) || m->slowdown[qi] > opt.max_slowdown)
				break;
			m->recommended = qi;
		}
	}
}

/* ---- output ------------------------------------------------------------------------------- */

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

static int write_json(const char *path, const struct ph_machine *mach, double busy)
{
	FILE *f = fopen(path, "w");
	char date[64];
	time_t now = time(NULL);
	struct tm tm;

	if (!f) {
		fprintf(stderr, "jiffy-calibrate: %s: %s\n", path, strerror(errno));
		return -1;
	}
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "{\n  \"format\": \"jiffy-calibrate/1\",\n  \"jiffy_version\": ");
	jf_json_str(f, JIFFY_VERSION);
	fprintf(f, ",\n  \"date\": \"%s\",\n", date);
	fprintf(f, "  \"machine\": {\"cpus\": %d, \"cpu_model\": ", mach->ncpus);
	jf_json_str(f, mach->cpu_model);
	fprintf(f, ", \"kernel\": ");
	jf_json_str(f, mach->kernel);
	fprintf(f, ", \"hypervisor\": ");
	jf_json_str(f, mach->hypervisor);
	fprintf(f, ", \"clock_source\": ");
	jf_json_str(f, mach->clock);
	fprintf(f, ", \"tsc_hz\": %" PRIu64 ", \"loadavg_1min\": ", mach->tsc_hz);
	json_num(f, mach->loadavg1);
	fprintf(f, ", \"busy_cpus_before\": ");
	json_num(f, busy);
	fprintf(f, "},\n");
	fprintf(f, "  \"method\": {\"uthreads\": 2, \"workers\": 1, \"chunk_ns\": ");
	json_num(f, opt.chunk_ns);
	fprintf(f, ", \"chunks_per_uthread\": %" PRIu64 ", \"safepoint_every_chunk\": true, "
		   "\"reps\": %d, \"statistic\": \"best of reps\", \"time_base\": \"%s\", "
		   "\"t_none_ns\": ",
		opt.chunks, opt.reps ? opt.reps : (opt.quick ? 3 : 5),
		opt.wall ? "wall" : "worker_cpu");
	json_num(f, t_none == UINT64_MAX ? NAN : (double)t_none);
	if (ph_grace_ns() == JF_GRACE_DEFAULT)
		fprintf(f, ", \"grace_ns\": null, \"max_slowdown_pct\": ");
	else
		fprintf(f, ", \"grace_ns\": %" PRIu64 ", \"max_slowdown_pct\": ", ph_grace_ns());
	json_num(f, opt.max_slowdown);
	struct ph_contention ct;
	ph_contention(&ct);
	fprintf(f, ", \"quick\": %s, \"runs\": %" PRIu64 ", \"runs_repeated_busy\": %" PRIu64
		   ", \"runs_still_contended\": %" PRIu64 "},\n",
		opt.quick ? "true" : "false", ct.runs, ct.repeated, ct.left);
	fprintf(f, "  \"raw\": {\"signal_self_ns\": ");
	json_num(f, raw.self_ns);
	fprintf(f, ", \"syscall_ns\": ");
	json_num(f, raw.getpid_ns);
	fprintf(f, ", \"timer_settime_ns\": ");
	json_num(f, raw.settime_ns);
	fprintf(f, ", \"xcpu_signal_receiver_ns\": ");
	json_num(f, raw.x.ok ? raw.x.rx_cost_med_ns : NAN);
	fprintf(f, ", \"xcpu_signal_sender_ns\": ");
	json_num(f, raw.x.ok ? raw.x.tx_cost_ns : NAN);
	fprintf(f, ", \"xcpu_signal_interval_us\": 50, \"posix_timer_expiry_ns\": ");
	json_num(f, raw.pt.ok ? raw.pt.cost_med_ns : NAN);
	fprintf(f, ", \"posix_timer_period_us\": 50},\n");
	fprintf(f, "  \"mechanisms\": {\n");
	for (size_t i = 0; i < NMECH; i++) {
		const struct mech_result *m = &res[i];
		fprintf(f, "    ");
		jf_json_str(f, m->name);
		const char *plus = strchr(m->name, '+');
		fprintf(f, ": {\"mechanism\": \"%.*s\", \"timer_spin\": %s,\n      \"available\": %s, "
			   "\"why\": ",
			plus ? (int)(plus - m->name) : (int)strlen(m->name), m->name,
			plus ? "true" : "false", m->available ? "true" : "false");
		jf_json_str(f, m->available ? NULL : m->why);
		fprintf(f, ", \"failed\": ");
		jf_json_str(f, m->failed ? m->fail_why : NULL);
		fprintf(f, ", \"crashed_runs\": %d, \"crash\": ", m->crashes);
		jf_json_str(f, m->crashes ? m->crash_why : NULL);
		fprintf(f, ",\n      \"cost_ns\": {\"receiver\": ");
		json_num(f, m->receiver_ns);
		fprintf(f, ", \"sender\": ");
		json_num(f, m->sender_ns);
		fprintf(f, "},\n      \"slowdown_pct\": {");
		for (int qi = 0; qi < NQ; qi++) {
			fprintf(f, "%s\"%" PRIu64 "\": ", qi ? ", " : "", quanta_us[qi]);
			json_num(f, m->available ? m->slowdown[qi] : NAN);
		}
		fprintf(f, "},\n      \"preempts_per_s\": {");
		for (int qi = 0; qi < NQ; qi++) {
			fprintf(f, "%s\"%" PRIu64 "\": ", qi ? ", " : "", quanta_us[qi]);
			json_num(f, m->available ? m->preempts_per_s[qi] : NAN);
		}
		fprintf(f, "},\n      \"recommended_quantum_us\": ");
		json_num(f, m->recommended >= 0 ? (double)quanta_us[m->recommended] : NAN);
		fprintf(f, "}%s\n", i + 1 < NMECH ? "," : "");
	}
	fprintf(f, "  }\n}\n");
	if (fclose(f) != 0) {
		fprintf(stderr, "jiffy-calibrate: writing %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void print_table(void)
{
	char b1[32], b2[32];
	printf("\nslowdown in %% of a compute-bound workload (2 uthreads, 1 worker, jf_safepoint() "
	       "every %.1f us; T_none = %.1f ms; best of %d runs)\n",
	       opt.chunk_ns / 1000, (double)t_none / 1e6, opt.reps ? opt.reps : (opt.quick ? 3 : 5));
	printf("%-16s %9s %9s", "mechanism", "recv ns", "send ns");
	for (int qi = 0; qi < NQ; qi++)
		printf(" %6" PRIu64 "us", quanta_us[qi]);
	printf("   recommended (<= %.0f%%)\n", opt.max_slowdown);
	for (size_t i = 0; i < NMECH; i++) {
		const struct mech_result *m = &res[i];
		printf("%-16s", m->name);
		if (!m->available) {
			printf(" unavailable: %s\n", m->why);
			continue;
		}
		printf(" %9s %9s", isnan(m->receiver_ns) ? "-" : (snprintf(b1, 32, "%.0f", m->receiver_ns), b1),
		       isnan(m->sender_ns) ? "-" : (snprintf(b2, 32, "%.0f", m->sender_ns), b2));
		for (int qi = 0; qi < NQ; qi++) {
			if (isnan(m->slowdown[qi]))
				printf(" %8s", m->failed ? "fail" : m->crashes ? "crash" : "-");
			else
				printf(" %8.1f", m->slowdown[qi]);
		}
		if (m->recommended >= 0)
			printf("   %" PRIu64 " us\n", quanta_us[m->recommended]);
		else
			printf("   none (> %.0f%% even at %" PRIu64 " us)\n", opt.max_slowdown,
			       quanta_us[0]);
		if (m->failed)
			printf("%-16s failed: %s\n", "", m->fail_why);
		if (m->crashes)
			printf("%-16s crashed in %d runs: %s\n", "", m->crashes, m->crash_why);
	}
	printf("recv ns: receiver cost per preemption (slowdown per preemption, incl. the switch); "
	       "send ns: timer thread CPU per request ('-': no timer thread).\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: jiffy-calibrate [--quick] [--out FILE] [--max-slowdown PCT] [--reps N] [--wall]\n"
		   "  Measures the slowdown each preemption mechanism causes at quanta of 1000 to 5 "
		   "us on this machine\n"
		   "  and recommends, per mechanism, the smallest quantum with a slowdown <= PCT "
		   "(default 5).\n"
		   "  --quick     ~30 s instead of ~2 min (shorter runs, fewer repetitions)\n"
		   "  --out FILE  also write the results as JSON\n"
		   "  --max-slowdown PCT  the slowdown a recommended quantum may cost (default 5)\n"
		   "  --reps N    runs per cell, the best one counts (default 5; --quick 3)\n"
		   "  --wall      time runs by the wall clock instead of the worker's CPU time\n"
		   JP_FLAGS_STD_USAGE
		   "  Run it on an idle machine; JIFFY_* variables (e.g. JIFFY_GRACE_US, "
		   "JIFFY_PREEMPT_SIGNAL) apply.\n");
}

enum { F_QUICK = 0x100, F_WALL, F_OUT, F_MAX_SLOWDOWN, F_REPS };

static const struct option options[] = {
	{"quick", no_argument, NULL, F_QUICK},
	{"wall", no_argument, NULL, F_WALL},
	{"out", required_argument, NULL, F_OUT},
	{"max-slowdown", required_argument, NULL, F_MAX_SLOWDOWN},
	{"reps", required_argument, NULL, F_REPS},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	static const char prog[] = "jiffy-calibrate";
	struct jp_flags fl;
	unsigned long n;
	int c;

	jp_flags_init(&fl, prog, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		switch (c) {
		case F_QUICK:
			opt.quick = 1;
			break;
		case F_WALL:
			opt.wall = 1;
			break;
		case F_OUT:
			if (!*optarg)
				jp_flags_fail(&fl, "expected a file name, got ''");
			opt.out = optarg;
			break;
		case F_MAX_SLOWDOWN:
			if (jp_flag_positive(prog, fl.flag, optarg, &opt.max_slowdown))
				return 2;
			break;
		case F_REPS:
			if (jp_flag_uint(prog, fl.flag, optarg, 1, 1000000, &n))
				return 2;
			opt.reps = (int)n;
			break;
		}
	}
	jp_flags_no_operands(&fl);

	struct ph_machine mach;
	double busy = ph_busy_cpus(500);
	uint64_t t0 = jf_now_ns();
	int sig = ph_signal_from_env();

	ph_machine_describe(&mach);
	ph_set_time_base(opt.wall);
	ph_calibrate();
	opt.chunk_iters = ph_iters_for_ns(opt.chunk_ns);
	opt.chunks = opt.quick ? 15000 : 50000;
	printf("jiffy-calibrate %s%s\n", JIFFY_VERSION, opt.quick ? " --quick" : "");
	printf("machine: %d CPUs, %s, %s, hypervisor %s, clock %s\n", mach.ncpus, mach.cpu_model,
	       mach.kernel, mach.hypervisor, mach.clock);
	printf("load:    loadavg %.2f, %.2f CPUs busy in the 0.5 s before the run%s\n",
	       mach.loadavg1, busy, busy >= 0.2 ? " (NOT IDLE: results are noisier)" : "");
	printf("time:    %s\n", opt.wall ? "wall clock (--wall)"
				       : "CPU time of the worker (other processes do not count)");
	fflush(stdout);

	for (size_t i = 0; i < NMECH; i++) {
		res[i].name = mech_names[i];
		res[i].available = ph_mech_available(mech_names[i], res[i].why, sizeof(res[i].why));
	}

	uint64_t raw_work = opt.quick ? 30000000u : 80000000u;
	int raw_reps = opt.quick ? 2 : 4;
	raw.self_ns = ph_raw_self_signal_ns(sig, opt.quick ? 10000 : 50000);
	raw.getpid_ns = ph_raw_getpid_ns(opt.quick ? 10000 : 50000);
	raw.settime_ns = ph_raw_settime_ns(sig, opt.quick ? 10000 : 50000);
	ph_raw_xcpu_signal(sig, 50000, raw_work, raw_reps, &raw.x);
	ph_raw_posix_timer(sig, 50000, raw_work, raw_reps, &raw.pt);
	printf("raw:     signal to self %.0f ns, syscall %.0f ns, timer_settime %.0f ns", raw.self_ns,
	       raw.getpid_ns, raw.settime_ns);
	if (raw.x.ok)
		printf(", cross-CPU signal: receiver %.0f ns, sender %.0f ns", raw.x.rx_cost_med_ns,
		       raw.x.tx_cost_ns);
	if (raw.pt.ok)
		printf(", POSIX timer expiry (50 us) %.0f ns", raw.pt.cost_med_ns);
	printf("\n");
	fflush(stdout);

	measure();
	analyse();
	if (t_none == UINT64_MAX) {
		printf("the baseline run (mechanism none) failed: %s\n", none_fail);
		return 1;
	}
	print_table();
	struct ph_contention ct;
	ph_contention(&ct);
	printf("busy:    %" PRIu64 " of %" PRIu64 " runs repeated because other processes took the "
	       "CPU; %" PRIu64 " stayed contended%s\n",
	       ct.repeated, ct.runs, ct.left,
	       ct.left ? " (rerun on an idle machine for clean numbers)" : "");
	double busy_after = ph_busy_cpus(500);
	printf("took %.1f s; %.2f CPUs busy in the 0.5 s after the run\n",
	       (double)(jf_now_ns() - t0) / 1e9, busy_after);
	if (opt.out) {
		if (write_json(opt.out, &mach, busy) != 0)
			return 1;
		printf("wrote %s\n", opt.out);
	}
	return 0;
}
