/*
 * jiffy/blocking.h - the blocking offload: run blocking code on a small pool of kernel threads
 * while the calling uthread is parked (Tokio's spawn_blocking), and what is built on it:
 * regular-file I/O and name resolution for uthreads.
 *
 * Owns: the public API of src/blocking/blocking.c. A worker never waits in the kernel for these
 * calls: the call runs on a pool thread (a plain kernel thread, not a worker), and the uthread
 * waits like any other blocked uthread, so the other uthreads of its worker keep running (the
 * file reads first ask the page cache with a read that cannot wait, on the worker).
 *
 * The pool (docs/blocking.md): at most jf_config.blocking_threads threads (JIFFY_BLOCKING_THREADS,
 * default 8), started when a call finds none idle, exiting after jf_config.blocking_idle_ns
 * without work (JIFFY_BLOCKING_IDLE_MS, default 10 s), all joined when jf_run() returns. Calls
 * wait for a thread in a FIFO queue of at most jf_config.blocking_queue entries
 * (JIFFY_BLOCKING_QUEUE, default 256); beyond it jf_run_blocking() parks the caller until there
 * is room (a uthread wait, never its worker's) and jf_try_run_blocking() fails with -EAGAIN.
 *
 * Cancellation (jf_cancel(), jiffy/pfn.h): a call cancelled before its function started returns
 * -ECANCELED and the function never runs. Once the function runs it cannot be interrupted: the
 * uthread waits for it to return and the call returns 0 with its result; the cancellation stays
 * pending for the uthread's next cancellation point. So @arg and @result may live on the caller's
 * stack: no pool thread touches them after the call returned.
 */
#ifndef JIFFY_BLOCKING_H
#define JIFFY_BLOCKING_H

#include <jiffy/export.h>

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct addrinfo; /* <netdb.h>, which strict ISO C modes do not let define it */

/**
 * jf_run_blocking() - run @fn(@arg) on a pool thread; the calling uthread waits for it.
 * @fn:     the blocking function. It runs on a plain kernel thread: it may block in the kernel
 *          as long as it likes, but must not call the uthread API (jf_sleep_ns(), jf_mutex_lock(),
 *          ... fail there with -EPERM or die, as on any thread outside the runtime).
 * @arg:    passed to @fn.
 * @result: if not NULL, receives @fn's return value.
 *
 * The caller is parked (its worker runs other uthreads) until @fn has returned; when the queue is
 * full it first waits, parked too, for room. Jobs start in submission order.
 *
 * Return: 0 when @fn ran (its result in @result); -ECANCELED if the uthread was cancelled before
 * @fn started (it then never runs; a cancellation that comes while @fn runs is left pending and
 * the call returns 0 when @fn returns); -EINVAL if @fn is NULL; -EPERM outside a uthread
 * (before jf_run(), on a plain pthread, or inside another call's @fn); -EAGAIN if no pool thread
 * exists and none could be started; -ENOMEM if the pool's first call could not allocate its
 * thread table; -errno if the runtime's wake-up channel (an eventfd) could not be made.
 */
JF_API int jf_run_blocking(void *(*fn)(void *), void *arg, void **result);

/**
 * jf_try_run_blocking() - jf_run_blocking(), but fail at once instead of waiting for room in a
 * full queue.
 * @fn:     as for jf_run_blocking().
 * @arg:    passed to @fn.
 * @result: if not NULL, receives @fn's return value.
 *
 * The caller still waits for @fn to return once it was admitted: only the wait for room is
 * skipped, so a server can shed load when the pool is saturated.
 *
 * Return: as jf_run_blocking(), and -EAGAIN when jf_config.blocking_queue calls already wait for
 * a thread (@fn did not run).
 */
JF_API int jf_try_run_blocking(void *(*fn)(void *), void *arg, void **result);

/**
 * struct jf_blocking_stats - the pool's counters (jf_stats_blocking()).
 * @submitted:       calls accepted (each runs, or ends cancelled before its function started).
 * @completed:       functions that returned.
 * @cancelled:       calls ended by jf_cancel() before their function started.
 * @rejected:        jf_try_run_blocking() calls refused with -EAGAIN (queue full).
 * @queued:          calls in the queue now, waiting for a thread.
 * @queued_max:      the most ever in the queue at once (never above @queue_cap).
 * @waiting:         callers parked now until the full queue has room.
 * @waiting_max:     the most ever parked for room at once.
 * @threads:         pool threads alive now.
 * @threads_max:     the most ever alive at once (never above @max_threads).
 * @threads_started: pool threads started so far (more than @threads_max when idle ones exited).
 * @queue_ns:        total time calls spent from submission until their function started (waiting
 *                   for room included); divide by @completed for the mean.
 * @queue_ns_max:    the longest such time.
 * @run_ns:          total time spent in the functions.
 * @max_threads:     the pool's bound (jf_config.blocking_threads).
 * @queue_cap:       the queue's bound (jf_config.blocking_queue).
 * @nowait_reads:    jf_file_read()/jf_file_pread() calls the page cache answered on the worker
 *                   without the pool (preadv2 with RWF_NOWAIT); counted for the process, not per
 *                   runtime.
 */
