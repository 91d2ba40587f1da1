/*
 * dlist.h - the doubly linked list of the runtime's queues that are not policy queues, written
 * once: a list is any struct with @head and @tail, a node any struct with @prev and @next (the
 * node's type, so the fields keep their types and a node may use @next for another chain while
 * off the list). Not thread-safe: the caller holds the list's lock.
 *
 * Owns: JF_DLIST_PUSH_TAIL and JF_DLIST_REMOVE (used by the blocking pool's job lists and the
 * channels' wait queues).
 */
#ifndef JIFFY_COMMON_DLIST_H
#define JIFFY_COMMON_DLIST_H

#include <stddef.h>

/* Append @n (not on any list) to @l. */
#define JF_DLIST_PUSH_TAIL(l, n)                                                                   \
	do {                                                                                       \
		(n)->next = NULL;                                                                  \
		(n)->prev = (l)->tail;                                                             \
		if ((l)->tail)                                                                     \
			(l)->tail->next = (n);                                                     \
		else                                                                               \
			(l)->head = (n);                                                           \
		(l)->tail = (n);                                                                   \
	} while (0)

/* Unlink @n from @l (it is on @l); its links are NULL afterwards. */
#define JF_DLIST_REMOVE(l, n)                                                                      \
	do {                                                                                       \
		if ((n)->prev)                                                                     \
			(n)->prev->next = (n)->next;                                               \
		else                                                                               \
			(l)->head = (n)->next;                                                     \
		if ((n)->next)                                                                     \
			(n)->next->prev = (n)->prev;                                               \
		else                                                                               \
			(l)->tail = (n)->prev;                                                     \
		(n)->prev = (n)->next = NULL;                                                      \
	} while (0)

#endif /* JIFFY_COMMON_DLIST_H */
