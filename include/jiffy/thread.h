/*
 * jiffy/thread.h - starting the runtime and the uthread API.
 *
 * Owns: jf_run() and the lifecycle of user-level threads (uthreads): spawn, yield, exit, join,
 * detach, identity. A uthread runs on one of the runtime's workers (one kernel thread per core)
 * and may move to another worker at any scheduling point (yield, any blocking jf_ call).
 *
 * WARNING: uthreads share their worker's kernel-thread state. After a scheduling point a
 * uthread may be on a different kernel thread: __thread variables, pthread_self(), sched_getcpu()
 * and signal masks then belong to another thread. Jiffy saves errno, MXCSR and the x87 control
 * word per uthread; it saves nothing else. Never hold a pthread mutex across a scheduling point,
 * and never block a worker in the kernel for long (it stops every uthread queued behind it).
 *
 * errno: compilers may compute the address of a thread-local variable once and reuse it across
 * calls (glibc declares __errno_location() const; GCC bug 26461), so after a uthread migrates
 * its code could read the errno of the kernel thread it left; with preemption, a uthread can even
 * be moved between computing errno's address and storing through it. This header therefore
 * redefines `errno`, in every C file that includes it, as an %fs-relative lvalue (GCC's
 * __seg_fs): every read and write is one instruction that addresses the kernel thread it executes
 * on, so neither caching nor preemption can split it. (C++, strict ISO C (-std=c17) and
 * ASan/TSan builds, which cannot instrument %fs: accesses, get a non-cacheable function form,
 * which preemption can still split between address and access: wrap such code in
 * jf_preempt_disable() if it migrates.) `&errno` has a __seg_fs type in C; code that needs a
 * plain pointer must call __errno_location(). Files that do not include <jiffy/jiffy.h> must not
 * keep errno across a Jiffy call. Define JIFFY_NO_ERRNO_MACRO before including to keep glibc's.
 */
#ifndef JIFFY_THREAD_H
#define JIFFY_THREAD_H

#include <jiffy/export.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <jiffy/config.h>

/* The C11 keywords the public headers use, spelled so that C++ (11 and later) accepts them too. */
#ifdef __cplusplus
#define JF_NORETURN [[noreturn]]
#define JF_ALIGNAS(n) alignas(n)
#else
/** JF_NORETURN - _Noreturn in C, [[noreturn]] in C++. */
#define JF_NORETURN _Noreturn
/** JF_ALIGNAS() - _Alignas(@n) in C, alignas(@n) in C++. */
#define JF_ALIGNAS(n) _Alignas(n)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Private, for the errno macro below: glibc's static-TLS offset of errno, checked per worker. */
extern JF_API long jf__errno_tp_offset;
extern JF_API int jf__errno_tp_ok;
JF_API int *jf__errno_location_slow(void);
JF_API long jf__errno_offset_init(void);

/* errno's offset from the thread pointer: the same on every thread (glibc static TLS). */
static inline long jf__errno_offset(void)
{
	long off = jf__errno_tp_offset;
	if (__builtin_expect(off == 0, 0))
		off = jf__errno_offset_init(); /* before the library's constructor ran */
	return off;
}

/** jf_errno_location() - address of errno on the kernel thread running the caller right now. */
static inline int *jf_errno_location(void)
{
	char *tp;
	if (__builtin_expect(!jf__errno_tp_ok, 0))
		return jf__errno_location_slow();
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
	return (int *)(void *)(tp + jf__errno_tp_offset);
}

#ifndef JIFFY_NO_ERRNO_MACRO
#undef errno
#if defined(__SEG_FS) && !defined(__cplusplus) && !defined(__STRICT_ANSI__) && \
	!defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) /* they cannot instrument %fs: accesses */
#define errno (*(int __seg_fs *)jf__errno_offset())
#else
/**
 * errno - the errno of the kernel thread running the caller at the moment of each access, never
 * one a migrated uthread left behind (see the top of this header; JIFFY_NO_ERRNO_MACRO keeps
 * glibc's). In GNU C it is an %fs-relative lvalue, elsewhere this function form.
 */
#define errno (*jf_errno_location())
#endif
#endif

/** Opaque handle of a uthread; valid until it has been joined, or until it exits if detached. */
typedef struct jf_thread jf_thread_t;

/** typedef jf_thread_fn - a uthread's function: takes the spawn's argument, returns its result. */
typedef void *(*jf_thread_fn)(void *arg);

/** JF_THREAD_NAME_MAX - bytes of a uthread's name that are kept, the terminating NUL included. */
#define JF_THREAD_NAME_MAX 24

/**
 * struct jf_sched_attr - what scheduling policies may look at (set at spawn, changeable later
 * with jf_thread_set_sched_attr()). Policies ignore the fields they do not use.
 * @worker:  preferred worker (-1: the policy decides).
 * @klass:   scheduling class (policy-defined, e.g. latency-critical = 0, best-effort = 1).
 * @type:    request type (policy-defined, e.g. for per-type queues).
 * @weight:  share for fair policies (0: the default, 1024).
 * @slo_ns:  latency objective for deadline-aware policies (0: none).
 */
