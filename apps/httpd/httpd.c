/*
 * apps/httpd/httpd.c - jiffy-httpd: the head-of-line web server of libinger's §6.2 (Fig. 4) on
 * Jiffy's preemptible functions (include/jiffy/pfn.h); docs/pfn-http.md has the experiment.
 *
 * Owns: the command line, the settings and counters, and the Jiffy server of two of the three
 * modes (--mode), an HTTP/1.1 server on the netpoller with one uthread per connection
 * (keep-alive; the parsing and the routes are http.c's, by Debian's libhttp-parser) whose
 * handlers compute: GET /short about --short-us (500 µs), GET /long about --long-us (50 ms).
 *   budget    each handler runs under jf_pfn_launch() with a budget of --budget-us (2 ms). One
 *             that runs out is set aside, never dropped: with --set-aside yield (the default)
 *             its uthread jf_yield()s, so that the requests that arrived meanwhile (their
 *             connections' uthreads, woken by the netpoller at the yield) run first, then
 *             resumes it with a new budget, until it is done; with --set-aside background its
 *             continuation is handed to one background uthread that resumes the set-aside
 *             handlers in turn, a budget each, yielding after each (at most one long slice
 *             waits in the run queue, however many long requests are in progress). The runtime itself preempts nothing (JIFFY_PREEMPT=none unless the
 *             environment says otherwise): as in libinger's libturquoise, the budgets are the only
 *             preemption.
 *   nobudget  the same server, handlers called directly: run to completion (cooperative, like
 *             the tokio-threadpool baseline of Fig. 4).
 *   pool      a fixed pool of --threads pthreads over epoll (pool.c), no Jiffy runtime: the
 *             kernel's scheduler is the only preemption.
 * Every request is answered: with 200 and its work's result (X-Jiffy-Slices: the budget slices
 * its handler took), or with 400 (malformed), 404, 405, 413, 414, 431, then the connection is
 * closed. Safe by default (docs/security.md): listens on 127.0.0.1 unless --bind says otherwise;
 * HTTP here has no authentication and a request buys up to --long-us of CPU, so a non-loopback
 * address needs --protected-mode no; at most --max-conns connections (more are closed at once),
 * a connection that completes no request for 60 s is closed (trickled bytes are no progress), a
 * client that reads no response for 5 s is dropped.
 *
 * Prints "READY jiffy-httpd port=N mode=M" on stdout when it accepts connections; SIGINT or
 * SIGTERM stops it (the requests in progress are finished) and prints the counters on stderr
 * (cpu_us_*: the mean CPU time of a route's work where it runs uninterrupted, nobudget and pool;
 * 0 in budget mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>
#include <jiffy/pfn.h>

#include "flags.h"
#include "httpd.h"
#include "spin.h"

#define HD_OPEN "HTTP without authentication (any client can make the server compute up to " \
		"--long-us per request)"

const char *hd_prog = "jiffy-httpd";
struct hd_settings hd;
struct hd_counters hd_count;
static const char *const mode_names[] = {"budget", "nobudget", "pool", NULL};

/* ---- shared by both servers ---------------------------------------------------------------- */

static int listen_fd = -1;

int hd_open_listener(int (*sock_fn)(int, int, int), unsigned *bound)
{
	struct sockaddr_storage a;
	socklen_t alen;
	int one = 1;

	jp_listen_sockaddr(&hd.listen, (unsigned)hd.port, &a, &alen);
	listen_fd = sock_fn(a.ss_family, SOCK_STREAM, 0);
	if (listen_fd < 0)
		return -1;
	(void)setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, (struct sockaddr *)&a, alen) != 0 || listen(listen_fd, 1024) != 0)
		return -1;
	alen = sizeof(a);
	if (getsockname(listen_fd, (struct sockaddr *)&a, &alen) != 0)
		return -1;
	*bound = jp_sockaddr_port(&a);
	return listen_fd;
}

