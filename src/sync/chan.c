/*
 * chan.c - jf_chan_t: channels between uthreads, and jf_chan_select() over several of them.
 *
 * Owns: the channel protocol. A channel is a spinlock (c->lock) protecting a ring buffer and two
 * queues of waiting operations (sendq, recvq). A waiting operation is a struct chan_sudog (Go's
 * sudog) on its uthread's stack; it belongs to a struct chan_sel, one per waiting call, whose
 * @done word decides who completes the call:
 *   0               still waiting;
 *   i + 1           arm i was completed by a partner (a sender, receiver or closer), which
 *                   claimed @done with a compare-and-swap and then did the whole operation;
 *   SEL_OVER        the call gave up (timeout, jf_cancel(), or select's retry, below).
 * A partner completes a waiting operation only after winning that CAS, so a value is copied into
 * (or out of) a waiter exactly once, and a waiter that timed out or was cancelled, or a select arm
 * that lost, can never be completed later: its @done is no longer 0.
 *
 * Queues may hold stale sudogs (their @done already taken). Rule: whoever claims a call through
 * sudog s dequeues s (under its channel's lock); every other sudog of the call is dequeued by its
 * owner after it woke (or by its on_timeout callback). So a sudog stays queued, and its channel
 * busy for jf_chan_destroy(), until no one will touch it again.
 *
 * Lock order. A single operation (send, recv, *_until) holds its channel's lock while it checks,
 * queues itself and blocks: jf_block_wait() releases that lock once the uthread is marked
 * blocked, so a partner that finds it under the same lock may wake it at once. A select over
 * several channels locks each channel alone, never two at once (no address ordering): it queues
 * its arms one channel at a time while holding its own park lock (sel->lock), and blocks
 * releasing that. A partner that claimed a select releases the channel lock, then takes and drops
 * the select's park lock (waiting, if the select is still queueing arms, until it has blocked)
 * before waking it. Order: sel->lock -> c->lock, and nobody takes a sel->lock while holding a
 * channel lock. The price of locking one channel at a time: between the first pass (try every
 * arm) and the second (queue every arm) an arm may become ready; the second pass re-checks each
 * channel under its lock and, if one is ready, takes its own @done (SEL_OVER), unqueues and starts
 * again, or, if a partner already took @done, blocks for the wake-up that partner is about to
 * send. Go instead locks every channel of a select in address order; one lock at a time keeps
 * select's critical sections short and independent of the number of arms.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/chan.h>

#include "../common/dlist.h"
#include "waitq.h"

#define SEL_OVER UINT32_MAX

struct chan_sel {
	uint32_t done;  /* 0, arm + 1, or SEL_OVER (above) */
	uint32_t lock;  /* a select's park lock (held while it queues its arms) */
	uint32_t *park; /* the lock its jf_block_wait() releases: a channel's, or &lock */
	struct jf_thread *t;
};

struct chan_sudog {
	struct chan_sudog *prev, *next; /* in its channel's queue; @next also links close()'s list */
	struct chan_sel *sel;
	jf_chan_t *c; /* the channel it is queued on (NULL: never queued) */
	void *elem;   /* send: the value; recv: where it goes */
	uint32_t idx; /* its arm */
	int op;
	int result;   /* written by the partner that completed it */
};

struct chan_q {
	struct chan_sudog *head, *tail;
};

struct jf_chan {
	uint32_t lock;
	bool closed;
	size_t elem_size;
	size_t cap;   /* 0 unbuffered, JF_CHAN_UNBOUNDED */
	size_t slots; /* the ring's size in elements */
	size_t head;  /* the oldest element's slot */
	size_t count; /* buffered elements */
	unsigned char *buf;
	struct chan_q sendq, recvq;
};

/* --- queues and the buffer (all under c->lock) --------------------------------------------- */

static void q_push(struct chan_q *q, struct chan_sudog *sd)
{
	JF_DLIST_PUSH_TAIL(q, sd);
}

static void q_unlink(struct chan_q *q, struct chan_sudog *sd)
{
	JF_DLIST_REMOVE(q, sd);
}

static struct chan_q *q_of(jf_chan_t *c, int op)
{
	return op == JF_CHAN_OP_SEND ? &c->sendq : &c->recvq;
}

/* Claim the oldest waiting call in @q that is not @self's and dequeue its sudog. Stale sudogs
 * (calls already over or completed through another arm) are passed over: their owners remove
 * them. */
