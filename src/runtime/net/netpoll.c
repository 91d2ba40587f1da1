/*
 * netpoll.c - the netpoller: non-blocking descriptors, one epoll instance, and uthreads that
 * wait for readiness without blocking their worker.
 *
 * Owns: the descriptor table (one struct pdesc per fd number), registration, the wait/wake
 * protocol, polling (busy and parked), and the socket calls of jiffy/net.h.
 *
 * Wait/wake protocol. Each descriptor counts readiness edges per direction (seq[]). A caller
 * reads seq, tries the non-blocking call, and on EAGAIN takes the descriptor's lock: if seq moved
 * meanwhile an edge came after its try (retry at once); otherwise it links itself as a waiter
 * and blocks, and the edge that comes later finds it. The poller bumps seq and takes every
 * waiter of that direction under the same lock, so no edge falls between a try and a wait.
 * Descriptors are registered edge-triggered for both directions once, so waiting never costs
 * an epoll_ctl.
 *
 * Waking needs a worker (jf_sched_make_runnable): wakes decided elsewhere (jf_close() from a
 * plain pthread) go to a pending list that the next poll on a worker drains.
 *
 * Closing. A uthread's system call on a descriptor counts itself in pd->inflight before it
 * checks that the descriptor is still registered; jf_close() unregisters, then waits until
 * inflight is 0 before close(2). So no call of ours runs on a descriptor number while it is
 * closed (and perhaps reused by another open): a call that comes later fails with EBADF. Until
 * close(2) has returned, pd->closing keeps a call from adopting the still-open descriptor again
 * (a receiver that did so registered itself as a waiter on a file about to be closed, and
 * waited forever: net.netpoll under ASan, 1 run in ~10).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jiffy/net.h>

#include "../runtime.h"
#include "netpoll.h"

enum { DIR_RD = 0, DIR_WR = 1 };

#define PD_CHUNK 1024u
#define PD_CHUNKS 1024u /* descriptors below 1,048,576 */
#define EVFD_TAG UINT64_MAX
#define MAX_EVENTS 128

struct net_waiter {
	struct jf_thread *t;
	struct pdesc *pd;
	struct net_waiter *prev, *next;
	int dir;
	int result; /* 0 ready, -EBADF closed, -ETIMEDOUT */
	bool linked;
};

struct pdesc {
	uint32_t lock;
	uint32_t gen;        /* bumped at each registration and close: epoll data carries it */
	bool registered;
	bool closing;        /* jf_close() between unregistering and close(2): no adoption */
	dev_t dev;           /* the file registered, to notice a descriptor closed behind our back */
	ino_t ino;
	uint32_t seq[2];     /* readiness edges seen, per direction */
	struct net_waiter *waiters[2];
	uint32_t inflight;   /* uthreads inside a system call on it (net_io); jf_close waits for 0 */
};

int jf__net_waiters;
uint32_t jf__net_poller_parked; /* one idle worker waits in epoll */

static struct pdesc *chunks[PD_CHUNKS];
static pthread_mutex_t np_init_lock = PTHREAD_MUTEX_INITIALIZER;
/* np_epfd: every registered descriptor. np_park_epfd: np_epfd (readable when it has events) and
 * np_evfd, waited on only by the parked poller (see jf_netpoll_park()). */
static int np_epfd = -1, np_evfd = -1, np_park_epfd = -1;
static uint32_t np_poll_lock;     /* one non-blocking poller at a time */
static uint64_t np_last_poll_ns;
static uint32_t np_pending_lock;
static struct net_waiter *np_pending; /* woken off-worker, to be made runnable */
static struct jf_remote_wake *np_remote; /* remote wakes (jf_netpoll_remote_wake), same lock */

/* --- setup and the descriptor table -------------------------------------------------------- */

