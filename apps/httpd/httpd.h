/*
 * apps/httpd/httpd.h - what jiffy-httpd's two servers share (httpd.c: main, the flags and the
 * Jiffy server of the budget and nobudget modes; pool.c: the thread-pool server of the pool
 * mode): the settings, the counters and the exit report.
 */
#ifndef JIFFY_APPS_HTTPD_HTTPD_H
#define JIFFY_APPS_HTTPD_HTTPD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/socket.h>

#include "http.h"
#include "listen.h"

enum hd_mode { HD_BUDGET = 0, HD_NOBUDGET = 1, HD_POOL = 2 };

struct hd_settings {
	enum hd_mode mode;
	unsigned long port;         /* --port */
	struct jp_listen listen;    /* --bind, --protected-mode */
	unsigned long workers;      /* --workers (0: JIFFY_WORKERS or 1) */
	unsigned long threads;      /* --threads: the pool's size */
	unsigned long budget_us;    /* --budget-us */
	unsigned long max_conns;    /* --max-conns */
	uint64_t iters[HH_NROUTES]; /* the work of each route, from --short-us/--long-us */
	bool safepoints;            /* --safepoints */
	bool background;            /* --set-aside background (else yield) */
};

struct hd_counters {
	_Atomic uint64_t requests[HH_NROUTES];
	_Atomic uint64_t slices[HH_NROUTES];  /* budget slices the handlers took */
	_Atomic uint64_t stopped[HH_NROUTES]; /* handlers stopped by their budget at least once */
	_Atomic uint64_t bad;                 /* error responses (4xx) */
	_Atomic uint64_t conns, refused;      /* connections accepted; refused at --max-conns */
	_Atomic uint64_t open;                /* connections open now */
	_Atomic uint64_t io_errors;           /* reads/writes that failed (not EOF) */
	_Atomic uint64_t cpu_ns[HH_NROUTES];  /* CPU time of the work, where it runs uninterrupted */
};

extern struct hd_settings hd;
extern struct hd_counters hd_count;
extern const char *hd_prog;

/* Open the listening TCP socket with @sock_fn (socket(2) or jf_socket) and print READY. */
int hd_open_listener(int (*sock_fn)(int, int, int), unsigned *bound);
/* The counters on stderr, one line ("jiffy-httpd: mode=... short=N ..."). */
void hd_report(void);
/* The calling kernel thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in ns. */
uint64_t hd_thread_cpu_ns(void);
/* Write all of @buf on a non-blocking socket, waiting in poll(2) (the pool's threads). */
int hd_write_all(int fd, const char *buf, size_t len);

/* The pool mode: serve until SIGINT/SIGTERM (blocked in the caller). Return the exit status. */
int hd_pool_main(const sigset_t *sigs);

#define HD_POLL_NS (100 * 1000 * 1000ll) /* how often a blocked uthread/thread looks at stopping */
#define HD_IDLE_S 60 /* a connection (Jiffy modes) that completes no request this long is closed */

#endif /* JIFFY_APPS_HTTPD_HTTPD_H */
