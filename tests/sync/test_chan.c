/*
 * sync/test_chan.c - proves jf_chan_t and jf_chan_select() (jiffy/chan.h).
 *
 * Semantics, once on 2 workers: argument errors; an unbuffered channel is a rendezvous (nothing is
 * buffered, a timed-out send is never received); a bounded channel fills and empties in FIFO
 * order and a blocked sender goes on when a slot frees; an unbounded one grows; close: buffered
 * values drain, then -EPIPE, blocked senders and receivers wake with -EPIPE, a second close is
 * -EPIPE; destroy is -EBUSY while a uthread waits; jf_cancel() ends a wait with -ECANCELED;
 * waiting senders are served FIFO; select polls (-EAGAIN), times out (not before its deadline),
 * completes only the chosen arm (the other arms' buffers are untouched and their values not
 * sent), chooses fairly between two ready arms, treats NULL channels as never ready, rejects bad
 * arms, works with 20 arms (allocated) and with two arms on one channel, pairs with another
 * waiting select, and is cancellable; try and close return -EPERM outside a uthread, and the
 * blocking calls there end the process naming the function (checked in a child).
 *
 * Then a storm in every cell of tests/sync/matrix.h (policy x none/timer/deadline) on 2 workers:
 * producers send unique values on an unbuffered, a bounded, an unbounded channel and a bounded
 * one that is closed mid-storm, by send, send_until with short deadlines, trysend and select
 * with a deadline; consumers receive by recv_until, tryrecv and select; a hybrid selects over a
 * send and a receive arm at once; victims (a producer and a consumer) are jf_cancel()ed while
 * they wait. Every value whose send reported success is
 * received exactly once, every value whose send failed (timeout, cancel, closed, would block, a
 * losing select arm) never, and the sums agree.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jiffy/chan.h>

#include "matrix.h"

#define MS 1000000ull

/* --- semantic cases ------------------------------------------------------------------------ */

struct rx {
	jf_chan_t *c;
	long v;
	int rc;
	uint64_t deadline;
};

static void *receiver(void *arg)
{
	struct rx *r = arg;
	r->rc = r->deadline ? jf_chan_recv_until(r->c, &r->v, r->deadline) : jf_chan_recv(r->c, &r->v);
	return NULL;
}

static void *sender(void *arg)
{
	struct rx *r = arg;
	r->rc = r->deadline ? jf_chan_send_until(r->c, &r->v, r->deadline) : jf_chan_send(r->c, &r->v);
	return NULL;
}

/* Let spawned uthreads reach their wait (they run on the other worker or after we sleep). */
static void settle(void)
{
	CHECK_EQ(jf_sleep_ns(2 * MS), 0);
}

static void test_errors(void)
{
	jf_chan_t *c;
	long v = 0;

	CHECK_EQ(jf_chan_create(NULL, 8, 1), -EINVAL);
	CHECK_EQ(jf_chan_create(&c, 0, 1), -EINVAL);
	CHECK_EQ(jf_chan_create(&c, JF_CHAN_ELEM_MAX + 1, 1), -EINVAL);
	CHECK_EQ(jf_chan_create(&c, 1024, SIZE_MAX / 2), -EINVAL);
	CHECK_EQ(jf_chan_send(NULL, &v), -EINVAL);
	CHECK_EQ(jf_chan_recv(NULL, &v), -EINVAL);
	CHECK_EQ(jf_chan_close(NULL), -EINVAL);
	CHECK_EQ(jf_chan_len(NULL), 0);
	CHECK_EQ(jf_chan_destroy(NULL), 0);
	CHECK_EQ(jf_chan_create(&c, sizeof(long), 1), 0);
	CHECK_EQ(jf_chan_send(c, NULL), -EINVAL);
	CHECK_EQ(jf_chan_recv(c, NULL), -EINVAL);
	CHECK_EQ(jf_chan_destroy(c), 0);
}

static void test_unbuffered(void)
{
	jf_chan_t *c;
	struct rx r = {0};
	long v = 42;
	jf_thread_t *t;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), 0), 0);
	CHECK_EQ(jf_chan_trysend(c, &v), -EAGAIN); /* nobody receiving */
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EAGAIN);
	CHECK_EQ(jf_chan_send_until(c, &v, jf_now_ns() + 1 * MS), -ETIMEDOUT);
	CHECK_EQ(jf_chan_send_until(c, &v, 0), -ETIMEDOUT); /* a deadline long past */
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EAGAIN);          /* the timed-out value is not there */
	CHECK_EQ(jf_chan_len(c), 0);

	/* a receiver waiting: the send hands the value over, nothing is buffered */
	r.c = c;
	t = jft_spawn_on(1, receiver, &r);
	settle();
	v = 7;
	CHECK_EQ(jf_chan_send(c, &v), 0);
	jft_join(t);
	CHECK_EQ(r.rc, 0);
	CHECK_EQ(r.v, 7);

	/* a sender waiting: trysend-free receive takes it directly */
	r.v = 9;
	t = jft_spawn_on(1, sender, &r);
	settle();
	CHECK_EQ(jf_chan_len(c), 0);
	CHECK_EQ(jf_chan_tryrecv(c, &v), 0);
	CHECK_EQ(v, 9);
	jft_join(t);
	CHECK_EQ(r.rc, 0);

	/* a receive that times out takes nothing: a later sender is not consumed by it */
	CHECK_EQ(jf_chan_recv_until(c, &v, jf_now_ns() + 1 * MS), -ETIMEDOUT);
	CHECK_EQ(jf_chan_trysend(c, &v), -EAGAIN);
	CHECK_EQ(jf_chan_destroy(c), 0);
}

