/*
 * tools/model/park.pml - a Promela model of how idle workers park and are woken, checked by the
 * SPIN model checker (tools/model/check.sh; CTest model.park; make model).
 *
 * Owns: the model of src/runtime/runtime.c worker_park(), src/runtime/thread.c jf_worker_kick() (as
 * after_enqueue() calls it), src/runtime/timer.c timer_armed_kick() and src/runtime/net/netpoll.c's
 * parked poller (jf_netpoll_park/jf_netpoll_break), and the property they must keep: when nothing
 * more can happen, no work waits on a sleeping worker and every timer has fired (the watchdog
 * below, which SPIN runs only when every other process is blocked: "timeout").
 *
 * Memory model. SPIN interleaves statements under sequential consistency. The code this models
 * orders each handshake's store and load with a full fence on both sides (a seq_cst RMW or
 * jf_smp_mb(): "store my word; fence; load the other's"), and under x86-TSO a fenced store/load
 * pair behaves as under SC; the model therefore keeps only the fenced accesses, in program order.
 * The unfenced fast-path reads (jf_worker_kick's first load, nr_parked in after_enqueue) are
 * modelled as reading the current value after the fence, which is what the fence guarantees.
 *
 * What is abstracted: work is a count per worker (the policy's queue; fifo's inbox); a producer
 * stands for a uthread on a busy worker that makes work runnable for worker i (enqueue, fence,
 * kick); a timer is armed by a uthread on a busy worker that will not look at its heap, so only
 * the modelled workers can fire it, after a park with a deadline ends (the deadline passed). A
 * futex wait may also end spuriously (EINTR) and a poller may be any idle worker.
 *
 * Mutations (spin -DNAME; tools/model/check.sh runs each and expects SPIN to find the lost
 * wakeup, so the check is shown able to fail):
 *   CHECK_BEFORE_PUBLISH  the parker looks for work before it publishes PARKED
 *   NO_TIMER_KICK         jf_timer_arm() tells no parked worker (the bug the 10 ms bound hid)
 *   EVFD_SHARED           the parked poller's eventfd in the epoll set busy pollers also poll
 *                         (the other bug the bound hid: core.parkwake's epoll mode)
 *   NO_SLOT_RECHECK       a worker that becomes the parked poller does not look at its own
 *                         park_state first: a kick whose eventfd write the previous poller
 *                         read is lost (found by SPIN in this model; fixed in netpoll.c)
 */

#ifndef NETPOLL
#define NETPOLL 0   /* 1: uthreads wait on descriptors, an idle worker parks in epoll */
#endif
#define NW 2        /* workers */
#ifndef ITEMS
#define ITEMS 1     /* work items made runnable for each worker */
#endif
#ifndef TIMERS
#define TIMERS 1    /* timers armed on a busy worker */
#endif
#define BUSYPOLLS 1 /* non-blocking polls by busy workers */

mtype = { RUNNING, PARKED, PARKED_POLL };

mtype park_state[NW];  /* the futex word */
byte queue[NW];        /* runnable work for worker i */
byte done;             /* work consumed */
bool asleep[NW];       /* queued on its futex (FUTEX_WAIT) */
byte until[NW];        /* park_until: 0 deciding, 1 a deadline (a timer is due), 2 none */
byte nr_parked;
byte timers;           /* armed, not fired */
bool poller_parked;    /* jf__net_poller_parked */
byte evfd;             /* the eventfd's counter (level: readable while > 0) */
bool evfd_edge;        /* EVFD_SHARED: an edge not yet harvested by any epoll_wait */
bool netpoll;          /* uthreads wait on descriptors: parkers may park in epoll */
#ifndef SPURIOUS
#define SPURIOUS 1
#endif
byte spurious = SPURIOUS; /* futex waits that may end for no reason (a signal: EINTR) */

inline futex_wake(k) {
	asleep[k] = false
}

/* jf_worker_kick(): a load, then the exchange; FUTEX_WAKE or jf_netpoll_break() by what it was */
inline kick(k) {
	mtype old;
	if
	:: park_state[k] == RUNNING -> skip
	:: else ->
		atomic { old = park_state[k]; park_state[k] = RUNNING };
		if
		:: old == PARKED -> futex_wake(k)
		:: old == PARKED_POLL ->
#ifdef EVFD_SHARED
			atomic { evfd++; evfd_edge = true }
#else
			evfd++
#endif
		:: else -> skip
		fi
	fi
}

/* A uthread on a busy worker makes ITEMS pieces of work runnable for worker i (after_enqueue). */
proctype producer(byte i) {
	byte n = 0;
	do
	:: n < ITEMS ->
		queue[i]++;     /* the policy's enqueue (fifo: inbox push, a locked CAS) */
		                /* jf_smp_mb() */
		kick(i);
		n++
	:: else -> break
	od
}

