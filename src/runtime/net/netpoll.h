/*
 * netpoll.h - the netpoller's hooks into the scheduler (internal; the API is jiffy/net.h).
 *
 * Owns: nothing; declares what the scheduler calls (runtime.c, thread.c), the mechanisms that
 * look at it when deciding a preemption (preempt.c, deadline.c, deadline_arm.h, dispatcher.c,
 * posix_timer.c) and the blocking pool's remote wake (blocking.c). The netpoller is
 * process-wide (one epoll instance and one eventfd, made on first use) and outlives a runtime; a
 * runtime's workers drive it: pick_next() polls without blocking while uthreads wait on
 * descriptors (at most once per JIFFY_NETPOLL_US), and one idle worker at a time parks in epoll
 * instead of on its futex.
 */
#ifndef JIFFY_NETPOLL_H
#define JIFFY_NETPOLL_H

#include <stdbool.h>
#include <stdint.h>

struct worker;

/* Uthreads blocked on a descriptor right now (a read is one relaxed load). */
extern int jf__net_waiters;

/* 1 while an idle worker waits in epoll (it sees every edge; busy workers need not poll). */
extern uint32_t jf__net_poller_parked;

/* The interrupt form (JIFFY_NETPOLL_IRQ, docs/netpoll-irq.md): 1 while its thread waits in
 * epoll for the runtime; jf__netpoll_irq_req: it kicked a busy worker to look, not yet done. */
extern uint32_t jf__netpoll_irq_on;
extern uint32_t jf__netpoll_irq_req;

static inline bool jf_netpoll_active(void)
{
	return __atomic_load_n(&jf__net_waiters, __ATOMIC_RELAXED) > 0;
}

/*
 * Should a busy worker be interrupted to poll (preemption mechanisms arm for this as for
 * queued work)? Only while uthreads wait on descriptors and no idle worker sits in epoll.
 */
static inline bool jf_netpoll_wants_busy_poll(void)
{
	return jf_netpoll_active() && !__atomic_load_n(&jf__net_poller_parked, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&jf__netpoll_irq_on, __ATOMIC_RELAXED);
}

/*
 * A busy worker entered the runtime for a preemption request: should it look at the descriptors
 * (when due)? When busy polling is wanted, or when the interrupt thread kicked it to look
 * (jf__netpoll_irq_req). Not merely because uthreads wait: deadline and auto enter once per run
 * whatever waits (src/runtime/preempt/deadline_arm.h), and a look there whenever descriptors are
 * waited on made every busy worker a poller beside the interrupt thread (net.netirq: 0 irq polls in
 * a run where the worker's own looks won every race).
 */
static inline bool jf_netpoll_wants_look(void)
{
	return jf_netpoll_wants_busy_poll() ||
	       (jf_netpoll_active() && __atomic_load_n(&jf__netpoll_irq_req, __ATOMIC_RELAXED));
}

/* Is a busy worker's look due (JIFFY_NETPOLL_US since the last one)? A preemption's handler
 * asks, and leaves the look to the scheduler loop. */
bool jf_netpoll_due(uint64_t now);
/* Busy worker at a scheduling point: poll without blocking if due. Return: uthreads woken. */
unsigned jf_netpoll_busy(struct worker *w, uint64_t now);
/* Poll without blocking now, whatever JIFFY_NETPOLL_US says (an idle worker has nothing better
 * to do), unless another worker is polling. Return: uthreads woken. */
unsigned jf_netpoll_poll(struct worker *w, uint64_t now);
/*
 * Idle worker @w, park state already WK_PARKED_POLL: wait in epoll for at most @timeout_ns
 * (UINT64_MAX: no limit), waking the uthreads whose descriptors became ready. Return false,
 * without waiting, if another worker is the poller already.
 */
bool jf_netpoll_park(struct worker *w, uint64_t timeout_ns);
/* Make the parked poller return (jf_worker_kick on a WK_PARKED_POLL worker). */
void jf_netpoll_break(void);
/*
 * The interrupt form. jf_netpoll_irq_start(): at jf_run(), once every worker is ready, when
 * @rt->cfg.netpoll_irq: start the thread that waits in epoll and kicks a worker on readiness
 * (0 or -errno). jf_netpoll_irq_worker_stop(): a worker leaving its loop for good (stopping is
 * set) waits for a kick in progress, so none reaches it afterwards. jf_netpoll_irq_stop():
 * after the workers were joined (nothing if it never started).
 */
struct runtime;
int jf_netpoll_irq_start(struct runtime *rt);
void jf_netpoll_irq_worker_stop(void);
void jf_netpoll_irq_stop(void);
/* The runtime is going away: forget every waiter (their stacks are about to be unmapped). */
void jf_netpoll_runtime_exit(void);

/*
 * Remote wakes: a uthread woken by a thread that is not a worker (src/blocking/blocking.c's pool
 * threads), through the same pending list and eventfd as jf_close()'s off-worker wakes. The
 * node lives with the waiter (e.g. on its stack); the waker must not touch it after the call.
 */
struct jf_thread;
struct jf_remote_wake {
	struct jf_remote_wake *next;
	struct jf_thread *t;
};
/*
 * The calling uthread @cur (on a worker, in the runtime) is about to block until a
 * jf_netpoll_remote_wake() for it: counted as a netpoll waiter, so that busy workers poll and an
 * idle one parks in epoll (a parked worker is kicked to be that poller if none is). Return: 0, or
 * -errno if the netpoller's eventfd could not be made (then nothing was counted).
 */
int jf_netpoll_remote_wait(struct jf_thread *cur);
/* The waiter counted by jf_netpoll_remote_wait() ended its wait without a remote wake. */
void jf_netpoll_remote_unwait(void);
/* From any thread: @rw->t, blocked and counted, is made runnable by the next worker that polls
 * (the parked poller is woken through the eventfd). Safe from a plain pthread. */
void jf_netpoll_remote_wake(struct jf_remote_wake *rw);

#endif /* JIFFY_NETPOLL_H */