static void test_bounded(void)
{
	jf_chan_t *c;
	struct rx r = {0};
	jf_thread_t *t;
	long v;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), 3), 0);
	for (v = 1; v <= 3; v++)
		CHECK_EQ(jf_chan_trysend(c, &v), 0);
	CHECK_EQ(jf_chan_len(c), 3);
	CHECK_EQ(jf_chan_trysend(c, &v), -EAGAIN);
	CHECK_EQ(jf_chan_send_until(c, &v, jf_now_ns() + 1 * MS), -ETIMEDOUT);
	CHECK_EQ(jf_chan_len(c), 3);

	/* a blocked sender goes on when a receive frees a slot; FIFO order is kept */
	r.c = c;
	r.v = 4;
	t = jft_spawn_on(1, sender, &r);
	settle();
	CHECK_EQ(jf_chan_len(c), 3);
	for (long want = 1; want <= 4; want++) {
		CHECK_EQ(jf_chan_recv(c, &v), 0);
		CHECK_EQ(v, want);
	}
	jft_join(t);
	CHECK_EQ(r.rc, 0);
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EAGAIN);
	CHECK_EQ(jf_chan_recv_until(c, &v, jf_now_ns() + 1 * MS), -ETIMEDOUT);
	/* wrap around the ring a few times */
	for (long i = 0; i < 50; i++) {
		CHECK_EQ(jf_chan_send(c, &i), 0);
		CHECK_EQ(jf_chan_send(c, &i), 0);
		CHECK_EQ(jf_chan_recv(c, &v), 0);
		CHECK_EQ(v, i);
		CHECK_EQ(jf_chan_recv(c, &v), 0);
		CHECK_EQ(v, i);
	}
	CHECK_EQ(jf_chan_destroy(c), 0);
}

static void test_unbounded(void)
{
	jf_chan_t *c;
	long v, n = 10000;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), JF_CHAN_UNBOUNDED), 0);
	for (v = 0; v < n / 2; v++)
		CHECK_EQ(jf_chan_trysend(c, &v), 0);
	for (long i = 0; i < n / 4; i++) { /* the ring's head moves before it grows */
		CHECK_EQ(jf_chan_recv(c, &v), 0);
		CHECK_EQ(v, i);
	}
	for (v = n / 2; v < n; v++)
		CHECK_EQ(jf_chan_send(c, &v), 0);
	CHECK_EQ(jf_chan_len(c), (size_t)(n - n / 4));
	for (long i = n / 4; i < n; i++) {
		CHECK_EQ(jf_chan_tryrecv(c, &v), 0);
		CHECK_EQ(v, i);
	}
	CHECK_EQ(jf_chan_len(c), 0);
	/* destroy frees what is still buffered (ASan would report a leak) */
	for (v = 0; v < 100; v++)
		CHECK_EQ(jf_chan_send(c, &v), 0);
	CHECK_EQ(jf_chan_destroy(c), 0);
}

static void test_close(void)
{
	jf_chan_t *c, *u;
	struct rx s[3] = {{0}}, r[2] = {{0}};
	jf_thread_t *t[5];
	long v;

	/* buffered values survive the close; then -EPIPE; sends fail; a second close fails */
	CHECK_EQ(jf_chan_create(&c, sizeof(long), 4), 0);
	for (v = 1; v <= 2; v++)
		CHECK_EQ(jf_chan_send(c, &v), 0);
	CHECK_EQ(jf_chan_close(c), 0);
	CHECK_EQ(jf_chan_close(c), -EPIPE);
	CHECK_EQ(jf_chan_send(c, &v), -EPIPE);
	CHECK_EQ(jf_chan_trysend(c, &v), -EPIPE);
	CHECK_EQ(jf_chan_recv(c, &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(jf_chan_tryrecv(c, &v), 0);
	CHECK_EQ(v, 2);
	v = -1;
	CHECK_EQ(jf_chan_recv(c, &v), -EPIPE);
	CHECK_EQ(v, -1); /* left unchanged */
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EPIPE);
	CHECK_EQ(jf_chan_recv_until(c, &v, jf_now_ns() + MS), -EPIPE);
	CHECK_EQ(jf_chan_destroy(c), 0);

	/* blocked senders and receivers wake with -EPIPE; no sender's value is delivered */
	CHECK_EQ(jf_chan_create(&u, sizeof(long), 0), 0);
	CHECK_EQ(jf_chan_create(&c, sizeof(long), 0), 0);
	for (int i = 0; i < 3; i++) {
		s[i] = (struct rx){.c = u, .v = 100 + i, .rc = 1};
		t[i] = jft_spawn_on(i % 2, sender, &s[i]);
	}
	for (int i = 0; i < 2; i++) {
		r[i] = (struct rx){.c = c, .v = -5, .rc = 1, .deadline = jf_now_ns() + 10000 * MS};
		t[3 + i] = jft_spawn_on(i % 2, receiver, &r[i]);
	}
	settle();
	CHECK_EQ(jf_chan_destroy(u), -EBUSY);
	CHECK_EQ(jf_chan_close(u), 0);
	CHECK_EQ(jf_chan_close(c), 0);
	for (int i = 0; i < 5; i++)
		jft_join(t[i]);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(s[i].rc, -EPIPE);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(r[i].rc, -EPIPE);
		CHECK_EQ(r[i].v, -5);
	}
	CHECK_EQ(jf_chan_recv(u, &v), -EPIPE);
	CHECK_EQ(jf_chan_destroy(u), 0);
	CHECK_EQ(jf_chan_destroy(c), 0);
}

