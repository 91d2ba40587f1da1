/*
 * pthread_shim.c - library code that takes pthread locks is safe to preempt (issue 14 §3).
 *
 * The hazard: a uthread preempted while it holds a pthread mutex (RocksDB's port::Mutex,
 * std::mutex, any C library's lock) stays queued on its worker; if the uthread that runs next on
 * that worker asks for the same mutex, pthread_mutex_lock() blocks the worker's kernel thread,
 * and the holder, queued behind it, never runs again to release it. With one worker that is a
 * deadlock; with several, a worker lost until some other worker steals the holder.
 *
 * The choice (Aspen-Go's for Go's Lock(), docs/preemption.md "Library code"): a uthread is not
 * preempted while it holds a pthread lock. This file defines the pthread lock functions
 * themselves (mutex lock/trylock/timedlock/clocklock/unlock, the rwlock family, spin locks):
 * each calls glibc's and, on success, enters a jf_preempt_disable() region that the matching
 * unlock ends. A preemption that falls due meanwhile (a probe, a signal) is deferred and taken at
 * the unlock. The nesting travels with the uthread across its voluntary switches (thread.c saves
 * it), so a holder that blocks in the runtime keeps it, and the next uthread on that kernel thread
 * does not inherit it.
 *
 * Why not the alternative (make a contended lock block the uthread, not the kernel thread, as
 * Caladan's shim does): it needs every pthread lock to become a Jiffy lock, including locks shared
 * with threads outside the runtime (RocksDB's background threads), and condition variables with
 * them; deferring needs nothing but a counter, costs ~1 ns per lock/unlock pair, and bounds the
 * delay it adds by the critical section's length, which libraries keep short.
 *
 * How it takes effect: these are strong definitions of the public names. Linked into a program
 * (static libjiffy.a: jf_run() references this file, so it is always in) or loaded before libc
 * (libjiffy.so), they are what every caller in the process binds to, shared libraries included.
 * glibc's own internal locks (malloc, stdio) do not go through them; the runtime never preempts
 * inside libc anyway (preempt.c). jf_config.pthread_shim = false (JIFFY_PTHREAD_SHIM=0) turns
 * the regions off at jf_run() (for measurement; the deadlock comes back). Not built under
 * ThreadSanitizer, whose runtime defines the same functions to follow locks: the TSan build keeps
 * glibc's. A client of the runtime through src/runtime/preempt/preempt.h alone (the preemption
 * count; its two hooks, jf_pthread_shim_setup/active, are declared there), not runtime.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jiffy/config.h>
#include <jiffy/preempt.h>

#include "../runtime/preempt/preempt.h"

#if defined(__SANITIZE_THREAD__)
#define JF_SHIM 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define JF_SHIM 0
#endif
#endif
#ifndef JF_SHIM
#define JF_SHIM 1
#endif

/* Whether lock holders defer preemption (JIFFY_PTHREAD_SHIM; on unless set to 0). */
static int shim_on = JF_SHIM;

void jf_pthread_shim_setup(const struct jf_config *cfg)
{
	__atomic_store_n(&shim_on, JF_SHIM && cfg->pthread_shim, __ATOMIC_RELAXED);
}

int jf_pthread_shim_active(void)
{
	return __atomic_load_n(&shim_on, __ATOMIC_RELAXED);
}

#if JF_SHIM

/*
 * A lock is taken with preemption already off: disabling it only after the lock returned left a
 * window (the return into this file) where a signal could preempt the new holder. Its worker
 * then ran another uthread that asked for the same lock and blocked the kernel thread the holder
 * needed: apps.kv_inside.timer hung so, both workers in RocksDB's LRU-cache mutex, the holder
 * queued as preempted in this function (seen with `jiffy bt`). A failed try ends the region.
 */
static inline int shim_enter(void)
{
	int on = __atomic_load_n(&shim_on, __ATOMIC_RELAXED);
	if (on)
		jf_preempt_disable();
	return on;
}

static inline int shim_taken(int on, int rc)
{
	if (on && rc != 0 && jf_pcount() > 0)
		jf_preempt_enable();
	return rc;
}

#define HELD(call)                                                                               \
	__extension__({                                                                          \
		int on_ = shim_enter();                                                          \
		shim_taken(on_, (call));                                                         \
	})

/* After a successful unlock: end the region its lock began (never below 0: a lock taken before
 * the shim was on, or an unlock without a lock, must not unbalance the runtime's own regions). */
