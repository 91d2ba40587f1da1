/*
 * blocking.c - the blocking offload (jiffy/blocking.h): a bounded pool of plain kernel threads
 * that run blocking functions for parked uthreads, and the file and name-resolution calls built
 * on it.
 *
 * Owns: the pool (its queue, its threads, their start, spin, idle exit and join at jf_run()'s
 * end), the job protocol below, the pool's counters (jf_stats_blocking()), and the reads' page
 * cache fast path on the worker (read_nowait).
 *
 * Job protocol. A job lives on its caller's stack (struct bjob) and moves through
 *   WAITROOM (queue full: on the wait list) -> QUEUED (in the queue) -> RUNNING (a pool thread
 *   runs fn) -> DONE,   or WAITROOM/QUEUED -> CANCELLED (jf_cancel() before fn started).
 * Every transition happens under pool.lock. The caller links its job and blocks with
 * jf_block_wait(&pool.lock, ...), which releases the lock only after the policy knows the uthread
 * is blocked: so a pool thread, which needs the lock to take the job, always finds its caller
 * blocked, and the one wake it sends (jf_netpoll_remote_wake(): a pool thread is not a worker and
 * cannot call jf_sched_make_runnable(), so the next worker that polls makes the uthread runnable)
 * is never early. A cancellation (bjob_cancel, on the canceller's path) ends the wait only while
 * the job has not started; once RUNNING the caller waits for DONE, so no pool thread touches the
 * caller's stack after the call returned, and @arg may live there.
 *
 * The caller is counted as a netpoll waiter while it waits (jf_netpoll_remote_wait()): busy
 * workers then poll, and an idle one parks in epoll, where the wake's eventfd write reaches it.
 * Exactly one of the remote wake (drained by a worker) and the cancellation uncounts it.
 *
 * Invariants: pool.queued <= pool.queue_cap; pool.nthreads <= pool.max_threads; a job is on at
 * most one list; a pool thread never holds pool.lock across fn or a system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <netdb.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jiffy/blocking.h>

#include "../common/dlist.h"
#include "../runtime/net/netpoll.h"
#include "../runtime/runtime.h"

enum bjob_state {
	BJ_WAITROOM = 0,
	BJ_QUEUED,
	BJ_RUNNING,
	BJ_DONE,
	BJ_CANCELLED,
	BJ_FAILED, /* no pool thread exists and none could be started: -EAGAIN, fn never ran */
};

struct bjob {
	void *(*fn)(void *);
	void *arg;
	void *result;
	struct jf_thread *t;
	struct bjob *prev, *next; /* in pool.queue or pool.wait */
	uint64_t submit_ns;
	uint8_t state;             /* enum bjob_state, under pool.lock */
	bool armed;                /* its caller blocked: the end of the job must wake it */
	struct jf_remote_wake rw;  /* the wake of @t */
};

struct bjob_list {
	struct bjob *head, *tail;
};

/* A pool thread's slot: joined at shutdown, or when the slot is reused after an idle exit. */
enum slot_state {
	SLOT_FREE = 0, /* never used, or joined */
	SLOT_LIVE,     /* a thread runs (or is being started) here */
	SLOT_EXITED,   /* its thread left pool_thread(): join before reuse */
};

/* @th is written by the thread itself under pool.lock when it starts, so it is valid whenever
 * @state is SLOT_EXITED (a creator's pthread_create() may return after its thread exited). */
struct slot {
	pthread_t th;
	uint8_t state;
	bool th_set; /* @th is stored (by the thread) */
};

static struct {
	uint32_t lock;              /* everything below */
	const struct runtime *owner; /* the runtime whose pool this is (NULL: none yet/joined) */
	bool stopping;
	unsigned max_threads, queue_cap;
	uint64_t idle_ns, spin_ns;
	struct slot *slots;          /* max_threads of them */
	struct bjob_list queue, wait;
	unsigned queued, waiting;
	unsigned nthreads, nidle, wakes_owed; /* idle: in futex_wait; owed: wakes sent, not taken */
	uint32_t spinning;           /* a pool thread spins for work (pool_spin) */
	uint32_t futex_seq;          /* pool threads spin and sleep on it; bumped (atomically,
				      * under the lock) when work arrives */
	struct jf_blocking_stats st;
} pool;

