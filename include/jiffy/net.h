/*
 * jiffy/net.h - the netpoller: blocking-style socket calls for uthreads.
 *
 * Owns: the public socket API. Every descriptor created or adopted here is non-blocking and
 * registered (edge-triggered) with the runtime's epoll instance. A call that would block parks
 * the calling uthread, not its worker, until the descriptor is ready, the timeout passes, or the
 * descriptor is closed with jf_close(). Idle workers wait in epoll; busy workers poll it at
 * scheduling points (including preemptions) while a uthread waits on a descriptor, so a new
 * request is noticed behind preempted work (Aspen §3.1.4).
 *
 * Conventions, as in POSIX: on failure -1 (or NULL) is returned and errno is set (ECANCELED once
 * the calling uthread was cancelled: jf_cancel(), jiffy/pfn.h); nothing here
 * crashes on a bad descriptor or argument. @timeout_ns < 0 (JF_NO_TIMEOUT) waits forever, 0 never
 * waits (EAGAIN), > 0 waits at most that long (then ETIMEDOUT). Called outside a uthread (e.g.
 * before jf_run() or from a plain pthread) the calls still work, waiting in poll(2).
 *
 * Several uthreads may wait on one descriptor in the same direction (e.g. several receivers on
 * one UDP socket): a readiness edge wakes all of them and those that find nothing wait again.
 */
#ifndef JIFFY_NET_H
#define JIFFY_NET_H

#include <jiffy/export.h>

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** JF_NO_TIMEOUT - a timeout_ns that waits for ever (every value < 0 does). */
#define JF_NO_TIMEOUT ((int64_t)-1)

/** jf_socket() - socket(2), made non-blocking and close-on-exec, registered with the netpoller. */
JF_API int jf_socket(int domain, int type, int protocol);
/**
 * jf_fd_register() - adopt a descriptor made elsewhere (pipe, eventfd, accepted by hand): make
 * @fd non-blocking and register it.
 * Return: 0, or -1 with errno (EBADF, EEXIST if already registered, EPERM for regular files
 * and directories, which epoll cannot watch: read and write those with jf_file_read() and the
 * other jf_file_* calls of jiffy/blocking.h, which run on the blocking pool).
 */
JF_API int jf_fd_register(int fd);
/**
 * jf_fd_wait() - wait until @fd is readable (@events = POLLIN) and/or writable (POLLOUT), at
 * most @timeout_ns.
 * Return: the ready subset of @events (POLLIN/POLLOUT, POLLHUP/POLLERR folded into both), or -1
 * with errno.
 */
JF_API int jf_fd_wait(int fd, int events, int64_t timeout_ns);
/** jf_close() - deregister @fd and close(2) it. Uthreads waiting on @fd wake with EBADF. */
JF_API int jf_close(int fd);

/** jf_bind() - bind(2), which never blocks: here so that a server needs only this header. */
JF_API int jf_bind(int fd, const struct sockaddr *addr, socklen_t len);
/** jf_listen() - listen(2), which never blocks: here so that a server needs only this header. */
JF_API int jf_listen(int fd, int backlog);
/**
 * jf_accept() - accept4(2), waiting at most @timeout_ns for a connection: the new descriptor
 * comes back non-blocking, close-on-exec and registered.
 */
JF_API int jf_accept(int fd, struct sockaddr *addr, socklen_t *len, int64_t timeout_ns);
/**
 * jf_connect() - connect(2): waits at most @timeout_ns for a non-blocking connect to finish;
 * its error comes back in errno.
 */
JF_API int jf_connect(int fd, const struct sockaddr *addr, socklen_t len, int64_t timeout_ns);

/** jf_read() - read(2), waiting at most @timeout_ns for @fd to have data. */
JF_API ssize_t jf_read(int fd, void *buf, size_t len, int64_t timeout_ns);
/**
 * jf_write() - write(2) on a stream: waits until all @len bytes are written, or an error or the
 * timeout; then the bytes already written are returned if any, else -1.
 */
JF_API ssize_t jf_write(int fd, const void *buf, size_t len, int64_t timeout_ns);
/** jf_recv() - recv(2), waiting at most @timeout_ns for @fd to have data. */
JF_API ssize_t jf_recv(int fd, void *buf, size_t len, int flags, int64_t timeout_ns);
/** jf_send() - send(2) with @flags, on a stream: all @len bytes, as jf_write() writes them. */
JF_API ssize_t jf_send(int fd, const void *buf, size_t len, int flags, int64_t timeout_ns);
/** jf_recvfrom() - recvfrom(2), waiting at most @timeout_ns for a datagram (or data). */
JF_API ssize_t jf_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
		    socklen_t *srclen, int64_t timeout_ns);
/** jf_sendto() - sendto(2), waiting at most @timeout_ns for room in the socket's buffer. */
JF_API ssize_t jf_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *dst,
		  socklen_t dstlen, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* JIFFY_NET_H */
