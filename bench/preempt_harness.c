/*
 * bench/preempt_harness.c - see preempt_harness.h.
 *
 * The raw measurements use plain kernel threads pinned to the first two CPUs of the affinity
 * mask and restore every signal disposition they change. ph_run() forks: the child runs one
 * jf_run() and writes what it measured into a MAP_SHARED page; the parent sleeps in
 * sigtimedwait(SIGCHLD) (no polling that would disturb the CPUs being measured) and kills the
 * child if it outlives its time-out.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preempt_harness.h"

/* ---- machine ------------------------------------------------------------------------------ */

static int cpu_first = -1, cpu_second = -1, ncpus_mask;

static void find_cpus(void)
{
	cpu_set_t set;
	if (ncpus_mask)
		return;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		ncpus_mask = 1;
		cpu_first = 0;
		return;
	}
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (cpu_first < 0)
			cpu_first = c;
		else if (cpu_second < 0)
			cpu_second = c;
		ncpus_mask++;
	}
}

static void read_cpu_model(char *out, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	snprintf(out, len, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');
			if (p) {
				p++;
				while (*p == ' ' || *p == '\t')
					p++;
				p[strcspn(p, "\n")] = '\0';
				snprintf(out, len, "%s", p);
			}
			break;
		}
	}
	fclose(f);
}

static void read_hypervisor(char *out, size_t len)
{
	unsigned a, b, c, d;
	snprintf(out, len, "none");
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 31)))
		return;
	__cpuid(0x40000000, a, b, c, d);
	char id[13];
	memcpy(id, &b, 4);
	memcpy(id + 4, &c, 4);
	memcpy(id + 8, &d, 4);
	id[12] = '\0';
	for (int i = 0; i < 12; i++)
		if (id[i] && (id[i] < 32 || id[i] > 126))
			id[i] = '?';
	snprintf(out, len, "%s", id[0] ? id : "unknown");
}

void ph_machine_describe(struct ph_machine *m)
{
	struct utsname u;
	memset(m, 0, sizeof(*m));
	find_cpus();
	m->ncpus = ncpus_mask;
	m->cpu_first = cpu_first;
	m->cpu_second = cpu_second;
	read_cpu_model(m->cpu_model, sizeof(m->cpu_model));
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%s %s", u.sysname, u.release);
	read_hypervisor(m->hypervisor, sizeof(m->hypervisor));
	m->clock = jf_clock_source();
	m->tsc_hz = jf_tsc_hz();
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &m->loadavg1) != 1)
			m->loadavg1 = -1;
		fclose(f);
	}
}

static int read_stat(uint64_t *busy, uint64_t *total)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		       &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 5)
		return -1;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4]; /* minus idle and iowait */
	return 0;
}

double ph_busy_cpus(unsigned ms)
{
	uint64_t b0, t0, b1, t1;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (read_stat(&b0, &t0))
		return -1;
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	if (read_stat(&b1, &t1) || t1 == t0)
		return -1;
	return (double)n * (double)(b1 - b0) / (double)(t1 - t0);
}

/* ---- the compute kernel -------------------------------------------------------------------- */

static int use_wall;

void ph_set_time_base(int wall)
{
	use_wall = wall;
}

int ph_time_base_wall(void)
{
	return use_wall;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct ph_contention contention;

void ph_contention(struct ph_contention *out)
{
	*out = contention;
}

/* Did other threads take the CPU from the measured thread (@wall vs its @cpu time)? */
static int busy_run(uint64_t wall, uint64_t cpu)
{
	return (double)wall > 1.03 * (double)cpu + 300000.0;
}

/* The time base of the raw receivers: wall clock, or the calling thread's CPU time. */
static uint64_t work_clock(void)
{
	return use_wall ? jf_now_ns() : thread_cpu_ns();
}

static double ns_per_iter = 1.0;

/*
 * Registers only, on purpose: a variant that also loaded from a 32 KiB table varied by +-15%
 * between identical runs on the project's VMs (the host's other tenants share the core's
 * caches), which buried slowdowns of a few percent; this chain varies by < 1%.
 */
uint64_t ph_spin(uint64_t x, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

void ph_calibrate(void)
{
	uint64_t best = UINT64_MAX, x = 1;
	const uint64_t iters = 1u << 21;

	for (int r = 0; r < 9; r++) {
		uint64_t t0 = jf_now_ns();
		x = ph_spin(x, iters);
		uint64_t dt = jf_now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	__asm__ volatile("" : : "r"(x));
	ns_per_iter = (double)best / (double)iters;
}

double ph_ns_per_iter(void)
{
	return ns_per_iter;
}

uint64_t ph_iters_for_ns(double ns)
{
	double it = ns / ns_per_iter;
	return it < 1.0 ? 1 : (uint64_t)(it + 0.5);
}

/* ---- raw signal costs ---------------------------------------------------------------------- */

static struct jf_config base_cfg;
static int base_ready;

static void base_init(void)
{
	char err[256] = "";
	if (base_ready)
		return;
	jf_config_default(&base_cfg);
	if (jf_config_apply_env(&base_cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "preempt harness: %s\n", err);
		exit(2);
	}
	base_ready = 1;
}

int ph_signal_from_env(void)
{
	base_init();
	return base_cfg.preempt_signal;
}

uint64_t ph_grace_ns(void)
{
	base_init();
	return base_cfg.grace_ns;
}

static atomic_uint_fast64_t sig_count, sig_overruns;

static void count_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	atomic_fetch_add_explicit(&sig_count, 1, memory_order_relaxed);
	if (si && si->si_code == SI_TIMER && si->si_overrun > 0)
		atomic_fetch_add_explicit(&sig_overruns, (uint64_t)si->si_overrun,
					  memory_order_relaxed);
}

static int install_counter(int sig, struct sigaction *old)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = count_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, old);
}

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

