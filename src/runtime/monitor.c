/*
 * monitor.c - looking into a running runtime: jf_dump_threads(), the schedtrace line
 * (JIFFY_SCHEDTRACE), stall reports (JIFFY_STALL_REPORT) and crash reports (a fault that is not
 * a stack overflow: where, who, a backtrace and every uthread; stack.c's handler calls it).
 *
 * Owns: the monitor thread (one pthread, started by jf_run() only when schedtrace or stall
 * reports are asked for) and the stall signal's handler. The monitor reads what workers publish
 * with relaxed atomics (run_start_ns/run_seq, park state, counters, histograms) and never takes a
 * lock a worker takes on its scheduling path. To see a stalled uthread's stack it sends the stall
 * signal to that worker's kernel thread: the handler runs on the stalled worker, checks that the
 * same run is still on, and writes the report with async-signal-safe calls (write(2) and
 * backtrace_symbols_fd(); backtrace() is called once at start so that libgcc is loaded before).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime.h"

#define STALL_REPORT_EVERY_NS 1000000000ull /* per uthread, at most */

struct monitor {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool stop;
	uint64_t start_ns;
	uint64_t trace_ns; /* schedtrace period, 0: off */
	uint64_t stall_ns; /* run length that is a stall, 0: off */
	uint64_t *seen_seq; /* per worker: the run already signalled */
	struct jf_worker_stats *last; /* per worker, at the last schedtrace line */
	struct jf_hist *last_delay;   /* per worker, raw runnable-delay histogram then */
	struct jf_hist diff;
	struct sigaction old_sa; /* the stall signal's previous disposition */
};

int jf_stall_signal(void)
{
	return SIGRTMIN + 2;
}

/* --- jf_dump_threads() ------------------------------------------------------------------------ */

static const char *vstate_name(unsigned v)
{
	static const char *const n[] = {"runnable", "running", "blocked", "exited", "free"};
	return v < sizeof(n) / sizeof(n[0]) ? n[v] : "?";
}

static const char *reason_name(unsigned r)
{
	switch (r) {
	case JF_ENQ_NEW: return "new";
	case JF_ENQ_WOKEN: return "woken";
	case JF_ENQ_YIELDED: return "yielded";
	case JF_ENQ_PREEMPTED: return "preempted";
	default: return "?";
	}
}

static void fmt_age(char *buf, size_t len, uint64_t now, uint64_t since)
{
	uint64_t d = since && now > since ? now - since : 0;

	if (!since)
		snprintf(buf, len, "-");
	else if (d < 10000)
		snprintf(buf, len, "%" PRIu64 "ns", d);
	else if (d < 10000000)
		snprintf(buf, len, "%.1fus", (double)d / 1e3);
	else if (d < 10000000000ull)
		snprintf(buf, len, "%.1fms", (double)d / 1e6);
	else
		snprintf(buf, len, "%.1fs", (double)d / 1e9);
}

int jf_dump_threads(FILE *out)
{
	struct runtime *rt = jf_rt;
	uint64_t now = jf_now_ns();
	unsigned n = 0;

	if (!rt)
		return -ESRCH;
	if (!out)
		return -EINVAL;
	fprintf(out, "jiffy: uthreads (%d workers, policy %s, preempt %s)%s\n", rt->nworkers,
		rt->cfg.policy, rt->mech->name,
		rt->switch_clock ? ""
				 : " (ages not tracked: the switch reads no clock; JIFFY_HIST=1 "
				   "tracks them)");
	fprintf(out, "%8s %-24s %-9s %6s %5s %9s  %s\n", "id", "name", "state", "worker", "class",
		"for", "where");
	pthread_mutex_lock(&rt->reg_lock);
	for (struct jf_thread *t = rt->reg_head; t; t = t->reg_next) {
		unsigned v = JF_VIEW_GET(t, vstate);
		const char *on = JF_VIEW_GET(t, wait_on);
		const void *obj = JF_VIEW_GET(t, wait_obj);
		struct worker *w = NULL;
		char age[32], where[96];
		int wid, klass;

		if (v == UV_FREE)
			continue;
		/* The class as jf_thread_get_sched_attr() reads it: under the uthread's attr_lock,
		 * which apply_sched_attr() (thread.c) holds while it copies attr_next over task.attr
		 * on the uthread's worker (TSan saw the plain read race with that copy). */
		JF_RUNTIME_ENTER();
		jf_spin_lock(&t->attr_lock);
		klass = t->task.attr.klass;
		jf_spin_unlock(&t->attr_lock);
		JF_RUNTIME_LEAVE();
		wid = __atomic_load_n(&t->task.last_worker, __ATOMIC_RELAXED);
		if (wid >= 0 && wid < rt->nworkers)
			w = &rt->workers[wid];
		fmt_age(age, sizeof(age), now, JF_VIEW_GET(t, state_ns));
		if (v == UV_BLOCKED && on && obj)
			snprintf(where, sizeof(where), "%s %p", on, obj);
		else if (v == UV_BLOCKED)
			snprintf(where, sizeof(where), "%s", on ? on : "blocked");
		else if (v == UV_RUNNABLE)
			snprintf(where, sizeof(where), "queued: %s",
				 reason_name(JF_VIEW_GET(t, off_reason)));
		else if (v == UV_RUNNING && w)
			snprintf(where, sizeof(where), "on worker %d (tid %d)", wid, (int)w->pre.tid);
		else
			where[0] = '\0';
		if (jf_thread_pinned(t) >= 0) { /* jiffy/local.h */
			size_t l = strlen(where);
			snprintf(where + l, sizeof(where) - l, "%spinned to worker %d", l ? "; " : "",
				 jf_thread_pinned(t));
		}
		fprintf(out, "%8" PRIu64 " %-24s %-9s %6d %5d %9s  %s\n", t->task.id,
			t->name[0] ? t->name : "-", vstate_name(v), wid, klass, age,
			where);
		n++;
	}
	pthread_mutex_unlock(&rt->reg_lock);
	fprintf(out, "jiffy: %u uthreads\n", n);
	fflush(out);
	return 0;
}

