/*
 * jiffy/sync.h - synchronization that blocks the uthread, never the worker.
 *
 * Owns: jf_mutex_t (FIFO handoff to waiters), jf_cond_t (with timed wait), jf_waitgroup_t.
 * All objects are plain structs: zero-initialised (or the *_INITIALIZER macros, or *_init()) they
 * are ready; no destroy call is needed, but they must not be freed while a uthread waits on them.
 * Fields are private: use the functions.
 *
 * Must be called from uthreads. Misuse (unlocking a mutex the caller does not hold, waiting on a
 * condition variable without holding the mutex) is reported as -EPERM, never undefined behaviour.
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

/** JF_MUTEX_INITIALIZER - an unlocked jf_mutex_t, for static initialisation (as zeroes are). */
#define JF_MUTEX_INITIALIZER {0, 0, 0, {0, 0}}
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

/** jf_waitgroup_init() - set @wg's counter to 0 (what zeroes are). */
JF_API void jf_waitgroup_init(jf_waitgroup_t *wg);
/** jf_waitgroup_add() - add @n (may be negative) to the counter; waiters wake when it reaches 0.
 * Return: 0; -EINVAL if the counter would become negative (it is left unchanged). */
JF_API int jf_waitgroup_add(jf_waitgroup_t *wg, int64_t n);
/** jf_waitgroup_done() - jf_waitgroup_add(wg, -1). */
JF_API int jf_waitgroup_done(jf_waitgroup_t *wg);
/** jf_waitgroup_wait() - block until the counter is 0. Return: 0; -ECANCELED if the caller was
 * cancelled (jf_cancel(), jiffy/pfn.h) before it reached 0. */
JF_API int jf_waitgroup_wait(jf_waitgroup_t *wg);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_SYNC_H */