void hd_report(void)
{
	unsigned long long r[HH_NROUTES], sl[HH_NROUTES], st[HH_NROUTES];
	double cpu_us[HH_NROUTES];
	for (int i = 0; i < HH_NROUTES; i++) {
		r[i] = atomic_load(&hd_count.requests[i]);
		sl[i] = atomic_load(&hd_count.slices[i]);
		st[i] = atomic_load(&hd_count.stopped[i]);
		cpu_us[i] = r[i] ? (double)atomic_load(&hd_count.cpu_ns[i]) / 1e3 / (double)r[i] : 0;
	}
	fprintf(stderr,
		"%s: mode=%s short=%llu long=%llu bad=%llu conns=%llu refused=%llu "
		"io_errors=%llu stopped_short=%llu stopped_long=%llu slices_short=%llu "
		"slices_long=%llu cpu_us_short=%.0f cpu_us_long=%.0f\n",
		hd_prog, mode_names[hd.mode], r[HH_SHORT], r[HH_LONG],
		(unsigned long long)atomic_load(&hd_count.bad),
		(unsigned long long)atomic_load(&hd_count.conns),
		(unsigned long long)atomic_load(&hd_count.refused),
		(unsigned long long)atomic_load(&hd_count.io_errors), st[HH_SHORT], st[HH_LONG],
		sl[HH_SHORT], sl[HH_LONG], cpu_us[HH_SHORT], cpu_us[HH_LONG]);
}

uint64_t hd_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int hd_write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			if (poll(&p, 1, 5000) <= 0)
				return -1; /* a client that reads nothing for 5 s is dropped */
			continue;
		}
		return -1;
	}
	return 0;
}

/* ---- the Jiffy server (budget, nobudget) ------------------------------------------------- */

static atomic_int stopping;
static jf_waitgroup_t wg = JF_WAITGROUP_INITIALIZER;

struct work {
	uint64_t iters, seed, x;
	enum hh_route route;
};

static void safepoint(void)
{
	jf_safepoint();
}

static void *work_fn(void *arg)
{
	struct work *w = arg;
	w->x = hh_work(w->iters, w->seed, hd.safepoints ? safepoint : NULL);
	return NULL;
}

/*
 * --set-aside background: the continuations of handlers that ran out of budget wait here, and
 * one uthread (background()) resumes them in turn, one budget each, yielding after each; their
 * connections' uthreads sleep until theirs is done. So at most one long slice is in the run
 * queue at a time, however many long requests are in progress.
 */
struct aside {
	jf_pfn_t *cont;
	unsigned slices;
	int status; /* jf_pfn_resume()'s last answer */
	int done;
	jf_cond_t cv;
	struct aside *next;
};

static struct {
	jf_mutex_t lock;
	jf_cond_t cv; /* background() waits here for work */
	struct aside *head, *tail;
} bg = {JF_MUTEX_INITIALIZER, JF_COND_INITIALIZER, NULL, NULL};

static void aside_push(struct aside *a) /* under bg.lock */
{
	a->next = NULL;
	if (bg.tail)
		bg.tail->next = a;
	else
		bg.head = a;
	bg.tail = a;
}

static void *background(void *arg)
{
	const uint64_t budget = (uint64_t)hd.budget_us * 1000u;

	(void)arg;
	jf_mutex_lock(&bg.lock);
	for (;;) {
		while (!bg.head) {
			/* Every connection gone: none can set a handler aside any more. */
			if (atomic_load(&stopping) && atomic_load(&hd_count.open) == 0)
				goto out;
			jf_cond_timedwait(&bg.cv, &bg.lock, jf_now_ns() + HD_POLL_NS);
		}
		struct aside *a = bg.head;
		bg.head = a->next;
		if (!bg.head)
			bg.tail = NULL;
		jf_mutex_unlock(&bg.lock);
		a->status = jf_pfn_resume(a->cont, budget, NULL);
		a->slices++;
		jf_mutex_lock(&bg.lock);
		if (a->status == JF_PFN_TIMEOUT || a->status == JF_PFN_PAUSED) {
			aside_push(a); /* round robin among the long ones */
		} else {
			a->done = 1;
			jf_cond_signal(&a->cv);
		}
		jf_mutex_unlock(&bg.lock);
		jf_yield(); /* behind whatever arrived meanwhile */
		jf_mutex_lock(&bg.lock);
	}
out:
	jf_mutex_unlock(&bg.lock);
	jf_waitgroup_done(&wg);
	return NULL;
}