/* Reads the page cache answered on the worker (read_nowait), for jf_stats_blocking(). */
static uint64_t nowait_reads;

/* --- lists (under pool.lock) ----------------------------------------------------------------- */

static void list_push(struct bjob_list *l, struct bjob *j)
{
	JF_DLIST_PUSH_TAIL(l, j);
}

static void list_remove(struct bjob_list *l, struct bjob *j)
{
	JF_DLIST_REMOVE(l, j);
}

static void stat_max(uint64_t *max, uint64_t v)
{
	if (v > *max)
		*max = v;
}

/* Move callers waiting for room into the queue while it has room. */
static void admit_waiting(void)
{
	while (pool.wait.head && pool.queued < pool.queue_cap) {
		struct bjob *j = pool.wait.head;
		list_remove(&pool.wait, j);
		pool.waiting--;
		j->state = BJ_QUEUED;
		list_push(&pool.queue, j);
		pool.queued++;
	}
	pool.st.queued = pool.queued;
	pool.st.waiting = pool.waiting;
	stat_max(&pool.st.queued_max, pool.queued);
}

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* --- pool threads ------------------------------------------------------------------------------ */

/*
 * Spin up to pool.spin_ns for work (pool.futex_seq moving on from @seq), if no other pool
 * thread spins already (one at most, as Go keeps one spinning M: the others would only take
 * CPU time from the workers). Return: work came.
 */
static bool pool_spin(uint32_t seq)
{
	uint64_t end;
	bool came = false;

	if (!pool.spin_ns || __atomic_exchange_n(&pool.spinning, 1, __ATOMIC_ACQUIRE))
		return false;
	end = jf_now_ns() + pool.spin_ns;
	do {
		for (int i = 0; i < 16 && !came; i++) {
			came = __atomic_load_n(&pool.futex_seq, __ATOMIC_ACQUIRE) != seq;
			jf_cpu_relax();
		}
	} while (!came && jf_now_ns() < end);
	__atomic_store_n(&pool.spinning, 0, __ATOMIC_SEQ_CST); /* before FUTEX_WAIT: want_thread */
	return came;
}

static void run_job(struct bjob *j)
{
	uint64_t start = jf_now_ns(), end;
	void *res = j->fn(j->arg);
	bool wake;

	end = jf_now_ns();
	jf_spin_lock(&pool.lock);
	j->result = res;
	j->state = BJ_DONE;
	pool.st.completed++;
	pool.st.run_ns += end - start;
	/* Not armed: its caller has not blocked yet and will see DONE instead. After jf_run()
	 * stopped, nobody runs the caller again: no wake either. */
	wake = j->armed && !pool.stopping;
	if (wake)
		j->rw.t = j->t;
	jf_spin_unlock(&pool.lock);
	if (wake)
		jf_netpoll_remote_wake(&j->rw); /* the last touch of @j: its caller may return */
}

static void *pool_thread(void *arg)
{
	struct slot *self = arg;
	sigset_t all;

	/* Signals are for the workers (preemption, cancellation) and the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	jf_spin_lock(&pool.lock);
	self->th = pthread_self();
	self->th_set = true;
	for (;;) {
		struct bjob *j = pool.queue.head;
		uint64_t now;

		if (j) {
			list_remove(&pool.queue, j);
			pool.queued--;
			admit_waiting();
			j->state = BJ_RUNNING;
			now = jf_now_ns();
			pool.st.queue_ns += now - j->submit_ns;
			stat_max(&pool.st.queue_ns_max, now - j->submit_ns);
			jf_spin_unlock(&pool.lock);
			run_job(j);
			jf_spin_lock(&pool.lock);
			continue;
		}
		if (pool.stopping)
			break;
		{
			uint32_t seq = __atomic_load_n(&pool.futex_seq, __ATOMIC_RELAXED);
			struct timespec ts = {
				.tv_sec = (time_t)(pool.idle_ns / 1000000000u),
				.tv_nsec = (long)(pool.idle_ns % 1000000000u),
			};
			long r;
			int err;

			pool.nidle++;
			jf_spin_unlock(&pool.lock);
			/* Spin first: waking a sleeping thread costs a halted vCPU's wake-up (tens
			 * of us on a KVM guest), more than the call it runs (docs/blocking.md). */
			if (pool_spin(seq)) {
				r = 0;
			} else {
				r = futex(&pool.futex_seq, FUTEX_WAIT_PRIVATE, seq, &ts);
			}
			err = r < 0 ? errno : 0;
			jf_spin_lock(&pool.lock);
			if (pool.wakes_owed) {
				pool.wakes_owed--; /* a submitter took this thread off nidle already */
			} else {
				pool.nidle--;
				/* Idle for the whole period, nothing queued: leave (the slot is joined later). */
				if (err == ETIMEDOUT && !pool.queue.head && !pool.stopping)
					break;
			}
		}
	}
	pool.nthreads--;
	pool.st.threads = pool.nthreads;
	self->state = SLOT_EXITED;
	jf_spin_unlock(&pool.lock);
	return NULL;
}