double ph_raw_self_signal_ns(int sig, unsigned iters)
{
	struct sigaction old;
	pid_t pid = getpid(), tid = my_tid();
	uint64_t best = UINT64_MAX;

	if (install_counter(sig, &old))
		return -1;
	for (int r = 0; r < 6; r++) { /* the first batch warms up */
		uint64_t t0 = jf_now_ns();
		for (unsigned i = 0; i < iters; i++)
			syscall(SYS_tgkill, pid, tid, sig);
		uint64_t dt = jf_now_ns() - t0;
		if (r > 0)
			best = min_u64(best, dt);
	}
	sigaction(sig, &old, NULL);
	return (double)best / iters;
}

double ph_raw_getpid_ns(unsigned iters)
{
	uint64_t best = UINT64_MAX;
	for (int r = 0; r < 6; r++) {
		uint64_t t0 = jf_now_ns();
		for (unsigned i = 0; i < iters; i++)
			syscall(SYS_getpid);
		uint64_t dt = jf_now_ns() - t0;
		if (r > 0)
			best = min_u64(best, dt);
	}
	return (double)best / iters;
}

static int thread_timer_create(int sig, pid_t tid, timer_t *t)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
#ifdef sigev_notify_thread_id
	sev.sigev_notify_thread_id = tid;
#else
	sev._sigev_un._tid = tid;
#endif
	return timer_create(CLOCK_MONOTONIC, &sev, t);
}

double ph_raw_settime_ns(int sig, unsigned iters)
{
	return ph_raw_settime_at_ns(sig, iters, 1000000000u);
}

double ph_raw_settime_at_ns(int sig, unsigned iters, uint64_t ahead_ns)
{
	struct sigaction old;
	timer_t t;
	uint64_t best = UINT64_MAX;
	struct itimerspec its = {{0, 0}, {(time_t)(ahead_ns / 1000000000u), (long)(ahead_ns % 1000000000u)}},
			  off = {{0, 0}, {0, 0}};

	if (install_counter(sig, &old))
		return -1;
	if (thread_timer_create(sig, my_tid(), &t)) {
		sigaction(sig, &old, NULL);
		return -1;
	}
	for (int r = 0; r < 6; r++) {
		uint64_t t0 = jf_now_ns();
		for (unsigned i = 0; i < iters; i++)
			timer_settime(t, 0, &its, NULL);
		uint64_t dt = jf_now_ns() - t0;
		if (r > 0)
			best = min_u64(best, dt);
	}
	timer_settime(t, 0, &off, NULL);
	timer_delete(t);
	sigaction(sig, &old, NULL);
	return (double)best / iters;
}

static int pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * One run of the cross-CPU experiment. The sender busy-waits in both variants (so the receiver's
 * CPU sees the same neighbour either way) and sends only when @send.
 */
/*
 * The receivers work in slices of ~10 us and give up after @limit_ns of wall time: signals that
 * cost more than their period leave a receiver almost no time of its own (a livelock), which
 * must end the measurement, not the benchmark.
 */
static uint64_t spin_bounded(uint64_t x, uint64_t iters, uint64_t limit_ns, uint64_t *left)
{
	const uint64_t slice = ph_iters_for_ns(10000);
	uint64_t deadline = jf_now_ns() + limit_ns;
	*left = iters;
	while (*left) {
		uint64_t n = *left < slice ? *left : slice;
		x = ph_spin(x, n);
		*left -= n;
		if (jf_now_ns() > deadline)
			break;
	}
	return x;
}

static uint64_t work_limit_ns(uint64_t work_iters)
{
	return 2000000000u + 10 * (uint64_t)((double)work_iters * ns_per_iter);
}

struct xcpu_run {
	int sig, send;
	uint64_t interval_ns, work_iters, left;
	atomic_int rx_tid;
	atomic_int phase; /* 0 start, 1 receiver ready, 2 go, 3 receiver done */
	uint64_t rx_ns, wall_ns, cpu_ns, received, sent, send_ns, sink;
	uint64_t *send_each, nsend; /* each tgkill's duration, for the median */
};

#define XCPU_MAX_SENDS 65536u