/*
 * Run the handler's work; return the budget slices it took (0 without a budget). A handler that
 * runs out of budget is set aside (--set-aside): its uthread yields and resumes it, so that
 * whatever arrived meanwhile goes first, or hands it to background().
 */
static unsigned run_work(struct work *w)
{
	const uint64_t budget = (uint64_t)hd.budget_us * 1000u;
	jf_pfn_t *cont = NULL;
	unsigned slices = 1;
	int st;

	if (hd.mode == HD_NOBUDGET) { /* uninterrupted on its worker: its CPU time is its own */
		uint64_t t0 = hd_thread_cpu_ns();
		work_fn(w);
		atomic_fetch_add(&hd_count.cpu_ns[w->route], hd_thread_cpu_ns() - t0);
		return 0;
	}
	st = jf_pfn_launch(work_fn, w, budget, NULL, &cont);
	if (hd.background && (st == JF_PFN_TIMEOUT || st == JF_PFN_PAUSED)) {
		struct aside a = {.cont = cont, .slices = 1};
		jf_cond_init(&a.cv);
		jf_mutex_lock(&bg.lock);
		aside_push(&a);
		jf_cond_signal(&bg.cv);
		while (!a.done)
			jf_cond_wait(&a.cv, &bg.lock);
		jf_mutex_unlock(&bg.lock);
		st = a.status;
		slices = a.slices;
	}
	while (st == JF_PFN_TIMEOUT || st == JF_PFN_PAUSED) {
		jf_yield(); /* to the back of the run queue: the short requests go first */
		slices++;
		st = jf_pfn_resume(cont, budget, NULL);
	}
	if (st < 0) { /* no stack for it (-ENOMEM): serve it anyway, without a budget */
		atomic_fetch_add(&hd_count.io_errors, 1);
		work_fn(w);
		return 0;
	}
	return slices;
}

static void *conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct hh_conn *c = malloc(sizeof(*c));
	char out[HH_RESP_MAX];
	uint64_t progress = jf_now_ns(); /* when it last completed a request (or connected) */

	if (!c)
		goto out;
	hh_conn_init(c);
	for (;;) {
		struct hh_request req;
		size_t len, room;

		if (hh_conn_next(c, &req) == HH_MORE) {
			char *p = hh_conn_space(c, &room);
			ssize_t n = jf_read(fd, p, room, HD_POLL_NS);
			/* Bytes that complete no request are no progress (slowloris). */
			if (jf_now_ns() - progress > HD_IDLE_S * 1000000000ull)
				break;
			if (n > 0) {
				hh_conn_filled(c, (size_t)n);
				continue;
			}
			if (n < 0 && errno == ETIMEDOUT && !atomic_load(&stopping))
				continue;
			if (n < 0 && errno != ETIMEDOUT && errno != ECONNRESET)
				atomic_fetch_add(&hd_count.io_errors, 1);
			break; /* EOF, an error, or stopping */
		}
		if (req.status != 200) {
			atomic_fetch_add(&hd_count.bad, 1);
			len = hh_format_error(out, req.status);
			(void)jf_write(fd, out, len, 5 * 1000000000ll);
			break;
		}
		struct work w = {.iters = hd.iters[req.route], .seed = req.seed, .route = req.route};
		unsigned slices = run_work(&w);
		atomic_fetch_add(&hd_count.requests[req.route], 1);
		atomic_fetch_add(&hd_count.slices[req.route], slices);
		if (slices > 1)
			atomic_fetch_add(&hd_count.stopped[req.route], 1);
		len = hh_format_ok(out, &req, w.iters, w.x, slices);
		if (jf_write(fd, out, len, 5 * 1000000000ll) != (ssize_t)len) {
			atomic_fetch_add(&hd_count.io_errors, 1);
			break;
		}
		progress = jf_now_ns();
		if (!req.keep_alive)
			break;
	}
