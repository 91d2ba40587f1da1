/*
 * jiffy/sync.h - synchronization that blocks the uthread, never the worker.
 *
 * Owns: jf_mutex_t (FIFO handoff to waiters), jf_cond_t (with timed wait), jf_waitgroup_t,
 * jf_rwlock_t (phase-fair), jf_sem_t (counting), jf_barrier_t, jf_once_t. Channels are in
 * jiffy/chan.h. All objects are plain structs: zero-initialised (or the *_INITIALIZER macros, or
 * *_init()) they are ready (a semaphore's count and a barrier's party count excepted); the
 * *_destroy() calls only check that nothing waits on (or holds) the object, which must not be
 * freed while a uthread waits on it. Fields are private: use the functions. docs/sync.md says how
 * each works and what it costs.
 *
 * Deadlines: every wait that can end early takes an absolute @deadline_ns on jf_now_ns()'s clock
 * (jiffy/time.h; UINT64_MAX: never). A wait that returns -ETIMEDOUT or -ECANCELED (jf_cancel(),
 * jiffy/pfn.h) took nothing: no lock is held, no unit of a semaphore was consumed.
 *
 * Must be called from uthreads: the functions that return int return -EPERM when called outside
 * one; the void ones (jf_mutex_lock(), jf_cond_signal(), ...) end the process with a message
 * naming the function. Misuse (unlocking a mutex or rwlock the caller does not hold, waiting on a
 * condition variable without holding the mutex, destroying an object that is held or waited on)
 * is reported as -EPERM or -EBUSY, never undefined behaviour.
 *
 * Lock-holder preemption: a uthread holding a jf_mutex_t or a jf_rwlock_t (for writing) is not
 * preempted at the end of its quantum for up to jf_config.lock_defer_ns more (JIFFY_LOCK_DEFER_US),
 * and a waiter whose lock's holder is running on another worker spins up to
 * jf_config.lock_spin_ns (JIFFY_LOCK_SPIN_US) before it blocks; docs/sync.md has the numbers that
 * chose the defaults.
 */
#ifndef JIFFY_SYNC_H
#define JIFFY_SYNC_H

#include <jiffy/export.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct jf_thread;

/** struct jf_waitq - a FIFO of blocked uthreads (private: the objects below embed it). */
struct jf_waitq {
	struct jf_thread *head; /* private */
	struct jf_thread *tail; /* private */
};

/** struct jf_mutex - a mutex that blocks the uthread; ownership goes to waiters in FIFO order. */
typedef struct jf_mutex {
	uint32_t state;          /* private: 0 free, 1 locked, 3 locked with waiters */
	uint32_t lock;           /* private: spinlock protecting waiters */
	struct jf_thread *owner; /* private */
	struct jf_waitq waiters; /* private */
} jf_mutex_t;

/** struct jf_cond - a condition variable, used with a jf_mutex_t. */
typedef struct jf_cond {
	uint32_t lock; /* private */
	uint32_t pad_; /* private: padding */
	struct jf_waitq waiters; /* private */
} jf_cond_t;

/** struct jf_waitgroup - a counter that uthreads can wait to reach zero (Go's sync.WaitGroup). */
typedef struct jf_waitgroup {
	int64_t count; /* private */
	uint32_t lock; /* private */
	uint32_t pad_; /* private: padding */
	struct jf_waitq waiters; /* private */
} jf_waitgroup_t;

/**
 * struct jf_rwlock - a phase-fair reader-writer lock: readers and writers take turns, so neither
 * starves. A reader that arrives while a writer holds or waits for the lock waits for the next
 * read phase; when a writer releases, every waiting reader enters together; when the last reader
 * of a phase leaves, the oldest waiting writer enters.
 */
typedef struct jf_rwlock {
	uint32_t state;          /* private: readers | WRITER | READERS_WAIT | WRITERS_WAIT bits */
	uint32_t lock;           /* private: spinlock protecting the queues */
	struct jf_thread *writer; /* private: the writer holding it */
	struct jf_waitq readers; /* private */
	struct jf_waitq writers; /* private */
} jf_rwlock_t;