static void *xcpu_receiver(void *arg)
{
	struct xcpu_run *r = arg;
	pin_self(cpu_second);
	atomic_store(&r->rx_tid, my_tid());
	atomic_store(&r->phase, 1);
	while (atomic_load(&r->phase) != 2)
		;
	uint64_t c0 = atomic_load(&sig_count);
	uint64_t t0 = work_clock(), w0 = jf_now_ns(), c0t = thread_cpu_ns();
	r->sink = spin_bounded(7, r->work_iters, work_limit_ns(r->work_iters), &r->left);
	r->rx_ns = work_clock() - t0;
	r->wall_ns = jf_now_ns() - w0;
	r->cpu_ns = thread_cpu_ns() - c0t;
	r->received = atomic_load(&sig_count) - c0;
	atomic_store(&r->phase, 3);
	return NULL;
}

static void *xcpu_sender(void *arg)
{
	struct xcpu_run *r = arg;
	pid_t pid = getpid();
	pin_self(cpu_first);
	while (atomic_load(&r->phase) != 1)
		;
	pid_t tid = atomic_load(&r->rx_tid);
	atomic_store(&r->phase, 2);
	uint64_t next = jf_now_ns() + r->interval_ns;
	while (atomic_load_explicit(&r->phase, memory_order_relaxed) != 3) {
		uint64_t now = jf_now_ns();
		if (!r->send || now < next)
			continue;
		syscall(SYS_tgkill, pid, tid, r->sig);
		uint64_t after = jf_now_ns();
		if (r->nsend < XCPU_MAX_SENDS)
			r->send_each[r->nsend++] = after - now;
		r->send_ns += after - now;
		r->sent++;
		next += r->interval_ns;
		if (next < after) /* fell behind (descheduled): no burst */
			next = after + r->interval_ns;
	}
	return NULL;
}

static int xcpu_once_raw(struct xcpu_run *r);

/*
 * Of @reps runs that took @ns[k] of work time while receiving @events[k] events (signals, timer
 * expiries, wake-ups), against @base without any: the index of the fastest run, or -1 when that
 * one received none; *@best_cost = its cost per event, *@med_cost = the median cost per event
 * over the runs that received any.
 */
static int run_costs(const uint64_t *ns, const uint64_t *events, int reps, uint64_t base,
		     double *best_cost, double *med_cost)
{
	double cost[64];
	int best = 0, n = 0;

	for (int k = 0; k < reps && k < 64; k++) {
		if (ns[k] < ns[best])
			best = k;
		if (events[k])
			cost[n++] = ((double)ns[k] - (double)base) / (double)events[k];
	}
	if (!events[best])
		return -1;
	*best_cost = ((double)ns[best] - (double)base) / (double)events[best];
	*med_cost = ph_median(cost, (size_t)n);
	return best;
}

/* One run, repeated (up to 3 times) when other threads took the receiver's CPU. */
static int xcpu_once(struct xcpu_run *r)
{
	for (int attempt = 0;; attempt++) {
		uint64_t nsend = r->nsend;
		if (xcpu_once_raw(r))
			return -1;
		int busy = busy_run(r->wall_ns, r->cpu_ns);
		if (!busy || attempt == 3 || contention.repeated >= contention.runs / 4 + 5) {
			contention.runs++;
			contention.repeated += attempt > 0;
			contention.left += busy;
			return 0;
		}
		r->nsend = nsend; /* forget the sends of the contended run */
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
	}
}

static int xcpu_once_raw(struct xcpu_run *r)
{
	pthread_t rx, tx;
	atomic_store(&r->phase, 0);
	r->rx_ns = r->received = r->sent = r->send_ns = 0; /* send_each accumulates over runs */
	if (pthread_create(&rx, NULL, xcpu_receiver, r))
		return -1;
	if (pthread_create(&tx, NULL, xcpu_sender, r)) {
		atomic_store(&r->phase, 2); /* let the receiver run to its end */
		pthread_join(rx, NULL);
		return -1;
	}
	pthread_join(rx, NULL);
	pthread_join(tx, NULL);
	return 0;
}

int ph_raw_xcpu_signal(int sig, uint64_t interval_ns, uint64_t work_ns, int reps,
		       struct ph_xcpu *out)
{
	struct sigaction old;
	struct xcpu_run r;
	uint64_t base = UINT64_MAX;

	memset(out, 0, sizeof(*out));
	out->interval_ns = interval_ns;
	find_cpus();
	if (cpu_second < 0) {
		snprintf(out->why, sizeof(out->why), "needs 2 CPUs in the affinity mask");
		return -1;
	}
	if (reps > 64)
		reps = 64;
	if (install_counter(sig, &old))
		return -1;
	memset(&r, 0, sizeof(r));
	r.sig = sig;
	r.interval_ns = interval_ns;
	r.work_iters = ph_iters_for_ns((double)work_ns);
	r.send_each = calloc(XCPU_MAX_SENDS, sizeof(uint64_t));
	if (!r.send_each) {
		sigaction(sig, &old, NULL);
		snprintf(out->why, sizeof(out->why), "out of memory");
		return -1;
	}