static int np_init(void)
{
	int rc = 0;

	if (__atomic_load_n(&np_epfd, __ATOMIC_ACQUIRE) >= 0)
		return 0;
	pthread_mutex_lock(&np_init_lock);
	if (np_epfd < 0) {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		int pk = ep >= 0 ? epoll_create1(EPOLL_CLOEXEC) : -1;
		int ev = pk >= 0 ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
		struct epoll_event e = {.events = EPOLLIN, .data.u64 = EVFD_TAG};
		struct epoll_event inner = {.events = EPOLLIN, .data.u64 = 0};

		if (ep < 0 || pk < 0 || ev < 0 || epoll_ctl(pk, EPOLL_CTL_ADD, ev, &e) != 0 ||
		    epoll_ctl(pk, EPOLL_CTL_ADD, ep, &inner) != 0) {
			rc = -errno;
			if (ep >= 0)
				close(ep);
			if (pk >= 0)
				close(pk);
			if (ev >= 0)
				close(ev);
		} else {
			np_evfd = ev;
			np_park_epfd = pk;
			__atomic_store_n(&np_epfd, ep, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&np_init_lock);
	return rc;
}

static struct pdesc *pd_lookup(int fd, bool create)
{
	struct pdesc *c;

	if (fd < 0 || (unsigned)fd >= PD_CHUNK * PD_CHUNKS)
		return NULL;
	c = __atomic_load_n(&chunks[(unsigned)fd / PD_CHUNK], __ATOMIC_ACQUIRE);
	if (!c && create) {
		pthread_mutex_lock(&np_init_lock);
		c = chunks[(unsigned)fd / PD_CHUNK];
		if (!c) {
			c = calloc(PD_CHUNK, sizeof(*c));
			if (c)
				__atomic_store_n(&chunks[(unsigned)fd / PD_CHUNK], c,
						 __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&np_init_lock);
	}
	return c ? &c[(unsigned)fd % PD_CHUNK] : NULL;
}

static struct pdesc *pd_register_np(int fd, struct pdesc *pd, bool fresh, bool excl);

/*
 * Register @fd (non-blocking, edge-triggered, both directions). @fresh: the caller just made
 * @fd, so any registration left from an earlier file with that number is stale. Return the
 * descriptor, or NULL with errno.
 * Not preemptible: it holds the descriptor's spinlock (and np_init's mutex), and a preemption
 * that polls would spin forever on the lock its own uthread holds (found under the timer
 * mechanism: a uthread interrupted in jf_socket, its worker stuck in handle_events).
 * Adopting a descriptor we did not make (!@fresh) is a call on it like any other: counted in
 * inflight, so that it cannot overlap a jf_close() of the same number (see the top).
 */
static struct pdesc *pd_register(int fd, bool fresh, bool excl)
{
	struct pdesc *pd;
	struct stat st;
	int rc;

	jf_preempt_disable();
	if ((rc = np_init()) != 0) {
		pd = NULL;
		errno = -rc;
	} else if (!(pd = pd_lookup(fd, true))) {
		errno = fd < 0 || fstat(fd, &st) != 0 ? EBADF : EMFILE;
	} else if (fresh) {
		pd = pd_register_np(fd, pd, fresh, excl);
	} else {
		/*
		 * Counted in flight before looking at "closing": either jf_close() sees the count
		 * and waits, or we see "closing" and leave the descriptor alone (pd_register_np's
		 * fstat must not overlap close(2); its check under the lock is for the window
		 * between them).
		 */
		struct pdesc *got = NULL;

		__atomic_fetch_add(&pd->inflight, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&pd->closing, __ATOMIC_SEQ_CST))
			errno = EBADF; /* being closed: not adopted again */
		else
			got = pd_register_np(fd, pd, fresh, excl);
		__atomic_fetch_sub(&pd->inflight, 1, __ATOMIC_RELEASE);
		pd = got;
	}
	jf_preempt_enable(); /* keeps errno */
	return pd;
}

static struct pdesc *pd_register_np(int fd, struct pdesc *pd, bool fresh, bool excl)
{
	struct stat st;
	struct epoll_event e;
	int fl, rc;

	if (fstat(fd, &st) != 0)
		return NULL; /* EBADF */
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
		errno = EPERM; /* epoll cannot watch files: jf_file_* (jiffy/blocking.h) is for them */
		return NULL;
	}
	jf_spin_lock(&pd->lock);
	if (pd->closing && !fresh) {
		jf_spin_unlock(&pd->lock);
		errno = EBADF; /* being closed: not adopted again */
		return NULL;
	}
	if (pd->registered && !fresh && pd->dev == st.st_dev && pd->ino == st.st_ino) {
		jf_spin_unlock(&pd->lock);
		if (excl) {
			errno = EEXIST;
			return NULL;
		}
		return pd;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)) {
		jf_spin_unlock(&pd->lock);
		return NULL;
	}
	pd->gen++;
	e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	e.data.u64 = (uint64_t)(unsigned)fd | ((uint64_t)pd->gen << 32);
	rc = epoll_ctl(np_epfd, EPOLL_CTL_ADD, fd, &e);
	if (rc != 0 && errno == EEXIST) /* a dup of the old file keeps the old entry alive */
		rc = epoll_ctl(np_epfd, EPOLL_CTL_MOD, fd, &e);
	if (rc != 0) {
		jf_spin_unlock(&pd->lock);
		return NULL;
	}
	__atomic_store_n(&pd->registered, true, __ATOMIC_RELAXED);
	pd->dev = st.st_dev;
	pd->ino = st.st_ino;
	jf_spin_unlock(&pd->lock);
	return pd;
}

/* --- waking -------------------------------------------------------------------------------- */

static void unlink_waiter(struct pdesc *pd, struct net_waiter *nw)
{
	if (nw->prev)
		nw->prev->next = nw->next;
	else
		pd->waiters[nw->dir] = nw->next;
	if (nw->next)
		nw->next->prev = nw->prev;
	nw->linked = false;
	__atomic_fetch_sub(&jf__net_waiters, 1, __ATOMIC_RELAXED);
}

/* Under pd->lock: take every waiter of @dir with @result onto the chain @out (via ->next). */
static void take_waiters(struct pdesc *pd, int dir, int result, struct net_waiter **out)
{
	struct net_waiter *nw;

	while ((nw = pd->waiters[dir]) != NULL) {
		unlink_waiter(pd, nw);
		nw->result = result;
		nw->next = *out;
		*out = nw;
	}
}

/*
 * Make the chain's uthreads runnable. A waiter's struct lives on its stack: read it before the
 * wake, never after (the uthread may run and return at once).
 */
static unsigned wake_chain(struct worker *w, struct net_waiter *chain)
{
	unsigned n = 0;

	while (chain) {
		struct net_waiter *next = chain->next;
		struct jf_thread *t = chain->t;
		jf_sched_make_runnable(w, t, JF_ENQ_WOKEN);
		chain = next;
		n++;
	}
	return n;
}

/* A chain decided off-worker: park it on the pending list and have a worker take it. */
static void defer_chain(struct net_waiter *chain)
{
	uint64_t one = 1;

	if (!chain)
		return;
	jf_spin_lock(&np_pending_lock);
	while (chain) {
		struct net_waiter *next = chain->next;
		chain->next = np_pending;
		__atomic_store_n(&np_pending, chain, __ATOMIC_RELAXED); /* read unlocked: drain */
		__atomic_fetch_add(&jf__net_waiters, 1, __ATOMIC_RELAXED); /* keep pollers polling */
		chain = next;
	}
	jf_spin_unlock(&np_pending_lock);
	if (write(np_evfd, &one, sizeof(one)) < 0) {
		/* The counter cannot overflow in practice; a busy poll drains the list anyway. */
	}
}

