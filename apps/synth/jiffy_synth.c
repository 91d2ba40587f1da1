/*
 * apps/synth/jiffy_synth.c - jiffy-synth: the synthetic server on Jiffy (Shinjuku's synthetic
 * workload). Each request carries its service time; the handler computes that long (the
 * calibrated loop of apps/common/spin.c, CPU time, with a jf_safepoint() about every µs) and
 * replies. Its peers on pthreads, Go and Tokio answer identically (apps/common/synth.c).
 *
 * Owns: the server's uthread structure. In jf_run()'s main uthread: calibrate, open the UDP
 * socket, start --receivers receiver uthreads, print READY, then wait for SIGINT/SIGTERM (SIGQUIT:
 * jf_dump_threads() and the counters on stderr, and go on) on a
 * signalfd registered with the netpoller. A receiver loops on jf_recvfrom(); with --udp-mode
 * spawn (default) each datagram goes to a new detached uthread, so the policy sees one uthread
 * per request and a long one can be preempted while short ones run; with inline the receivers
 * serve requests themselves. Runtime configuration: JIFFY_* variables.
 *
 * Scheduling attributes: a spawned handler carries its request's class (the klass byte,
 * docs/protocol.md) as attr.sched.type and that class's --slo as attr.sched.slo_ns, so the
 * central policy's MQ mode (JIFFY_CENTRAL=mq) keeps one queue per class. Receivers and requests
 * served inline (--udp-mode inline, a failed spawn) keep the default attributes. At exit,
 * before the statistics line, one line per class ("class K: requests=N tagged=N slo_us=..."):
 * tagged counts the requests whose handler read its own attributes back as the class and SLO
 * it should carry (slo_flag.h).
 *
 * With --be N, N best-effort batch uthreads (attr.klass 1, lcbe's BE class) compute in units
 * of 20 us (apps/common/batch.c) while the server serves; the statistics line then ends with
 * the batch work done while the load ran (be_work_s, be_window_s, be_share).
 *
 * Safe by default (docs/security.md): the socket listens on 127.0.0.1 unless --bind says
 * otherwise (IPv4 or IPv6, apps/common/listen.c), and since the UDP protocol has no
 * authentication a non-loopback --bind is refused unless --protected-mode no (then a WARNING
 * on stderr). A SPIN longer than --max-spin-us (1 ms by default) gets TOO_LARGE with the cap
 * as its result, so a stranger's datagram cannot hold a worker for long; in spawn mode at most
 * --max-inflight (4096) handlers run at once, and datagrams past that are dropped (counted), so
 * a flood cannot become an unbounded number of uthreads.
 *
 * --safepoints no drops the hand-placed jf_safepoint() calls from the spin loop and the batch
 * work: only signals, or compiler probes, can then preempt a request. jiffy-synth-probes is this
 * program and apps/common compiled with Jiffy's probe pass (apps/CMakeLists.txt), where no is the
 * default: the probes at the spin loop's back-edge take the place of the hand-placed calls
 * (issue 14 §4).
 *
 *   jiffy-synth [--port P (7000; 0: any)] [--bind ADDR (127.0.0.1)] [--protected-mode yes|no]
 *               [--max-spin-us US (1000)] [--max-inflight N (4096)] [--receivers N (1)]
 *               [--udp-mode spawn|inline]
 *               [--slo CLASS=US[,CLASS=US...]] [--breakdown US] [--be N]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#include "batch.h"
#include "breakdown.h"
#include "flags.h"
#include "listen.h"
#include "sigquit.h"
#include "proto.h"
#include "slo_flag.h"
#include "spin.h"
#include "synth.h"

#define POLL_NS (100 * 1000 * 1000ll) /* how often a blocked receiver looks at `stopping` */

static const char *prog = "jiffy-synth";

static struct {
	unsigned long port, receivers;
	struct jp_listen listen;   /* --bind, --protected-mode */
	unsigned long max_spin_us; /* --max-spin-us */
	int spawn;
	int fd, sig_fd;
	unsigned bound;
	atomic_int stopping;
	jf_waitgroup_t wg;
	_Atomic unsigned long long requests, replies, dropped, errors, spawn_failures;
	_Atomic unsigned long long inflight, shed; /* spawned handlers running; --max-inflight */
	unsigned long max_inflight;
	struct jp_slo_table slo;       /* --slo, per class */
	struct jp_type_counts classes; /* well-formed requests per class */
	unsigned long be;              /* --be: best-effort batch uthreads */
	struct jp_batch batch;
} S = {.port = 7000, .receivers = 1, .max_spin_us = JP_SPIN_CAP_DEFAULT_US, .max_inflight = 4096, .spawn = 1, .fd = -1,
       .sig_fd = -1};