	uint64_t with_ns[64], with_sig[64], sent = 0, send_ns = 0;
	for (int k = 0; k < reps; k++) {
		r.send = 0;
		if (xcpu_once(&r))
			goto fail;
		base = min_u64(base, r.rx_ns);
		r.send = 1;
		if (xcpu_once(&r))
			goto fail;
		if (r.left) {
			sigaction(sig, &old, NULL);
			free(r.send_each);
			snprintf(out->why, sizeof(out->why),
				 "livelock: the receiver did %.0f%% of its work in %.1f s",
				 100.0 * (1 - (double)r.left / (double)r.work_iters),
				 (double)work_limit_ns(r.work_iters) / 1e9);
			return -1;
		}
		with_ns[k] = r.rx_ns;
		with_sig[k] = r.received;
		sent += r.sent;
		send_ns += r.send_ns;
	}
	sigaction(sig, &old, NULL);
	int best = run_costs(with_ns, with_sig, reps, base, &out->rx_cost_ns, &out->rx_cost_med_ns);
	if (best < 0) {
		free(r.send_each);
		snprintf(out->why, sizeof(out->why), "no signal arrived");
		return -1;
	}
	out->ok = 1;
	out->signals = with_sig[best];
	/* The median tgkill: a sender descheduled inside one call must not count. */
	ph_sort_u64(r.send_each, r.nsend);
	out->tx_cost_ns = r.nsend ? (double)ph_pct_u64(r.send_each, r.nsend, 50)
				  : sent ? (double)send_ns / (double)sent : 0;
	free(r.send_each);
	out->work_ns = (double)base;
	return 0;
fail:
	sigaction(sig, &old, NULL);
	free(r.send_each);
	snprintf(out->why, sizeof(out->why), "pthread_create failed");
	return -1;
}

/*
 * The main thread owns the timer: it creates it aimed at the receiver, arms it, and if the
 * receiver has not finished after the wall-time limit (signals that cost more than the period
 * leave it no time of its own) stops it and disarms the timer, so the receiver can finish.
 */
struct ptimer_run {
	int sig, arm;
	uint64_t period_ns, work_iters, left;
	uint64_t rx_ns, wall_ns, cpu_ns, delivered, overruns, sink;
	atomic_int tid, go, stop;
};

static uint64_t spin_stoppable(uint64_t x, uint64_t iters, atomic_int *stop, uint64_t *left)
{
	const uint64_t slice = ph_iters_for_ns(2000);
	*left = iters;
	while (*left && !atomic_load_explicit(stop, memory_order_relaxed)) {
		uint64_t n = *left < slice ? *left : slice;
		x = ph_spin(x, n);
		*left -= n;
	}
	return x;
}

static void *ptimer_receiver(void *arg)
{
	struct ptimer_run *r = arg;
	pin_self(cpu_second >= 0 ? cpu_second : cpu_first);
	atomic_store(&r->tid, my_tid());
	while (!atomic_load(&r->go))
		;
	uint64_t c0 = atomic_load(&sig_count), o0 = atomic_load(&sig_overruns);
	uint64_t t0 = work_clock(), w0 = jf_now_ns(), c0t = thread_cpu_ns();
	r->sink = spin_stoppable(11, r->work_iters, &r->stop, &r->left);
	r->rx_ns = work_clock() - t0;
	r->wall_ns = jf_now_ns() - w0;
	r->cpu_ns = thread_cpu_ns() - c0t;
	r->delivered = atomic_load(&sig_count) - c0;
	r->overruns = atomic_load(&sig_overruns) - o0;
	return NULL;
}

static int ptimer_once_raw(struct ptimer_run *r);

/*
 * One run, repeated (up to 3 times) when other threads took the receiver's CPU; a collapsed
 * period (the receiver stopped) is not repeated. Returns 0, or an errno.
 */
static int ptimer_once(struct ptimer_run *r)
{
	for (int attempt = 0;; attempt++) {
		int err = ptimer_once_raw(r);
		if (err)
			return err;
		int busy = busy_run(r->wall_ns, r->cpu_ns);
		if (!busy || r->left || attempt == 3 ||
		    contention.repeated >= contention.runs / 4 + 5) {
			contention.runs++;
			contention.repeated += attempt > 0;
			contention.left += busy && !r->left;
			return 0;
		}
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
	}
}

static int ptimer_once_raw(struct ptimer_run *r)
{
	pthread_t th;
	timer_t t;
	struct itimerspec its, off;
	struct timespec dl;
	int err = 0;

	memset(&off, 0, sizeof(off));
	atomic_store(&r->tid, 0);
	atomic_store(&r->go, 0);
	atomic_store(&r->stop, 0);
	if ((err = pthread_create(&th, NULL, ptimer_receiver, r)))
		return err;
	while (!atomic_load(&r->tid))
		;
	if (r->arm) {
		its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)(r->period_ns / 1000000000u);
		its.it_value.tv_nsec = its.it_interval.tv_nsec = (long)(r->period_ns % 1000000000u);
		if (thread_timer_create(r->sig, atomic_load(&r->tid), &t)) {
			err = errno;
			r->arm = 0;
		} else if (timer_settime(t, 0, &its, NULL)) {
			err = errno;
		}
	}
	atomic_store(&r->go, 1);
	clock_gettime(CLOCK_REALTIME, &dl);
	uint64_t limit = work_limit_ns(r->work_iters);
	dl.tv_sec += (time_t)(limit / 1000000000u);
	dl.tv_nsec += (long)(limit % 1000000000u);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(th, NULL, &dl) != 0) {
		atomic_store(&r->stop, 1);
		if (r->arm)
			timer_settime(t, 0, &off, NULL);
		pthread_join(th, NULL);
	}
	if (r->arm) {
		timer_settime(t, 0, &off, NULL);
		timer_delete(t); /* a signal still pending dies with the exited thread */
	}
	return err;
}

