/*
 * jiffy/chan.h - channels between uthreads (Go's chan) and a select over several channel
 * operations with a deadline (Go's select, libdill's choose).
 *
 * Owns: jf_chan_t and the jf_chan_* API. A channel carries fixed-size elements (copied in and
 * out, @elem_size bytes each) between any number of senders and receivers, unbuffered (a send
 * waits for a receiver and hands the value straight over), bounded or unbounded. Exactness: a
 * value sent successfully is received exactly once; a send that fails (-ETIMEDOUT, -ECANCELED,
 * -EPIPE, -EAGAIN, a select arm that was not chosen) never delivers its value, then or later.
 * docs/channels.md has the semantics, the argument and the costs.
 *
 * Blocking calls must be made from uthreads (outside one they end the process with a message
 * naming the function, like jf_mutex_lock()); jf_chan_trysend(), jf_chan_tryrecv() and
 * jf_chan_close() return -EPERM there; jf_chan_create(), jf_chan_destroy() and jf_chan_len()
 * work from any thread.
 */
#ifndef JIFFY_CHAN_H
#define JIFFY_CHAN_H

#include <jiffy/export.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** typedef jf_chan_t - a channel (opaque, created by jf_chan_create()). */
typedef struct jf_chan jf_chan_t;

/** JF_CHAN_UNBOUNDED - jf_chan_create()'s capacity for a buffer that grows without limit. */
#define JF_CHAN_UNBOUNDED ((size_t)-1)
/** JF_CHAN_ELEM_MAX - the largest element size jf_chan_create() accepts (bytes). */
#define JF_CHAN_ELEM_MAX ((size_t)65536)
/** JF_CHAN_SELECT_MAX - the most operations one jf_chan_select() takes. */
#define JF_CHAN_SELECT_MAX ((size_t)1024)

/**
 * jf_chan_create() - a new channel of @elem_size-byte elements in *@out.
 * @out: receives the channel.
 * @elem_size: bytes per element (1 to JF_CHAN_ELEM_MAX); values are copied in and out.
 * @capacity: 0 for unbuffered (each send meets a receiver, like Go's make(chan T)), n for a
 * buffer of n elements (allocated now), JF_CHAN_UNBOUNDED for a buffer that grows as needed.
 * Return: 0; -EINVAL for a NULL @out, @elem_size 0 or above JF_CHAN_ELEM_MAX, or a buffer whose
 * size overflows; -ENOMEM.
 */
JF_API int jf_chan_create(jf_chan_t **out, size_t elem_size, size_t capacity);

/**
 * jf_chan_destroy() - free @c and the elements still buffered in it (NULL: nothing to do).
 * It must not be used again, and no call on it may be in progress (a uthread that returned from
 * a blocking call on @c is no longer using it).
 * Return: 0; -EBUSY (nothing freed) while a uthread waits on @c, in a send, receive or select.
 */
JF_API int jf_chan_destroy(jf_chan_t *c);

/**
 * jf_chan_send() - copy *@elem into @c, waiting while it is full (unbuffered: until a receiver
 * took it). Return: 0 when delivered; -EPIPE if @c is or becomes closed before delivery (the
 * value is not delivered); -ECANCELED if the caller was cancelled (jf_cancel(), jiffy/pfn.h;
 * not delivered); -ENOMEM if an unbounded buffer could not grow; -EINVAL for NULL arguments.
 */
JF_API int jf_chan_send(jf_chan_t *c, const void *elem);

/**
 * jf_chan_send_until() - jf_chan_send() that gives up when jf_now_ns() reaches @deadline_ns
 * (absolute; UINT64_MAX: never). A send that can complete at once does, whatever the deadline.
 * Return: as jf_chan_send(), or -ETIMEDOUT: the value was not delivered and never will be.
 */
JF_API int jf_chan_send_until(jf_chan_t *c, const void *elem, uint64_t deadline_ns);