static void test_destroy_busy_and_cancel(void)
{
	jf_chan_t *c;
	struct rx r = {0}, s = {0};
	jf_thread_t *t, *ts;
	long v = 5;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), 1), 0);
	r.c = c;
	t = jft_spawn_on(1, receiver, &r);
	settle();
	CHECK_EQ(jf_chan_destroy(c), -EBUSY); /* nothing freed: the receiver still gets a value */
	CHECK_EQ(jf_chan_send(c, &v), 0);
	jft_join(t);
	CHECK_EQ(r.rc, 0);
	CHECK_EQ(r.v, 5);

	/* jf_cancel() ends a receive and a send (on a full channel) with -ECANCELED, nothing moved */
	CHECK_EQ(jf_chan_send(c, &v), 0); /* full now */
	r = (struct rx){.c = c, .rc = 1};
	s = (struct rx){.c = c, .v = 77, .rc = 1};
	ts = jft_spawn_on(1, sender, &s);
	settle();
	CHECK_EQ(jf_cancel(ts), 0);
	jft_join(ts);
	CHECK_EQ(s.rc, -ECANCELED);
	CHECK_EQ(jf_chan_recv(c, &v), 0);
	CHECK_EQ(v, 5);
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EAGAIN); /* 77 was not delivered */
	t = jft_spawn_on(1, receiver, &r);
	settle();
	CHECK_EQ(jf_cancel(t), 0);
	jft_join(t);
	CHECK_EQ(r.rc, -ECANCELED);
	v = 6;
	CHECK_EQ(jf_chan_trysend(c, &v), 0); /* the cancelled receiver took nothing */
	CHECK_EQ(jf_chan_len(c), 1);
	CHECK_EQ(jf_chan_destroy(c), 0);
}

struct sel_arg {
	jf_chan_t *a, *b;
	long out[2];
	int rc;
	uint64_t deadline;
};

static void *selector(void *arg)
{
	struct sel_arg *s = arg;
	struct jf_chan_op ops[2] = {
		{s->a, JF_CHAN_OP_SEND, &s->out[0], 1},
		{s->b, JF_CHAN_OP_RECV, &s->out[1], 1},
	};
	s->rc = jf_chan_select(ops, 2, s->deadline);
	if (s->rc >= 0)
		CHECK_EQ(ops[s->rc].result, 0);
	CHECK_EQ(ops[s->rc == 0 ? 1 : 0].result, 1); /* only the chosen arm's result is written */
	return NULL;
}