static unsigned drain_pending(struct worker *w)
{
	struct net_waiter *chain, *nw;
	struct jf_remote_wake *remote, *rw;
	unsigned n;

	if (!__atomic_load_n(&np_pending, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&np_remote, __ATOMIC_RELAXED))
		return 0;
	jf_spin_lock(&np_pending_lock);
	/* Atomic stores: the look above reads the heads without the lock. */
	chain = np_pending;
	__atomic_store_n(&np_pending, NULL, __ATOMIC_RELAXED);
	remote = np_remote;
	__atomic_store_n(&np_remote, NULL, __ATOMIC_RELAXED);
	for (nw = chain, n = 0; nw; nw = nw->next)
		n++;
	for (rw = remote; rw; rw = rw->next)
		n++;
	__atomic_fetch_sub(&jf__net_waiters, (int)n, __ATOMIC_RELAXED);
	jf_spin_unlock(&np_pending_lock);
	n = wake_chain(w, chain);
	while (remote) { /* read the node before the wake: it lives with the waiter */
		struct jf_remote_wake *next = remote->next;
		jf_sched_make_runnable(w, remote->t, JF_ENQ_WOKEN);
		remote = next;
		n++;
	}
	return n;
}

/* --- remote wakes (jiffy/blocking.h's pool) -------------------------------------------------- */

int jf_netpoll_remote_wait(struct jf_thread *cur)
{
	int rc = np_init();

	if (rc)
		return rc;
	__atomic_fetch_add(&jf__net_waiters, 1, __ATOMIC_SEQ_CST);
	/* No worker in epoll: wake a parked one to be the poller (as a descriptor's waiter does). */
	if (!__atomic_load_n(&jf__net_poller_parked, __ATOMIC_SEQ_CST))
		jf_kick_parked_worker(cur->worker);
	return 0;
}

void jf_netpoll_remote_unwait(void)
{
	__atomic_fetch_sub(&jf__net_waiters, 1, __ATOMIC_RELAXED);
}

void jf_netpoll_remote_wake(struct jf_remote_wake *rw)
{
	uint64_t one = 1;
	int saved = errno;

	jf_spin_lock(&np_pending_lock);
	rw->next = np_remote;
	__atomic_store_n(&np_remote, rw, __ATOMIC_RELAXED); /* read unlocked: drain_pending */
	jf_spin_unlock(&np_pending_lock);
	if (write(np_evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already non-zero, the poller will return anyway */
	}
	errno = saved;
}

/* --- polling ------------------------------------------------------------------------------- */

/* Bump the edge counts of @ev's descriptors and take their waiters: the chain to wake. */
static struct net_waiter *take_ready(const struct epoll_event *ev, int n)
{
	struct net_waiter *chain = NULL;

	for (int i = 0; i < n; i++) {
		uint64_t d = ev[i].data.u64;
		struct pdesc *pd;
		uint32_t e = ev[i].events;

		pd = pd_lookup((int)(uint32_t)d, false);
		if (!pd)
			continue;
		jf_spin_lock(&pd->lock);
		if (pd->registered && pd->gen == (uint32_t)(d >> 32)) { /* else: stale */
			/* Atomic: callers read seq without the lock before their try. */
			if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				__atomic_fetch_add(&pd->seq[DIR_RD], 1, __ATOMIC_RELEASE);
				take_waiters(pd, DIR_RD, 0, &chain);
			}
			if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) {
				__atomic_fetch_add(&pd->seq[DIR_WR], 1, __ATOMIC_RELEASE);
				take_waiters(pd, DIR_WR, 0, &chain);
			}
		}
		jf_spin_unlock(&pd->lock);
	}
	return chain;
}

static unsigned handle_events(struct worker *w, const struct epoll_event *ev, int n)
{
	return wake_chain(w, take_ready(ev, n)) + drain_pending(w);
}

/* epoll_pwait2 (ns timeout) where the kernel has it, else epoll_wait (ms, rounded up). */
static int np_wait(int epfd, struct epoll_event *ev, int max, uint64_t timeout_ns)
{
	static int no_pwait2;
	struct timespec ts, *tsp = NULL;
	int n;

	if (!__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED)) {
		if (timeout_ns != UINT64_MAX) {
			ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
			ts.tv_nsec = (long)(timeout_ns % 1000000000u);
			tsp = &ts;
		}
		n = epoll_pwait2(epfd, ev, max, tsp, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		__atomic_store_n(&no_pwait2, 1, __ATOMIC_RELAXED);
	}
	return epoll_wait(epfd, ev, max,
			  timeout_ns == UINT64_MAX ? -1 : (int)((timeout_ns + 999999u) / 1000000u));
}

bool jf_netpoll_due(uint64_t now)
{
	/* Signed: a @now a little before another worker's last poll (a stamp read without lfence,
	 * jf_stamp_ns(), or the clocks of two CPUs) is "just polled", not "due long ago". */
	return (int64_t)(now - __atomic_load_n(&np_last_poll_ns, __ATOMIC_RELAXED)) >=
	       (int64_t)jf_rt->cfg.netpoll_ns;
}

unsigned jf_netpoll_busy(struct worker *w, uint64_t now)
{
	if (!jf_netpoll_active() || !jf_netpoll_due(now))
		return 0;
	return jf_netpoll_poll(w, now);
}