static inline int released(int rc)
{
	if (rc == 0 && __atomic_load_n(&shim_on, __ATOMIC_RELAXED) && jf_pcount() > 0)
		jf_preempt_enable();
	return rc;
}

/*
 * glibc's functions, found after ours (RTLD_NEXT) when first needed: by the constructor below
 * for a normal start, or by the first call if another library's constructor locks before it.
 * dlsym takes only the loader's own lock, never one that goes through this file.
 */
static void *next(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (__builtin_expect(f != NULL, 1))
		return f;
	f = dlsym(RTLD_NEXT, name);
	if (!f) {
		fprintf(stderr, "jiffy: pthread_shim: %s not found after this library (%s)\n", name,
			dlerror());
		abort();
	}
	__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	return f;
}

static struct {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
	int (*spin_lock)(pthread_spinlock_t *);
	int (*spin_trylock)(pthread_spinlock_t *);
	int (*spin_unlock)(pthread_spinlock_t *);
} real;

#define REAL(f, name) ((__typeof__(real.f))next((void **)&real.f, name))

__attribute__((constructor)) static void resolve(void)
{
	(void)REAL(mutex_lock, "pthread_mutex_lock");
	(void)REAL(mutex_trylock, "pthread_mutex_trylock");
	(void)REAL(mutex_timedlock, "pthread_mutex_timedlock");
	(void)REAL(mutex_clocklock, "pthread_mutex_clocklock");
	(void)REAL(mutex_unlock, "pthread_mutex_unlock");
	(void)REAL(rwlock_rdlock, "pthread_rwlock_rdlock");
	(void)REAL(rwlock_wrlock, "pthread_rwlock_wrlock");
	(void)REAL(rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
	(void)REAL(rwlock_trywrlock, "pthread_rwlock_trywrlock");
	(void)REAL(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
	(void)REAL(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
	(void)REAL(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
	(void)REAL(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
	(void)REAL(rwlock_unlock, "pthread_rwlock_unlock");
	(void)REAL(spin_lock, "pthread_spin_lock");
	(void)REAL(spin_trylock, "pthread_spin_trylock");
	(void)REAL(spin_unlock, "pthread_spin_unlock");
}

/* The interposed functions are exported from libjiffy.so (the rest of the library is hidden):
 * a program linked with it must find these before libc's. */
#pragma GCC visibility push(default)

int pthread_mutex_lock(pthread_mutex_t *m)
{
	return HELD(REAL(mutex_lock, "pthread_mutex_lock")(m));
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return HELD(REAL(mutex_trylock, "pthread_mutex_trylock")(m));
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
	return HELD(REAL(mutex_timedlock, "pthread_mutex_timedlock")(m, t));
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *t)
{
	return HELD(REAL(mutex_clocklock, "pthread_mutex_clocklock")(m, c, t));
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return released(REAL(mutex_unlock, "pthread_mutex_unlock")(m));
}

int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return HELD(REAL(rwlock_rdlock, "pthread_rwlock_rdlock")(l));
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return HELD(REAL(rwlock_wrlock, "pthread_rwlock_wrlock")(l));
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return HELD(REAL(rwlock_tryrdlock, "pthread_rwlock_tryrdlock")(l));
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return HELD(REAL(rwlock_trywrlock, "pthread_rwlock_trywrlock")(l));
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t)
{
	return HELD(REAL(rwlock_timedrdlock, "pthread_rwlock_timedrdlock")(l, t));
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t)
{
	return HELD(REAL(rwlock_timedwrlock, "pthread_rwlock_timedwrlock")(l, t));
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *t)
{
	return HELD(REAL(rwlock_clockrdlock, "pthread_rwlock_clockrdlock")(l, c, t));
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *t)
{
	return HELD(REAL(rwlock_clockwrlock, "pthread_rwlock_clockwrlock")(l, c, t));
}

int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	return released(REAL(rwlock_unlock, "pthread_rwlock_unlock")(l));
}

int pthread_spin_lock(pthread_spinlock_t *l)
{
	return HELD(REAL(spin_lock, "pthread_spin_lock")(l));
}

int pthread_spin_trylock(pthread_spinlock_t *l)
{
	return HELD(REAL(spin_trylock, "pthread_spin_trylock")(l));
}

int pthread_spin_unlock(pthread_spinlock_t *l)
{
	return released(REAL(spin_unlock, "pthread_spin_unlock")(l));
}

#pragma GCC visibility pop

#endif /* JF_SHIM */