static struct chan_sudog *q_claim(struct chan_q *q, const struct chan_sel *self)
{
	for (struct chan_sudog *sd = q->head; sd; sd = sd->next) {
		uint32_t expected = 0;
		if (sd->sel == self)
			continue;
		if (__atomic_compare_exchange_n(&sd->sel->done, &expected, sd->idx + 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			q_unlink(q, sd);
			return sd;
		}
	}
	return NULL;
}

/* Is a call that @self could complete with waiting in @q? (A snapshot: it may be claimed at
 * once by someone else, which only costs select a retry.) */
static bool q_live(const struct chan_q *q, const struct chan_sel *self)
{
	for (const struct chan_sudog *sd = q->head; sd; sd = sd->next)
		if (sd->sel != self && __atomic_load_n(&sd->sel->done, __ATOMIC_ACQUIRE) == 0)
			return true;
	return false;
}

static unsigned char *slot(jf_chan_t *c, size_t i)
{
	return c->buf + ((c->head + i) % c->slots) * c->elem_size;
}

/* An unbounded channel's ring is full: double it. Return: false if out of memory. */
static bool buf_grow(jf_chan_t *c)
{
	size_t n = c->slots ? c->slots * 2 : 16;
	unsigned char *b;

	if (n < c->slots || n > SIZE_MAX / c->elem_size)
		return false;
	b = malloc(n * c->elem_size);
	if (!b)
		return false;
	for (size_t i = 0; i < c->count; i++)
		memcpy(b + i * c->elem_size, slot(c, i), c->elem_size);
	free(c->buf);
	c->buf = b;
	c->slots = n;
	c->head = 0;
	return true;
}

static void buf_push(jf_chan_t *c, const void *elem)
{
	memcpy(slot(c, c->count), elem, c->elem_size);
	__atomic_store_n(&c->count, c->count + 1, __ATOMIC_RELAXED); /* jf_chan_len() reads it */
}

static void buf_pop(jf_chan_t *c, void *elem)
{
	memcpy(elem, slot(c, 0), c->elem_size);
	c->head = (c->head + 1) % c->slots;
	__atomic_store_n(&c->count, c->count - 1, __ATOMIC_RELAXED);
}

/* --- completing an operation now (under c->lock) ------------------------------------------ */

/*
 * Send *@elem on @c now if it needs no wait, for a call that is @self (NULL: not queued
 * anywhere). Return: true when the send completed (*@res: 0, -EPIPE, -ENOMEM), with *@wake the
 * partner to wake once c->lock is released (or NULL).
 */
static bool send_now(jf_chan_t *c, const void *elem, const struct chan_sel *self, int *res,
		     struct chan_sudog **wake)
{
	struct chan_sudog *sd;

	if (c->closed) {
		*res = -EPIPE;
		return true;
	}
	sd = q_claim(&c->recvq, self); /* a receiver waits only while the buffer is empty */
	if (sd) {
		memcpy(sd->elem, elem, c->elem_size);
		sd->result = 0;
		*wake = sd;
		*res = 0;
		return true;
	}
	if (c->count < c->cap) {
		if (c->count == c->slots && !buf_grow(c)) {
			*res = -ENOMEM;
			return true;
		}
		buf_push(c, elem);
		*res = 0;
		return true;
	}
	return false;
}

/* Receive from @c into *@elem now if a value is there (as send_now()). */
static bool recv_now(jf_chan_t *c, void *elem, const struct chan_sel *self, int *res,
		     struct chan_sudog **wake)
{
	struct chan_sudog *sd;

