/*
 * test_netirq.c - the netpoller's interrupt form (JIFFY_NETPOLL_IRQ, docs/netpoll-irq.md).
 *
 * Owns the checks that:
 *  - with the interrupt form on, a uthread waiting in jf_read() on a socket is woken and
 *    replies while the only worker runs a uthread that computes and never yields or blocks
 *    (it reaches safepoints, which "deadline" needs; "timer" interrupts it by signal). With the
 *    thread on, busy workers are not armed to poll, so each reply proves a readiness kick: the
 *    counters netpoll_irqs and netpoll_irq_wakeups say so (no timing is asserted). The same
 *    exchange with two workers and two such uthreads;
 *  - off and on give identical replies (a checksum over every round), and with it off the
 *    counters stay 0 (the polling path served the same exchange); on, with idle workers (one
 *    waits in epoll beside the thread, either may take an edge), the same replies again;
 *  - the runtime stops cleanly with the thread running and starts it again (several jf_run()
 *    in one process);
 *  - misuse is refused with a clear error: JIFFY_NETPOLL_IRQ=2, and netpoll_irq with preempt
 *    "none" (jf_config_validate() and jf_run() return -EINVAL).
 * One registration runs the matrix in-process: policy ws under the mechanisms timer, deadline and
 * auto, 1 and 2 workers, off and on; under ThreadSanitizer deadline only. The client is a plain pthread with blocking sockets; a reply
 * it does not get within 10 s (a liveness bound, not a timing check) fails the test.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "jf_test.h"

#define MAX_PAIRS 2

struct exchange {
	int rounds;
	int npairs;
	bool hogs;                   /* false: the workers idle (one parks in epoll) */
	int sv[MAX_PAIRS][2];        /* [0]: the server uthread's end, [1]: the client's */
	atomic_int hogs_stop;
	atomic_int client_failed;
	uint64_t checksum[MAX_PAIRS]; /* of the replies, per pair */
	int replies[MAX_PAIRS];
	struct jf_worker_stats st;
};

struct pair_arg {
	struct exchange *x;
	int i;
};

/* The reply to message @m: something the server must have computed. */
static uint64_t reply_of(uint64_t m)
{
	return m * 0x9E3779B97F4A7C15ull ^ (m >> 7);
}

static void *server(void *arg)
{
	struct pair_arg *p = arg;
	int fd = p->x->sv[p->i][0];

	for (int r = 0; r < p->x->rounds; r++) {
		uint64_t m, a;
		ssize_t n = jf_read(fd, &m, sizeof(m), JF_NO_TIMEOUT);

		CHECK_EQ(n, (ssize_t)sizeof(m));
		a = reply_of(m);
		CHECK_EQ(jf_write(fd, &a, sizeof(a), JF_NO_TIMEOUT), (ssize_t)sizeof(a));
	}
	return NULL;
}

/* Computes until the clients are done: no yield, no block; safepoints only. */
static void *hog(void *arg)
{
	struct exchange *x = arg;
	volatile uint64_t sink = 0;

	while (!atomic_load_explicit(&x->hogs_stop, memory_order_relaxed)) {
		for (int i = 0; i < 200; i++)
			sink += (uint64_t)i * sink + 1;
		jf_safepoint();
	}
	return NULL;
}

/* A plain pthread: send a message, wait for its reply (10 s at most), @rounds times. */
static void *client(void *arg)
{
	struct pair_arg *p = arg;
	struct exchange *x = p->x;
	int fd = x->sv[p->i][1];

	for (int r = 0; r < x->rounds; r++) {
		uint64_t m = (uint64_t)(p->i * 1000 + r + 1), a;
		struct pollfd pf = {.fd = fd, .events = POLLIN};

		usleep(2000); /* the server waits in jf_read, the hog computes */
		if (write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m) || poll(&pf, 1, 10000) != 1 ||
		    read(fd, &a, sizeof(a)) != (ssize_t)sizeof(a)) {
			fprintf(stderr, "client %d: no reply to round %d\n", p->i, r);
			atomic_store(&x->client_failed, 1);
			break;
		}
		x->checksum[p->i] = x->checksum[p->i] * 31 + a;
		x->replies[p->i]++;
	}
	return NULL;
}