/*
 * Under pool.lock, a job was just queued: wake an idle thread, or reserve a slot for a new one.
 * Return: the slot the caller must start a thread on (after unlocking), or NULL; *@wake: whether
 * to FUTEX_WAKE one idle thread; *@join: whether the slot's previous thread (exited, after an
 * idle period) must be joined first (start_thread() does, outside the lock).
 */
static struct slot *want_thread(bool *wake, bool *join)
{
	*wake = *join = false;
	/* A thread about to sleep sees the new value and does not. */
	__atomic_fetch_add(&pool.futex_seq, 1, __ATOMIC_SEQ_CST);
	if (pool.nidle > 0) {
		pool.nidle--;
		pool.wakes_owed++;
		/*
		 * A spinner takes it without a FUTEX_WAKE: it sees the new value while it spins,
		 * or, if it just stopped (it clears @spinning before its FUTEX_WAIT, which then
		 * compares the value with the old one), its wait returns at once.
		 */
		*wake = !__atomic_load_n(&pool.spinning, __ATOMIC_SEQ_CST);
		return NULL;
	}
	if (pool.nthreads >= pool.max_threads)
		return NULL;
	for (unsigned i = 0; i < pool.max_threads; i++)
		if (pool.slots[i].state != SLOT_LIVE) {
			struct slot *s = &pool.slots[i];
			*join = s->state == SLOT_EXITED;
			s->state = SLOT_LIVE;
			if (!*join)
				s->th_set = false;
			pool.nthreads++;
			pool.st.threads = pool.nthreads;
			pool.st.threads_started++;
			stat_max(&pool.st.threads_max, pool.nthreads);
			return s;
		}
	JF_ASSERT(0, "blocking pool: %u threads counted, no free slot of %u", pool.nthreads,
		  pool.max_threads);
	return NULL;
}

/*
 * Start a pool thread on @s (reserved by want_thread), first joining the one that ran there if
 * @join (it exited: the join only collects it). Return: 0 or -errno (slot released).
 */
static int start_thread(struct slot *s, bool join)
{
	pthread_t th;
	int rc;

	if (join) {
		jf_spin_lock(&pool.lock); /* @th was stored under the lock */
		th = s->th;
		s->th_set = false;
		jf_spin_unlock(&pool.lock);
		pthread_join(th, NULL);
	}
	rc = pthread_create(&th, NULL, pool_thread, s);
	if (rc == 0)
		return 0;
	jf_spin_lock(&pool.lock);
	s->state = SLOT_FREE;
	pool.nthreads--;
	pool.st.threads = pool.nthreads;
	pool.st.threads_started--;
	jf_spin_unlock(&pool.lock);
	return -rc;
}

/* Under pool.lock: the running runtime's pool, set up at its first call. Return 0 or -errno. */
static int pool_ensure(void)
{
	const struct runtime *rt = jf_rt;

	if (pool.owner == rt)
		return 0;
	JF_ASSERT(pool.owner == NULL && pool.nthreads == 0, "blocking pool of a runtime that ended");
	free(pool.slots);
	pool.slots = calloc(rt->cfg.blocking_threads, sizeof(*pool.slots));
	if (!pool.slots)
		return -ENOMEM;
	pool.owner = rt;
	pool.stopping = false;
	pool.max_threads = rt->cfg.blocking_threads;
	pool.queue_cap = rt->cfg.blocking_queue;
	pool.idle_ns = rt->cfg.blocking_idle_ns;
	pool.spin_ns = rt->cfg.blocking_spin_ns;
	memset(&pool.st, 0, sizeof(pool.st));
	pool.st.max_threads = pool.max_threads;
	pool.st.queue_cap = pool.queue_cap;
	return 0;
}