int ph_raw_posix_timer(int sig, uint64_t period_ns, uint64_t work_ns, int reps,
		       struct ph_ptimer *out)
{
	struct sigaction old;
	struct ptimer_run r;
	uint64_t base = UINT64_MAX, with_ns[64], wall[64], deliv[64], over[64];

	memset(out, 0, sizeof(*out));
	out->period_ns = period_ns;
	find_cpus();
	if (reps > 64)
		reps = 64;
	if (install_counter(sig, &old))
		return -1;
	memset(&r, 0, sizeof(r));
	r.sig = sig;
	r.period_ns = period_ns;
	r.work_iters = ph_iters_for_ns((double)work_ns);
	for (int k = 0; k < reps; k++) {
		for (int arm = 0; arm <= 1; arm++) {
			r.arm = arm;
			int err = ptimer_once(&r);
			if (err) {
				snprintf(out->why, sizeof(out->why), "timer_create/settime: %s",
					 strerror(err));
				sigaction(sig, &old, NULL);
				return -1;
			}
			if (!arm)
				base = min_u64(base, r.rx_ns);
			if (r.left) {
				snprintf(out->why, sizeof(out->why),
					 "collapsed: %.0f signals/s for a %" PRIu64 " us period left the "
					 "receiver %.0f%% of its work done after %.1f s",
					 (double)r.delivered * 1e9 / (double)r.wall_ns, period_ns / 1000,
					 100.0 * (1 - (double)r.left / (double)r.work_iters),
					 (double)r.wall_ns / 1e9);
				sigaction(sig, &old, NULL);
				return -1;
			}
		}
		with_ns[k] = r.rx_ns;
		wall[k] = r.wall_ns;
		deliv[k] = r.delivered;
		over[k] = r.overruns;
	}
	sigaction(sig, &old, NULL);
	int best = run_costs(with_ns, deliv, reps, base, &out->cost_ns, &out->cost_med_ns);
	if (best < 0) {
		snprintf(out->why, sizeof(out->why), "the timer never fired");
		return -1;
	}
	out->ok = 1;
	out->delivered = deliv[best];
	out->overruns = over[best];
	out->rate_per_s = (double)deliv[best] * 1e9 / (double)wall[best];
	return 0;
}

struct sleeper_run {
	uint64_t period_ns;
	atomic_int stop;
	uint64_t wakes;
};

static void *sleeper_thread(void *arg)
{
	struct sleeper_run *s = arg;
	struct timespec ts = {(time_t)(s->period_ns / 1000000000u), (long)(s->period_ns % 1000000000u)};

	pin_self(cpu_second >= 0 ? cpu_second : cpu_first);
	prctl(PR_SET_TIMERSLACK, 1UL); /* as the runtime's timer thread does */
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		nanosleep(&ts, NULL);
		s->wakes++;
	}
	return NULL;
}

int ph_raw_colocated_sleeper(uint64_t period_ns, uint64_t work_ns, int reps,
			     struct ph_sleeper *out)
{
	uint64_t iters = ph_iters_for_ns((double)work_ns), base = UINT64_MAX, sink = 0;
	uint64_t with_ns[64], wakes[64];

	memset(out, 0, sizeof(*out));
	out->period_ns = period_ns;
	find_cpus();
	if (reps > 64)
		reps = 64;
	pin_self(cpu_second >= 0 ? cpu_second : cpu_first);
	for (int k = 0; k < reps; k++) {
		struct sleeper_run s = {.period_ns = period_ns};
		pthread_t th;
		uint64_t t0 = jf_now_ns();
		sink += ph_spin(sink + 1, iters);
		base = min_u64(base, jf_now_ns() - t0);
		if (pthread_create(&th, NULL, sleeper_thread, &s)) {
			snprintf(out->why, sizeof(out->why), "pthread_create failed");
			return -1;
		}
		t0 = jf_now_ns();
		sink += ph_spin(sink + 1, iters);
		with_ns[k] = jf_now_ns() - t0;
		atomic_store(&s.stop, 1);
		pthread_join(th, NULL);
		wakes[k] = s.wakes;
	}
	pin_self(cpu_first);
	int best = run_costs(with_ns, wakes, reps, base, &out->cost_ns, &out->cost_med_ns);
	if (best < 0) {
		snprintf(out->why, sizeof(out->why), "the sleeper never woke");
		return -1;
	}
	out->ok = 1;
	out->wakes = wakes[best];
	out->wake_every_ns = (double)with_ns[best] / (double)wakes[best];
	__asm__ volatile("" : : "r"(sink)); /* keep the work */
	return 0;
}