struct jf_blocking_stats {
	uint64_t submitted;
	uint64_t completed;
	uint64_t cancelled;
	uint64_t rejected;
	uint64_t queued;
	uint64_t queued_max;
	uint64_t waiting;
	uint64_t waiting_max;
	uint64_t threads;
	uint64_t threads_max;
	uint64_t threads_started;
	uint64_t queue_ns;
	uint64_t queue_ns_max;
	uint64_t run_ns;
	uint64_t max_threads;
	uint64_t queue_cap;
	uint64_t nowait_reads;
};

/**
 * jf_stats_blocking() - the blocking pool's counters: the running runtime's, or after jf_run()
 * returned, those of the runtime that ran last (then @threads is 0: its threads were joined).
 * @out: receives them (all zero if no runtime has used the pool yet).
 *
 * Safe from any thread; the values are read under the pool's lock (a consistent snapshot).
 * Return: 0, or -EINVAL if @out is NULL.
 */
JF_API int jf_stats_blocking(struct jf_blocking_stats *out);

/*
 * Regular files. Conventions as in jiffy/net.h: POSIX signatures, -1 with errno on failure
 * (ECANCELED when the uthread was cancelled before the call started). Each call runs on the
 * pool (one jf_run_blocking()), but for the reads' page-cache fast path; outside a uthread (before jf_run(), on a plain pthread, inside a
 * jf_run_blocking() function) the system call is made directly. The descriptors are ordinary
 * ones: never register them with the netpoller (jf_fd_register() refuses regular files).
 */

/**
 * jf_file_open() - open(2) on a pool thread (path lookup and the open may wait for the disk).
 * @path:  the file.
 * @flags: open(2)'s flags; O_CLOEXEC is not added for you.
 * @...:   the mode (mode_t) when @flags has O_CREAT or O_TMPFILE.
 * Return: a descriptor, or -1 with errno.
 */
JF_API int jf_file_open(const char *path, int flags, ...);
/**
 * jf_file_read() - read(2): from the page cache on the worker when it can, else on a pool thread.
 *
 * First (unless @fd is O_DIRECT) preadv2(2) with RWF_NOWAIT on the caller's worker, which returns only what the page
 * cache holds and never waits (for the disk, nor for a pipe's writer); what it could not read of
 * a regular file is read on a pool thread (a pipe's or socket's short read is returned as
 * read(2) returns it). A read answered at once does not wait, so it is no cancellation point.
 * @fd:  an open file.
 * @buf: receives the data.
 * @len: at most this many bytes.
 * Return: bytes read (0 at the end of the file), or -1 with errno.
 */
JF_API ssize_t jf_file_read(int fd, void *buf, size_t len);
/**
 * jf_file_write() - write(2) on a pool thread.
 * @fd:  an open file.
 * @buf: the data.
 * @len: its length.
 * Return: bytes written, or -1 with errno.
 */
JF_API ssize_t jf_file_write(int fd, const void *buf, size_t len);
/**
 * jf_file_pread() - pread(2): from the page cache on the worker when it can, else on a pool
 * thread (as jf_file_read()).
 * @fd:  an open file.
 * @buf: receives the data.
 * @len: at most this many bytes.
 * @off: the file offset to read at.
 * Return: bytes read (0 at the end of the file), or -1 with errno.
 */
JF_API ssize_t jf_file_pread(int fd, void *buf, size_t len, off_t off);
/**
 * jf_file_pwrite() - pwrite(2) on a pool thread.
 * @fd:  an open file.
 * @buf: the data.
 * @len: its length.
 * @off: the file offset to write at.
 * Return: bytes written, or -1 with errno.
 */
JF_API ssize_t jf_file_pwrite(int fd, const void *buf, size_t len, off_t off);
/**
 * jf_file_fsync() - fsync(2) on a pool thread.
 * @fd: an open file.
 * Return: 0, or -1 with errno.
 */
JF_API int jf_file_fsync(int fd);
/**
 * jf_file_close() - close(2) on a pool thread (closing the last reference may flush, e.g. on NFS).
 * @fd: an open file.
 * Return: 0, or -1 with errno (the descriptor is closed anyway, as with close(2)).
 */
JF_API int jf_file_close(int fd);

/**
 * jf_getaddrinfo() - getaddrinfo(3) on a pool thread (it may block on DNS for seconds).
 * @node:    host name or address (may be NULL if @service is not).
 * @service: service name or port (may be NULL if @node is not).
 * @hints:   as for getaddrinfo(3), or NULL.
 * @res:     receives the list; free it with jf_freeaddrinfo() (or freeaddrinfo()).
 * Return: 0 or one of getaddrinfo's EAI_* codes; EAI_SYSTEM with errno ECANCELED when the uthread
 * was cancelled before the lookup started, EAI_SYSTEM with errno EINVAL when @res is NULL.
 */
JF_API int jf_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
			  struct addrinfo **res);
/**
 * jf_freeaddrinfo() - free a list from jf_getaddrinfo(): freeaddrinfo(3), which never blocks.
 * @res: the list (NULL is allowed).
 */
JF_API void jf_freeaddrinfo(struct addrinfo *res);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_BLOCKING_H */