/** struct jf_sem - a counting semaphore; units go to waiters in FIFO order. */
typedef struct jf_sem {
	uint64_t state;          /* private: the count, and a waiters bit */
	uint32_t lock;           /* private */
	uint32_t pad_;           /* private: padding */
	struct jf_waitq waiters; /* private */
} jf_sem_t;

/** struct jf_barrier - @count parties wait until all have arrived, then all go on. */
typedef struct jf_barrier {
	uint32_t lock;           /* private */
	uint32_t count;          /* private: parties per round (0: not initialised) */
	uint32_t arrived;        /* private */
	uint32_t pad_;           /* private: padding */
	struct jf_waitq waiters; /* private */
} jf_barrier_t;

/** struct jf_once - runs a function once (pthread_once, Go's sync.Once). */
typedef struct jf_once {
	uint32_t state;          /* private: 0 not run, 1 running, 2 done */
	uint32_t lock;           /* private */
	struct jf_thread *runner; /* private */
	struct jf_waitq waiters; /* private */
} jf_once_t;

/** JF_MUTEX_INITIALIZER - an unlocked jf_mutex_t, for static initialisation (as zeroes are). */
#define JF_MUTEX_INITIALIZER {0, 0, 0, {0, 0}}
/** JF_RWLOCK_INITIALIZER - an unlocked jf_rwlock_t (as zeroes are). */
#define JF_RWLOCK_INITIALIZER {0, 0, 0, {0, 0}, {0, 0}}
/** JF_SEM_INITIALIZER() - a jf_sem_t with @n units (at most JF_SEM_VALUE_MAX). */
#define JF_SEM_INITIALIZER(n) {(uint64_t)(n), 0, 0, {0, 0}}
/** JF_BARRIER_INITIALIZER() - a jf_barrier_t for @n parties (n >= 1). */
#define JF_BARRIER_INITIALIZER(n) {0, (uint32_t)(n), 0, 0, {0, 0}}
/** JF_ONCE_INIT - a jf_once_t whose function has not run (as zeroes are). */
#define JF_ONCE_INIT {0, 0, 0, {0, 0}}
/** JF_SEM_VALUE_MAX - the largest count a jf_sem_t holds. */
#define JF_SEM_VALUE_MAX ((uint64_t)1 << 62)
/** JF_BARRIER_SERIAL - what jf_barrier_wait() returns to exactly one party per round. */
#define JF_BARRIER_SERIAL 1
/** JF_COND_INITIALIZER - a jf_cond_t without waiters, for static initialisation. */
#define JF_COND_INITIALIZER {0, 0, {0, 0}}
/** JF_WAITGROUP_INITIALIZER - a jf_waitgroup_t at 0, for static initialisation. */
#define JF_WAITGROUP_INITIALIZER {0, 0, 0, {0, 0}}

/** jf_mutex_init() - make @m an unlocked mutex (what zero-initialising it does). */
JF_API void jf_mutex_init(jf_mutex_t *m);
/** jf_mutex_lock() - acquire; blocks the uthread. Ownership is handed to waiters in FIFO order. */
JF_API void jf_mutex_lock(jf_mutex_t *m);
/** jf_mutex_trylock() - Return: 0 if acquired, -EBUSY if held. */
JF_API int jf_mutex_trylock(jf_mutex_t *m);
/** jf_mutex_unlock() - release, handing the mutex to the oldest waiter. Return: 0; -EPERM if the
 * caller does not hold it. */
JF_API int jf_mutex_unlock(jf_mutex_t *m);
/**
 * jf_mutex_lock_until() - jf_mutex_lock() that gives up at @deadline_ns (jf_now_ns(); UINT64_MAX:
 * never) or when the caller is cancelled (jf_cancel()).
 * Return: 0 (held); -ETIMEDOUT, -ECANCELED (not held, and never handed over later); -EDEADLK if
 * the caller holds it already; -EPERM outside a uthread.
 */
JF_API int jf_mutex_lock_until(jf_mutex_t *m, uint64_t deadline_ns);
/** jf_mutex_destroy() - check that @m may be freed. Return: 0; -EBUSY if it is held or waited on. */
JF_API int jf_mutex_destroy(jf_mutex_t *m);

