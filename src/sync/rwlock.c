/*
 * rwlock.c - jf_rwlock_t: a phase-fair reader-writer lock for uthreads, with timeouts.
 *
 * Owns: the rwlock protocol. Why phase-fair (Brandenburg and Anderson's rule) and not
 * writer-preferring: a writer-preferring lock starves readers while writers keep coming, and a
 * reader-preferring one starves writers; phase-fair alternates read and write phases, so a reader
 * waits at most one write phase and a writer at most one read phase plus the writers ahead of it.
 *
 * state: the number of readers holding it (RW_READERS bits), RW_WRITER (a writer holds it),
 * RW_WWAIT (writers are queued), RW_RWAIT (readers are queued). The uncontended read lock, read
 * unlock, write lock and write unlock are one atomic operation each. A reader may enter on its
 * own only while neither RW_WRITER nor RW_WWAIT is set: once a writer waits, new readers queue
 * for the next read phase. Everything else happens under rw->lock, with ownership handed over
 * rather than released: a writer that leaves admits every queued reader at once (one read phase),
 * else the oldest queued writer; the last reader of a phase admits the oldest queued writer. A
 * timed-out or cancelled waiter leaves its queue under rw->lock, clears its queue's bit when it
 * was the last, and a writer that leaves that way admits the readers it was holding back.
 *
 * Lock-holder preemption: read and write holds both count in jf_thread.locks_held (holder.h).
 */
#include <errno.h>
#include <string.h>

#include "holder.h"
#include "waitq.h"

#define RW_WRITER (1u << 31)
#define RW_WWAIT (1u << 30)
#define RW_RWAIT (1u << 29)
#define RW_READERS (RW_RWAIT - 1)

void jf_rwlock_init(jf_rwlock_t *rw)
{
	memset(rw, 0, sizeof(*rw));
}

static uint32_t rw_load(jf_rwlock_t *rw)
{
	return __atomic_load_n(&rw->state, __ATOMIC_RELAXED);
}