void jf_blocking_runtime_exit(void)
{
	jf_spin_lock(&pool.lock);
	if (!pool.owner) {
		jf_spin_unlock(&pool.lock);
		return;
	}
	pool.stopping = true;
	/* Calls not started are dropped: their uthreads will never run again. */
	pool.queue.head = pool.queue.tail = NULL;
	pool.wait.head = pool.wait.tail = NULL;
	pool.queued = pool.waiting = 0;
	pool.st.queued = pool.st.waiting = 0;
	__atomic_fetch_add(&pool.futex_seq, 1, __ATOMIC_RELEASE);
	jf_spin_unlock(&pool.lock);
	futex(&pool.futex_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
	/* Functions still running are waited for (they cannot be interrupted; docs/blocking.md).
	 * No slot is reserved any more (the workers are gone); a live thread stores its @th under
	 * the lock before it can exit, so spin until each one in use has. */
	for (unsigned i = 0; i < pool.max_threads; i++) {
		struct slot *s = &pool.slots[i];
		pthread_t th;
		bool used;

		for (;;) {
			bool set;

			jf_spin_lock(&pool.lock);
			used = s->state != SLOT_FREE;
			set = s->th_set;
			th = s->th;
			jf_spin_unlock(&pool.lock);
			if (!used || set)
				break;
			sched_yield(); /* started, not yet running: it stores @th first thing */
		}
		if (!used)
			continue;
		pthread_join(th, NULL);
		jf_spin_lock(&pool.lock);
		s->state = SLOT_FREE;
		jf_spin_unlock(&pool.lock);
	}
	jf_spin_lock(&pool.lock);
	JF_ASSERT(pool.nthreads == 0, "blocking pool: %u threads after the join", pool.nthreads);
	pool.owner = NULL;
	pool.nidle = pool.wakes_owed = 0;
	free(pool.slots);
	pool.slots = NULL;
	jf_spin_unlock(&pool.lock);
}

/* --- the caller's side ------------------------------------------------------------------------ */

/* jf_block_wait()'s on_timeout, on the canceller's path: end the wait if fn has not started. */
static bool bjob_cancel(void *arg)
{
	struct bjob *j = arg;
	bool ended = true;

	jf_spin_lock(&pool.lock);
	if (j->state == BJ_WAITROOM) {
		list_remove(&pool.wait, j);
		pool.waiting--;
		pool.st.waiting = pool.waiting;
	} else if (j->state == BJ_QUEUED) {
		list_remove(&pool.queue, j);
		pool.queued--;
		admit_waiting();
	} else {
		ended = false; /* running or done: the pool thread's wake comes */
	}
	if (ended) {
		j->state = BJ_CANCELLED;
		pool.st.cancelled++;
	}
	jf_spin_unlock(&pool.lock);
	if (ended)
		jf_netpoll_remote_unwait();
	return ended;
}

/*
 * No pool thread exists and none could be started (pthread_create failed): fail every call that
 * waits for one, or it would wait for ever. Under pool.lock; returns the wakes to send after it.
 */
static struct bjob *fail_all(void)
{
	struct bjob *wake = NULL;
	struct bjob_list *lists[2] = {&pool.queue, &pool.wait};

	for (int i = 0; i < 2; i++) {
		struct bjob *j;
		while ((j = lists[i]->head) != NULL) {
			list_remove(lists[i], j);
			j->state = BJ_FAILED;
			if (j->armed) { /* blocked: wake it (the others see FAILED before blocking) */
				j->rw.t = j->t;
				j->next = wake;
				wake = j;
			}
		}
	}
	pool.queued = pool.waiting = 0;
	pool.st.queued = pool.st.waiting = 0;
	return wake;
}

static void wake_failed(struct bjob *j)
{
	while (j) {
		struct bjob *next = j->next;
		jf_netpoll_remote_wake(&j->rw);
		j = next;
	}
}

/* The end of a call whose job left the lists without a wake for it (not armed). */
static int unarmed_end(struct bjob *j, void **result)
{
	int rc = j->state == BJ_DONE ? 0 : -EAGAIN;

	jf_netpoll_remote_unwait();
	if (rc == 0 && result)
		*result = j->result;
	return rc;
}

static int submit(void *(*fn)(void *), void *arg, void **result, bool try_only)
{
	struct bjob j = {.fn = fn, .arg = arg};
	struct slot *start = NULL;
	bool wake = false, join = false;
	int rc;

	if (!fn)
		return -EINVAL;
	JF_RUNTIME_ENTER();
	j.t = jf_current();
	if (!j.t) {
		JF_RUNTIME_LEAVE();
		return -EPERM;
	}
	if (jf_cancel_due(j.t)) {
		JF_RUNTIME_LEAVE();
		return -ECANCELED;
	}
	/* Counted as a waiter from here (np_init may open the eventfd, once): uncounted by the
	 * wake that a worker drains, or by unwait on every other way out. */
	rc = jf_netpoll_remote_wait(j.t);
	if (rc) {
		JF_RUNTIME_LEAVE();
		return rc;
	}
	jf_spin_lock(&pool.lock);
	rc = pool_ensure();
	if (rc == 0 && try_only && (pool.queued >= pool.queue_cap || pool.wait.head)) {
		pool.st.rejected++;
		rc = -EAGAIN;
	}
	if (rc) {
		jf_spin_unlock(&pool.lock);
		jf_netpoll_remote_unwait();
		JF_RUNTIME_LEAVE();
		return rc;
	}
	j.submit_ns = jf_now_ns();
	pool.st.submitted++;
	if (pool.queued < pool.queue_cap && !pool.wait.head) {
		j.state = BJ_QUEUED;
		list_push(&pool.queue, &j);
		pool.queued++;
		pool.st.queued = pool.queued;
		stat_max(&pool.st.queued_max, pool.queued);
		start = want_thread(&wake, &join);
	} else {
		j.state = BJ_WAITROOM; /* a pool thread moves it into the queue when there is room */
		list_push(&pool.wait, &j);
		pool.waiting++;
		pool.st.waiting = pool.waiting;
		stat_max(&pool.st.waiting_max, pool.waiting);
	}
	if (start || wake) {
		/*
		 * Wake or start a thread without the lock (a system call; a new thread takes the
		 * lock first thing). Meanwhile the job may run, even finish: not armed, it sends no
		 * wake, and the caller sees the state when it takes the lock again.
		 */
		struct bjob *failed = NULL;

		jf_spin_unlock(&pool.lock);
		if (wake)
			futex(&pool.futex_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
		rc = start ? start_thread(start, join) : 0;
		jf_spin_lock(&pool.lock);
		if (rc && pool.nthreads == 0)
			failed = fail_all();
		if (j.state == BJ_DONE || j.state == BJ_FAILED) {
			jf_spin_unlock(&pool.lock);
			wake_failed(failed);
			rc = unarmed_end(&j, result);
			JF_RUNTIME_LEAVE();
			return rc;
		}
		JF_ASSERT(!failed, "blocking pool: armed jobs failed while one was not");
	}
	j.armed = true;
	jf_wait_note(j.t, j.state == BJ_WAITROOM ? "blocking-room" : "blocking", &pool);
	jf_block_wait(&pool.lock, UINT64_MAX, bjob_cancel, &j);
	jf_spin_lock(&pool.lock); /* orders the pool thread's writes before our reads */
	JF_ASSERT(j.state == BJ_DONE || j.state == BJ_CANCELLED || j.state == BJ_FAILED,
		  "blocking job woken in state %u", (unsigned)j.state);
	rc = j.state == BJ_DONE ? 0 : j.state == BJ_CANCELLED ? -ECANCELED : -EAGAIN;
	jf_spin_unlock(&pool.lock);
	if (rc == 0 && result)
		*result = j.result;
	JF_RUNTIME_LEAVE();
	return rc;
}

int jf_run_blocking(void *(*fn)(void *), void *arg, void **result)
{
	return submit(fn, arg, result, false);
}

int jf_try_run_blocking(void *(*fn)(void *), void *arg, void **result)
{
	return submit(fn, arg, result, true);
}

int jf_stats_blocking(struct jf_blocking_stats *out)
{
	if (!out)
		return -EINVAL;
	jf_spin_lock(&pool.lock);
	if (jf_rt && pool.owner != jf_rt) { /* this runtime has not used the pool yet */
		memset(out, 0, sizeof(*out));
		out->max_threads = jf_rt->cfg.blocking_threads;
		out->queue_cap = jf_rt->cfg.blocking_queue;
	} else {
		*out = pool.st;
	}
	jf_spin_unlock(&pool.lock);
	out->nowait_reads = __atomic_load_n(&nowait_reads, __ATOMIC_RELAXED);
	return 0;
}

/* --- regular files ------------------------------------------------------------------------------ */

enum file_op { FOP_OPEN, FOP_READ, FOP_WRITE, FOP_PREAD, FOP_PWRITE, FOP_FSYNC, FOP_CLOSE };

struct file_call {
	enum file_op op;
	int fd;
	int flags;
	mode_t mode;
	const char *path;
	void *buf;
	size_t len;
	off_t off;
	ssize_t ret;
	int err;
};

static void *file_call_run(void *arg)
{
	struct file_call *c = arg;

	errno = 0;
	switch (c->op) {
	case FOP_OPEN:
		c->ret = open(c->path, c->flags, c->mode);
		break;
	case FOP_READ:
		c->ret = read(c->fd, c->buf, c->len);
		break;
	case FOP_WRITE:
		c->ret = write(c->fd, c->buf, c->len);
		break;
	case FOP_PREAD:
		c->ret = pread(c->fd, c->buf, c->len, c->off);
		break;
	case FOP_PWRITE:
		c->ret = pwrite(c->fd, c->buf, c->len, c->off);
		break;
	case FOP_FSYNC:
		c->ret = fsync(c->fd);
		break;
	case FOP_CLOSE:
		c->ret = close(c->fd);
		break;
	}
	c->err = errno;
	return NULL;
}

/* Run @c on the pool, or here outside a uthread. Return its result with errno set. */
static ssize_t file_call(struct file_call *c)
{
	int rc = jf_run_blocking(file_call_run, c, NULL);

	if (rc == -EPERM) {
		file_call_run(c); /* not a uthread: block this thread, as the plain call would */
	} else if (rc != 0) {
		errno = -rc;
		return -1;
	}
	if (c->ret < 0)
		errno = c->err;
	return c->ret;
}

int jf_file_open(const char *path, int flags, ...)
{
	struct file_call c = {.op = FOP_OPEN, .path = path, .flags = flags};

	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) { /* as glibc's open() */
		va_list ap;
		va_start(ap, flags);
		c.mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return (int)file_call(&c);
}

/*
 * The page-cache fast path of the reads: preadv2(RWF_NOWAIT) on the worker, which never waits
 * for the disk (nor for a pipe's writer): it returns what the page cache holds or fails with
 * EAGAIN (EOPNOTSUPP where the file does not support it). A full read (or 0 at the end of the
 * file) is the answer, at the cost of one system call instead of a round trip to the pool. A
 * short one from a regular file is completed on the pool (its reader may take a short read for
 * the end of the file); from anything else (a pipe, a socket) it is the answer, as read(2)'s.
 * Not for O_DIRECT descriptors: there RWF_NOWAIT only spares lock waits, and the read waits for
 * the device on the worker (56 us per 4 KiB here; docs/blocking.md). @off < 0: at the file
 * position (read(2)). Return: bytes read here (the call
 * is then over when it is @len or 0), or -1 (nothing read, go to the pool).
 */
static ssize_t read_nowait(int fd, void *buf, size_t len, off_t off)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	int saved = errno;
	ssize_t n;

	int fl;

	if (!len || !jf_current())
		return -1;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_DIRECT)) {
		errno = saved;
		return -1;
	}
	n = preadv2(fd, &iov, 1, off < 0 ? -1 : off, RWF_NOWAIT);
	errno = saved;
	if (n >= 0)
		__atomic_fetch_add(&nowait_reads, 1, __ATOMIC_RELAXED);
	return n;
}