/** jf_cond_init() - make @c a condition variable without waiters (what zeroes are). */
JF_API void jf_cond_init(jf_cond_t *c);
/** jf_cond_wait() - atomically release @m and wait for a signal, then re-acquire @m.
 * Return: 0; -EPERM if the caller does not hold @m; -ECANCELED if the caller was cancelled
 * (jf_cancel(), jiffy/pfn.h; @m is held again). Spurious wakeups do not happen, but callers
 * should still re-check their predicate (another uthread may have consumed the state). */
JF_API int jf_cond_wait(jf_cond_t *c, jf_mutex_t *m);
/** jf_cond_timedwait() - like jf_cond_wait() until jf_now_ns() >= @deadline_ns.
 * Return: 0 if signalled, -ETIMEDOUT, -ECANCELED, -EPERM. @m is held again on every return but
 * -EPERM. */
JF_API int jf_cond_timedwait(jf_cond_t *c, jf_mutex_t *m, uint64_t deadline_ns);
/** jf_cond_signal() - wake the oldest waiter, if any. */
JF_API void jf_cond_signal(jf_cond_t *c);
/** jf_cond_broadcast() - wake every waiter. */
JF_API void jf_cond_broadcast(jf_cond_t *c);
/** jf_cond_destroy() - check that @c may be freed. Return: 0; -EBUSY if a uthread waits on it. */
JF_API int jf_cond_destroy(jf_cond_t *c);

/** jf_waitgroup_init() - set @wg's counter to 0 (what zeroes are). */
JF_API void jf_waitgroup_init(jf_waitgroup_t *wg);
/** jf_waitgroup_add() - add @n (may be negative) to the counter; waiters wake when it reaches 0.
 * Return: 0; -EINVAL if the counter would become negative (it is left unchanged). */
JF_API int jf_waitgroup_add(jf_waitgroup_t *wg, int64_t n);
/** jf_waitgroup_done() - jf_waitgroup_add(wg, -1). */
JF_API int jf_waitgroup_done(jf_waitgroup_t *wg);
/** jf_waitgroup_wait() - block until the counter is 0. Return: 0; -ECANCELED if the caller was
 * cancelled (jf_cancel(), jiffy/pfn.h) before it reached 0; -EPERM outside a uthread. */
JF_API int jf_waitgroup_wait(jf_waitgroup_t *wg);
/** jf_waitgroup_wait_until() - jf_waitgroup_wait() that gives up at @deadline_ns.
 * Return: 0; -ETIMEDOUT; -ECANCELED; -EPERM outside a uthread. */
JF_API int jf_waitgroup_wait_until(jf_waitgroup_t *wg, uint64_t deadline_ns);
/** jf_waitgroup_destroy() - check that @wg may be freed. Return: 0; -EBUSY if a uthread waits. */
JF_API int jf_waitgroup_destroy(jf_waitgroup_t *wg);

/** jf_rwlock_init() - make @rw an unlocked rwlock (what zeroes are). */
JF_API void jf_rwlock_init(jf_rwlock_t *rw);
/** jf_rwlock_rdlock() - take @rw for reading (shared). Return: 0; -EDEADLK if the caller holds
 * it for writing; -EAGAIN if 2^29 - 1 readers hold it already; -ECANCELED (jf_cancel(), not
 * held); -EPERM outside a uthread. */
JF_API int jf_rwlock_rdlock(jf_rwlock_t *rw);
/** jf_rwlock_wrlock() - take @rw for writing (exclusive). Return: 0; -EDEADLK if the caller
 * holds it for writing; -ECANCELED (not held); -EPERM outside a uthread. A reader that asks for
 * it deadlocks (as with pthreads: readers are not tracked). */
JF_API int jf_rwlock_wrlock(jf_rwlock_t *rw);
/** jf_rwlock_tryrdlock() - Return: 0 if taken for reading; -EBUSY if it would wait. */
JF_API int jf_rwlock_tryrdlock(jf_rwlock_t *rw);
/** jf_rwlock_trywrlock() - Return: 0 if taken for writing; -EBUSY if it would wait. */
JF_API int jf_rwlock_trywrlock(jf_rwlock_t *rw);
/** jf_rwlock_rdlock_until() - jf_rwlock_rdlock() until @deadline_ns.
 * Return: 0; -ETIMEDOUT, -ECANCELED (not held); the errors of jf_rwlock_rdlock(). */