static void test_select(void)
{
	jf_chan_t *a, *b, *u;
	long x = 1, y = 2, got[2] = {-1, -1};
	struct jf_chan_op ops[3];
	struct sel_arg sa;
	jf_thread_t *t;
	uint64_t t0, deadline;
	int n0 = 0, r;

	CHECK_EQ(jf_chan_create(&a, sizeof(long), 0), 0);
	CHECK_EQ(jf_chan_create(&b, sizeof(long), 16), 0);
	CHECK_EQ(jf_chan_create(&u, sizeof(long), JF_CHAN_UNBOUNDED), 0);

	/* bad arms */
	CHECK_EQ(jf_chan_select(NULL, 1, 0), -EINVAL);
	CHECK_EQ(jf_chan_select(NULL, 0, UINT64_MAX), -EINVAL);
	ops[0] = (struct jf_chan_op){a, 3, &x, 0};
	CHECK_EQ(jf_chan_select(ops, 1, 0), -EINVAL);
	ops[0] = (struct jf_chan_op){a, JF_CHAN_OP_RECV, NULL, 0};
	CHECK_EQ(jf_chan_select(ops, 1, 0), -EINVAL);
	ops[0] = (struct jf_chan_op){NULL, JF_CHAN_OP_RECV, &x, 0};
	ops[1] = (struct jf_chan_op){NULL, JF_CHAN_OP_SEND, &x, 0};
	CHECK_EQ(jf_chan_select(ops, 2, UINT64_MAX), -EINVAL); /* would never return */
	CHECK_EQ(jf_chan_select(ops, 2, 0), -EAGAIN);
	deadline = jf_now_ns() + MS;
	CHECK_EQ(jf_chan_select(ops, 2, deadline), -ETIMEDOUT);
	CHECK_GE(jf_now_ns(), deadline);
	CHECK_EQ(jf_chan_select(ops, JF_CHAN_SELECT_MAX + 1, 0), -EINVAL);

	/* poll and timeout with nothing ready; nothing is sent by the send arm */
	ops[0] = (struct jf_chan_op){a, JF_CHAN_OP_SEND, &x, 0};
	ops[1] = (struct jf_chan_op){b, JF_CHAN_OP_RECV, &got[1], 0};
	ops[2] = (struct jf_chan_op){NULL, JF_CHAN_OP_RECV, &got[0], 0};
	CHECK_EQ(jf_chan_select(ops, 3, 0), -EAGAIN);
	t0 = jf_now_ns();
	deadline = t0 + 2 * MS;
	CHECK_EQ(jf_chan_select(ops, 3, deadline), -ETIMEDOUT);
	CHECK_GE(jf_now_ns(), deadline);
	CHECK_EQ(jf_chan_tryrecv(a, &y), -EAGAIN);
	CHECK_EQ(jf_chan_len(b), 0);
	CHECK_EQ(got[1], -1);

	/* one arm ready: it is the one completed */
	CHECK_EQ(jf_chan_send(b, &y), 0);
	CHECK_EQ(jf_chan_select(ops, 3, UINT64_MAX), 1);
	CHECK_EQ(ops[1].result, 0);
	CHECK_EQ(got[1], 2);

	/* a waiting select completed by a partner through one arm; the other arm did nothing */
	sa = (struct sel_arg){.a = a, .b = b, .out = {11, -1}, .deadline = UINT64_MAX};
	t = jft_spawn_on(1, selector, &sa);
	settle();
	y = 12;
	CHECK_EQ(jf_chan_send(b, &y), 0);
	jft_join(t);
	CHECK_EQ(sa.rc, 1);
	CHECK_EQ(sa.out[1], 12);
	CHECK_EQ(jf_chan_tryrecv(a, &y), -EAGAIN); /* 11 was not sent */
	/* ... and through the send arm (unbuffered: handed straight to our receive) */
	sa = (struct sel_arg){.a = a, .b = b, .out = {13, -1}, .deadline = jf_now_ns() + 10000 * MS};
	t = jft_spawn_on(1, selector, &sa);
	settle();
	CHECK_EQ(jf_chan_recv(a, &y), 0);
	CHECK_EQ(y, 13);
	jft_join(t);
	CHECK_EQ(sa.rc, 0);
	CHECK_EQ(sa.out[1], -1);
	CHECK_EQ(jf_chan_len(b), 0);
	/* ... and a waiting select that times out moved nothing */
	sa = (struct sel_arg){.a = a, .b = b, .out = {14, -1}, .deadline = jf_now_ns() + MS};
	t = jft_spawn_on(1, selector, &sa);
	jft_join(t);
	CHECK_EQ(sa.rc, -ETIMEDOUT);
	CHECK_EQ(jf_chan_tryrecv(a, &y), -EAGAIN);
	CHECK_EQ(jf_chan_destroy(a), 0); /* nothing left queued by the select */

	/* fair choice between two always-ready arms */
	CHECK_EQ(jf_chan_create(&a, sizeof(long), 16), 0);
	for (int i = 0; i < 2000; i++) {
		x = 0;
		y = 1;
		CHECK_EQ(jf_chan_trysend(a, &x), 0);
		CHECK_EQ(jf_chan_trysend(u, &y), 0);
		ops[0] = (struct jf_chan_op){a, JF_CHAN_OP_RECV, &got[0], 0};
		ops[1] = (struct jf_chan_op){u, JF_CHAN_OP_RECV, &got[1], 0};
		r = jf_chan_select(ops, 2, 0);
		CHECK(r == 0 || r == 1);
		n0 += r == 0;
		CHECK_EQ(got[r], r);
		CHECK_EQ(jf_chan_recv(r == 0 ? u : a, &got[0]), 0); /* empty both again */
	}
	CHECK(n0 > 700 && n0 < 1300);

	/* a closed channel's arm completes with -EPIPE */
	CHECK_EQ(jf_chan_close(a), 0);
	ops[0] = (struct jf_chan_op){a, JF_CHAN_OP_RECV, &got[0], 1};
	ops[1] = (struct jf_chan_op){b, JF_CHAN_OP_RECV, &got[1], 1};
	CHECK_EQ(jf_chan_select(ops, 2, UINT64_MAX), 0);
	CHECK_EQ(ops[0].result, -EPIPE);
	ops[0].op = JF_CHAN_OP_SEND;
	CHECK_EQ(jf_chan_select(ops, 2, 0), 0);
	CHECK_EQ(ops[0].result, -EPIPE);

	/* cancelled before it waits */
	CHECK_EQ(jf_chan_destroy(a), 0);
	CHECK_EQ(jf_chan_destroy(b), 0);
	CHECK_EQ(jf_chan_destroy(u), 0);
}

static void *cancel_select(void *arg)
{
	jf_chan_t *c = arg;
	long v = 3, w;
	struct jf_chan_op ops[2] = {{c, JF_CHAN_OP_SEND, &v, 1}, {c, JF_CHAN_OP_RECV, &w, 1}};

	CHECK_EQ(jf_chan_select(ops, 2, UINT64_MAX), -ECANCELED);
	CHECK_EQ(jf_chan_select(ops, 2, UINT64_MAX), -ECANCELED); /* the request stays */
	CHECK_EQ(jf_chan_send(c, &v), -ECANCELED);
	CHECK_EQ(jf_chan_trysend(c, &v), -EAGAIN); /* a try never waits: not a cancellation point */
	return NULL;
}

