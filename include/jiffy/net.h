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
 * Conventions, as in POSIX: on failure -1 (or NULL) is returned and errno is set; nothing here
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

#define JF_NO_TIMEOUT ((int64_t)-1)

/* socket(2), made non-blocking and close-on-exec, registered with the netpoller. */
JF_API int jf_socket(int domain, int type, int protocol);
/* Adopt a descriptor made elsewhere (pipe, eventfd, accepted by hand): make it non-blocking and
 * register it. Return 0, or -1 with errno (EBADF, EEXIST if already registered, EPERM for
 * regular files, which epoll cannot watch). */
JF_API int jf_fd_register(int fd);
/* Wait until @fd is readable (@events = POLLIN) and/or writable (POLLOUT). Return the ready
 * subset of @events (POLLIN/POLLOUT, POLLHUP/POLLERR folded into both), or -1 with errno. */
JF_API int jf_fd_wait(int fd, int events, int64_t timeout_ns);
/* Deregister and close(2). Uthreads waiting on @fd wake with EBADF. */
JF_API int jf_close(int fd);

/* bind(2) and listen(2) never block; these are here so a server needs only this header. */
JF_API int jf_bind(int fd, const struct sockaddr *addr, socklen_t len);
JF_API int jf_listen(int fd, int backlog);
/* accept4(2): the new descriptor comes back non-blocking, close-on-exec and registered. */
JF_API int jf_accept(int fd, struct sockaddr *addr, socklen_t *len, int64_t timeout_ns);
/* connect(2): waits for a non-blocking connect to finish; its error comes back in errno. */
JF_API int jf_connect(int fd, const struct sockaddr *addr, socklen_t len, int64_t timeout_ns);

JF_API ssize_t jf_read(int fd, void *buf, size_t len, int64_t timeout_ns);
/* write(2)/send(2) on a stream: waits until all @len bytes are written (or error/timeout; then
 * the bytes already written are returned if any, else -1). */
JF_API ssize_t jf_write(int fd, const void *buf, size_t len, int64_t timeout_ns);
JF_API ssize_t jf_recv(int fd, void *buf, size_t len, int flags, int64_t timeout_ns);
JF_API ssize_t jf_send(int fd, const void *buf, size_t len, int flags, int64_t timeout_ns);
JF_API ssize_t jf_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
		    socklen_t *srclen, int64_t timeout_ns);
JF_API ssize_t jf_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *dst,
		  socklen_t dstlen, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* JIFFY_NET_H */