#define COUNT(c) atomic_fetch_add_explicit(&S.c, 1, memory_order_relaxed)

struct req {
	struct jp_bd_stamp bd; /* --breakdown */
	bool spawned;          /* runs in its own uthread, tagged with its class */
	struct sockaddr_storage src;
	socklen_t slen;
	size_t len;
	uint8_t data[];
};

/* 1 in jiffy-synth-probes (compiled with the probe pass): --safepoints no is the default. */
#ifndef SYNTH_PROBES
#define SYNTH_PROBES 0
#endif

static void safepoint(void)
{
	jf_safepoint();
}

/* What the spin loop and the batch work call about every microsecond: NULL with --safepoints no. */
static void (*hand_safepoint)(void) = SYNTH_PROBES ? NULL : safepoint;

/* The class of a datagram: its klass byte, or 0 when it is too short to have one (garbage). */
static unsigned class_of(const uint8_t *in, size_t len)
{
	return len >= sizeof(struct jp_req) ? in[offsetof(struct jp_req, klass)] : 0;
}

/* Does the calling uthread carry @klass and its SLO, as the policy reads them? */
static bool carries_class(unsigned klass)
{
	struct jf_sched_attr a;

	jf_thread_get_sched_attr(jf_self(), &a);
	return a.type == (int32_t)klass && a.slo_ns == S.slo.slo_ns[klass];
}

/* @spawned: called in the request's own uthread (which should carry its class). */
static void serve(const uint8_t *in, size_t len, const struct sockaddr *src, socklen_t slen,
		  struct jp_bd_stamp *bd, bool spawned)
{
	uint8_t reply[32];
	unsigned klass;

	if (bd)
		bd->started = jp_bd_now();
	if (!jp_synth_serve(in, len, reply, S.max_spin_us * 1000u, hand_safepoint)) {
		COUNT(dropped);
		return;
	}
	COUNT(requests); /* well-formed ones, as the peers count */
	klass = class_of(in, len);
	jp_type_count(&S.classes, klass, spawned && carries_class(klass));
	if (jf_sendto(S.fd, reply, sizeof(reply), 0, src, slen, POLL_NS) == (ssize_t)sizeof(reply))
		COUNT(replies);
	else
		COUNT(errors);
	if (bd) {
		bd->replied = jp_bd_now();
		jp_bd_record(bd);
	}
}

static void *handler(void *arg)
{
	struct req *r = arg;
	serve(r->data, r->len, (struct sockaddr *)&r->src, r->slen,
	      jp_bd_enabled() ? &r->bd : NULL, r->spawned);
	free(r);
	atomic_fetch_sub_explicit(&S.inflight, 1, memory_order_relaxed);
	jf_waitgroup_done(&S.wg);
	return NULL;
}

/* A best-effort batch uthread (--be): computes until the server stops, at every safepoint
 * preemptible like a request (attr.klass 1: lcbe's best-effort class). */
static void *batch_main(void *arg)
{
	(void)arg;
	jp_batch_run(&S.batch, hand_safepoint);
	jf_waitgroup_done(&S.wg);
	return NULL;
}