static void test_select_cancel(void)
{
	jf_chan_t *c;
	jf_thread_t *t;
	long v;

	/* an unbuffered channel with a send and a receive arm of the same select: they never
	 * match each other, so it waits until cancelled */
	CHECK_EQ(jf_chan_create(&c, sizeof(long), 0), 0);
	t = jft_spawn_on(1, cancel_select, c);
	settle();
	CHECK_EQ(jf_cancel(t), 0);
	jft_join(t);
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EAGAIN);
	CHECK_EQ(jf_chan_destroy(c), 0);
}

/* Waiting senders are served in the order they queued (queued one at a time here). */
static void test_fifo_waiters(void)
{
	jf_chan_t *c;
	struct rx s[4];
	jf_thread_t *t[4];
	long v;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), 1), 0);
	v = 0;
	CHECK_EQ(jf_chan_send(c, &v), 0); /* full: the senders below wait */
	for (int i = 0; i < 4; i++) {
		s[i] = (struct rx){.c = c, .v = 1 + i, .rc = 1};
		t[i] = jft_spawn_on(i % 2, sender, &s[i]);
		settle();
	}
	for (long want = 0; want <= 4; want++) {
		CHECK_EQ(jf_chan_recv(c, &v), 0);
		CHECK_EQ(v, want);
	}
	for (int i = 0; i < 4; i++) {
		jft_join(t[i]);
		CHECK_EQ(s[i].rc, 0);
	}
	CHECK_EQ(jf_chan_destroy(c), 0);
}

struct many {
	jf_chan_t *c[20];
	long buf[20];
	int rc, result;
};

/* A 20-arm select (the allocated path) with NULL arms, waiting until one arm is completed. */
static void *many_selector(void *arg)
{
	struct many *m = arg;
	struct jf_chan_op ops[20];

	for (int i = 0; i < 20; i++)
		ops[i] = (struct jf_chan_op){m->c[i], i % 2 ? JF_CHAN_OP_SEND : JF_CHAN_OP_RECV,
					     &m->buf[i], 1};
	m->rc = jf_chan_select(ops, 20, jf_now_ns() + 10000 * MS);
	if (m->rc >= 0)
		m->result = ops[m->rc].result;
	return NULL;
}

static void test_select_many(void)
{
	struct many m;
	jf_thread_t *t;
	long v = 0;

	for (int i = 0; i < 20; i++) {
		m.c[i] = NULL;
		if (i % 3 != 2) /* every third arm is a NULL channel */
			CHECK_EQ(jf_chan_create(&m.c[i], sizeof(long), i % 2 ? 1 : 0), 0);
		m.buf[i] = 1000 + i;
	}
	/* the send arms' channels (capacity 1) are full, the receive arms' (unbuffered) empty */
	for (int i = 1; i < 20; i += 2)
		if (m.c[i])
			CHECK_EQ(jf_chan_trysend(m.c[i], &v), 0);
	t = jft_spawn_on(1, many_selector, &m);
	settle();
	/* free a slot in arm 13's channel: the waiting select's send moves into it */
	CHECK_EQ(jf_chan_recv(m.c[13], &v), 0);
	jft_join(t);
	CHECK_EQ(m.rc, 13);
	CHECK_EQ(m.result, 0);
	CHECK_EQ(jf_chan_len(m.c[13]), 1);
	CHECK_EQ(jf_chan_tryrecv(m.c[13], &v), 0);
	CHECK_EQ(v, 1013);
	for (int i = 0; i < 20; i++) {
		if (i != 13 && m.c[i])
			CHECK_EQ(jf_chan_len(m.c[i]), (size_t)(i % 2));
		if (i % 2 == 0)
			CHECK_EQ(m.buf[i], 1000 + i); /* no receive arm got anything */
		CHECK_EQ(jf_chan_destroy(m.c[i]), 0); /* nothing left queued */
	}
}

/* Two selects waiting on each other: a send arm of one meets a receive arm of the other. */
static void *pair_selector(void *arg)
{
	jf_chan_t **c = arg;
	long in = -1, out = 21;
	struct jf_chan_op ops[2] = {{c[0], JF_CHAN_OP_RECV, &in, 1},
				    {c[1], JF_CHAN_OP_SEND, &out, 1}};
	int r = jf_chan_select(ops, 2, UINT64_MAX);

	CHECK(r == 0 || r == 1);
	CHECK_EQ(ops[r].result, 0);
	return (void *)(intptr_t)(r == 0 ? in : 1000 + r);
}

static void test_select_pair(void)
{
	jf_chan_t *c[3];
	jf_thread_t *t;
	long a = 31, b = -1;
	int r;

	for (int i = 0; i < 3; i++)
		CHECK_EQ(jf_chan_create(&c[i], sizeof(long), 0), 0);
	t = jft_spawn_on(1, pair_selector, c);
	settle();
	{
		struct jf_chan_op ops[3] = {{c[0], JF_CHAN_OP_SEND, &a, 1},
					    {c[1], JF_CHAN_OP_RECV, &b, 1},
					    {c[2], JF_CHAN_OP_RECV, &b, 1}};
		r = jf_chan_select(ops, 3, UINT64_MAX);
		CHECK(r == 0 || r == 1);
		CHECK_EQ(ops[r].result, 0);
	}
	if (r == 0) {
		CHECK_EQ((intptr_t)jft_join(t), 31); /* it received our 31 */
		CHECK_EQ(b, -1);
	} else {
		CHECK_EQ((intptr_t)jft_join(t), 1001); /* it sent us 21 */
		CHECK_EQ(b, 21);
	}
	for (int i = 0; i < 3; i++)
		CHECK_EQ(jf_chan_destroy(c[i]), 0);
}