static void *run_main(void *arg)
{
	struct exchange *x = arg;
	struct pair_arg pa[MAX_PAIRS];
	jf_thread_t *srv[MAX_PAIRS], *hogs[MAX_PAIRS];
	pthread_t cl[MAX_PAIRS];

	CHECK_EQ(jf_stats_reset(), 0);
	for (int i = 0; i < x->npairs; i++) {
		pa[i] = (struct pair_arg){x, i};
		srv[i] = jft_spawn(NULL, server, &pa[i]);
	}
	for (int i = 0; i < x->npairs && x->hogs; i++)
		hogs[i] = jft_spawn_on(i, hog, x);
	for (int i = 0; i < x->npairs; i++)
		CHECK_EQ(pthread_create(&cl[i], NULL, client, &pa[i]), 0);
	/* Joining a pthread from a uthread would block the worker: wait for the servers. */
	for (int i = 0; i < x->npairs && !atomic_load(&x->client_failed); i++)
		jft_join(srv[i]);
	atomic_store(&x->hogs_stop, 1);
	for (int i = 0; i < x->npairs; i++) {
		if (x->hogs)
			jft_join(hogs[i]);
		CHECK_EQ(pthread_join(cl[i], NULL), 0); /* done: its server replied to every round */
	}
	CHECK_EQ(jf_stats_total(&x->st), 0);
	return NULL;
}

static void exchange_run(struct exchange *x, unsigned workers, const char *mech, bool irq,
			 bool hogs)
{
	struct jf_config cfg;

	memset(x, 0, sizeof(*x));
	x->npairs = (int)workers;
	x->hogs = hogs;
	x->rounds = JFT_SCALE(40, 15);
	for (int i = 0; i < x->npairs; i++)
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, x->sv[i]), 0);
	jft_config(&cfg, workers);
	cfg.workers = workers;
	snprintf(cfg.policy, sizeof(cfg.policy), "ws");
	snprintf(cfg.preempt, sizeof(cfg.preempt), "%s", mech);
	cfg.netpoll_irq = irq;
	jft_run(&cfg, run_main, x);
	CHECK(!atomic_load(&x->client_failed));
	for (int i = 0; i < x->npairs; i++) {
		CHECK_EQ(x->replies[i], x->rounds);
		jf_close(x->sv[i][0]);
		close(x->sv[i][1]);
	}
	printf("  %-8s %s, %u worker(s)%s: netpolls %llu, irq polls %llu, irq wakeups %llu, "
	       "wakeup preempts %llu, preempts %llu\n",
	       mech, irq ? "irq on " : "irq off", workers, hogs ? "" : " idle", (unsigned long long)x->st.netpolls,
	       (unsigned long long)x->st.netpoll_irqs,
	       (unsigned long long)x->st.netpoll_irq_wakeups,
	       (unsigned long long)x->st.wakeup_preempts, (unsigned long long)x->st.preempts);
}

static void check_onoff(unsigned workers, const char *mech)
{
	static struct exchange off, on;

	exchange_run(&off, workers, mech, false, true);
	CHECK_EQ(off.st.netpoll_irqs, 0);
	CHECK_EQ(off.st.netpoll_irq_wakeups, 0);
	exchange_run(&on, workers, mech, true, true);
	/* Busy workers were not armed to poll: the replies came through readiness kicks. */
	CHECK_GE(on.st.netpoll_irqs, 1);
	CHECK_GE(on.st.netpoll_irq_wakeups, 1);
	for (int i = 0; i < (int)workers; i++)
		CHECK_EQ(on.checksum[i], off.checksum[i]);
	/* Idle workers: one waits in epoll beside the thread; whichever takes an edge, the
	 * waiter is woken (through the pending list when the thread took it). */
	exchange_run(&on, workers, mech, true, false);
	for (int i = 0; i < (int)workers; i++)
		CHECK_EQ(on.checksum[i], off.checksum[i]);
}

static void *never(void *arg)
{
	(void)arg;
	return NULL;
}

static void check_misuse(void)
{
	struct jf_config cfg;
	char err[256] = "";

	jf_config_default(&cfg);
	CHECK_EQ(setenv("JIFFY_NETPOLL_IRQ", "2", 1), 0);
	CHECK_EQ(jf_config_apply_env(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "JIFFY_NETPOLL_IRQ");
	CHECK_EQ(unsetenv("JIFFY_NETPOLL_IRQ"), 0);
	cfg = jft_config_good_env("JIFFY_NETPOLL_IRQ", "1");
	CHECK(cfg.netpoll_irq);

	jf_config_default(&cfg);
	snprintf(cfg.preempt, sizeof(cfg.preempt), "none");
	cfg.netpoll_irq = true;
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "netpoll_irq");
	CHECK_STR_CONTAINS(err, "none");
	CHECK_EQ(jf_run(&cfg, never, NULL, NULL), -EINVAL);
}

int main(void)
{
	/* ThreadSanitizer follows no signal handler that switches stacks: "deadline" only there
	 * (tests/CMakeLists.txt says why). */
#if defined(__SANITIZE_THREAD__)
	static const char *const mechs[] = {"deadline"};
#else
	static const char *const mechs[] = {"timer", "deadline", "auto"};
#endif

	check_misuse();
	for (size_t m = 0; m < sizeof(mechs) / sizeof(mechs[0]); m++) {
		check_onoff(1, mechs[m]);
		check_onoff(2, mechs[m]);
	}
	puts("test_netirq: ok");
	return 0;
}