out:
	jf_close(fd);
	free(c);
	atomic_fetch_sub(&hd_count.open, 1);
	jf_waitgroup_done(&wg);
	return NULL;
}

static void *acceptor(void *arg)
{
	struct jf_attr attr;
	int one = 1;

	(void)arg;
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "httpd-conn";
	while (!atomic_load(&stopping)) {
		int fd = jf_accept(listen_fd, NULL, NULL, HD_POLL_NS);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				jf_sleep_ns(10 * 1000 * 1000); /* out of descriptors: let some close */
			else if (errno != ETIMEDOUT && errno != EINTR && errno != ECONNABORTED &&
				 errno != EAGAIN)
				break; /* the listener was closed */
			continue;
		}
		if (atomic_load(&hd_count.open) >= hd.max_conns) {
			atomic_fetch_add(&hd_count.refused, 1);
			jf_close(fd);
			continue;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		atomic_fetch_add(&hd_count.conns, 1);
		atomic_fetch_add(&hd_count.open, 1);
		jf_waitgroup_add(&wg, 1);
		if (jf_spawn(NULL, &attr, conn_main, (void *)(intptr_t)fd) != 0) {
			atomic_fetch_sub(&hd_count.open, 1);
			jf_waitgroup_done(&wg);
			atomic_fetch_add(&hd_count.refused, 1);
			jf_close(fd);
		}
	}
	jf_waitgroup_done(&wg);
	return NULL;
}

static void *app_main(void *arg)
{
	const sigset_t *sigs = arg;
	struct jf_attr attr;
	unsigned bound = 0;
	int signo = 0, sig_fd;
	intptr_t rc = 1;

	sig_fd = signalfd(-1, sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sig_fd < 0 || jf_fd_register(sig_fd) != 0) {
		fprintf(stderr, "%s: signalfd: %s\n", hd_prog, strerror(errno));
		return (void *)rc;
	}
	if (hd_open_listener(jf_socket, &bound) < 0) {
		fprintf(stderr, "%s: cannot listen on %s TCP port %lu (--bind, --port): %s\n", hd_prog,
			hd.listen.text, hd.port, strerror(errno));
		return (void *)rc;
	}
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "httpd-accept";
	jf_waitgroup_add(&wg, 1);
	if (jf_spawn(NULL, &attr, acceptor, NULL) != 0) {
		fprintf(stderr, "%s: cannot start the acceptor\n", hd_prog);
		return (void *)rc;
	}
	attr.name = "httpd-aside";
	if (hd.mode == HD_BUDGET && hd.background) {
		jf_waitgroup_add(&wg, 1);
		if (jf_spawn(NULL, &attr, background, NULL) != 0) {
			fprintf(stderr, "%s: cannot start the background uthread\n", hd_prog);
			return (void *)rc;
		}
	}
	fprintf(stderr, "%s: listening on %s port %u, %d worker(s)\n", hd_prog, hd.listen.text,
		bound, jf_nworkers());
	printf("READY jiffy-httpd port=%u mode=%s\n", bound, mode_names[hd.mode]);
	fflush(stdout);
	while (!signo) {
		struct signalfd_siginfo si;
		if (jf_fd_wait(sig_fd, POLLIN, JF_NO_TIMEOUT) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: waiting for signals: %s\n", hd_prog, strerror(errno));
			signo = -1;
		}
		while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			signo = (int)si.ssi_signo;
	}
	atomic_store(&stopping, 1);
	jf_mutex_lock(&bg.lock);
	jf_cond_broadcast(&bg.cv);
	jf_mutex_unlock(&bg.lock);
	jf_waitgroup_wait(&wg); /* the acceptor and every connection (within HD_POLL_NS) */
	jf_close(listen_fd);
	jf_close(sig_fd);
	hd_report();
	rc = signo > 0 ? 0 : 1;
	return (void *)rc;
}

