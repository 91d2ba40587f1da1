/*
 * sim/heap.h - the event queues: an indexed binary min-heap of a fixed set of event sources,
 * and a plain binary min-heap of timed items.
 *
 * Owns: ordering of events by time. struct sim_iheap holds one entry per source (each simulated
 * worker, and the arrival process): a source has at most one next event, whose time changes as
 * the source's state changes (sim_iheap_set: O(log n), in place). struct sim_theap holds any
 * number of (time, item) pairs (sleeping tasks' wake-ups).
 * Invariant: ties are broken by the source id (iheap) or insertion order (theap), so the order
 * of simultaneous events, and thus every run, is deterministic.
 */
#ifndef JIFFY_SIM_HEAP_H
#define JIFFY_SIM_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct sim_iheap_entry {
	uint64_t key; /* event time */
	int id;       /* its source */
};

struct sim_iheap {
	int n;                       /* entries in the heap */
	int cap;                     /* sources */
	struct sim_iheap_entry *heap; /* keys inline: a sift touches one array */
	int *pos;                    /* pos[id]: its index in heap[], or -1 when it has no event */
};

static inline bool sim_iheap_less(const struct sim_iheap_entry *a, const struct sim_iheap_entry *b)
{
	return a->key < b->key || (a->key == b->key && a->id < b->id);
}

/* Move the entry at @i up until its parent is not greater; positions kept. */
static inline void sim_iheap_up(struct sim_iheap *h, int i)
{
	struct sim_iheap_entry x = h->heap[i];

	while (i > 0) {
		int parent = (i - 1) / 2;
		if (!sim_iheap_less(&x, &h->heap[parent]))
			break;
		h->heap[i] = h->heap[parent];
		h->pos[h->heap[i].id] = i;
		i = parent;
	}
	h->heap[i] = x;
	h->pos[x.id] = i;
}

static inline void sim_iheap_down(struct sim_iheap *h, int i)
{
	struct sim_iheap_entry x = h->heap[i];

	for (;;) {
		int l = 2 * i + 1, r = l + 1, m;
		if (l >= h->n)
			break;
		m = r < h->n && sim_iheap_less(&h->heap[r], &h->heap[l]) ? r : l;
		if (!sim_iheap_less(&h->heap[m], &x))
			break;
		h->heap[i] = h->heap[m];
		h->pos[h->heap[i].id] = i;
		i = m;
	}
	h->heap[i] = x;
	h->pos[x.id] = i;
}

static inline int sim_iheap_init(struct sim_iheap *h, int sources)
{
	h->n = 0;
	h->cap = sources;
	h->heap = malloc(sizeof(*h->heap) * (size_t)sources);
	h->pos = malloc(sizeof(int) * (size_t)sources);
	if (!h->heap || !h->pos)
		return -1;
	for (int i = 0; i < sources; i++)
		h->pos[i] = -1;
	return 0;
}

static inline void sim_iheap_free(struct sim_iheap *h)
{
	free(h->heap);
	free(h->pos);
}

/* Source @id's next event is at @t (UINT64_MAX: it has none). */
static inline void sim_iheap_set(struct sim_iheap *h, int id, uint64_t t)
{
	int i = h->pos[id];

	if (t == UINT64_MAX) {
		if (i < 0)
			return;
		h->pos[id] = -1;
		if (i != --h->n) {
			int moved = h->heap[h->n].id; /* the last entry fills the hole */
			h->heap[i] = h->heap[h->n];
			h->pos[moved] = i;
			sim_iheap_up(h, i);
			sim_iheap_down(h, h->pos[moved]);
		}
		return;
	}
	if (i < 0) {
		i = h->n++;
		h->heap[i] = (struct sim_iheap_entry){t, id};
		sim_iheap_up(h, i);
		return;
	}
	if (t < h->heap[i].key) {
		h->heap[i].key = t;
		sim_iheap_up(h, i);
	} else if (t > h->heap[i].key) {
		h->heap[i].key = t;
		sim_iheap_down(h, i);
	}
}

/* The source with the earliest event (and its time in *@t), or -1. */
static inline int sim_iheap_min(const struct sim_iheap *h, uint64_t *t)
{
	if (h->n == 0) {
		*t = UINT64_MAX;
		return -1;
	}
	*t = h->heap[0].key;
	return h->heap[0].id;
}

struct sim_theap_item {
	uint64_t t;
	uint64_t seq;
	void *item;
};

struct sim_theap {
	size_t n, cap;
	uint64_t seq;
	struct sim_theap_item *a;
};

static inline bool sim_theap_less(const struct sim_theap_item *x, const struct sim_theap_item *y)
{
	return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static inline int sim_theap_push(struct sim_theap *h, uint64_t t, void *item)
{
	size_t i;

	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 256;
		struct sim_theap_item *a = realloc(h->a, nc * sizeof(*a));
		if (!a)
			return -1;
		h->a = a;
		h->cap = nc;
	}
	i = h->n++;
	h->a[i] = (struct sim_theap_item){t, h->seq++, item};
	while (i > 0 && sim_theap_less(&h->a[i], &h->a[(i - 1) / 2])) {
		struct sim_theap_item x = h->a[i];
		h->a[i] = h->a[(i - 1) / 2];
		h->a[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
	return 0;
}

static inline uint64_t sim_theap_min(const struct sim_theap *h)
{
	return h->n ? h->a[0].t : UINT64_MAX;
}

static inline void *sim_theap_pop(struct sim_theap *h)
{
	void *item = h->a[0].item;
	size_t i = 0;

	h->a[0] = h->a[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && sim_theap_less(&h->a[l], &h->a[m]))
			m = l;
		if (r < h->n && sim_theap_less(&h->a[r], &h->a[m]))
			m = r;
		if (m == i)
			return item;
		struct sim_theap_item x = h->a[i];
		h->a[i] = h->a[m];
		h->a[m] = x;
		i = m;
	}
}

#endif /* JIFFY_SIM_HEAP_H */
