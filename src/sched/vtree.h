/*
 * vtree.h - an intrusive treap of tasks ordered by a virtual time, for the fair policies (cfs,
 * eevdf).
 *
 * Owns: a binary search tree ordered by @key (a virtual time; compared by signed difference, so
 * it may wrap), balanced by random heap-ordered priorities (a treap, Seidel & Aragon 1996),
 * each node augmented with the smallest @val in its subtree (EEVDF's earliest deadline; cfs does
 * not use it). Insert and remove are O(log n) expected, iterative (ops run on small uthread
 * stacks), and allocate nothing: the node is the first bytes of jf_task.policy_data. Equal keys
 * keep their insertion order (a new one goes after the others).
 * Invariants: the caller serializes all access to one tree (its run-queue lock); a task is in at
 * most one tree; @min_val is valid only while the task is in a tree (@aux shares its storage and
 * is the policy's while the task is in none).
 */
#ifndef JIFFY_VTREE_H
#define JIFFY_VTREE_H

#include <stdbool.h>
#include <stdint.h>

#include <jiffy/policy.h>

struct vt_node {
	struct jf_task *left, *right, *parent;
	uint64_t key;
	uint64_t val;
	union {
		uint64_t min_val; /* in a tree: smallest val in this subtree */
		int64_t aux;      /* in no tree: free for the policy */
	};
};

static inline struct vt_node *vt_node(struct jf_task *t)
{
	return (struct vt_node *)(void *)t->policy_data;
}

/* a < b for virtual times that may wrap around. */
static inline bool vt_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* A fixed pseudo-random priority per task (the task's address and id hashed; nothing stored). */
static inline uint64_t vt_prio(const struct jf_task *t)
{
	uint64_t x = (uint64_t)(uintptr_t)t ^ (t->id * 0x9E3779B97F4A7C15ull);
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull; /* splitmix64's finalizer */
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static inline void vt_update(struct jf_task *t)
{
	struct vt_node *n = vt_node(t);
	uint64_t m = n->val;

	if (n->left && vt_before(vt_node(n->left)->min_val, m))
		m = vt_node(n->left)->min_val;
	if (n->right && vt_before(vt_node(n->right)->min_val, m))
		m = vt_node(n->right)->min_val;
	n->min_val = m;
}

static inline void vt_replace_child(struct jf_task **root, struct jf_task *parent,
				    struct jf_task *old, struct jf_task *new)
{
	if (!parent)
		*root = new;
	else if (vt_node(parent)->left == old)
		vt_node(parent)->left = new;
	else
		vt_node(parent)->right = new;
}

/* Rotate @x above its parent. The subtree keeps its set of nodes: only these two change. */
static inline void vt_rotate_up(struct jf_task **root, struct jf_task *x)
{
	struct vt_node *nx = vt_node(x);
	struct jf_task *p = nx->parent;
	struct vt_node *np = vt_node(p);

	if (np->left == x) {
		np->left = nx->right;
		if (nx->right)
			vt_node(nx->right)->parent = p;
		nx->right = p;
	} else {
		np->right = nx->left;
		if (nx->left)
			vt_node(nx->left)->parent = p;
		nx->left = p;
	}
	nx->parent = np->parent;
	vt_replace_child(root, np->parent, p, x);
	np->parent = x;
	vt_update(p);
	vt_update(x);
}

/* Insert @t, whose key and val are set. */
static inline void vt_insert(struct jf_task **root, struct jf_task *t)
{
	struct vt_node *n = vt_node(t);
	struct jf_task *parent = NULL, **link = root;
	uint64_t prio = vt_prio(t);

	while (*link) {
		parent = *link;
		link = vt_before(n->key, vt_node(parent)->key) ? &vt_node(parent)->left
							       : &vt_node(parent)->right;
	}
	*link = t;
	n->parent = parent;
	n->left = n->right = NULL;
	n->min_val = n->val;
	for (struct jf_task *q = parent; q && vt_before(n->val, vt_node(q)->min_val);
	     q = vt_node(q)->parent)
		vt_node(q)->min_val = n->val;
	while (n->parent && vt_prio(n->parent) < prio)
		vt_rotate_up(root, t);
}

/* Remove @t: rotate it down to a leaf's parent, splice it out, fix the minima above. */
static inline void vt_remove(struct jf_task **root, struct jf_task *t)
{
	struct vt_node *n = vt_node(t);
	struct jf_task *child, *parent;

	while (n->left && n->right)
		vt_rotate_up(root, vt_prio(n->left) > vt_prio(n->right) ? n->left : n->right);
	child = n->left ? n->left : n->right;
	parent = n->parent;
	vt_replace_child(root, parent, t, child);
	if (child)
		vt_node(child)->parent = parent;
	for (struct jf_task *q = parent; q; q = vt_node(q)->parent)
		vt_update(q);
	n->left = n->right = n->parent = NULL;
}

/* The task with the smallest key (the first inserted among equals), or NULL. */
static inline struct jf_task *vt_first(struct jf_task *root)
{
	while (root && vt_node(root)->left)
		root = vt_node(root)->left;
	return root;
}

/* The task with the largest key, or NULL. */
static inline struct jf_task *vt_last(struct jf_task *root)
{
	while (root && vt_node(root)->right)
		root = vt_node(root)->right;
	return root;
}

/* The task after @t in key order, or NULL. */
static inline struct jf_task *vt_next(struct jf_task *t)
{
	struct jf_task *p;

	if (vt_node(t)->right)
		return vt_first(vt_node(t)->right);
	for (p = vt_node(t)->parent; p && vt_node(p)->right == t; p = vt_node(t)->parent)
		t = p;
	return p;
}

/* The first task in key order from @t on (@t included) that is not pinned (jf_task_pin()), or
 * NULL: what another worker may take. O(pinned tasks passed). */
static inline struct jf_task *vt_unpinned_from(struct jf_task *t)
{
	while (t && t->pinned)
		t = vt_next(t);
	return t;
}

#endif /* JIFFY_VTREE_H */