/* --- stall reports ------------------------------------------------------------------------------ */

/* Append @s to @buf (of @cap bytes, @*len used) without libc formatting: signal-safe. */
static void put_str(char *buf, size_t cap, size_t *len, const char *s)
{
	while (*s && *len + 1 < cap)
		buf[(*len)++] = *s++;
	buf[*len] = '\0';
}

static void put_u64(char *buf, size_t cap, size_t *len, uint64_t v)
{
	char d[24];
	int i = 0;

	do {
		d[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i > 0 && *len + 1 < cap)
		buf[(*len)++] = d[--i];
	buf[*len] = '\0';
}

static void put_hex(char *buf, size_t cap, size_t *len, uint64_t v)
{
	char d[20];
	int i = 0;

	do {
		d[i++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	put_str(buf, cap, len, "0x");
	while (i > 0 && *len + 1 < cap)
		buf[(*len)++] = d[--i];
	buf[*len] = '\0';
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return;
		}
		p += k;
		n -= (size_t)k;
	}
}

/* --- crash reports ------------------------------------------------------------------------- */

/*
 * A fault (SIGSEGV, SIGBUS) that is not a stack overflow, on a worker or any other thread of the
 * process (stack.c's handler calls this, then lets the default action dump core): what a CI log
 * needs to start from when the crash does not come back. The signal, the address, the
 * registers that locate it (ip, sp; for "ip 0", a return to a zeroed address, the words at sp
 * are what it returned from), the worker and its uthread, a backtrace, and every uthread of
 * the runtime with its state and last worker. Async-signal-safe but for backtrace(), whose
 * library is loaded at start-up (jf_crash_report_init); the registry is walked without its
 * lock (the process is dying; a uthread created meanwhile may be missed).
 */
void jf_crash_report_init(void)
{
	void *warm[2];

	backtrace(warm, 2); /* loads libgcc now, not in the handler */
}

/* (Not instrumented by ASan: the words at sp may lie in a frame's redzone.) */
__attribute__((no_sanitize_address)) void jf_crash_report(int sig, const siginfo_t *si,
							  const void *ucv)
{
	const ucontext_t *uc = ucv;
	struct runtime *rt = jf_rt;
	struct worker *w = jf_this_worker();
	struct jf_thread *cur = w ? w->cur : NULL;
	uintptr_t pc = uc ? (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] : 0;
	uintptr_t sp = uc ? (uintptr_t)uc->uc_mcontext.gregs[REG_RSP] : 0;
	void *frames[48];
	char buf[640];
	size_t len = 0;
	int nf;

	put_str(buf, sizeof(buf), &len, sig == SIGBUS ? "jiffy: crash: SIGBUS" : "jiffy: crash: SIGSEGV");
	put_str(buf, sizeof(buf), &len, " at address ");
	put_hex(buf, sizeof(buf), &len, (uint64_t)(uintptr_t)si->si_addr);
	put_str(buf, sizeof(buf), &len, ", ip ");
	put_hex(buf, sizeof(buf), &len, pc);
	put_str(buf, sizeof(buf), &len, ", sp ");
	put_hex(buf, sizeof(buf), &len, sp);
	if (w) {
		put_str(buf, sizeof(buf), &len, ", on worker ");
		put_u64(buf, sizeof(buf), &len, (uint64_t)w->id);
		put_str(buf, sizeof(buf), &len, " (tid ");
		put_u64(buf, sizeof(buf), &len, (uint64_t)w->pre.tid);
		put_str(buf, sizeof(buf), &len, ")");
		if (cur) {
			put_str(buf, sizeof(buf), &len, " running uthread ");
			put_u64(buf, sizeof(buf), &len, cur->task.id);
			put_str(buf, sizeof(buf), &len, " '");
			put_str(buf, sizeof(buf), &len, cur->name[0] ? cur->name : "-");
			put_str(buf, sizeof(buf), &len, "'");
		} else {
			put_str(buf, sizeof(buf), &len, " in its scheduler loop");
		}
	} else {
		put_str(buf, sizeof(buf), &len, ", not on a worker");
	}
	put_str(buf, sizeof(buf), &len, "\n");
	/* The words at sp, when they are in the running uthread's stack: after "ip 0" the caller
	 * that returned there is among them. */
	if (cur && sp >= (uintptr_t)cur->map_base + cur->guard_size && sp < (uintptr_t)cur) {
		size_t words = ((uintptr_t)cur - sp) / 8;
		put_str(buf, sizeof(buf), &len, "jiffy: crash: stack at sp:");
		for (size_t i = 0; i < 8 && i < words; i++) {
			put_str(buf, sizeof(buf), &len, " ");
			put_hex(buf, sizeof(buf), &len, ((const uint64_t *)sp)[i]);
		}
		put_str(buf, sizeof(buf), &len, "\n");
	}
	put_str(buf, sizeof(buf), &len, "jiffy: crash: backtrace:\n");
	write_all(STDERR_FILENO, buf, len);
	nf = backtrace(frames, (int)(sizeof(frames) / sizeof(frames[0])));
	backtrace_symbols_fd(frames, nf, STDERR_FILENO);
	if (!rt)
		return;
	len = 0;
	put_str(buf, sizeof(buf), &len, "jiffy: crash: uthreads (id, state, last worker, name):\n");
	write_all(STDERR_FILENO, buf, len);
	for (struct jf_thread *t = rt->reg_head; t; t = t->reg_next) {
		unsigned v = JF_VIEW_GET(t, vstate);
		int wid = __atomic_load_n(&t->task.last_worker, __ATOMIC_RELAXED);

		if (v == UV_FREE)
			continue;
		len = 0;
		put_str(buf, sizeof(buf), &len, "  ");
		put_u64(buf, sizeof(buf), &len, t->task.id);
		put_str(buf, sizeof(buf), &len, " ");
		put_str(buf, sizeof(buf), &len, vstate_name(v));
		put_str(buf, sizeof(buf), &len, " ");
		if (wid >= 0)
			put_u64(buf, sizeof(buf), &len, (uint64_t)wid);
		else
			put_str(buf, sizeof(buf), &len, "-");
		put_str(buf, sizeof(buf), &len, " ");
		put_str(buf, sizeof(buf), &len, t->name[0] ? t->name : "-");
		if (t == cur)
			put_str(buf, sizeof(buf), &len, "   <- faulted");
		put_str(buf, sizeof(buf), &len, "\n");
		write_all(STDERR_FILENO, buf, len);
	}
}

/* Runs on the stalled worker (the monitor sent the signal): report its uthread. */
static void stall_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	struct runtime *rt = jf_rt;
	struct worker *w = jf_this_worker();
	const ucontext_t *uc = ucv;
	struct jf_thread *t;
	uintptr_t pc;
	uint64_t now, ran;
	void *frames[48];
	char buf[512];
	size_t len = 0;
	int nf;

	(void)sig;
	(void)si;
	if (!rt || !w || !(t = w->cur) ||
	    __atomic_load_n(&w->pre.run_seq, __ATOMIC_RELAXED) !=
		    __atomic_load_n(&w->stall_seq, __ATOMIC_RELAXED))
		goto out; /* that run ended before the signal came */
	now = jf_now_ns();
	if (t->stall_ns && now - t->stall_ns < STALL_REPORT_EVERY_NS)
		goto out;
	t->stall_ns = now;
	ran = now - __atomic_load_n(&w->pre.run_start_ns, __ATOMIC_RELAXED);
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	put_str(buf, sizeof(buf), &len, "jiffy: stall: uthread ");
	put_u64(buf, sizeof(buf), &len, t->task.id);
	put_str(buf, sizeof(buf), &len, " '");
	put_str(buf, sizeof(buf), &len, t->name[0] ? t->name : "-");
	put_str(buf, sizeof(buf), &len, "' has kept worker ");
	put_u64(buf, sizeof(buf), &len, (uint64_t)w->id);
	put_str(buf, sizeof(buf), &len, " for ");
	put_u64(buf, sizeof(buf), &len, ran / 1000);
	put_str(buf, sizeof(buf), &len, " us (quantum ");
	put_u64(buf, sizeof(buf), &len, rt->cfg.quantum_ns / 1000);
	put_str(buf, sizeof(buf), &len, " us) while work waits; pc ");
	put_hex(buf, sizeof(buf), &len, pc);
	if (jf_pcount() > 0)
		put_str(buf, sizeof(buf), &len,
			", in a non-preemptible region (jf_preempt_disable(), a pthread lock, or the "
			"runtime)");
	else if (rt->preempting && jf_preempt_pc_denied(pc))
		put_str(buf, sizeof(buf), &len, ", in code that may not be interrupted (libc)");
	else if (!rt->preempting)
		put_str(buf, sizeof(buf), &len, ", and preemption is off (JIFFY_PREEMPT=none)");
	else if (!rt->mech->uses_signal)
		put_str(buf, sizeof(buf), &len,
			", in code that reaches no jf_safepoint() (this mechanism only preempts "
			"there)");
	else
		put_str(buf, sizeof(buf), &len, ", preemption was asked for but not taken yet");
	put_str(buf, sizeof(buf), &len, "; backtrace:\n");
	write_all(STDERR_FILENO, buf, len);
	nf = backtrace(frames, (int)(sizeof(frames) / sizeof(frames[0])));
	backtrace_symbols_fd(frames, nf, STDERR_FILENO);
out:
	errno = saved;
}