unsigned jf_netpoll_poll(struct worker *w, uint64_t now)
{
	struct epoll_event ev[MAX_EVENTS];
	unsigned woken;
	int n, saved;

	if (!jf_spin_trylock(&np_poll_lock))
		return 0;
	__atomic_store_n(&np_last_poll_ns, now, __ATOMIC_RELAXED);
	saved = errno; /* a uthread is on this stack: its errno must not change */
	/* Acquire: np_init() publishes it with a release; a waiter counted in jf__net_waiters (a
	 * relaxed look, jf_netpoll_active()) may be what brought us here (TSan, core.blocking). */
	n = np_wait(__atomic_load_n(&np_epfd, __ATOMIC_ACQUIRE), ev, MAX_EVENTS, 0);
	jf_spin_unlock(&np_poll_lock);
	woken = handle_events(w, ev, n > 0 ? n : 0);
	errno = saved;
	STAT_INC(w, netpolls);
	/* The interrupt thread asked for this look (netpoll_irq.c): count it and what it woke. */
	if (JF_UNLIKELY(__atomic_load_n(&jf__netpoll_irq_req, __ATOMIC_RELAXED)) &&
	    __atomic_exchange_n(&jf__netpoll_irq_req, 0, __ATOMIC_ACQ_REL)) {
		STAT_INC(w, netpoll_irqs);
		STAT_ADD(w, netpoll_irq_wakeups, woken);
	}
	return woken;
}

/*
 * The parked poller sleeps on np_park_epfd, not on np_epfd: the eventfd that kicks it
 * (jf_netpoll_break) is in np_park_epfd only, where no other thread waits. Were it in np_epfd, a
 * worker polling np_epfd without blocking (its idle spin, a scheduling path) could take the
 * eventfd's event meant for the parked poller, which then slept on with work queued for it: a
 * lost wakeup that core.parkwake's epoll mode hits within a second (the 10 ms park bound of
 * old turned it into a delay). Once woken, the descriptors' events are taken from np_epfd
 * without blocking; a busy poller may have taken them first, which is no loss. A worker becomes
 * the poller only after the previous one read the eventfd, and looks at its own park_state
 * once it holds the slot: a kick that came before was perhaps read by its predecessor (found by
 * SPIN in tools/model/park.pml), a kick that comes after finds the eventfd waited on by it alone.
 */
bool jf_netpoll_park(struct worker *w, uint64_t timeout_ns)
{
	struct epoll_event ev[MAX_EVENTS];
	int n;

	/* np_init() stores np_park_epfd and np_evfd before it publishes np_epfd (release): read
	 * them after acquiring it (TSan caught the plain read racing with a first registration) */
	if (__atomic_load_n(&np_epfd, __ATOMIC_ACQUIRE) < 0)
		return false;
	if (__atomic_exchange_n(&jf__net_poller_parked, 1, __ATOMIC_SEQ_CST))
		return false;
	/* Kicked before it took the slot: that kick's eventfd write may have been read by the
	 * poller before this one (it ends only once it read it), so do not wait for it. */
	if (__atomic_load_n(&w->idle.park_state, __ATOMIC_SEQ_CST) != WK_PARKED_POLL) {
		__atomic_store_n(&jf__net_poller_parked, 0, __ATOMIC_RELEASE);
		return true;
	}
	STAT_INC(w, parks);
	n = np_wait(np_park_epfd, ev, 2, timeout_ns);
	for (int i = 0; i < n; i++) {
		uint64_t v;
		if (ev[i].data.u64 == EVFD_TAG && read(np_evfd, &v, sizeof(v)) < 0) {
			/* EAGAIN: drained already (a kick for a worker that did not sleep) */
		}
	}
	__atomic_store_n(&jf__net_poller_parked, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&np_last_poll_ns, jf_now_ns(), __ATOMIC_RELAXED);
	n = np_wait(np_epfd, ev, MAX_EVENTS, 0);
	handle_events(w, ev, n > 0 ? n : 0);
	STAT_INC(w, netpolls);
	return true;
}