	if (c->count > 0) {
		buf_pop(c, elem);
		/* a sender waits only while the buffer is full: its value takes the freed slot */
		sd = q_claim(&c->sendq, self);
		if (sd) {
			buf_push(c, sd->elem);
			sd->result = 0;
			*wake = sd;
		}
		*res = 0;
		return true;
	}
	sd = q_claim(&c->sendq, self); /* unbuffered: take the value from the sender */
	if (sd) {
		memcpy(elem, sd->elem, c->elem_size);
		sd->result = 0;
		*wake = sd;
		*res = 0;
		return true;
	}
	if (c->closed) {
		*res = -EPIPE;
		return true;
	}
	return false;
}

static bool op_now(jf_chan_t *c, int op, void *elem, const struct chan_sel *self, int *res,
		   struct chan_sudog **wake)
{
	return op == JF_CHAN_OP_SEND ? send_now(c, elem, self, res, wake)
				     : recv_now(c, elem, self, res, wake);
}

/* Could @op complete on @c now (for select's second pass)? */
static bool op_ready(jf_chan_t *c, int op, const struct chan_sel *self)
{
	if (op == JF_CHAN_OP_SEND)
		return c->closed || c->count < c->cap || q_live(&c->recvq, self);
	return c->count > 0 || c->closed || q_live(&c->sendq, self);
}

/* Wake the call @sd belongs to, which the caller claimed (no channel lock held). */
static void sudog_wake(struct worker *w, struct chan_sudog *sd)
{
	struct chan_sel *s = sd->sel;
	struct jf_thread *t = s->t;

	if (s->park == &s->lock) {
		/* a select: wait until it released its park lock, i.e. has blocked */
		jf_spin_lock(&s->lock);
		jf_spin_unlock(&s->lock);
	}
	jf_sched_make_runnable(w, t, JF_ENQ_WOKEN);
}

/* --- waiting ------------------------------------------------------------------------------ */

/* The arms of a waiting call, for its on_timeout callback and its clean-up. */
struct sel_wait {
	struct chan_sel *sel;
	struct chan_sudog *sds;
	size_t n;
};

/* Dequeue every queued sudog of @sw but arm @except (each channel locked alone). */
static void sel_unlink(struct sel_wait *sw, size_t except)
{
	for (size_t i = 0; i < sw->n; i++) {
		struct chan_sudog *sd = &sw->sds[i];
		if (!sd->c || i == except)
			continue;
		jf_spin_lock(&sd->c->lock);
		q_unlink(q_of(sd->c, sd->op), sd);
		jf_spin_unlock(&sd->c->lock);
		sd->c = NULL;
	}
}

/* jf_block_wait()'s on_timeout: end the call unless a partner completed it first. */
static bool sel_over(void *arg)
{
	struct sel_wait *sw = arg;
	uint32_t expected = 0;

	if (!__atomic_compare_exchange_n(&sw->sel->done, &expected, SEL_OVER, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return false;
	sel_unlink(sw, SIZE_MAX);
	return true;
}

static bool deadline_passed(uint64_t deadline)
{
	return deadline != UINT64_MAX && jf_now_ns() >= deadline;
}

/* One send or receive that may wait until @deadline (0: must not wait). */
static int chan_op(jf_chan_t *c, int op, void *elem, uint64_t deadline, const char *fn)
{
	struct jf_thread *cur = sync_current(fn);
	struct chan_sel sel = {.t = cur};
	struct chan_sudog sd = {.sel = &sel, .elem = elem, .op = op};
	struct sel_wait sw = {&sel, &sd, 1};
	struct chan_sudog *wake = NULL;
	int res;

	if (!c || !elem)
		return -EINVAL;
	if (deadline && jf_cancel_due(cur))
		return -ECANCELED;
	jf_spin_lock(&c->lock);
	if (op_now(c, op, elem, NULL, &res, &wake)) {
		jf_spin_unlock(&c->lock);
		if (wake)
			sudog_wake(cur->worker, wake);
		return res;
	}
	if (deadline == 0 || deadline_passed(deadline)) {
		jf_spin_unlock(&c->lock);
		return deadline == 0 ? -EAGAIN : -ETIMEDOUT;
	}
	sel.park = &c->lock;
	sd.c = c;
	q_push(q_of(c, op), &sd);
	jf_wait_note(cur, op == JF_CHAN_OP_SEND ? "chan send" : "chan recv", c);
	res = jf_block_wait(&c->lock, deadline, sel_over, &sw);
	/* 0: the partner that claimed us dequeued sd and set its result; else sel_over did */
	return res ? res : sd.result;
}

/* A small xorshift per kernel thread for select's random start (quality is not critical). */
static __attribute__((noinline)) uint32_t chan_rand(void)
{
	static _Thread_local uint64_t x;
	if (!x)
		x = (uint64_t)(uintptr_t)&x ^ jf_now_ns() ^ 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (uint32_t)(x >> 32);
}

static int chan_select(struct jf_chan_op *ops, size_t nops, uint64_t deadline)
{
	struct jf_thread *cur = sync_current("jf_chan_select");
	struct chan_sudog local[8], *sds = local;
	struct chan_sel sel = {.t = cur};
	struct sel_wait sw = {&sel, NULL, 0}; /* no arm queued until the second pass */
	size_t active = 0, last = 0, start;
	int r;

	if (!ops && nops)
		return -EINVAL;
	if (nops > JF_CHAN_SELECT_MAX)
		return -EINVAL;
	for (size_t i = 0; i < nops; i++) {
		if (!ops[i].chan)
			continue;
		if ((ops[i].op != JF_CHAN_OP_SEND && ops[i].op != JF_CHAN_OP_RECV) || !ops[i].elem)
			return -EINVAL;
		active++;
		last = i;
	}
	if (active == 0) {
		/* only nil channels: nothing can complete, only the deadline ends it */
		if (deadline == UINT64_MAX)
			return -EINVAL;
		if (deadline == 0)
			return -EAGAIN;
		if (jf_cancel_due(cur))
			return -ECANCELED;
		if (!deadline_passed(deadline)) {
			jf_wait_note(cur, "chan select", NULL);
			r = jf_block_wait(NULL, deadline, sel_over, &sw);
			if (r == -ECANCELED)
				return r;
		}
		return -ETIMEDOUT;
	}
	if (active == 1) {
		r = chan_op(ops[last].chan, ops[last].op, ops[last].elem, deadline,
			    "jf_chan_select");
		if (r == -EAGAIN || r == -ETIMEDOUT || r == -ECANCELED)
			return r;
		ops[last].result = r;
		return (int)last;
	}
	if (deadline && jf_cancel_due(cur))
		return -ECANCELED;
	if (nops > sizeof(local) / sizeof(local[0])) {
		sds = malloc(nops * sizeof(*sds));
		if (!sds)
			return -ENOMEM;
	}
	sw.sds = sds;
	sw.n = nops;
	start = chan_rand() % nops;
	for (;;) {
		bool ready = false;
		size_t k, i;

		/* First pass: complete the first ready arm from a random start, queued nowhere. */
		for (k = 0; k < nops; k++) {
			struct chan_sudog *wake = NULL;
			jf_chan_t *c;

			i = (start + k) % nops;
			c = ops[i].chan;
			if (!c)
				continue;
			jf_spin_lock(&c->lock);
			if (op_now(c, ops[i].op, ops[i].elem, NULL, &ops[i].result, &wake)) {
				jf_spin_unlock(&c->lock);
				if (wake)
					sudog_wake(cur->worker, wake);
				r = (int)i;
				goto out;
			}
			jf_spin_unlock(&c->lock);
		}
		if (deadline == 0 || deadline_passed(deadline)) {
			r = deadline == 0 ? -EAGAIN : -ETIMEDOUT;
			goto out;
		}

		/* Second pass: queue an arm on every channel, re-checking each under its lock. */
		__atomic_store_n(&sel.done, 0, __ATOMIC_RELAXED);
		sel.park = &sel.lock;
		jf_spin_lock(&sel.lock);
		for (i = 0; i < nops; i++) {
			sds[i] = (struct chan_sudog){.sel = &sel, .elem = ops[i].elem,
						     .idx = (uint32_t)i, .op = ops[i].op};
		}
		for (k = 0; k < nops && !ready; k++) {
			jf_chan_t *c;

			i = (start + k) % nops;
			c = ops[i].chan;
			if (!c)
				continue;
			if (__atomic_load_n(&sel.done, __ATOMIC_RELAXED))
				break; /* a partner completed an arm already queued */
			jf_spin_lock(&c->lock);
			ready = op_ready(c, ops[i].op, &sel);
			if (!ready) {
				sds[i].c = c;
				q_push(q_of(c, ops[i].op), &sds[i]);
			}
			jf_spin_unlock(&c->lock);
		}
		if (ready) {
			uint32_t expected = 0;
			if (__atomic_compare_exchange_n(&sel.done, &expected, SEL_OVER, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				/* nobody can complete an arm now: unqueue and start again */
				jf_spin_unlock(&sel.lock);
				sel_unlink(&sw, SIZE_MAX);
				continue;
			}
		}
		jf_wait_note(cur, "chan select", ops);
		/* Already completed by a partner: it is waiting for us to block, then wakes us. */
		r = jf_block_wait(&sel.lock,
				  __atomic_load_n(&sel.done, __ATOMIC_ACQUIRE) ? UINT64_MAX : deadline,
				  sel_over, &sw);
		if (r == 0) {
			uint32_t won = __atomic_load_n(&sel.done, __ATOMIC_ACQUIRE) - 1;
			sel_unlink(&sw, won);
			ops[won].result = sds[won].result;
			r = (int)won;
		}
		goto out;
	}
out:
	if (sds != local)
		free(sds);
	return r;
}

/* --- the API ------------------------------------------------------------------------------ */

int jf_chan_create(jf_chan_t **out, size_t elem_size, size_t capacity)
{
	jf_chan_t *c;

	if (!out || elem_size == 0 || elem_size > JF_CHAN_ELEM_MAX)
		return -EINVAL;
	if (capacity != JF_CHAN_UNBOUNDED && capacity > SIZE_MAX / elem_size)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->elem_size = elem_size;
	c->cap = capacity;
	if (capacity && capacity != JF_CHAN_UNBOUNDED) {
		c->buf = malloc(capacity * elem_size);
		if (!c->buf) {
			free(c);
			return -ENOMEM;
		}
		c->slots = capacity;
	}
	*out = c;
	return 0;
}

int jf_chan_destroy(jf_chan_t *c)
{
	bool busy;

	if (!c)
		return 0;
	jf_spin_lock(&c->lock);
	busy = c->sendq.head || c->recvq.head;
	jf_spin_unlock(&c->lock);
	if (busy)
		return -EBUSY;
	free(c->buf);
	free(c);
	return 0;
}

size_t jf_chan_len(jf_chan_t *c)
{
	return c ? __atomic_load_n(&c->count, __ATOMIC_RELAXED) : 0;
}

static int jf_chan_close_in_runtime(jf_chan_t *c)
{
	struct jf_thread *cur = jf_current();
	struct chan_sudog *list = NULL, *sd;

	if (!c)
		return -EINVAL;
	if (!cur)
		return -EPERM;
	jf_spin_lock(&c->lock);
	if (c->closed) {
		jf_spin_unlock(&c->lock);
		return -EPIPE;
	}
	c->closed = true;
	/* every call still waiting: receivers (the buffer is empty) and senders fail with -EPIPE */
	while ((sd = q_claim(&c->recvq, NULL)) || (sd = q_claim(&c->sendq, NULL))) {
		sd->result = -EPIPE;
		sd->next = list;
		list = sd;
	}
	jf_spin_unlock(&c->lock);
	while (list) {
		sd = list;
		list = sd->next;
		sudog_wake(cur->worker, sd);
	}
	return 0;
}

static int chan_try(jf_chan_t *c, int op, void *elem)
{
	if (!jf_current())
		return -EPERM;
	return chan_op(c, op, elem, 0, "jf_chan_try");
}

int jf_chan_send(jf_chan_t *c, const void *elem)
{
	return JF_IN_RUNTIME(
		chan_op(c, JF_CHAN_OP_SEND, (void *)(uintptr_t)elem, UINT64_MAX, "jf_chan_send"));
}

int jf_chan_send_until(jf_chan_t *c, const void *elem, uint64_t deadline_ns)
{
	int r;

	JF_RUNTIME_ENTER();
	/* deadline 0 is a time long past, not "do not wait" (that is trysend) */
	r = chan_op(c, JF_CHAN_OP_SEND, (void *)(uintptr_t)elem, deadline_ns ? deadline_ns : 1,
		    "jf_chan_send_until");
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_chan_trysend(jf_chan_t *c, const void *elem)
{
	return JF_IN_RUNTIME(chan_try(c, JF_CHAN_OP_SEND, (void *)(uintptr_t)elem));
}

int jf_chan_recv(jf_chan_t *c, void *elem)
{
	return JF_IN_RUNTIME(chan_op(c, JF_CHAN_OP_RECV, elem, UINT64_MAX, "jf_chan_recv"));
}

int jf_chan_recv_until(jf_chan_t *c, void *elem, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(
		chan_op(c, JF_CHAN_OP_RECV, elem, deadline_ns ? deadline_ns : 1, "jf_chan_recv_until"));
}

int jf_chan_tryrecv(jf_chan_t *c, void *elem)
{
	return JF_IN_RUNTIME(chan_try(c, JF_CHAN_OP_RECV, elem));
}

int jf_chan_close(jf_chan_t *c)
{
	return JF_IN_RUNTIME(jf_chan_close_in_runtime(c));
}

int jf_chan_select(struct jf_chan_op *ops, size_t nops, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(chan_select(ops, nops, deadline_ns));
}