JF_API int jf_rwlock_rdlock_until(jf_rwlock_t *rw, uint64_t deadline_ns);
/** jf_rwlock_wrlock_until() - jf_rwlock_wrlock() until @deadline_ns.
 * Return: 0; -ETIMEDOUT, -ECANCELED (not held); the errors of jf_rwlock_wrlock(). */
JF_API int jf_rwlock_wrlock_until(jf_rwlock_t *rw, uint64_t deadline_ns);
/** jf_rwlock_unlock() - release a read or a write hold of @rw. Return: 0; -EPERM if the caller
 * holds no write hold and no reader holds it, or another uthread holds it for writing. */
JF_API int jf_rwlock_unlock(jf_rwlock_t *rw);
/** jf_rwlock_destroy() - Return: 0; -EBUSY if @rw is held or waited on. */
JF_API int jf_rwlock_destroy(jf_rwlock_t *rw);

/** jf_sem_init() - give @s @value units and no waiters. Return: 0; -EINVAL above
 * JF_SEM_VALUE_MAX. */
JF_API int jf_sem_init(jf_sem_t *s, uint64_t value);
/** jf_sem_wait() - take one unit, waiting for one if there is none. Return: 0; -ECANCELED
 * (nothing taken); -EPERM outside a uthread. */
JF_API int jf_sem_wait(jf_sem_t *s);
/** jf_sem_trywait() - Return: 0 if a unit was taken; -EAGAIN if there was none (callable
 * outside the runtime too). */
JF_API int jf_sem_trywait(jf_sem_t *s);
/** jf_sem_wait_until() - jf_sem_wait() until @deadline_ns. Return: 0; -ETIMEDOUT, -ECANCELED
 * (nothing taken: the unit goes to the next waiter or stays counted); -EPERM. */
JF_API int jf_sem_wait_until(jf_sem_t *s, uint64_t deadline_ns);
/** jf_sem_post() - add a unit, handing it to the oldest waiter if there is one. Callable outside
 * the runtime while no uthread waits (a waiter can be woken only from a worker).
 * Return: 0; -EOVERFLOW if the count would pass JF_SEM_VALUE_MAX; -EPERM outside the runtime
 * with a uthread waiting (nothing changes either way). */
JF_API int jf_sem_post(jf_sem_t *s);
/** jf_sem_value() - the units available now (0 while uthreads wait). */
JF_API uint64_t jf_sem_value(jf_sem_t *s);
/** jf_sem_destroy() - Return: 0; -EBUSY if a uthread waits on @s. */
JF_API int jf_sem_destroy(jf_sem_t *s);

/** jf_barrier_init() - a barrier for @count parties. Return: 0; -EINVAL for 0 parties;
 * -EBUSY if uthreads wait on it. */
JF_API int jf_barrier_init(jf_barrier_t *b, unsigned count);
/**
 * jf_barrier_wait() - arrive, and wait until @count parties of this round have. The round then
 * starts over. Not a cancellation point (a party that left would block the others for good).
 * Return: JF_BARRIER_SERIAL for exactly one party of each round (the last to arrive), 0 for the
 * others; -EINVAL if @b was not initialised; -EPERM outside a uthread.
 */
JF_API int jf_barrier_wait(jf_barrier_t *b);
/** jf_barrier_destroy() - Return: 0; -EBUSY if uthreads wait on @b (it is then unchanged). */
JF_API int jf_barrier_destroy(jf_barrier_t *b);

/**
 * jf_once() - run @fn once for @once: the first caller runs it, every other caller (at the same
 * time or later) returns once it has finished. Callable outside the runtime too (a caller there
 * that must wait for a uthread running @fn yields its kernel thread until it is done).
 * Return: 0; -EDEADLK if @fn itself calls jf_once() on @once; -EINVAL for a NULL argument.
 */
JF_API int jf_once(jf_once_t *once, void (*fn)(void));

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_SYNC_H */