void jf_netpoll_break(void)
{
	uint64_t one = 1;
	int saved = errno;

	if (np_evfd >= 0 && write(np_evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already non-zero, the poller will return */
	}
	errno = saved;
}

/* --- the interrupt form (JIFFY_NETPOLL_IRQ; docs/netpoll-irq.md) --------------------------- */

/*
 * One kernel thread per runtime blocks in epoll_wait() on np_epfd itself. When descriptors
 * become ready it takes their waiters (take_ready(), as any poller does), hands them to the
 * pending list (defer_chain(): only a worker may make a uthread runnable) and makes a worker
 * drain that list now instead of at its next scheduling point:
 *  - an idle worker parked in epoll: defer_chain()'s eventfd write wakes it;
 *  - a worker in its scheduler loop (run_start_ns == 0): it polls (and so drains) on its way
 *    to idle; woken from its futex if it sleeps there;
 *  - every worker busy: the mechanism's kick, with the netpoller's look made due: the kicked
 *    worker's preemption path polls, drains, and what it wakes runs at once if the policy ranks
 *    it higher (wakeup preemption) or the running uthread's quantum is over, else when it ends.
 *    Mechanisms whose kick is a store in the safepoint word (deadline, auto) kick every busy
 *    worker, the first at a safepoint drains (one the kernel descheduled would not); the others
 *    (a signal each) kick the worker whose run began first, and every busy worker if the list
 *    is still not drained half a quantum (at least 20 us) later.
 * While the thread runs, busy workers are no longer armed just to poll
 * (jf_netpoll_wants_busy_poll()): that is the polling it replaces. A drain that did not come
 * (the worker was between runs and went back into one, or the kernel does not run it) is asked
 * for again, of every busy worker, each half quantum while the pending list is not empty. The thread stops through an eventfd in np_epfd, level
 * triggered, added at start and removed at stop (the workers have stopped by then).
 */
#define IRQ_STOP_TAG (UINT64_MAX - 1)

uint32_t jf__netpoll_irq_on;
uint32_t jf__netpoll_irq_req;
static pthread_t irq_thread;
static int irq_stopfd = -1;
static pthread_mutex_t irq_kick_lock = PTHREAD_MUTEX_INITIALIZER; /* kicks vs. workers' stop */
static uint32_t irq_fifo_warned; /* "not SCHED_FIFO" was said */

/* Make some worker drain the pending list (see above); @all: every busy worker. */
static void irq_kick(struct runtime *rt, bool all)
{
	struct worker *busiest = NULL;
	uint64_t first = UINT64_MAX;

	if (__atomic_load_n(&jf__net_poller_parked, __ATOMIC_SEQ_CST))
		return; /* defer_chain()'s eventfd write wakes it */
	/* Whoever looks next looks at once, and counts the look as this interrupt's. */
	__atomic_store_n(&jf__netpoll_irq_req, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&np_last_poll_ns, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&irq_kick_lock);
	if (atomic_load_explicit(&rt->stopping, memory_order_acquire))
		goto out; /* workers may be gone (their timers, their TLS): kick nobody */
	for (int i = 0; i < rt->nworkers; i++) {
		struct worker *k = &rt->workers[i];
		uint64_t start = __atomic_load_n(&k->pre.run_start_ns, __ATOMIC_ACQUIRE);

		if (!start) {
			jf_worker_kick(NULL, k); /* in its loop: it polls; off its futex if parked */
			goto out;
		}
		if (start < first) {
			first = start;
			busiest = k;
		}
	}
	if (!all) {
		rt->mech->kick(busiest);
	} else {
		for (int i = 0; i < rt->nworkers; i++)
			rt->mech->kick(&rt->workers[i]);
	}
out:
	pthread_mutex_unlock(&irq_kick_lock);
}

static void *irq_main(void *arg)
{
	struct runtime *rt = arg;
	struct epoll_event ev[MAX_EVENTS];
	sigset_t all;

	/* Asked again while the list is not drained: half a quantum, at least 20 us. */
	uint64_t again = rt->cfg.quantum_ns / 2 > 20000u ? rt->cfg.quantum_ns / 2 : 20000u;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* preemption and budget signals are workers' */
	for (;;) {
		bool pending = __atomic_load_n(&np_pending, __ATOMIC_RELAXED) != NULL;
		struct net_waiter *chain;
		int n = np_wait(np_epfd, ev, MAX_EVENTS, pending ? again : UINT64_MAX);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			jf_warn("netpoll interrupt thread: epoll_wait: %s; busy workers poll again",
				strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++)
			if (ev[i].data.u64 == IRQ_STOP_TAG)
				goto stop;
		chain = take_ready(ev, n); /* the stop tag is no descriptor: pd_lookup() skips it */
		if (chain)
			defer_chain(chain);
		/* A kick in the safepoint word is a store: every busy worker gets it, and the first
		 * at a safepoint drains (a worker the kernel has descheduled cannot). A signal costs
		 * 7-45 us: one worker first, all of them if the list is still full later. */
		if (chain)
			irq_kick(rt, rt->mech->word);
		else if (n == 0 && __atomic_load_n(&np_pending, __ATOMIC_RELAXED))
			irq_kick(rt, true);
	}
stop:
	__atomic_store_n(&jf__netpoll_irq_on, 0, __ATOMIC_RELEASE);
	return NULL;
}

int jf_netpoll_irq_start(struct runtime *rt)
{
	struct epoll_event e = {.events = EPOLLIN, .data.u64 = IRQ_STOP_TAG};
	int rc;

	if (!rt->cfg.netpoll_irq)
		return 0;
	if (!rt->mech->kick) {
		/* ("none" is refused by jf_config_validate(); "uintr" has no kick yet) */
		jf_warn("JIFFY_NETPOLL_IRQ: the preemption mechanism '%s' cannot interrupt a busy "
			"worker on request (no kick)", rt->mech->name);
		return -ENOTSUP;
	}
	if ((rc = np_init()) != 0)
		return rc;
	irq_stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (irq_stopfd < 0)
		return -errno;
	if (epoll_ctl(np_epfd, EPOLL_CTL_ADD, irq_stopfd, &e) != 0) {
		rc = -errno;
		close(irq_stopfd);
		irq_stopfd = -1;
		return rc;
	}
	__atomic_store_n(&jf__netpoll_irq_on, 1, __ATOMIC_RELEASE);
	rc = pthread_create(&irq_thread, NULL, irq_main, rt);
	if (rc) {
		__atomic_store_n(&jf__netpoll_irq_on, 0, __ATOMIC_RELEASE);
		epoll_ctl(np_epfd, EPOLL_CTL_DEL, irq_stopfd, NULL);
		close(irq_stopfd);
		irq_stopfd = -1;
		return -rc;
	}
	pthread_setname_np(irq_thread, "jiffy-netirq");
	/*
	 * An interrupt preempts what runs: a thread at normal priority woken while the workers
	 * keep every CPU busy waits for the kernel's scheduler instead (milliseconds on the
	 * 2-vCPU guest: docs/netpoll-irq.md). SCHED_FIFO (lowest priority) needs CAP_SYS_NICE or
	 * RLIMIT_RTPRIO; without it the thread runs, and that case is said once per process.
	 */
	rc = pthread_setschedparam(irq_thread, SCHED_FIFO, &(struct sched_param){.sched_priority = 1});
	if (rc && !__atomic_exchange_n(&irq_fifo_warned, 1, __ATOMIC_RELAXED))
		jf_warn("JIFFY_NETPOLL_IRQ: the interrupt thread runs at normal priority, not "
			"SCHED_FIFO (%s): with every CPU busy its wake-ups wait for the kernel's "
			"scheduler (docs/netpoll-irq.md)", strerror(rc));
	return 0;
}

void jf_netpoll_irq_worker_stop(void)
{
	/* A kick that read "not stopping" before this worker stops has finished (irq_kick). */
	pthread_mutex_lock(&irq_kick_lock);
	pthread_mutex_unlock(&irq_kick_lock);
}

void jf_netpoll_irq_stop(void)
{
	uint64_t one = 1;

	if (irq_stopfd < 0)
		return;
	if (write(irq_stopfd, &one, sizeof(one)) < 0) {
		/* cannot fail: the counter is 0 */
	}
	pthread_join(irq_thread, NULL);
	epoll_ctl(np_epfd, EPOLL_CTL_DEL, irq_stopfd, NULL);
	close(irq_stopfd);
	irq_stopfd = -1;
	__atomic_store_n(&jf__netpoll_irq_req, 0, __ATOMIC_RELAXED);
}

void jf_netpoll_runtime_exit(void)
{
	for (unsigned c = 0; c < PD_CHUNKS; c++) {
		struct pdesc *chunk = chunks[c];
		if (!chunk)
			continue;
		for (unsigned i = 0; i < PD_CHUNK; i++) {
			struct pdesc *pd = &chunk[i];
			jf_spin_lock(&pd->lock);
			for (int dir = 0; dir < 2; dir++)
				while (pd->waiters[dir])
					unlink_waiter(pd, pd->waiters[dir]);
			jf_spin_unlock(&pd->lock);
		}
	}
	jf_spin_lock(&np_pending_lock);
	__atomic_store_n(&np_pending, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&np_remote, NULL, __ATOMIC_RELAXED);
	jf_spin_unlock(&np_pending_lock);
	__atomic_store_n(&jf__net_waiters, 0, __ATOMIC_RELAXED);
}

/* --- waiting ------------------------------------------------------------------------------- */

static bool waiter_timeout(void *arg)
{
	struct net_waiter *nw = arg;
	struct pdesc *pd = nw->pd;
	bool removed = false;

	jf_spin_lock(&pd->lock);
	if (nw->linked) {
		unlink_waiter(pd, nw);
		nw->result = -ETIMEDOUT;
		removed = true;
	}
	jf_spin_unlock(&pd->lock);
	return removed;
}

static uint64_t deadline_of(int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return UINT64_MAX;
	return jf_now_ns() + (uint64_t)timeout_ns;
}

typedef ssize_t (*io_op)(int fd, void *ctx);

/*
 * @op on @fd, counted in @pd->inflight so that jf_close() waits for it (see the top of the
 * file), or EBADF when the descriptor was closed. Not preemptible: the count must not stay up
 * while its uthread waits in a run queue (jf_close() would wait for it).
 */
static ssize_t pd_call(struct pdesc *pd, int fd, io_op op, void *ctx)
{
	ssize_t n;

	jf_preempt_disable();
	__atomic_fetch_add(&pd->inflight, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&pd->registered, __ATOMIC_SEQ_CST)) {
		n = -1;
		errno = EBADF;
	} else {
		n = op(fd, ctx);
	}
	__atomic_fetch_sub(&pd->inflight, 1, __ATOMIC_RELEASE);
	jf_preempt_enable();
	return n;
}