/* A uthread on a busy worker arms a timer that becomes its heap's earliest (timer_armed_kick). */
proctype armer() {
	byte n = 0, k;
	bool covered;
	do
	:: n < TIMERS ->
		timers++;       /* publish_min() under the heap lock */
#ifndef NO_TIMER_KICK
		                /* jf_smp_mb() */
		if
		:: nr_parked > 0 ->
			covered = false;
			k = 0;
			do
			:: k < NW ->
				if
				:: park_state[k] != RUNNING && until[k] == 1 -> covered = true
				:: else -> skip
				fi;
				k++
			:: else -> break
			od;
			if
			:: !covered ->
				/* the first parked worker, if any is still parked */
				if
				:: park_state[0] != RUNNING -> kick(0)
				:: park_state[0] == RUNNING && park_state[1] != RUNNING -> kick(1)
				:: else -> skip
				fi
			:: else -> skip
			fi
		:: else -> skip
		fi;
#endif
		n++
	:: else -> break
	od
}

/* A worker polling the epoll set without blocking (jf_netpoll_poll on a busy or spinning one). */
proctype busy_poller() {
	byte n = 0;
	do
	:: n < BUSYPOLLS ->
#ifdef EVFD_SHARED
		atomic { evfd_edge = false }; /* it harvests the eventfd's edge, then reads it */
		atomic { evfd = 0 };
#endif
		n++
	:: else -> break
	od
}

proctype worker(byte i) {
	bool poll, deadline;
	do
	:: atomic { queue[i] > 0 -> queue[i]--; done++ }     /* run it */
	:: queue[i] == 0 ->
		/* worker_idle(): an idle worker fires the due timers of every worker. A timer is
		 * due only after some park with a deadline ended (below: timers_due). */
		skip;
park:
#ifdef CHECK_BEFORE_PUBLISH
		if
		:: queue[i] > 0 -> goto cont  /* looked for work before publishing PARKED */
		:: else -> skip
		fi;
#endif
		poll = netpoll;
		until[i] = 0;
		park_state[i] = (poll -> PARKED_POLL : PARKED);
		nr_parked++;
		                /* jf_smp_mb() */
		deadline = (timers > 0);
		until[i] = (deadline -> 1 : 2);
#ifndef CHECK_BEFORE_PUBLISH
		if
		:: queue[i] > 0 -> goto out   /* has_work(), after the fence */
		:: else -> skip
		fi;
#endif
		if
		:: poll ->
			if
			:: atomic { !poller_parked -> poller_parked = true } ->
#ifndef NO_SLOT_RECHECK
				/* kicked before it took the slot: the kick's eventfd write may have been
				 * read by the poller before it (SPIN found this one) */
				if
				:: park_state[i] != PARKED_POLL -> poller_parked = false; goto out
				:: else -> skip
				fi;
#endif
				/* jf_netpoll_park(): epoll_wait on np_park_epfd (the eventfd only) */
end_epoll:			if
#ifdef EVFD_SHARED
				:: atomic { evfd_edge -> evfd_edge = false; evfd = 0 }
#else
				:: atomic { evfd > 0 -> evfd = 0 }
#endif
				:: deadline -> poller_parked = false; goto fire /* the timeout */
				fi;
				poller_parked = false;
				goto out
			:: else ->
				/* another worker is the poller: CAS PARKED_POLL -> PARKED */
				if
				:: atomic { park_state[i] == PARKED_POLL -> park_state[i] = PARKED }
				:: else -> goto out
				fi
			fi
		:: else -> skip
		fi;
		/* FUTEX_WAIT: sleeps only if the word is still PARKED, atomically */
		if
		:: atomic { park_state[i] == PARKED -> asleep[i] = true }
		:: else -> goto out
		fi;
end_futex:
		if
		:: !asleep[i] -> skip                          /* FUTEX_WAKE */
		:: deadline -> asleep[i] = false; goto fire    /* the timeout */
		:: atomic { spurious > 0 -> spurious--; asleep[i] = false } /* EINTR */
		fi;
		goto out;
fire:
		park_state[i] = RUNNING;
		nr_parked--;
		/* the deadline passed: worker_idle() fires every due timer; what it wakes is queued
		 * on this worker (the sleeper's worker may be the busy one: then the busy worker
		 * runs it later, which this model does not need to show) */
		atomic {
			if
			:: timers > 0 -> timers--
			:: else -> skip
			fi
		};
		goto cont;
out:
		park_state[i] = RUNNING;
		nr_parked--;
cont:
		skip
	od
}

/* Runs only when nothing else can move: then no work may wait and no timer may be pending. */
active proctype watchdog() {
	timeout ->
	assert(queue[0] == 0 && queue[1] == 0 && timers == 0 && done == NW * ITEMS)
}

init {
	atomic {
		park_state[0] = RUNNING;
		park_state[1] = RUNNING;
		until[0] = 2;
		until[1] = 2;
		netpoll = NETPOLL;
		run worker(0);
		run worker(1);
		run producer(0);
		run producer(1);
		if
		:: TIMERS > 0 -> run armer()
		:: else -> skip
		fi;
#ifdef EVFD_SHARED
		run busy_poller()
#else
		skip /* without the mutation a busy poll cannot touch the parked poller's eventfd */
#endif
	}
}