static void *receiver(void *arg)
{
	uint8_t *buf = malloc(JP_MAX_DGRAM + 1);
	struct jf_attr attr;

	(void)arg;
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "synth-req";
	while (buf && !atomic_load_explicit(&S.stopping, memory_order_relaxed)) {
		struct sockaddr_storage src;
		socklen_t slen = sizeof(src);
		/* MSG_TRUNC: the real length, so that over-long datagrams are seen and dropped */
		ssize_t n = jf_recvfrom(S.fd, buf, JP_MAX_DGRAM + 1, MSG_TRUNC,
					(struct sockaddr *)&src, &slen, POLL_NS);
		struct req *r;
		struct jp_bd_stamp bd = {0};

		if (n < 0) {
			if (errno == EBADF)
				break;
			if (errno != ETIMEDOUT && errno != EAGAIN && errno != EINTR)
				COUNT(errors);
			continue;
		}
		if (jp_bd_enabled()) {
			bd.received = jp_bd_now();
			bd.arrival = jp_bd_arrival(S.fd);
		}
		if (S.be)
			jp_batch_lc_seen(&S.batch);
		if (!S.spawn || (size_t)n > JP_MAX_DGRAM) {
			serve(buf, (size_t)n, (struct sockaddr *)&src, slen,
			      jp_bd_enabled() ? &bd : NULL, false);
			continue;
		}
		/* --max-inflight: past it, drop the datagram as a full socket buffer would, rather
		 * than let a flood become an unbounded number of uthreads (docs/security.md) */
		/* (take a slot, give it back if over: exact with several receivers) */
		if (atomic_fetch_add_explicit(&S.inflight, 1, memory_order_relaxed) >= S.max_inflight) {
			atomic_fetch_sub_explicit(&S.inflight, 1, memory_order_relaxed);
			COUNT(shed);
			COUNT(dropped);
			continue;
		}
		r = malloc(sizeof(*r) + (size_t)n);
		if (!r) {
			atomic_fetch_sub_explicit(&S.inflight, 1, memory_order_relaxed);
			serve(buf, (size_t)n, (struct sockaddr *)&src, slen, NULL, false);
			continue;
		}
		r->bd = bd;
		r->spawned = true;
		memcpy(&r->src, &src, slen);
		r->slen = slen;
		r->len = (size_t)n;
		memcpy(r->data, buf, (size_t)n);
		attr.sched.type = (int32_t)class_of(buf, (size_t)n);
		attr.sched.slo_ns = S.slo.slo_ns[attr.sched.type];
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, handler, r) != 0) {
			COUNT(spawn_failures); /* out of memory for a uthread: serve it here */
			r->spawned = false;
			handler(r);
		}
	}
	free(buf);
	jf_waitgroup_done(&S.wg);
	return NULL;
}

/* The UDP socket on --bind (its family: the address's) and --port. */
static int open_udp(void)
{
	struct sockaddr_storage a;
	socklen_t alen;
	int buf = 4 << 20;

	jp_listen_sockaddr(&S.listen, (unsigned)S.port, &a, &alen);
	S.fd = jf_socket(a.ss_family, SOCK_DGRAM, 0);
	if (S.fd < 0)
		return -1;
	(void)setsockopt(S.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)); /* best effort */
	(void)setsockopt(S.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (jf_bind(S.fd, (struct sockaddr *)&a, alen) != 0)
		return -1;
	alen = sizeof(a);
	if (getsockname(S.fd, (struct sockaddr *)&a, &alen) != 0)
		return -1;
	S.bound = jp_sockaddr_port(&a);
	return 0;
}