static ssize_t op_fstat(int fd, void *st)
{
	return fstat(fd, st);
}

/*
 * The calling uthread waits until @pd's direction @dir sees an edge after @seq (0), the
 * deadline passes (-ETIMEDOUT) or the descriptor is closed (-EBADF).
 */
static int pd_wait(int fd, struct pdesc *pd, int dir, uint32_t seq, uint64_t deadline)
{
	struct net_waiter nw = {.pd = pd, .dir = dir, .result = 0};
	struct stat st;
	int result;

	/* The slow path anyway: notice a descriptor closed with close(2) and reused meanwhile. */
	if (pd_call(pd, fd, op_fstat, &st) != 0)
		return -EBADF;
	if (st.st_dev != pd->dev || st.st_ino != pd->ino) {
		if (!pd_register(fd, true, false))
			return -errno;
		return 0; /* registered afresh: try the call again */
	}
	if (deadline != UINT64_MAX && jf_now_ns() >= deadline)
		return -ETIMEDOUT;

	JF_RUNTIME_ENTER();
	nw.t = jf_current();
	if (jf_cancel_due(nw.t)) {
		JF_RUNTIME_LEAVE();
		return -ECANCELED;
	}
	jf_spin_lock(&pd->lock);
	if (!pd->registered) {
		result = -EBADF;
	} else if (pd->seq[dir] != seq) {
		result = 0; /* an edge came after the caller's try */
	} else {
		nw.next = pd->waiters[dir];
		if (nw.next)
			nw.next->prev = &nw;
		pd->waiters[dir] = &nw;
		nw.linked = true;
		__atomic_fetch_add(&jf__net_waiters, 1, __ATOMIC_RELAXED);
		/* No worker in epoll: wake a parked one to be the poller. */
		if (!__atomic_load_n(&jf__net_poller_parked, __ATOMIC_RELAXED))
			jf_kick_parked_worker(nw.t->worker);
		jf_wait_note(nw.t, dir ? "netpoll-write" : "netpoll-read", pd);
		/* A jf_cancel() ends the wait through waiter_timeout() too: -ECANCELED. */
		if (jf_block_wait(&pd->lock, deadline, waiter_timeout, &nw) == -ECANCELED)
			nw.result = -ECANCELED;
		JF_RUNTIME_LEAVE();
		return nw.result;
	}
	jf_spin_unlock(&pd->lock);
	JF_RUNTIME_LEAVE();
	return result;
}

/*
 * poll(2) on @fd for @events until @deadline (0: look once), again after a signal (poll is
 * never restarted; in a uthread a preemption signal may land in it): the revents (> 0),
 * -ETIMEDOUT, -EBADF when @fd is not open, or -errno.
 */