/* ---- one runtime run, in a child process --------------------------------------------------- */

struct ph_shared {
	struct ph_run_res res;
};

static struct ph_shared *shared;
static uint64_t *shared_slices;

struct child_thread {
	const struct ph_run_cfg *cfg;
	unsigned idx;
	jf_thread_t *handle;
	_Atomic uint64_t progress;
	uint64_t sink;
	uint64_t *slices;
	uint64_t nslices, max_slices, noswitch, noswitch_ns;
	char pad[64];
};

static struct child_thread threads[PH_MAX_THREADS];
static atomic_int child_stop;
static const struct ph_run_cfg *child_cfg;

static void *compute_batch(void *arg)
{
	struct child_thread *t = arg;
	uint64_t x = t->idx + 1, n = t->cfg->chunks, it = t->cfg->chunk_iters;
	if (t->cfg->safepoints) {
		for (uint64_t i = 0; i < n; i++) {
			x = ph_spin(x, it);
			jf_safepoint();
		}
	} else {
		for (uint64_t i = 0; i < n; i++)
			x = ph_spin(x, it);
	}
	t->sink = x;
	return NULL;
}

/*
 * Timeliness: timestamp after every chunk (before the safepoint, so that a safepoint preemption
 * ends the slice at the last timestamp). A gap longer than gap_ns during which the other uthread
 * made progress is a switch: the slice that ended is [resume, last timestamp before the gap],
 * where resume is the first timestamp after the previous switch minus one chunk (that chunk
 * started when the uthread resumed). Gaps without progress elsewhere are interruptions.
 * The other's progress is compared between a read taken BEFORE the timestamp that opens the gap
 * and one taken after the timestamp that closes it: a preemption that lands between a timestamp
 * and the read after it would otherwise count the other's progress before the gap, merge this
 * slice with the next one, and report slices of 2-3 periods under the signal mechanisms (~5 % of
 * them at a signal every ~1 ms).
 */
static void *compute_timeliness(void *arg)
{
	struct child_thread *t = arg;
	struct child_thread *other = &threads[1 - t->idx];
	const uint64_t n = t->cfg->chunks, it = t->cfg->chunk_iters, gap = t->cfg->gap_ns;
	const uint64_t chunk_ns = (uint64_t)((double)it * ph_ns_per_iter());
	uint64_t x = t->idx + 1, prev = jf_now_ns(), start = 0;
	uint64_t other_prev = atomic_load_explicit(&other->progress, memory_order_relaxed);
	int have_start = 0;

	for (uint64_t i = 0; i < n; i++) {
		x = ph_spin(x, it);
		uint64_t other_before = atomic_load_explicit(&other->progress, memory_order_relaxed);
		uint64_t now = jf_now_ns();
		atomic_store_explicit(&t->progress, i + 1, memory_order_relaxed);
		uint64_t other_now = atomic_load_explicit(&other->progress, memory_order_relaxed);
		if (now - prev > gap) {
			if (other_now != other_prev) {
				if (have_start && t->nslices < t->max_slices)
					t->slices[t->nslices++] = prev - start;
				start = now - chunk_ns;
				have_start = 1;
			} else {
				t->noswitch++;
				t->noswitch_ns += now - prev;
			}
		}
		prev = now;
		other_prev = other_before;
		if (t->cfg->safepoints)
			jf_safepoint();
	}
	t->sink = x;
	return NULL;
}

static void *compute_loop(void *arg)
{
	struct child_thread *t = arg;
	uint64_t x = t->idx + 1, it = t->cfg->chunk_iters;
	while (!atomic_load_explicit(&child_stop, memory_order_relaxed)) {
		x = ph_spin(x, it);
		if (t->cfg->safepoints)
			jf_safepoint();
	}
	t->sink = x;
	return NULL;
}

struct snapshot {
	struct jf_worker_stats st;
	struct jf_preempt_stats ps;
	uint64_t t, cpu;
};

static void take_snapshot(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	jf_stats_total(&s->st);
	if (jf_preempt_stats(&s->ps) != 0)
		memset(&s->ps, 0, sizeof(s->ps));
	s->t = jf_now_ns();
	s->cpu = thread_cpu_ns(); /* the caller's worker: the only one in batch mode */
}

static void store_delta(const struct snapshot *a, const struct snapshot *b)
{
	struct ph_run_res *r = &shared->res;
	const uint64_t *pa = (const uint64_t *)(const void *)&a->st;
	const uint64_t *pb = (const uint64_t *)(const void *)&b->st;
	uint64_t *pr = (uint64_t *)(void *)&r->st;
	for (size_t i = 0; i < sizeof(r->st) / sizeof(uint64_t); i++)
		pr[i] = pb[i] - pa[i];
	r->wall_ns = b->t - a->t;
	r->worker_cpu_ns = b->cpu - a->cpu;
	r->scans = b->ps.scans - a->ps.scans;
	r->signals_sent = b->ps.signals_sent - a->ps.signals_sent;
	r->flags_set = b->ps.flags_set - a->ps.flags_set;
	r->timer_cpu_ns = b->ps.timer_cpu_ns - a->ps.timer_cpu_ns;
	r->grace_ns = b->ps.grace_ns;
	snprintf(r->mech, sizeof(r->mech), "%s", jf_preempt_mechanism());
}