static int stall_install(struct sigaction *old)
{
	struct sigaction sa;

	jf_crash_report_init(); /* the same warm-up: backtrace() in a handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = stall_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	return sigaction(jf_stall_signal(), &sa, old) ? -errno : 0;
}

/* Work waits somewhere: made runnable more often than picked (approximate, see stats.c). */
static int64_t runnable_now(const struct runtime *rt)
{
	int64_t n = 0;
	for (int i = 0; i < rt->nworkers; i++)
		n += (int64_t)(__atomic_load_n(&rt->workers[i].enqueues, __ATOMIC_RELAXED) -
			       __atomic_load_n(&rt->workers[i].picks, __ATOMIC_RELAXED));
	return n;
}

static void stall_scan(struct runtime *rt, struct monitor *m, uint64_t now)
{
	if (runnable_now(rt) <= 0)
		return;
	for (int i = 0; i < rt->nworkers; i++) {
		struct worker *w = &rt->workers[i];
		uint64_t seq = __atomic_load_n(&w->pre.run_seq, __ATOMIC_ACQUIRE);
		uint64_t start = __atomic_load_n(&w->pre.run_start_ns, __ATOMIC_ACQUIRE);

		if (!start || now < start || now - start < m->stall_ns || m->seen_seq[i] == seq)
			continue;
		if (seq != __atomic_load_n(&w->pre.run_seq, __ATOMIC_ACQUIRE))
			continue; /* a new run began while we read */
		m->seen_seq[i] = seq;
		__atomic_store_n(&w->stall_seq, seq, __ATOMIC_RELEASE);
		if (!atomic_load_explicit(&rt->stopping, memory_order_relaxed))
			syscall(SYS_tgkill, rt->pid, w->pre.tid, jf_stall_signal());
	}
}

/* --- schedtrace ------------------------------------------------------------------------------ */

static void schedtrace_line(struct runtime *rt, struct monitor *m, uint64_t now)
{
	char line[4096];
	size_t len = 0;
	int parked = 0, running = 0;

	for (int i = 0; i < rt->nworkers; i++) {
		struct worker *w = &rt->workers[i];
		running += __atomic_load_n(&w->pre.run_start_ns, __ATOMIC_RELAXED) != 0;
		parked += __atomic_load_n(&w->idle.park_state, __ATOMIC_RELAXED) != WK_RUNNING;
	}
	len += (size_t)snprintf(line + len, sizeof(line) - len,
				"jiffy: SCHED %" PRIu64 "ms: workers=%d running=%d parked=%d "
				"spinning=%d runnable=%" PRId64,
				(now - m->start_ns) / 1000000, rt->nworkers, running, parked,
				atomic_load_explicit(&rt->nr_spinning, memory_order_relaxed),
				runnable_now(rt));
	for (int i = 0; i < rt->nworkers && len < sizeof(line) - 160; i++) {
		struct worker *w = &rt->workers[i];
		const struct jf_hist *h = &w->hist[JF_HIST_RUNNABLE_DELAY];
		struct jf_hist *last = &m->last_delay[i];
		struct jf_worker_stats s;
		const char *state;
		uint64_t p99;

		jf_stats_worker(i, &s);
		for (unsigned b = 0; b < JF_HIST_BUCKETS; b++) {
			uint64_t v = __atomic_load_n(&h->buckets[b], __ATOMIC_RELAXED);
			m->diff.buckets[b] = v - last->buckets[b];
			last->buckets[b] = v;
		}
		p99 = jf_hist_percentile(&m->diff, 99);
		if (__atomic_load_n(&w->pre.run_start_ns, __ATOMIC_RELAXED))
			state = "run";
		else if (__atomic_load_n(&w->idle.park_state, __ATOMIC_RELAXED) != WK_RUNNING)
			state = "park";
		else
			state = "idle";
		len += (size_t)snprintf(line + len, sizeof(line) - len,
					" [w%d %s sw=%" PRIu64 " pre=%" PRIu64 " steal=%" PRIu64
					" p99delay=%" PRIu64 "us]",
					i, state, s.switches - m->last[i].switches,
					s.preempts - m->last[i].preempts, s.steals - m->last[i].steals,
					(p99 + 999) / 1000);
		m->last[i] = s;
	}
	fprintf(stderr, "%s\n", line);
}

/* --- the monitor thread ------------------------------------------------------------------------ */

static void *monitor_main(void *arg)
{
	struct runtime *rt = arg;
	struct monitor *m = rt->monitor;
	uint64_t tick, next_trace;

	pthread_setname_np(pthread_self(), "jiffy-monitor");
	/* Stall scans at a quarter of the threshold (at least 1 ms); trace lines at their period. */
	tick = m->stall_ns ? m->stall_ns / 4 : m->trace_ns;
	if (tick < 1000000)
		tick = 1000000;
	if (m->trace_ns && m->trace_ns < tick)
		tick = m->trace_ns;
	next_trace = m->start_ns + m->trace_ns;
	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		uint64_t now = jf_now_ns(), wake = now + tick;
		struct timespec ts;

		if (m->trace_ns && wake > next_trace)
			wake = next_trace;
		ts.tv_sec = (time_t)(wake / 1000000000u);
		ts.tv_nsec = (long)(wake % 1000000000u);
		pthread_cond_timedwait(&m->cond, &m->lock, &ts);
		if (m->stop)
			break;
		now = jf_now_ns();
		if (m->stall_ns)
			stall_scan(rt, m, now);
		if (m->trace_ns && now >= next_trace) {
			schedtrace_line(rt, m, now);
			next_trace += m->trace_ns;
			if (next_trace < now)
				next_trace = now + m->trace_ns;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int jf_monitor_start(struct runtime *rt)
{
	struct monitor *m;
	pthread_condattr_t ca;
	int rc;

	if (!rt->cfg.schedtrace_ns && !rt->cfg.stall_report)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->seen_seq = calloc((size_t)rt->nworkers, sizeof(*m->seen_seq));
	m->last = calloc((size_t)rt->nworkers, sizeof(*m->last));
	m->last_delay = calloc((size_t)rt->nworkers, sizeof(*m->last_delay));
	if (!m->seen_seq || !m->last || !m->last_delay) {
		rc = -ENOMEM;
		goto fail;
	}
	m->trace_ns = rt->cfg.schedtrace_ns;
	m->stall_ns = (uint64_t)rt->cfg.stall_report * rt->cfg.quantum_ns;
	m->start_ns = jf_now_ns();
	if (m->stall_ns && (rc = stall_install(&m->old_sa)) != 0)
		goto fail;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	rt->monitor = m;
	rc = -pthread_create(&m->thread, NULL, monitor_main, rt);
	if (rc) {
		rt->monitor = NULL;
		if (m->stall_ns)
			sigaction(jf_stall_signal(), &m->old_sa, NULL);
		pthread_cond_destroy(&m->cond);
		pthread_mutex_destroy(&m->lock);
		goto fail;
	}
	return 0;
fail:
	free(m->seen_seq);
	free(m->last);
	free(m->last_delay);
	free(m);
	return rc;
}

void jf_monitor_stop(struct runtime *rt)
{
	struct monitor *m = rt->monitor;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	if (m->stall_ns)
		sigaction(jf_stall_signal(), &m->old_sa, NULL);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m->seen_seq);
	free(m->last);
	free(m->last_delay);
	free(m);
	rt->monitor = NULL;
}