/**
 * jf_chan_trysend() - send *@elem only if that needs no wait (a buffer slot is free, or a
 * receiver is waiting). Return: 0; -EAGAIN if it would block (not delivered); -EPIPE if closed;
 * -ENOMEM; -EINVAL; -EPERM outside a uthread.
 */
JF_API int jf_chan_trysend(jf_chan_t *c, const void *elem);

/**
 * jf_chan_recv() - take the oldest value from @c into *@elem, waiting for one.
 * Return: 0; -EPIPE when @c is closed and no value is left (values buffered before the close are
 * still received, like Go; *@elem is left unchanged); -ECANCELED (cancelled, nothing taken);
 * -EINVAL for NULL arguments.
 */
JF_API int jf_chan_recv(jf_chan_t *c, void *elem);

/**
 * jf_chan_recv_until() - jf_chan_recv() that gives up at @deadline_ns (absolute jf_now_ns();
 * UINT64_MAX: never). Return: as jf_chan_recv(), or -ETIMEDOUT (nothing was taken).
 */
JF_API int jf_chan_recv_until(jf_chan_t *c, void *elem, uint64_t deadline_ns);

/**
 * jf_chan_tryrecv() - receive only if a value is there now (buffered, or a sender waiting).
 * Return: 0; -EAGAIN if none; -EPIPE if closed and drained; -EINVAL; -EPERM outside a uthread.
 */
JF_API int jf_chan_tryrecv(jf_chan_t *c, void *elem);

/**
 * jf_chan_close() - close @c: no more sends. Every waiting sender fails with -EPIPE (its value is
 * not delivered); receivers first get the values still buffered, then -EPIPE.
 * Return: 0; -EPIPE if @c was already closed; -EINVAL for NULL; -EPERM outside a uthread.
 */
JF_API int jf_chan_close(jf_chan_t *c);

/** jf_chan_len() - the number of values buffered in @c now (0 for NULL or unbuffered). */
JF_API size_t jf_chan_len(jf_chan_t *c);

/** enum - jf_chan_op.op: the operation a select arm does. */
enum { JF_CHAN_OP_SEND = 1, JF_CHAN_OP_RECV = 2 };

/**
 * struct jf_chan_op - one arm of jf_chan_select().
 * @chan: the channel; NULL makes the arm one that never completes (Go's nil channel).
 * @op: JF_CHAN_OP_SEND (sends *@elem) or JF_CHAN_OP_RECV (receives into *@elem).
 * @elem: the value to send, or where the received value goes.
 * @result: set for the chosen arm only: 0, or -EPIPE (closed channel), or -ENOMEM (an unbounded
 * buffer could not grow; nothing sent).
 */
struct jf_chan_op {
	jf_chan_t *chan;
	int op;
	void *elem;
	int result;
};

/**
 * jf_chan_select() - wait until one of @ops (@nops arms) can complete, complete exactly that one
 * and return its index. A closed channel's arm completes at once with result -EPIPE (after a
 * receive arm drained it). When several are ready one is chosen at random. Arms not chosen have
 * no effect: their values are neither sent nor received.
 * @ops: the arms; the chosen one's @result is set, the others are not written.
 * @nops: how many (0 to JF_CHAN_SELECT_MAX).
 * @deadline_ns: absolute jf_now_ns() time to give up; 0 polls (never waits); UINT64_MAX waits
 * without limit.
 * Return: the index of the completed arm; -EAGAIN (poll, nothing ready); -ETIMEDOUT; -ECANCELED
 * (jf_cancel(); nothing completed); -EINVAL for NULL @ops with @nops > 0, more than
 * JF_CHAN_SELECT_MAX arms, a bad @op or NULL @elem in an arm with a channel, or no arm with a
 * channel and no deadline (it could never return); -ENOMEM.
 */
JF_API int jf_chan_select(struct jf_chan_op *ops, size_t nops, uint64_t deadline_ns);

#ifdef __cplusplus
}
#endif
#endif /* JIFFY_CHAN_H */