static int spawn_compute(struct child_thread *t, jf_thread_fn fn, int worker)
{
	struct jf_attr attr;
	jf_attr_init(&attr);
	attr.sched.worker = worker;
	int rc = jf_spawn(&t->handle, &attr, fn, t);
	if (rc)
		snprintf(shared->res.why, sizeof(shared->res.why), "jf_spawn: %s", strerror(-rc));
	return rc;
}

static void *child_batch(void *arg)
{
	const struct ph_run_cfg *c = arg;
	struct snapshot a, b;
	unsigned n = c->nthreads;
	jf_thread_fn fn = c->timeliness ? compute_timeliness : compute_batch;

	for (unsigned i = 0; i < n; i++) {
		threads[i].cfg = c;
		threads[i].idx = i;
		threads[i].slices = shared_slices + (size_t)i * (PH_MAX_SLICES / n);
		threads[i].max_slices = PH_MAX_SLICES / n;
	}
	take_snapshot(&a);
	for (unsigned i = 0; i < n; i++)
		if (spawn_compute(&threads[i], fn, -1))
			return NULL;
	for (unsigned i = 0; i < n; i++)
		jf_join(threads[i].handle, NULL);
	take_snapshot(&b);
	store_delta(&a, &b);
	uint64_t k = 0;
	for (unsigned i = 0; i < n; i++) {
		memmove(shared_slices + k, threads[i].slices, threads[i].nslices * sizeof(uint64_t));
		k += threads[i].nslices;
		shared->res.noswitch += threads[i].noswitch;
		shared->res.noswitch_ns += threads[i].noswitch_ns;
	}
	shared->res.nslices = k;
	shared->res.ok = 1;
	return NULL;
}

static void *child_scale(void *arg)
{
	const struct ph_run_cfg *c = arg;
	struct snapshot a, b;
	unsigned n = c->workers * c->per_worker;

	for (unsigned i = 0; i < n; i++) {
		threads[i].cfg = c;
		threads[i].idx = i;
		if (spawn_compute(&threads[i], compute_loop, (int)(i % c->workers))) {
			atomic_store(&child_stop, 1);
			for (unsigned j = 0; j < i; j++)
				jf_join(threads[j].handle, NULL);
			return NULL;
		}
	}
	jf_sleep_ns(c->duration_ns / 5 + 10000000u); /* warm-up */
	take_snapshot(&a);
	jf_sleep_ns(c->duration_ns);
	take_snapshot(&b);
	atomic_store(&child_stop, 1);
	for (unsigned i = 0; i < n; i++)
		jf_join(threads[i].handle, NULL);
	store_delta(&a, &b);
	shared->res.ok = 1;
	return NULL;
}

/* "dispatcher+spin" -> "dispatcher", 1; anything else -> itself, 0. */
static int split_variant(const char *name, char *base, size_t len)
{
	const char *plus = strstr(name, "+spin");
	if (plus && plus[5] == '\0') {
		snprintf(base, len, "%.*s", (int)(plus - name), name);
		return 1;
	}
	snprintf(base, len, "%s", name);
	return 0;
}

static void child_run(const struct ph_run_cfg *c)
{
	struct jf_config cfg = base_cfg;
	int scale = c->duration_ns > 0;
	char base[32];

	child_cfg = c;
	cfg.workers = scale ? c->workers : 1;
	cfg.pin_workers = !scale || (int)c->workers <= ncpus_mask;
	cfg.timer_spin = split_variant(c->mech, base, sizeof(base)) || c->timer_spin;
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%.*s", (int)sizeof(cfg.preempt) - 1, base);
	cfg.quantum_ns = c->quantum_ns;
	if (c->grace_ns)
		cfg.grace_ns = c->grace_ns;
	if (scale)
		snprintf(cfg.policy, sizeof(cfg.policy), "%s", "fifo");
	int rc = jf_run(&cfg, scale ? child_scale : child_batch, (void *)c, NULL);
	if (rc) {
		shared->res.ok = 0;
		snprintf(shared->res.why, sizeof(shared->res.why), "jf_run: %s", strerror(-rc));
	}
}

static int run_once(const struct ph_run_cfg *c, struct ph_run_res *res);