static void *app_main(void *arg)
{
	sigset_t *sigs = arg;
	struct jf_attr attr;
	int signo = 0;
	int *rc = malloc(sizeof(int));
	char be[96];

	*rc = 1;
	fprintf(stderr, "%s: spin loop calibrated at %.1f iterations/us\n", prog,
		jp_spin_calibrate());
	S.sig_fd = signalfd(-1, sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (S.sig_fd < 0 || jf_fd_register(S.sig_fd) != 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		return rc;
	}
	if (open_udp() != 0) {
		fprintf(stderr, "%s: cannot listen on %s UDP port %lu (--bind, --port): %s\n", prog,
			S.listen.text, S.port, strerror(errno));
		return rc;
	}
	fprintf(stderr, "%s: listening on %s udp=%u; SPIN capped at %lu us (--max-spin-us)\n", prog,
		S.listen.text, S.bound, S.max_spin_us);
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "synth-recv";
	for (unsigned long i = 0; i < S.receivers; i++) {
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, receiver, NULL) != 0) {
			jf_waitgroup_done(&S.wg);
			fprintf(stderr, "%s: cannot start the receivers\n", prog);
			signo = -1;
			break;
		}
	}
	jf_attr_init(&attr);
	attr.detached = 1;
	attr.name = "synth-be";
	attr.sched.klass = 1; /* best effort (lcbe); other policies ignore it */
	for (unsigned long i = 0; i < S.be && !signo; i++) {
		jf_waitgroup_add(&S.wg, 1);
		if (jf_spawn(NULL, &attr, batch_main, NULL) != 0) {
			jf_waitgroup_done(&S.wg);
			fprintf(stderr, "%s: cannot start the best-effort uthreads (--be)\n", prog);
			signo = -1;
		}
	}
	if (!signo) {
		printf("READY jiffy-synth udp=%u\n", S.bound);
		fflush(stdout);
	}
	while (!signo) {
		struct signalfd_siginfo si;
		if (jf_fd_wait(S.sig_fd, POLLIN, JF_NO_TIMEOUT) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: waiting for signals: %s\n", prog, strerror(errno));
			signo = -1;
		}
		while (read(S.sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (jp_sigquit_dump(&si))
				continue;
			signo = (int)si.ssi_signo;
		}
	}
	atomic_store(&S.stopping, 1);
	jp_batch_stop(&S.batch);
	jf_waitgroup_wait(&S.wg); /* receivers (within POLL_NS), batch, every request in flight */
	jp_slo_report(stderr, prog, "class", NULL, &S.slo, &S.classes);
	jp_bd_report(stderr, prog);
	be[0] = '\0';
	if (S.be)
		jp_batch_report(&S.batch, be, sizeof(be));
	if (S.shed)
		fprintf(stderr, "%s: shed %llu datagrams: --max-inflight %lu handlers were running "
				"(counted in dropped)\n", prog, (unsigned long long)S.shed, S.max_inflight);
	fprintf(stderr, "%s: requests=%llu replies=%llu dropped=%llu errors=%llu%s\n", prog,
		(unsigned long long)S.requests, (unsigned long long)S.replies,
		(unsigned long long)S.dropped, (unsigned long long)S.errors, be);
	jf_close(S.fd);
	jf_close(S.sig_fd);
	*rc = signo > 0 ? 0 : 1;
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--port P] [--bind ADDR] [--protected-mode yes|no] [--max-spin-us US]\n"
		"          [--receivers N] [--udp-mode spawn|inline]\n"
		"          [--slo CLASS=US[,CLASS=US...]] [--breakdown US] [--be N]\n"
		"          [--safepoints yes|no]\n"
		"  --port P          UDP port (default 7000; 0: any free port)\n"
		JP_LISTEN_USAGE
		"                    The UDP protocol has no authentication: an address outside\n"
		"                    127.0.0.0/8 and ::1 needs --protected-mode no\n"
		JP_SPIN_CAP_USAGE
		"  --receivers N     uthreads receiving datagrams (default 1)\n"
		"  --max-inflight N  spawned handlers running at once (default 4096); datagrams\n"
		"                    past it are dropped (spawn mode; docs/security.md)\n"
		"  --udp-mode M      spawn: one uthread per request (default); inline: the\n"
		"                    receivers serve requests themselves (run to completion)\n"
		"  --slo CLASS=US[,CLASS=US...]\n"
		"                    the SLO in microseconds (1..10000000) of a request class\n"
		"                    (the klass byte, 0..255). Each request's handler uthread\n"
		"                    carries its class in attr.type and the class's SLO in\n"
		"                    attr.slo_ns: JIFFY_POLICY=central JIFFY_CENTRAL=mq keeps one\n"
		"                    queue per class; a class without an SLO gets\n"
		"                    JIFFY_CENTRAL_SLO_US. Per-class counts are printed at exit\n"
		"  --breakdown US    time each request's stages (kernel arrival, receiver,\n"
		"                    handler, reply) and print percentiles at exit, split by\n"
		"                    whether the server was idle for more than US microseconds\n"
		"                    before it arrived\n"
		"  --be N            N best-effort batch uthreads (attr.klass 1: lcbe's BE class,\n"
		"                    0..64) compute while the server serves; the statistics\n"
		"                    line gives the batch work done while the load ran\n"
		"                    (be_share: CPUs)\n"
		"  --safepoints yes|no  call jf_safepoint() about every microsecond of a request's\n"
		"                    (and the batch work's) computation: yes, or no (only signals\n"
		"                    or compiler probes preempt then). Default: %s\n"
		JP_FLAGS_STD_USAGE
		"The runtime is configured with JIFFY_* variables (JIFFY_WORKERS, JIFFY_POLICY,\n"
		"JIFFY_PREEMPT, JIFFY_QUANTUM_US, ...; see include/jiffy/config.h).\n",
		prog, SYNTH_PROBES ? "no (compiler probes)" : "yes");
}