static int poll_until(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int ms = -1, r;

		if (deadline != UINT64_MAX) {
			uint64_t now = jf_now_ns(), left = now >= deadline ? 0 : deadline - now;
			ms = left / 1000000u >= INT_MAX ? INT_MAX : (int)((left + 999999u) / 1000000u);
		}
		r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		return (p.revents & POLLNVAL) ? -EBADF : p.revents;
	}
}

static bool in_uthread(void)
{
	return jf_rt && jf_current() != NULL;
}

/*
 * The descriptor a uthread's call should wait on: registered now if it was not (adopting it:
 * it becomes non-blocking). NULL with *nowait for descriptors epoll cannot watch (files).
 */
static struct pdesc *pd_for_call(int fd, bool *nowait, bool check_nonblock)
{
	struct pdesc *pd = pd_lookup(fd, false);
	bool fresh = false;

	*nowait = false;
	if (pd && __atomic_load_n(&pd->registered, __ATOMIC_RELAXED)) {
		/*
		 * read/write/accept have no MSG_DONTWAIT: a descriptor closed with close(2) and
		 * reused, or made blocking again, would block the worker. One fcntl tells.
		 */
		int fl = check_nonblock ? fcntl(fd, F_GETFL) : O_NONBLOCK;
		if (fl < 0)
			return NULL;
		if (fl & O_NONBLOCK)
			return pd;
		fresh = true;
	}
	pd = pd_register(fd, fresh, false);
	if (!pd && errno == EPERM)
		*nowait = true;
	return pd;
}

/* Run @op until it does not say EAGAIN, waiting for direction @dir in between. */
static ssize_t net_io(int fd, int dir, int64_t timeout_ns, io_op op, void *ctx, bool dontwait)
{
	uint64_t deadline = timeout_ns > 0 ? deadline_of(timeout_ns) : deadline_of(-1);
	struct pdesc *pd = NULL;
	bool uthread = in_uthread(), nowait = false;

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (uthread) {
		pd = pd_for_call(fd, &nowait, !dontwait);
		if (!pd && !nowait)
			return -1;
	}
	for (;;) {
		uint32_t seq = pd ? __atomic_load_n(&pd->seq[dir], __ATOMIC_ACQUIRE) : 0;
		ssize_t n = pd ? pd_call(pd, fd, op, ctx) : op(fd, ctx);
		int r;

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if ((errno != EAGAIN && errno != EWOULDBLOCK) || timeout_ns == 0 || nowait)
			return -1;
		/* Outside the runtime: an ordinary poll(2) on the non-blocking descriptor. */
		r = uthread ? pd_wait(fd, pd, dir, seq, deadline)
			    : poll_until(fd, dir == DIR_RD ? POLLIN : POLLOUT, deadline);
		if (r < 0) {
			errno = -r;
			return -1;
		}
	}
}

/* --- the API ------------------------------------------------------------------------------- */

int jf_socket(int domain, int type, int protocol)
{
	int fd = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);

	if (fd < 0)
		return -1;
	if (!pd_register(fd, true, false)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int jf_fd_register(int fd)
{
	return pd_register(fd, false, true) ? 0 : -1;
}

int jf_close(int fd)
{
	struct pdesc *pd = pd_lookup(fd, false);
	struct net_waiter *chain = NULL;
	struct worker *w;
	int rc;

	JF_RUNTIME_ENTER(); /* not preemptible while it holds the lock (see pd_register) */
	if (pd) {
		jf_spin_lock(&pd->lock);
		if (pd->registered) {
			__atomic_store_n(&pd->closing, true, __ATOMIC_SEQ_CST);
			__atomic_store_n(&pd->registered, false, __ATOMIC_SEQ_CST);
			pd->gen++;
			take_waiters(pd, DIR_RD, -EBADF, &chain);
			take_waiters(pd, DIR_WR, -EBADF, &chain);
			epoll_ctl(np_epfd, EPOLL_CTL_DEL, fd, NULL);
		}
		jf_spin_unlock(&pd->lock);
	}
	if (chain) {
		w = jf_rt ? jf_this_worker() : NULL;
		if (w)
			wake_chain(w, chain);
		else
			defer_chain(chain);
	}
	JF_RUNTIME_LEAVE();
	/* Calls that passed their check before the unregistering finish first (a non-blocking
	 * system call each, on other workers: they cannot be preempted meanwhile). */
	while (pd && __atomic_load_n(&pd->inflight, __ATOMIC_ACQUIRE))
		sched_yield();
	rc = close(fd);
	if (pd) {
		JF_RUNTIME_ENTER();
		jf_spin_lock(&pd->lock);
		__atomic_store_n(&pd->closing, false, __ATOMIC_RELAXED);
		jf_spin_unlock(&pd->lock);
		JF_RUNTIME_LEAVE(); /* keeps close(2)'s errno */
	}
	return rc;
}

int jf_fd_wait(int fd, int events, int64_t timeout_ns)
{
	uint64_t deadline = deadline_of(timeout_ns);
	bool nowait = false;
	struct pdesc *pd;

	if (events & ~(POLLIN | POLLOUT) || !(events & (POLLIN | POLLOUT))) {
		errno = EINVAL;
		return -1;
	}
	if (!in_uthread()) {
		int r = poll_until(fd, (short)events, deadline);

		if (r < 0) {
			errno = r == -ETIMEDOUT && timeout_ns == 0 ? EAGAIN : -r;
			return -1;
		}
		return (r & (POLLHUP | POLLERR)) ? events : (r & events);
	}
	pd = pd_for_call(fd, &nowait, false);
	if (!pd)
		return nowait ? (events & (POLLIN | POLLOUT)) : -1; /* files are always ready */
	for (;;) {
		/* Edges only tell that something changed: ask poll(2) what holds now. */
		int dir = (events & POLLIN) ? DIR_RD : DIR_WR;
		uint32_t seq = __atomic_load_n(&pd->seq[dir], __ATOMIC_ACQUIRE);
		int r = poll_until(fd, (short)events, 0);

		if (r > 0)
			return (r & (POLLHUP | POLLERR)) ? events : (r & events);
		if (r != -ETIMEDOUT) {
			errno = -r;
			return -1;
		}
		if (timeout_ns == 0) {
			errno = EAGAIN;
			return -1;
		}
		if (events == (POLLIN | POLLOUT)) {
			/* Both: wait for reads with a short bound and look again (rare in servers). */
			uint64_t soon = jf_now_ns() + 1000000u;
			r = pd_wait(fd, pd, DIR_RD, seq, soon < deadline ? soon : deadline);
			if (r == -ETIMEDOUT && jf_now_ns() < deadline)
				r = 0;
		} else {
			r = pd_wait(fd, pd, dir, seq, deadline);
		}
		if (r < 0) {
			errno = -r;
			return -1;
		}
	}
}

int jf_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	return bind(fd, addr, len);
}