/* ---- the command line -------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--mode budget|nobudget|pool] [--port P] [--bind ADDR]\n"
		"          [--protected-mode yes|no] [--budget-us US] [--short-us US] [--long-us US]\n"
		"          [--workers N] [--threads N] [--max-conns N] [--safepoints yes|no]\n"
		"          [--set-aside yield|background]\n"
		"An HTTP/1.1 server whose handlers compute: GET /short about --short-us, GET /long\n"
		"about --long-us (optional ?seed=N); the head-of-line demo of preemptible functions\n"
		"(docs/pfn-http.md).\n"
		"  --mode M          budget (default): each handler under jf_pfn_launch() with\n"
		"                    --budget-us; one that runs out yields and is resumed later.\n"
		"                    nobudget: the same, handlers run to completion. pool: a fixed\n"
		"                    pool of --threads pthreads over epoll, no Jiffy runtime\n"
		"  --port P          TCP port (default 8080; 0: any free port)\n"
		JP_LISTEN_USAGE
		"                    HTTP here has no authentication: an address outside\n"
		"                    127.0.0.0/8 and ::1 needs --protected-mode no\n"
		"  --budget-us US    the budget of a handler and of each resumption (default 2000)\n"
		"  --set-aside M     budget mode, a handler that ran out: yield (default): its\n"
		"                    uthread yields, then resumes it; background: one uthread\n"
		"                    resumes all of them in turn, yielding after each slice\n"
		"  --short-us US     the work of /short, calibrated at start-up (default 500)\n"
		"  --long-us US      the work of /long (default 50000, at most 1000000)\n"
		"  --workers N       Jiffy workers (budget, nobudget; default: JIFFY_WORKERS or 1)\n"
		"  --threads N       the pool's threads (pool; default 8)\n"
		"  --max-conns N     connections open at once (default 1024); more are closed\n"
		"  --safepoints yes|no  call jf_safepoint() about every microsecond of work (default\n"
		"                    no: a budget stops the handler by signal, like libinger)\n"
		JP_FLAGS_STD_USAGE
		"budget and nobudget run Jiffy without preemption (JIFFY_PREEMPT=none) unless the\n"
		"environment sets JIFFY_PREEMPT; other JIFFY_* variables apply as usual.\n",
		hd_prog);
}

enum {
	F_MODE = 0x100, F_PORT, F_BIND, F_PROTECTED, F_BUDGET, F_SHORT, F_LONG, F_WORKERS,
	F_THREADS, F_MAX_CONNS, F_SAFEPOINTS, F_SET_ASIDE,
};

static const struct option options[] = {
	{"mode", required_argument, NULL, F_MODE},
	{"port", required_argument, NULL, F_PORT},
	{"bind", required_argument, NULL, F_BIND},
	{"protected-mode", required_argument, NULL, F_PROTECTED},
	{"budget-us", required_argument, NULL, F_BUDGET},
	{"short-us", required_argument, NULL, F_SHORT},
	{"long-us", required_argument, NULL, F_LONG},
	{"workers", required_argument, NULL, F_WORKERS},
	{"threads", required_argument, NULL, F_THREADS},
	{"max-conns", required_argument, NULL, F_MAX_CONNS},
	{"safepoints", required_argument, NULL, F_SAFEPOINTS},
	{"set-aside", required_argument, NULL, F_SET_ASIDE},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	static const char *const no_yes[] = {"no", "yes", NULL};
	static const char *const aside_names[] = {"yield", "background", NULL};
	static sigset_t sigs;
	unsigned long short_us = 500, long_us = 50000;
	struct jf_config cfg;
	struct jp_flags fl;
	char err[256];
	void *ret = NULL;
	int rc, c, m;

	hd.mode = HD_BUDGET;
	hd.port = 8080;
	hd.threads = 8;
	hd.budget_us = 2000;
	hd.max_conns = 1024;
	jp_listen_default(&hd.listen);
	jp_flags_init(&fl, hd_prog, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		const char *a = fl.flag, *v = optarg;
		int bad = 0;
		switch (c) {
		case F_MODE:
			bad = jp_flag_choice(hd_prog, a, v, mode_names, &m);
			if (!bad)
				hd.mode = (enum hd_mode)m;
			break;
		case F_PORT:
			bad = jp_flag_port(hd_prog, a, v, 0, &hd.port);
			break;
		case F_BIND:
			bad = jp_bind_flag(hd_prog, a, v, &hd.listen);
			break;
		case F_PROTECTED:
			bad = jp_protected_flag(hd_prog, a, v, &hd.listen);
			break;
		case F_BUDGET:
			bad = jp_flag_uint(hd_prog, a, v, 1, 10000000, &hd.budget_us);
			break;
		case F_SHORT:
			bad = jp_flag_uint(hd_prog, a, v, 1, 1000000, &short_us);
			break;
		case F_LONG:
			bad = jp_flag_uint(hd_prog, a, v, 1, 1000000, &long_us);
			break;
		case F_WORKERS:
			bad = jp_flag_uint(hd_prog, a, v, 1, JF_MAX_WORKERS, &hd.workers);
			break;
		case F_THREADS:
			bad = jp_flag_uint(hd_prog, a, v, 1, 1024, &hd.threads);
			break;
		case F_MAX_CONNS:
			bad = jp_flag_uint(hd_prog, a, v, 1, 100000, &hd.max_conns);
			break;
		case F_SAFEPOINTS:
			bad = jp_flag_choice(hd_prog, a, v, no_yes, &m);
			if (!bad)
				hd.safepoints = m;
			break;
		case F_SET_ASIDE:
			bad = jp_flag_choice(hd_prog, a, v, aside_names, &m);
			if (!bad)
				hd.background = m;
			break;
		}
		if (bad)
			return 2;
	}
	jp_flags_no_operands(&fl);
	if (jp_listen_check(stderr, hd_prog, &hd.listen, HD_OPEN) != 0)
		return 2;

	hh_init();
	double rate = jp_spin_calibrate(); /* iterations per µs of this CPU */
	hd.iters[HH_SHORT] = (uint64_t)((double)short_us * rate + 0.5);
	hd.iters[HH_LONG] = (uint64_t)((double)long_us * rate + 0.5);
	fprintf(stderr, "%s: mode=%s; work calibrated at %.1f iterations/us: /short %lu us "
			"(%llu), /long %lu us (%llu)",
		hd_prog, mode_names[hd.mode], rate, short_us,
		(unsigned long long)hd.iters[HH_SHORT], long_us,
		(unsigned long long)hd.iters[HH_LONG]);
	if (hd.mode == HD_BUDGET)
		fprintf(stderr, "; budget %lu us, set aside by %s", hd.budget_us,
			aside_names[hd.background]);
	fputc('\n', stderr);

	/* Blocked before any thread exists, so they all inherit it: the signals wait for us. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (hd.mode == HD_POOL)
		return hd_pool_main(&sigs);

	jf_config_default(&cfg);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "none"); /* the budgets are the preemption */
	cfg.workers = 1;
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", hd_prog, err);
		return 2;
	}
	if (hd.workers)
		cfg.workers = (unsigned)hd.workers;
	fprintf(stderr, "%s: Jiffy: %u worker(s), policy %s, preemption %s\n", hd_prog,
		cfg.workers, cfg.policy[0] ? cfg.policy : "default", cfg.preempt);
	rc = jf_run(&cfg, app_main, &sigs, &ret);
	if (rc != 0) {
		fprintf(stderr, "%s: jf_run failed: %s\n", hd_prog, strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	return (int)(intptr_t)ret;
}