static bool rw_cas(jf_rwlock_t *rw, uint32_t *s, uint32_t to)
{
	return __atomic_compare_exchange_n(&rw->state, s, to, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* A reader may enter now without waiting. Return: 0, -EBUSY, -EAGAIN (too many readers). */
static int try_read(jf_rwlock_t *rw)
{
	uint32_t s = rw_load(rw);

	for (;;) {
		if (s & (RW_WRITER | RW_WWAIT | RW_RWAIT))
			return -EBUSY;
		if ((s & RW_READERS) == RW_READERS)
			return -EAGAIN;
		if (rw_cas(rw, &s, s + 1))
			return 0;
	}
}

static bool try_write(jf_rwlock_t *rw)
{
	uint32_t s = 0;
	return rw_cas(rw, &s, RW_WRITER);
}

/* Under rw->lock: change the bits in @clear and @set and add @readers, atomically against the
 * lock-free paths (a reader's fetch_sub, a fast acquire). */
static void rw_update(jf_rwlock_t *rw, uint32_t clear, uint32_t set, uint32_t readers)
{
	uint32_t s = rw_load(rw);
	while (!__atomic_compare_exchange_n(&rw->state, &s, ((s & ~clear) | set) + readers, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
}

/* Under rw->lock, no writer holding it: every queued reader enters. Return: them, linked. */
static struct jf_thread *admit_readers(jf_rwlock_t *rw)
{
	unsigned n;
	struct jf_thread *head = waitq_take_all(&rw->readers, &rw->lock, &n);

	if (n)
		rw_update(rw, RW_RWAIT, 0, n);
	return head;
}

/* Under rw->lock, nobody holding it: the oldest queued writer enters. Return: it, or NULL. */
static struct jf_thread *admit_writer(jf_rwlock_t *rw)
{
	struct jf_thread *t = waitq_pop(&rw->writers, &rw->lock);

	if (!t)
		return NULL;
	__atomic_store_n(&rw->writer, t, __ATOMIC_RELAXED);
	rw_update(rw, rw->writers.head ? 0 : RW_WWAIT, RW_WRITER, 0);
	return t;
}

struct rw_wait {
	jf_rwlock_t *rw;
	struct jf_thread *t;
	struct jf_thread *admitted; /* readers a leaving writer let in, woken after the lock */
};

static bool reader_wait_over(void *arg)
{
	struct rw_wait *ww = arg;
	jf_rwlock_t *rw = ww->rw;
	bool removed;

	jf_spin_lock(&rw->lock);
	removed = waitq_remove(&rw->readers, &rw->lock, ww->t);
	if (removed && !rw->readers.head)
		rw_update(rw, RW_RWAIT, 0, 0);
	jf_spin_unlock(&rw->lock);
	return removed;
}

static bool writer_wait_over(void *arg)
{
	struct rw_wait *ww = arg;
	jf_rwlock_t *rw = ww->rw;
	struct jf_thread *admitted = NULL;
	bool removed;

	jf_spin_lock(&rw->lock);
	removed = waitq_remove(&rw->writers, &rw->lock, ww->t);
	if (removed && !rw->writers.head) {
		rw_update(rw, RW_WWAIT, 0, 0);
		/* The readers it held back join the phase now (or start one: nobody holds it). */
		if (!(rw_load(rw) & RW_WRITER))
			admitted = admit_readers(rw);
	}
	jf_spin_unlock(&rw->lock);
	waitq_wake_list(jf_this_worker(), admitted);
	return removed;
}

static int rw_block(jf_rwlock_t *rw, struct jf_thread *cur, struct jf_waitq *q, uint64_t deadline,
		    bool (*over)(void *))
{
	struct rw_wait ww = {rw, cur, NULL};

	waitq_push(q, &rw->lock, cur);
	jf_wait_note(cur, "rwlock", rw);
	/* untimed waits (UINT64_MAX) are cancellable too: jf_cancel() ends them with -ECANCELED */
	return jf_block_wait(&rw->lock, deadline, over, &ww);
}

static int rdlock_common(jf_rwlock_t *rw, uint64_t deadline)
{
	struct jf_thread *cur = jf_current();
	bool over;
	int r;

	if (!cur)
		return -EPERM;
	r = try_read(rw);
	if (JF_LIKELY(r == 0)) {
		holder_acquired(cur);
		return 0;
	}
	if (r == -EAGAIN)
		return r;
	if (__atomic_load_n(&rw->writer, __ATOMIC_RELAXED) == cur)
		return -EDEADLK;
	if (jf_cancel_due(cur))
		return -ECANCELED;
	over = deadline != UINT64_MAX && jf_now_ns() >= deadline;
	jf_spin_lock(&rw->lock);
	for (;;) {
		uint32_t s = rw_load(rw);
		if (!(s & (RW_WRITER | RW_WWAIT))) {
			if ((s & RW_READERS) == RW_READERS) {
				jf_spin_unlock(&rw->lock);
				return -EAGAIN;
			}
			if (rw_cas(rw, &s, s + 1)) {
				jf_spin_unlock(&rw->lock);
				holder_acquired(cur);
				return 0;
			}
			continue;
		}
		if (over) { /* a deadline already past takes only what is free: no queueing */
			jf_spin_unlock(&rw->lock);
			return -ETIMEDOUT;
		}
		if ((s & RW_RWAIT) || rw_cas(rw, &s, s | RW_RWAIT))
			break;
	}
	r = rw_block(rw, cur, &rw->readers, deadline, reader_wait_over);
	if (r == 0)
		holder_acquired(cur); /* admitted: counted among the readers by whoever woke it */
	return r;
}

static int wrlock_common(jf_rwlock_t *rw, uint64_t deadline)
{
	struct jf_thread *cur = jf_current();
	bool over;
	int r;

	if (!cur)
		return -EPERM;
	if (JF_LIKELY(try_write(rw))) {
		__atomic_store_n(&rw->writer, cur, __ATOMIC_RELAXED);
		holder_acquired(cur);
		return 0;
	}
	if (__atomic_load_n(&rw->writer, __ATOMIC_RELAXED) == cur)
		return -EDEADLK;
	if (jf_cancel_due(cur))
		return -ECANCELED;
	over = deadline != UINT64_MAX && jf_now_ns() >= deadline;
	jf_spin_lock(&rw->lock);
	for (;;) {
		uint32_t s = rw_load(rw);
		if (s == 0) {
			if (rw_cas(rw, &s, RW_WRITER)) {
				__atomic_store_n(&rw->writer, cur, __ATOMIC_RELAXED);
				jf_spin_unlock(&rw->lock);
				holder_acquired(cur);
				return 0;
			}
			continue;
		}
		if (over) { /* past: no queueing, so no WWAIT to take back (readers unaffected) */
			jf_spin_unlock(&rw->lock);
			return -ETIMEDOUT;
		}
		if ((s & RW_WWAIT) || rw_cas(rw, &s, s | RW_WWAIT))
			break;
	}
	r = rw_block(rw, cur, &rw->writers, deadline, writer_wait_over);
	if (r == 0)
		holder_acquired(cur); /* admitted: rw->writer was set for it */
	return r;
}

static int unlock_in_runtime(jf_rwlock_t *rw)
{
	struct jf_thread *cur = jf_current(), *wake = NULL;
	uint32_t s;

	if (!cur)
		return -EPERM;
	s = rw_load(rw);
	if (s & RW_WRITER) {
		uint32_t expected = RW_WRITER;

		if (__atomic_load_n(&rw->writer, __ATOMIC_RELAXED) != cur)
			return -EPERM;
		__atomic_store_n(&rw->writer, NULL, __ATOMIC_RELAXED);
		holder_released(cur);
		if (JF_LIKELY(__atomic_compare_exchange_n(&rw->state, &expected, 0, false,
							  __ATOMIC_RELEASE, __ATOMIC_RELAXED)))
			return 0;
		jf_spin_lock(&rw->lock);
		rw_update(rw, RW_WRITER, 0, 0);
		/* Phase-fair: the readers that waited through this write phase go first. */
		wake = admit_readers(rw);
		if (!wake)
			wake = admit_writer(rw);
		jf_spin_unlock(&rw->lock);
		waitq_wake_list(jf_this_worker(), wake);
		return 0;
	}
	if ((s & RW_READERS) == 0)
		return -EPERM;
	holder_released(cur);
	s = __atomic_sub_fetch(&rw->state, 1, __ATOMIC_RELEASE);
	if (JF_LIKELY((s & RW_READERS) != 0 || !(s & RW_WWAIT)))
		return 0;
	/* The last reader of a phase, and a writer waits: hand it the lock. */
	jf_spin_lock(&rw->lock);
	s = rw_load(rw);
	if ((s & (RW_READERS | RW_WRITER)) == 0)
		wake = admit_writer(rw);
	jf_spin_unlock(&rw->lock);
	waitq_wake_list(jf_this_worker(), wake);
	return 0;
}

int jf_rwlock_rdlock(jf_rwlock_t *rw)
{
	return jf_rwlock_rdlock_until(rw, UINT64_MAX);
}

int jf_rwlock_wrlock(jf_rwlock_t *rw)
{
	return jf_rwlock_wrlock_until(rw, UINT64_MAX);
}

int jf_rwlock_rdlock_until(jf_rwlock_t *rw, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(rdlock_common(rw, deadline_ns));
}

int jf_rwlock_wrlock_until(jf_rwlock_t *rw, uint64_t deadline_ns)
{
	return JF_IN_RUNTIME(wrlock_common(rw, deadline_ns));
}

int jf_rwlock_tryrdlock(jf_rwlock_t *rw)
{
	struct jf_thread *cur;
	int r;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur) {
		r = -EPERM;
	} else {
		r = try_read(rw);
		if (r == 0)
			holder_acquired(cur);
	}
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_rwlock_trywrlock(jf_rwlock_t *rw)
{
	struct jf_thread *cur;
	int r = -EBUSY;

	JF_RUNTIME_ENTER();
	cur = jf_current();
	if (!cur) {
		r = -EPERM;
	} else if (try_write(rw)) {
		__atomic_store_n(&rw->writer, cur, __ATOMIC_RELAXED);
		holder_acquired(cur);
		r = 0;
	}
	JF_RUNTIME_LEAVE();
	return r;
}

int jf_rwlock_unlock(jf_rwlock_t *rw)
{
	return JF_IN_RUNTIME(unlock_in_runtime(rw));
}

int jf_rwlock_destroy(jf_rwlock_t *rw)
{
	if (__atomic_load_n(&rw->state, __ATOMIC_ACQUIRE) != 0 ||
	    __atomic_load_n(&rw->readers.head, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&rw->writers.head, __ATOMIC_RELAXED))
		return -EBUSY;
	return 0;
}