/* jf_file_read() and jf_file_pread(): the fast path, then the pool for the rest. */
static ssize_t file_read(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = read_nowait(fd, buf, len, off), rest;
	struct file_call c = {.op = off < 0 ? FOP_READ : FOP_PREAD, .fd = fd};

	struct stat st;

	if (n == 0 || (n > 0 && (size_t)n == len))
		return n;
	if (n > 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))
		return n;
	if (n < 0)
		n = 0;
	c.buf = (char *)buf + n;
	c.len = len - (size_t)n;
	c.off = off < 0 ? 0 : off + n;
	rest = file_call(&c);
	if (rest < 0)
		return n > 0 ? n : -1; /* bytes already read are not lost (errno is the rest's) */
	return n + rest;
}

ssize_t jf_file_read(int fd, void *buf, size_t len)
{
	return file_read(fd, buf, len, -1);
}

ssize_t jf_file_write(int fd, const void *buf, size_t len)
{
	struct file_call c = {.op = FOP_WRITE, .fd = fd, .buf = (void *)(uintptr_t)buf, .len = len};
	return file_call(&c);
}

ssize_t jf_file_pread(int fd, void *buf, size_t len, off_t off)
{
	if (off < 0) {
		errno = EINVAL; /* as pread(2); and a negative @off means "the position" to file_read */
		return -1;
	}
	return file_read(fd, buf, len, off);
}