int ph_run(const struct ph_run_cfg *c, struct ph_run_res *res)
{
	int tries = c->retries < 0 ? 0 : c->retries ? c->retries : 3;
	/* A machine that stays busy is not waited out: repeats stop once a quarter of the runs
	 * needed them (what is left contended is counted and reported). */
	if (contention.repeated >= contention.runs / 4 + 5)
		tries = 0;
	int attempts = 0, rc;
	char base[32];
	int spin = split_variant(c->mech, base, sizeof(base)) || c->timer_spin;

	for (;;) {
		rc = run_once(c, res);
		attempts++;
		if (rc != 0 || c->duration_ns) /* scale mode oversubscribes on purpose */
			break;
		res->contended = busy_run(res->wall_ns, res->worker_cpu_ns) ||
				 (spin && (double)res->timer_cpu_ns < 0.8 * (double)res->wall_ns);
		if (!res->contended || attempts > tries)
			break;
		struct timespec ts = {0, 50000000}; /* let the other work pass */
		nanosleep(&ts, NULL);
	}
	res->attempts = attempts;
	if (!c->duration_ns && rc == 0) {
		contention.runs++;
		contention.repeated += attempts > 1;
		contention.left += res->contended;
	}
	return rc;
}

static int run_once(const struct ph_run_cfg *c, struct ph_run_res *res)
{
	sigset_t chld, old;
	int status = 0, timed_out = 0;
	unsigned timeout_s = c->timeout_s ? c->timeout_s : 60;

	base_init();
	find_cpus();
	memset(res, 0, sizeof(*res));
	if (!shared) {
		shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		shared_slices = mmap(NULL, PH_MAX_SLICES * sizeof(uint64_t),
				     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared == MAP_FAILED || shared_slices == MAP_FAILED) {
			shared = NULL;
			snprintf(res->why, sizeof(res->why), "mmap: %s", strerror(errno));
			return -1;
		}
	}
	if ((c->duration_ns == 0 && (c->nthreads < 1 || c->nthreads > PH_MAX_THREADS ||
				     (c->timeliness && c->nthreads != 2))) ||
	    (c->duration_ns && (c->workers < 1 || c->workers * c->per_worker > PH_MAX_THREADS))) {
		snprintf(res->why, sizeof(res->why), "bad run configuration");
		return -1;
	}
	memset(&shared->res, 0, sizeof(shared->res));
	snprintf(shared->res.why, sizeof(shared->res.why), "the run ended without a result");

	fflush(NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		snprintf(res->why, sizeof(res->why), "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		child_run(c);
		fflush(NULL);
		_exit(0);
	}
	uint64_t deadline = jf_now_ns() + (uint64_t)timeout_s * 1000000000u;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		uint64_t now = jf_now_ns();
		if (now >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			timed_out = 1;
			break;
		}
		uint64_t left = deadline - now;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		sigtimedwait(&chld, NULL, &ts);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);

	*res = shared->res;
	res->slices = shared_slices;
	if (timed_out) {
		res->ok = 0;
		snprintf(res->why, sizeof(res->why), "timed out after %u s (killed)", timeout_s);
	} else if (WIFSIGNALED(status)) {
		res->ok = 0;
		snprintf(res->why, sizeof(res->why), "crashed: killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
		res->ok = 0;
		snprintf(res->why, sizeof(res->why), "exited with status %d", WEXITSTATUS(status));
	}
	return res->ok ? 0 : -1;
}

int ph_mech_available(const char *name, char *why, size_t len)
{
	char buf[200] = "", base[32];
	split_variant(name, base, sizeof(base));
	int rc = jf_preempt_available(base, buf, sizeof(buf));
	if (rc == 1)
		return 1;
	if (rc < 0)
		snprintf(why, len, "unknown to this library (jf_preempt_available: %s)",
			 strerror(-rc));
	else
		snprintf(why, len, "%s", buf[0] ? buf : "no reason given");
	return 0;
}

/* ---- statistics ---------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void ph_sort_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

void ph_sort_double(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

uint64_t ph_pct_u64(const uint64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	double rank = ceil(p / 100.0 * (double)n);
	size_t i = rank < 1 ? 0 : (size_t)rank - 1;
	return v[i < n ? i : n - 1];
}

double ph_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	ph_sort_double(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int ph_lsq(const double *x, const double *y, int n, int k, double *c)
{
	double a[4][5] = {{0}};
	if (k < 1 || k > 4)
		return -1;
	for (int i = 0; i < n; i++)
		for (int p = 0; p < k; p++) {
			for (int q = 0; q < k; q++)
				a[p][q] += x[i * k + p] * x[i * k + q];
			a[p][k] += x[i * k + p] * y[i];
		}
	for (int col = 0; col < k; col++) {
		int piv = col;
		for (int r = col + 1; r < k; r++)
			if (fabs(a[r][col]) > fabs(a[piv][col]))
				piv = r;
		if (fabs(a[piv][col]) < 1e-300)
			return -1;
		if (piv != col)
			for (int q = 0; q <= k; q++) {
				double tmp = a[col][q];
				a[col][q] = a[piv][q];
				a[piv][q] = tmp;
			}
		for (int r = 0; r < k; r++) {
			if (r == col)
				continue;
			double f = a[r][col] / a[col][col];
			for (int q = col; q <= k; q++)
				a[r][q] -= f * a[col][q];
		}
	}
	for (int p = 0; p < k; p++)
		c[p] = a[p][k] / a[p][p];
	return 0;
}