/* Two receive arms on the same channel: one value completes exactly one of them. */
static void *dup_selector(void *arg)
{
	jf_chan_t *c = arg;
	long in[2] = {-1, -1};
	struct jf_chan_op ops[2] = {{c, JF_CHAN_OP_RECV, &in[0], 1}, {c, JF_CHAN_OP_RECV, &in[1], 1}};
	int r = jf_chan_select(ops, 2, UINT64_MAX);

	CHECK(r == 0 || r == 1);
	CHECK_EQ(ops[r].result, 0);
	CHECK_EQ(ops[1 - r].result, 1);
	CHECK_EQ(in[1 - r], -1);
	return (void *)(intptr_t)in[r];
}

static void test_select_dup(void)
{
	jf_chan_t *c;
	jf_thread_t *t;
	long v = 55;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), 0), 0);
	t = jft_spawn_on(1, dup_selector, c);
	settle();
	CHECK_EQ(jf_chan_send(c, &v), 0);
	CHECK_EQ((intptr_t)jft_join(t), 55);
	CHECK_EQ(jf_chan_trysend(c, &v), -EAGAIN); /* the other arm is gone */
	CHECK_EQ(jf_chan_destroy(c), 0);
}

static void *semantics_main(void *arg)
{
	(void)arg;
	test_errors();
	test_unbuffered();
	test_bounded();
	test_unbounded();
	test_close();
	test_destroy_busy_and_cancel();
	test_select();
	test_select_cancel();
	test_fifo_waiters();
	test_select_many();
	test_select_pair();
	test_select_dup();
	return NULL;
}

static jf_chan_t *outside_chan;

static void outside_recv(void)
{
	long v;
	jf_chan_recv(outside_chan, &v);
}

static void outside_select(void)
{
	long v;
	struct jf_chan_op op = {outside_chan, JF_CHAN_OP_RECV, &v, 0};
	jf_chan_select(&op, 1, UINT64_MAX);
}