ssize_t jf_file_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	struct file_call c = {
		.op = FOP_PWRITE, .fd = fd, .buf = (void *)(uintptr_t)buf, .len = len, .off = off};
	return file_call(&c);
}

int jf_file_fsync(int fd)
{
	struct file_call c = {.op = FOP_FSYNC, .fd = fd};
	return (int)file_call(&c);
}

int jf_file_close(int fd)
{
	struct file_call c = {.op = FOP_CLOSE, .fd = fd};
	return (int)file_call(&c);
}

/* --- name resolution -------------------------------------------------------------------------- */

struct gai_call {
	const char *node, *service;
	const struct addrinfo *hints;
	struct addrinfo *res;
	int ret, err;
};

static void *gai_run(void *arg)
{
	struct gai_call *c = arg;

	errno = 0;
	c->ret = getaddrinfo(c->node, c->service, c->hints, &c->res);
	c->err = errno;
	return NULL;
}

int jf_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		   struct addrinfo **res)
{
	struct gai_call c = {.node = node, .service = service, .hints = hints};
	int rc;

	if (!res) {
		errno = EINVAL;
		return EAI_SYSTEM;
	}
	*res = NULL;
	rc = jf_run_blocking(gai_run, &c, NULL);
	if (rc == -EPERM) {
		gai_run(&c);
	} else if (rc != 0) {
		errno = -rc;
		return EAI_SYSTEM;
	}
	if (c.ret == EAI_SYSTEM)
		errno = c.err;
	*res = c.res;
	return c.ret;
}

void jf_freeaddrinfo(struct addrinfo *res)
{
	if (res)
		freeaddrinfo(res);
}

void jf_blocking_print(FILE *out)
{
	struct jf_blocking_stats b;

	if (jf_stats_blocking(&b) != 0 || !b.submitted)
		return;
	fprintf(out,
		"jiffy: blocking pool: %" PRIu64 " calls, %" PRIu64 " done, %" PRIu64
		" cancelled, %" PRIu64 " rejected; queued %" PRIu64 " (max %" PRIu64 " of %" PRIu64
		"), waiting for room %" PRIu64 " (max %" PRIu64 "); threads %" PRIu64 " (max %" PRIu64
		" of %" PRIu64 ", %" PRIu64 " started); queued %.1f us on average (max %.1f), ran %.1f"
		" us on average\n",
		b.submitted, b.completed, b.cancelled, b.rejected, b.queued, b.queued_max, b.queue_cap,
		b.waiting, b.waiting_max, b.threads, b.threads_max, b.max_threads, b.threads_started,
		b.completed ? (double)b.queue_ns / (double)b.completed / 1e3 : 0.0,
		(double)b.queue_ns_max / 1e3,
		b.completed ? (double)b.run_ns / (double)b.completed / 1e3 : 0.0);
}