enum {
	F_PORT = 0x100, F_BIND, F_PROTECTED, F_MAX_SPIN, F_RECEIVERS, F_INFLIGHT, F_SLO, F_BE,
	F_BREAKDOWN, F_SAFEPOINTS, F_UDP_MODE,
};

static const struct option options[] = {
	{"port", required_argument, NULL, F_PORT},
	{"bind", required_argument, NULL, F_BIND},
	{"protected-mode", required_argument, NULL, F_PROTECTED},
	{"max-spin-us", required_argument, NULL, F_MAX_SPIN},
	{"receivers", required_argument, NULL, F_RECEIVERS},
	{"max-inflight", required_argument, NULL, F_INFLIGHT},
	{"slo", required_argument, NULL, F_SLO},
	{"be", required_argument, NULL, F_BE},
	{"breakdown", required_argument, NULL, F_BREAKDOWN},
	{"safepoints", required_argument, NULL, F_SAFEPOINTS},
	{"udp-mode", required_argument, NULL, F_UDP_MODE},
	JP_FLAGS_STD_OPTIONS,
	{0},
};

int main(int argc, char **argv)
{
	static const char *const no_yes[] = {"no", "yes", NULL};
	static const char *const udp_modes[] = {"inline", "spawn", NULL};
	static sigset_t sigs;
	struct jp_flags fl;
	void *ret = NULL;
	unsigned long us;
	int rc, c, yes;

	jp_listen_default(&S.listen);
	jp_flags_init(&fl, prog, jf_version(NULL), usage, options, NULL, argc, argv);
	while ((c = jp_flags_next(&fl)) != -1) {
		const char *a = fl.flag, *v = optarg;
		int bad = 0;
		switch (c) {
		case F_PORT:
			bad = jp_flag_port(prog, a, v, 0, &S.port);
			break;
		case F_BIND:
			bad = jp_bind_flag(prog, a, v, &S.listen);
			break;
		case F_PROTECTED:
			bad = jp_protected_flag(prog, a, v, &S.listen);
			break;
		case F_MAX_SPIN:
			bad = jp_flag_uint(prog, a, v, 1, JP_SPIN_CAP_MAX_US, &S.max_spin_us);
			break;
		case F_RECEIVERS:
			bad = jp_flag_uint(prog, a, v, 1, 64, &S.receivers);
			break;
		case F_INFLIGHT:
			bad = jp_flag_uint(prog, a, v, 1, 1000000, &S.max_inflight);
			break;
		case F_SLO:
			bad = jp_slo_flag(prog, a, v, NULL, &S.slo);
			break;
		case F_BE:
			bad = jp_flag_uint(prog, a, v, 0, 64, &S.be);
			break;
		case F_BREAKDOWN:
			bad = jp_flag_uint(prog, a, v, 0, 10000000, &us);
			if (!bad && jp_bd_init(4u << 20, us * 1000u) != 0) {
				fprintf(stderr, "%s: --breakdown: out of memory\n", prog);
				return 1;
			}
			break;
		case F_SAFEPOINTS:
			bad = jp_flag_choice(prog, a, v, no_yes, &yes);
			if (!bad)
				hand_safepoint = yes ? safepoint : NULL;
			break;
		case F_UDP_MODE:
			bad = jp_flag_choice(prog, a, v, udp_modes, &S.spawn);
			break;
		}
		if (bad)
			return 2;
	}
	jp_flags_no_operands(&fl);
	if (jp_listen_check(stderr, prog, &S.listen, JP_SYNTH_OPEN) != 0)
		return 2;
	/* Blocked before the workers exist, so they inherit it: the signals wait for the signalfd. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGQUIT); /* not a stop: jf_dump_threads() and the counters on stderr */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	rc = jf_run(NULL, app_main, &sigs, &ret);
	if (rc != 0) {
		fprintf(stderr, "%s: jf_run failed: %s\n", prog, strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	rc = ret ? *(int *)ret : 1;
	free(ret);
	return rc;
}