/* Run @fn in a child that must die with @msg on stderr (the "outside a uthread" convention). */
static void check_dies(void (*fn)(void), const char *msg)
{
	char err[4096];
	int pfd[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	CHECK_EQ(pipe(pfd), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0); /* it returned: the parent reports it */
	}
	close(pfd[1]);
	while ((n = read(pfd[0], err + got, sizeof(err) - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = '\0';
	close(pfd[0]);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
	CHECK_STR_CONTAINS(err, msg);
}

static void test_outside(void)
{
	jf_chan_t *c;
	long v = 1;

	CHECK_EQ(jf_chan_create(&c, sizeof(long), 2), 0);
	CHECK_EQ(jf_chan_trysend(c, &v), -EPERM);
	CHECK_EQ(jf_chan_tryrecv(c, &v), -EPERM);
	CHECK_EQ(jf_chan_close(c), -EPERM);
	CHECK_EQ(jf_chan_len(c), 0);
	outside_chan = c;
	check_dies(outside_recv, "jf_chan_recv() called outside a uthread");
	check_dies(outside_select, "jf_chan_select() called outside a uthread");
	CHECK_EQ(jf_chan_destroy(c), 0);
}

/* --- the storm ------------------------------------------------------------------------------ */

#define NPROD 4    /* regular producers */
#define NCONS 3    /* regular consumers */
#define NCHAN 4    /* unbuffered, bounded, unbounded, bounded closed mid-storm */
#define VICTIM_P NPROD       /* producer index of the victim */
#define HYBRID_P (NPROD + 1) /* sends and receives in the same selects */
#define ALLPROD (NPROD + 2)

enum { V_UNSENT = 0, V_SENT = 1, V_FAILED = 2 };

static long per_prod;
static jf_chan_t *chans[NCHAN];
static unsigned char *status[ALLPROD]; /* per value: V_* (written by its producer only) */
static atomic_uchar *seen[ALLPROD];    /* per value: times received */
static atomic_ulong sum_sent, sum_recv;
static atomic_long n_timeout, n_cancel, n_epipe, n_sel;

static long value_of(int p, long i)
{
	return ((long)p << 32) | i;
}

static void record_send(int p, long i, int rc)
{
	if (rc == 0) {
		status[p][i] = V_SENT;
		atomic_fetch_add_explicit(&sum_sent, (unsigned long)value_of(p, i),
					  memory_order_relaxed);
		return;
	}
	status[p][i] = V_FAILED;
	if (rc == -ETIMEDOUT)
		atomic_fetch_add_explicit(&n_timeout, 1, memory_order_relaxed);
	else if (rc == -ECANCELED)
		atomic_fetch_add_explicit(&n_cancel, 1, memory_order_relaxed);
	else if (rc == -EPIPE)
		atomic_fetch_add_explicit(&n_epipe, 1, memory_order_relaxed);
	else
		CHECK(rc == -EAGAIN);
}

static void record_recv(long v)
{
	int p = (int)(v >> 32);
	long i = v & 0xffffffffL;

	CHECK(p >= 0 && p < ALLPROD && i >= 0 && i < per_prod);
	CHECK_EQ(atomic_fetch_add_explicit(&seen[p][i], 1, memory_order_relaxed), 0);
	atomic_fetch_add_explicit(&sum_recv, (unsigned long)v, memory_order_relaxed);
}

/*
 * The hybrid: each select has a send arm (its next value) and a receive arm, on random channels
 * (sometimes the same one: the two arms must not match each other). A won receive is recorded
 * like a consumer's and the value is offered again; a timeout fails the value.
 */
static void hybrid(void)
{
	uint64_t rng = 0x4b1d0000u;
	bool open[NCHAN] = {true, true, true, true};
	long i = 0;

	while (i < per_prod) {
		uint64_t r = jft_splitmix64(&rng);
		long v = value_of(HYBRID_P, i), in = -1;
		int cs = (int)(r % NCHAN), cr = (int)((r >> 8) % NCHAN), rc;
		struct jf_chan_op ops[2];

		if (!open[cs])
			cs = 1;
		ops[0] = (struct jf_chan_op){chans[cs], JF_CHAN_OP_SEND, &v, 1};
		ops[1] = (struct jf_chan_op){open[cr] ? chans[cr] : NULL, JF_CHAN_OP_RECV, &in, 1};
		rc = jf_chan_select(ops, 2, jf_now_ns() + (r >> 16) % 40000);
		if (rc == 1) {
			CHECK_EQ(v, value_of(HYBRID_P, i)); /* the send arm lost: v not taken */
			if (ops[1].result == -EPIPE) {
				open[cr] = false;
			} else {
				CHECK_EQ(ops[1].result, 0);
				record_recv(in);
			}
			continue;
		}
		if (rc == 0) {
			CHECK_EQ(in, -1);
			rc = ops[0].result;
			if (rc == -EPIPE)
				open[cs] = false;
		} else {
			CHECK_EQ(rc, -ETIMEDOUT);
		}
		record_send(HYBRID_P, i++, rc);
	}
}

static void *producer(void *arg)
{
	int p = (int)(intptr_t)arg;
	uint64_t rng = 0x5eed0000u + (uint64_t)p;
	bool d_open = true;

	if (p == HYBRID_P) {
		hybrid();
		return NULL;
	}

	for (long i = 0; i < per_prod; i++) {
		uint64_t r = jft_splitmix64(&rng);
		long v = value_of(p, i);
		int c = (int)(r % NCHAN), rc;

		if (c == 3 && !d_open)
			c = 1;
		switch ((r >> 8) % 5) {
		case 0:
			rc = jf_chan_send(chans[c], &v);
			break;
		case 1:
			rc = jf_chan_send_until(chans[c], &v, jf_now_ns() + (r >> 16) % 30000);
			break;
		case 2:
			rc = jf_chan_trysend(chans[c], &v);
			break;
		default: {
			/* send the same value on three channels: only the chosen arm delivers it */
			struct jf_chan_op ops[3] = {
				{chans[0], JF_CHAN_OP_SEND, &v, 1},
				{chans[1 + (r >> 20) % 2], JF_CHAN_OP_SEND, &v, 1},
				{d_open ? chans[3] : NULL, JF_CHAN_OP_SEND, &v, 1},
			};
			uint64_t dl = (r >> 24) % 4 == 0 ? UINT64_MAX
							 : jf_now_ns() + (r >> 32) % 50000;
			rc = jf_chan_select(ops, 3, dl);
			if (rc >= 0) {
				atomic_fetch_add_explicit(&n_sel, 1, memory_order_relaxed);
				if (ops[rc].result == -EPIPE && rc == 2)
					d_open = false;
				rc = ops[rc].result;
			}
			break;
		}
		}
		if (rc == -EPIPE && c == 3)
			d_open = false;
		record_send(p, i, rc);
		if (rc == -ECANCELED) {
			CHECK_EQ(p, VICTIM_P); /* only the victim is cancelled */
			for (long j = i + 1; j < per_prod; j++)
				status[p][j] = V_FAILED;
			return NULL;
		}
		if ((r >> 40) % 64 == 0)
			jf_yield();
	}
	return NULL;
}

/* Receive until every channel is closed and drained (a victim stops at its cancellation). */
static void *consumer(void *arg)
{
	int k = (int)(intptr_t)arg;
	uint64_t rng = 0xc0de0000u + (uint64_t)k;
	bool open[NCHAN] = {true, true, true, true};
	int nopen = NCHAN;

	while (nopen > 0) {
		uint64_t r = jft_splitmix64(&rng);
		long v = -1;
		int c = (int)(r % NCHAN), rc;

		if (!open[c] || (r >> 8) % 3 == 0) {
			/* select over every open channel, each arm with its own buffer */
			long buf[NCHAN] = {-1, -1, -1, -1};
			struct jf_chan_op ops[NCHAN];
			uint64_t dl = (r >> 12) % 3 == 0 ? 0 : jf_now_ns() + (r >> 16) % 40000;

			for (int j = 0; j < NCHAN; j++)
				ops[j] = (struct jf_chan_op){open[j] ? chans[j] : NULL,
							     JF_CHAN_OP_RECV, &buf[j], 1};
			rc = jf_chan_select(ops, NCHAN, dl);
			for (int j = 0; j < NCHAN; j++)
				if (j != rc)
					CHECK_EQ(buf[j], -1); /* losing arms receive nothing */
			if (rc >= 0) {
				atomic_fetch_add_explicit(&n_sel, 1, memory_order_relaxed);
				if (ops[rc].result == -EPIPE) {
					open[rc] = false;
					nopen--;
				} else {
					CHECK_EQ(ops[rc].result, 0);
					record_recv(buf[rc]);
				}
				continue;
			}
			if (rc == -ECANCELED)
				return NULL;
			CHECK(rc == -EAGAIN || rc == -ETIMEDOUT);
			continue;
		}
		if ((r >> 10) % 2)
			rc = jf_chan_recv_until(chans[c], &v, jf_now_ns() + (r >> 16) % 30000);
		else
			rc = jf_chan_tryrecv(chans[c], &v);
		if (rc == 0) {
			record_recv(v);
		} else if (rc == -EPIPE) {
			open[c] = false;
			nopen--;
		} else if (rc == -ECANCELED) {
			return NULL;
		} else {
			CHECK(rc == -ETIMEDOUT || rc == -EAGAIN);
			CHECK_EQ(v, -1);
		}
	}
	return NULL;
}

static void *storm_main(void *arg)
{
	jf_thread_t *prod[ALLPROD], *cons[NCONS + 1];
	long sent = 0, failed = 0;

	(void)arg;
	CHECK_EQ(jf_chan_create(&chans[0], sizeof(long), 0), 0);
	CHECK_EQ(jf_chan_create(&chans[1], sizeof(long), 4), 0);
	CHECK_EQ(jf_chan_create(&chans[2], sizeof(long), JF_CHAN_UNBOUNDED), 0);
	CHECK_EQ(jf_chan_create(&chans[3], sizeof(long), 2), 0);
	for (int p = 0; p < ALLPROD; p++) {
		memset(status[p], V_UNSENT, (size_t)per_prod);
		for (long i = 0; i < per_prod; i++)
			atomic_store_explicit(&seen[p][i], 0, memory_order_relaxed);
	}
	atomic_store(&sum_sent, 0);
	atomic_store(&sum_recv, 0);
	atomic_store(&n_timeout, 0);
	atomic_store(&n_cancel, 0);
	atomic_store(&n_epipe, 0);
	atomic_store(&n_sel, 0);

	for (int k = 0; k <= NCONS; k++) /* consumer NCONS is the victim */
		cons[k] = jft_spawn_on(k % 3 - 1, consumer, (void *)(intptr_t)k);
	for (int p = 0; p < ALLPROD; p++)
		prod[p] = jft_spawn_on(p % 3 - 1, producer, (void *)(intptr_t)p);

	/* mid-storm: close channel 3 and cancel the victims while they wait */
	CHECK_EQ(jf_sleep_ns(JFT_SCALE(20000, 50000)), 0);
	CHECK_EQ(jf_cancel(cons[NCONS]), 0);
	CHECK_EQ(jf_chan_close(chans[3]), 0);
	CHECK_EQ(jf_sleep_ns(JFT_SCALE(20000, 50000)), 0);
	CHECK_EQ(jf_cancel(prod[VICTIM_P]), 0);

	for (int p = 0; p < ALLPROD; p++)
		jft_join(prod[p]);
	for (int c = 0; c < 3; c++)
		CHECK_EQ(jf_chan_close(chans[c]), 0);
	for (int k = 0; k <= NCONS; k++)
		jft_join(cons[k]);

	for (int p = 0; p < ALLPROD; p++) {
		for (long i = 0; i < per_prod; i++) {
			unsigned n = atomic_load_explicit(&seen[p][i], memory_order_relaxed);
			if (status[p][i] != (n ? V_SENT : V_FAILED))
				fprintf(stderr, "value %d/%ld: status %u, received %u times\n", p, i,
					status[p][i], n);
			CHECK_EQ(status[p][i], n ? V_SENT : V_FAILED);
			sent += status[p][i] == V_SENT;
			failed += status[p][i] == V_FAILED;
		}
	}
	CHECK_EQ(atomic_load(&sum_sent), atomic_load(&sum_recv));
	CHECK(sent > 0);
	CHECK_EQ(sent + failed, ALLPROD * per_prod);
	for (int c = 0; c < NCHAN; c++) {
		CHECK_EQ(jf_chan_len(chans[c]), 0);
		CHECK_EQ(jf_chan_destroy(chans[c]), 0);
	}
	printf("  sent %ld, failed %ld (timed out %ld, cancelled %ld, closed %ld), selects %ld\n",
	       sent, failed, atomic_load(&n_timeout), atomic_load(&n_cancel), atomic_load(&n_epipe),
	       atomic_load(&n_sel));
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	int cells;

	jft_config_fixed(&cfg, 2, "ws", "none");
	test_outside();
	jft_run(&cfg, semantics_main, NULL);

	per_prod = JFT_SCALE(8000L, 3000L);
	for (int p = 0; p < ALLPROD; p++) {
		status[p] = malloc((size_t)per_prod);
		seen[p] = malloc((size_t)per_prod * sizeof(atomic_uchar));
		CHECK(status[p] && seen[p]);
	}
	cells = jft_matrix_run("sync.chan", 2, storm_main, NULL);
	printf("sync.chan: %d cells\n", cells);
	for (int p = 0; p < ALLPROD; p++) {
		free(status[p]);
		free(seen[p]);
	}
	jft_ok("sync.chan");
	return 0;
}