int jf_listen(int fd, int backlog)
{
	return listen(fd, backlog);
}

struct accept_ctx {
	struct sockaddr *addr;
	socklen_t *len;
};

static ssize_t op_accept(int fd, void *p)
{
	struct accept_ctx *c = p;
	return accept4(fd, c->addr, c->len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int jf_accept(int fd, struct sockaddr *addr, socklen_t *len, int64_t timeout_ns)
{
	struct accept_ctx c = {addr, len};
	int nfd = (int)net_io(fd, DIR_RD, timeout_ns, op_accept, &c, false);

	if (nfd >= 0 && !pd_register(nfd, true, false)) {
		int e = errno;
		close(nfd);
		errno = e;
		return -1;
	}
	return nfd;
}

int jf_connect(int fd, const struct sockaddr *addr, socklen_t len, int64_t timeout_ns)
{
	int err = 0, r;
	socklen_t el = sizeof(err);

	if (connect(fd, addr, len) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EINTR)
		return -1;
	r = jf_fd_wait(fd, POLLOUT, timeout_ns);
	if (r < 0) {
		if (errno == EAGAIN)
			errno = EINPROGRESS; /* timeout 0: the connection goes on in the background */
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
		return -1;
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

struct buf_ctx {
	void *buf;
	size_t len;
	int flags;
	struct sockaddr *addr;
	socklen_t *alen;
	const struct sockaddr *dst;
	socklen_t dlen;
};

static ssize_t op_read(int fd, void *p)
{
	struct buf_ctx *c = p;
	return read(fd, c->buf, c->len);
}

static ssize_t op_write(int fd, void *p)
{
	struct buf_ctx *c = p;
	return write(fd, c->buf, c->len);
}

static ssize_t op_recvfrom(int fd, void *p)
{
	struct buf_ctx *c = p;
	return recvfrom(fd, c->buf, c->len, c->flags | MSG_DONTWAIT, c->addr, c->alen);
}

static ssize_t op_sendto(int fd, void *p)
{
	struct buf_ctx *c = p;
	return sendto(fd, c->buf, c->len, c->flags | MSG_DONTWAIT | MSG_NOSIGNAL, c->dst, c->dlen);
}

ssize_t jf_read(int fd, void *buf, size_t len, int64_t timeout_ns)
{
	struct buf_ctx c = {.buf = buf, .len = len};
	return net_io(fd, DIR_RD, timeout_ns, op_read, &c, false);
}

ssize_t jf_recv(int fd, void *buf, size_t len, int flags, int64_t timeout_ns)
{
	struct buf_ctx c = {.buf = buf, .len = len, .flags = flags};
	return net_io(fd, DIR_RD, timeout_ns, op_recvfrom, &c, true);
}

ssize_t jf_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
		    socklen_t *srclen, int64_t timeout_ns)
{
	struct buf_ctx c = {.buf = buf, .len = len, .flags = flags, .addr = src, .alen = srclen};
	return net_io(fd, DIR_RD, timeout_ns, op_recvfrom, &c, true);
}

ssize_t jf_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *dst,
		  socklen_t dstlen, int64_t timeout_ns)
{
	struct buf_ctx c = {.buf = (void *)buf, .len = len, .flags = flags, .dst = dst,
			    .dlen = dstlen};
	return net_io(fd, DIR_WR, timeout_ns, op_sendto, &c, true);
}

/* Streams: keep writing until all of @len is out, the deadline passes, or an error. */
static ssize_t write_all(int fd, const void *buf, size_t len, int flags, int64_t timeout_ns,
			 io_op op)
{
	uint64_t deadline = deadline_of(timeout_ns);
	size_t done = 0;

	do {
		int64_t left = timeout_ns;
		struct buf_ctx c = {.buf = (char *)buf + done, .len = len - done, .flags = flags};
		ssize_t n;

		if (timeout_ns > 0) {
			uint64_t now = jf_now_ns();
			left = now >= deadline ? 0 : (int64_t)(deadline - now);
			if (left == 0 && done) {
				errno = ETIMEDOUT;
				break;
			}
		}
		n = net_io(fd, DIR_WR, left, op, &c, op == op_sendto);
		if (n < 0)
			break;
		done += (size_t)n;
	} while (done < len);
	return done || len == 0 ? (ssize_t)done : -1;
}

ssize_t jf_write(int fd, const void *buf, size_t len, int64_t timeout_ns)
{
	return write_all(fd, buf, len, 0, timeout_ns, op_write);
}

ssize_t jf_send(int fd, const void *buf, size_t len, int flags, int64_t timeout_ns)
{
	return write_all(fd, buf, len, flags, timeout_ns, op_sendto);
}
