/*
 * jiffy/local.h - uthread-local storage and pinning a uthread to its worker.
 *
 * Owns: what stays with a uthread when it moves between workers (kernel threads):
 *  - keys with destructors, pthread_key_create() semantics per uthread: jf_key_create(),
 *    jf_key_delete(), jf_getspecific(), jf_setspecific();
 *  - JF_LOCAL_FAST_SLOTS slots kept in the uthread itself, read and written inline
 *    (jf_local_get(), jf_local_set()): for a few well-known values a program assigns itself;
 *  - pinning (Go's runtime.LockOSThread): jf_thread_pin() / jf_thread_unpin(), or struct
 *    jf_attr.pin at spawn, keep a uthread on one worker, for code that must keep kernel-thread
 *    state (__thread variables, a thread-affine library, signal masks, sched_getcpu()).
 *
 * __thread (C11 _Thread_local) stays per KERNEL thread: a uthread that migrates at a scheduling
 * point then reads and writes another worker's copy, and several uthreads on one worker share
 * one (jiffy/thread.h's top comment). Use a key or a fast slot for per-uthread state, or pin the
 * uthread for per-worker state that must not change under it. docs/local.md has the rules and
 * the costs.
 *
 * Keys are process-wide: one created before jf_run() (or in an earlier runtime) stays valid
 * until jf_key_delete(), across runtimes. Values are per uthread and start NULL. A uthread's
 * destructors run when it ends (returning from its function, jf_exit(), a cancellation through
 * jiffy/pfn.h), in the uthread, preemptible, and may use any Jiffy call (a destructor that sets a
 * value again is called again, up to JF_KEY_DESTRUCTOR_ITERATIONS rounds). Uthreads still
 * runnable or blocked when jf_run() returns are discarded without running further (jf_run()):
 * their destructors do not run either; their values' storage is freed, the values themselves
 * are not. Fast slots have no destructors.
 */
#ifndef JIFFY_LOCAL_H
#define JIFFY_LOCAL_H

#include <jiffy/export.h>

#include <stdint.h>

#include <jiffy/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

/** JF_KEYS_MAX - how many keys may exist at once in the process (PTHREAD_KEYS_MAX's role). */
#define JF_KEYS_MAX 256
/**
 * JF_KEY_DESTRUCTOR_ITERATIONS - the rounds of destructors at a uthread's end (the role of
 * PTHREAD_DESTRUCTOR_ITERATIONS).
 */
#define JF_KEY_DESTRUCTOR_ITERATIONS 4
/** JF_LOCAL_FAST_SLOTS - the fast slots of every uthread (jf_local_get(), jf_local_set()). */
#define JF_LOCAL_FAST_SLOTS 4

/**
 * typedef jf_key_t - a key: names one value per uthread. 0 is never a valid key, so a
 * zero-initialized jf_key_t is "not created"; a deleted key stays invalid even if its slot is
 * reused by a later jf_key_create() (a generation number is part of the key; it wraps after
 * 2^23 create/delete cycles of one slot).
 */
typedef uint32_t jf_key_t;

/**
 * jf_key_create() - create a key, process-wide; callable in or outside the runtime.
 * @key:  receives the key.
 * @dtor: called with a uthread's non-NULL value when that uthread ends (the value is set to NULL
 *        first), or NULL for none.
 * Return: 0; -EINVAL if @key is NULL; -EAGAIN if JF_KEYS_MAX keys exist.
 */
JF_API int jf_key_create(jf_key_t *key, void (*dtor)(void *));

/**
 * jf_key_delete() - delete @key. Its values are not passed to the destructor (as
 * pthread_key_delete()); they become unreachable: jf_getspecific() of @key returns NULL and
 * jf_setspecific() fails, and a key created later never sees them.
 * Return: 0; -EINVAL if @key is not a live key (never created, or already deleted).
 */
JF_API int jf_key_delete(jf_key_t key);

/**
 * jf_getspecific() - the calling uthread's value for @key.
 * Return: the value; NULL if none was set, if @key is not a live key, or outside a uthread.
 */
JF_API void *jf_getspecific(jf_key_t key);

/**
 * jf_setspecific() - set the calling uthread's value for @key to @value (NULL clears it). The
 * first value a uthread sets allocates its table (a uthread that uses no key costs nothing).
 * Return: 0; -EPERM outside a uthread; -EINVAL if @key is not a live key; -ENOMEM.
 */
JF_API int jf_setspecific(jf_key_t key, const void *value);

/* Private, for the inline fast slots below: the thread-pointer offset of the runtime's
 * per-worker pointer to the running uthread's slots (0 until the library's constructor ran), and
 * the call that reads it where %fs-relative access is not available. */
extern JF_API long jf__local_tp_offset;
JF_API void **jf__local_slots_slow(void);

/**
 * jf__local_slots() - the calling uthread's fast slots, or NULL outside a uthread. One
 * %fs-relative load in GNU C (the worker publishes the slots of the uthread it switches to), so
 * a preemption or a migration cannot split it: it always yields the caller's own slots.
 * Elsewhere (C++, strict ISO C, ASan/TSan builds) a call.
 */
static inline void **jf__local_slots(void)
{
#if defined(__SEG_FS) && !defined(__cplusplus) && !defined(__STRICT_ANSI__) && \
	!defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	long off = jf__local_tp_offset;
	if (__builtin_expect(off != 0, 1))
		return *(void **__seg_fs *)off;
#endif
	return jf__local_slots_slow();
}

/**
 * jf_local_get() - the calling uthread's fast slot @slot (0 .. JF_LOCAL_FAST_SLOTS - 1).
 * Return: its value (NULL until set; every uthread starts with all slots NULL); NULL for a slot
 * out of range or outside a uthread.
 */
static inline void *jf_local_get(unsigned slot)
{
	void **s = jf__local_slots();
	return s && slot < JF_LOCAL_FAST_SLOTS ? s[slot] : NULL;
}

/**
 * jf_local_set() - set the calling uthread's fast slot @slot to @value. No destructor runs for
 * it: the value is dropped when the uthread ends.
 * Return: 0; -EPERM outside a uthread; -EINVAL for a slot out of range.
 */
static inline int jf_local_set(unsigned slot, void *value)
{
	void **s = jf__local_slots();
	if (!s)
		return -EPERM;
	if (slot >= JF_LOCAL_FAST_SLOTS)
		return -EINVAL;
	s[slot] = value;
	return 0;
}

/**
 * jf_thread_pin() - keep the calling uthread on the worker running it now (Go's
 * LockOSThread): under every policy it runs only there from now on, whatever it does (yield,
 * block, sleep, preemption), until as many jf_thread_unpin() calls as jf_thread_pin() calls
 * (a spawn with struct jf_attr.pin counts as one). While pinned, __thread variables, and other
 * kernel-thread state, stay the same kernel thread's between its scheduling points.
 * Return: 0; -EPERM outside a uthread; -EOVERFLOW past 2^31 nested pins.
 */
JF_API int jf_thread_pin(void);

/**
 * jf_thread_unpin() - undo one jf_thread_pin() (or the pin given at spawn); at the last one the
 * uthread may move again from its next scheduling point.
 * Return: 0; -EPERM outside a uthread; -EINVAL if it is not pinned.
 */
JF_API int jf_thread_unpin(void);

/**
 * jf_thread_pinned() - the worker @t is pinned to, or -1 if it is not pinned (or @t is NULL).
 * A recent value when @t is another uthread that may be pinning or unpinning itself.
 */
JF_API int jf_thread_pinned(const jf_thread_t *t);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_LOCAL_H */