struct jf_sched_attr {
	int32_t worker;
	int32_t klass;
	int32_t type;
	uint32_t weight;
	uint64_t slo_ns;
};

/**
 * struct jf_attr - spawn attributes; zero-initialised (or jf_attr_init()) means "defaults".
 * @stack_size: bytes (0: the runtime's configured default).
 * @name:       for diagnostics (stack overflow messages, stats); copied, truncated.
 * @detached:   start detached: resources are freed when it exits, it cannot be joined.
 * @sched:      policy attributes.
 * @pin:        nonzero: start pinned (jf_thread_pin(), jiffy/local.h), to @sched.worker, or when
 *              that is -1 to the spawning worker; every policy runs it only there until it
 *              calls jf_thread_unpin().
 */
struct jf_attr {
	size_t stack_size;
	const char *name;
	int detached;
	struct jf_sched_attr sched;
	int pin;
};

/** jf_attr_init() - the default attributes (worker -1, everything else 0). */
JF_API void jf_attr_init(struct jf_attr *attr);

/**
 * jf_run() - start the runtime, run @main_fn(@arg) as the first uthread, shut down.
 * @cfg:    configuration; NULL means defaults overridden by the JIFFY_* environment.
 * @main_fn: the first uthread's function.
 * @arg:    its argument.
 * @retval: receives @main_fn's return value (may be NULL).
 *
 * Returns when @main_fn returns (or calls jf_exit()). Shutdown stops every worker at its next
 * scheduling point: uthreads still runnable or blocked are discarded without running further, and
 * every stack and runtime structure is freed. Without preemption a uthread that never reaches a
 * scheduling point delays shutdown until it does. One runtime per process at a time.
 *
 * Return: 0; -EINVAL for an invalid configuration or unknown policy (a message on stderr names
 * it); -EBUSY if a runtime is already running; -ENOMEM or another -errno if start-up failed.
 */
JF_API int jf_run(const struct jf_config *cfg, jf_thread_fn main_fn, void *arg, void **retval);

/**
 * jf_spawn() - create a runnable uthread running @fn(@arg).
 * @out:  receives the handle (may be NULL only with attr->detached).
 * @attr: NULL for defaults.
 * @fn:   its function.
 * @arg:  the argument @fn gets.
 * May be called from a uthread. Return: 0; -EPERM outside the runtime; -EINVAL for a bad
 * attribute (stack smaller than 16 KiB, worker out of range); -ENOMEM.
 */
JF_API int jf_spawn(jf_thread_t **out, const struct jf_attr *attr, jf_thread_fn fn, void *arg);

/** jf_yield() - let other runnable uthreads run; returns at once if there are none. */
JF_API void jf_yield(void);

/** jf_exit() - end the calling uthread with @retval (like returning it from its function). */
JF_NORETURN JF_API void jf_exit(void *retval);

/**
 * jf_join() - wait for @t to end and free it; @retval receives its return value (may be NULL).
 * Blocks the calling uthread (not the worker). Return: 0; -EDEADLK joining oneself; -EINVAL if @t
 * is detached or already being joined; -EPERM outside the runtime.
 */
JF_API int jf_join(jf_thread_t *t, void **retval);

/**
 * jf_detach() - let @t free itself when it ends. Return: 0; -EINVAL if @t is already detached or
 * being joined.
 */
JF_API int jf_detach(jf_thread_t *t);

/** jf_self() - the calling uthread, or NULL when not called from a uthread. */
JF_API jf_thread_t *jf_self(void);

/** jf_thread_id() - a unique, never reused id (> 0) of @t. */
JF_API uint64_t jf_thread_id(const jf_thread_t *t);

/** jf_thread_name() - the name given at spawn ("" if none). */
JF_API const char *jf_thread_name(const jf_thread_t *t);

/**
 * jf_dump_threads() - write every uthread to @out: id, name, state (runnable, running, blocked,
 * exited), worker, class, how long it has been in that state, and where (what it blocks on, why
 * it was queued, or the worker running it). Callable from any thread, in or outside the runtime
 * (e.g. from a SIGQUIT-triggered uthread); the values are a recent view, not a consistent cut.
 * @out: a stdio stream.
 *
 * Return: 0; -EINVAL if @out is NULL; -ESRCH if no runtime runs.
 */
JF_API int jf_dump_threads(FILE *out);

/** jf_worker_id() - index of the worker running the caller, or -1 outside the runtime. */
JF_API int jf_worker_id(void);

/** jf_nworkers() - number of workers of the running runtime, 0 if none runs. */
JF_API int jf_nworkers(void);

/**
 * jf_thread_get_sched_attr() - the policy attributes of @t, the latest set, into @out.
 */
JF_API void jf_thread_get_sched_attr(const jf_thread_t *t, struct jf_sched_attr *out);
/**
 * jf_thread_set_sched_attr() - change the policy attributes of @t to @attr.
 * A change takes effect when @t is next handed to the policy (it is woken, yields, blocks or is
 * preempted; for the caller itself: from its next such point).
 * Return: 0; -EINVAL for a NULL argument, a worker out of range, or no runtime.
 */
JF_API int jf_thread_set_sched_attr(jf_thread_t *t, const struct jf_sched_attr *attr);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_THREAD_H */
