/*
 * local.c - uthread-local storage (keys with destructors, fast slots) and pinning a uthread to
 * its worker (include/jiffy/local.h).
 *
 * Owns: the process-wide key table, each uthread's key table (struct jf_local_table, allocated
 * at its first jf_setspecific()), the destructor rounds at a uthread's end, the per-worker
 * pointer to the running uthread's fast slots (jf_local_cur) and the pin API. The policies keep
 * pinned tasks on their worker (include/jiffy/policy.h, src/sched/); this file only sets
 * struct jf_task.pinned and pin_worker, and only while the uthread runs (it is in no queue then:
 * a policy may trust them from enqueue to pick).
 *
 * Keys: slot i of the process-wide table has a sequence number, odd while a key uses the slot;
 * a key is (sequence << 8) | i, so a deleted key, and any stale value stored under it, never
 * matches the slot's next key. Creation and deletion are one compare-and-swap each (no lock:
 * callable in and outside the runtime). A uthread's entry remembers the sequence it was set under,
 * so a value is visible only through the live key it was set with.
 *
 * Fast slots: four words in struct jf_thread. prepare_run() (thread.c) stores the incoming
 * uthread's slots in jf_local_cur, an initial-exec TLS variable of the worker's kernel thread;
 * jiffy/local.h reads it with one %fs-relative load, which a preemption or migration cannot
 * split (the pointer read is the reader's own uthread's, whichever worker it runs on). The worker
 * clears it when it stops (jf_set_this_worker(NULL)), so a thread that is no longer a worker sees
 * NULL. Outside a uthread on a non-worker thread it was never set: NULL.
 *
 * Destructors: jf_local_exit() runs them in the ending uthread, from uthread_exit() before it
 * leaves for good (all three ways a uthread ends go through there: return, jf_exit(), a
 * cancellation, which is a jf_exit(JF_CANCELED)), with the preemption count at 0 like the
 * cleanup handlers of pfn.c, and cancellation disabled (the uthread is ending already). A
 * jf_exit() from a destructor ends the rounds: what is left is dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime.h"

__thread void **jf_local_cur __attribute__((tls_model("initial-exec")));
long jf__local_tp_offset;

#define KEY_IDX_BITS 8
#define KEY_SEQ_MASK 0xffffffu /* the sequence kept in a key: 24 bits, odd while in use */
_Static_assert(JF_KEYS_MAX == 1 << KEY_IDX_BITS, "a key's index field must cover JF_KEYS_MAX");

struct key_slot {
	uint32_t seq;           /* odd: in use by key (seq << 8 | index); atomic */
	void (*dtor)(void *);   /* its destructor; atomic */
};

static struct key_slot keys[JF_KEYS_MAX];

struct jf_local_entry {
	void *value;
	uint32_t seq; /* the key's sequence when @value was set */
};

struct jf_local_table {
	uint32_t cap;     /* entries in @e: indices 0 .. cap-1 */
	uint32_t exiting; /* jf_local_exit() is running its destructors */
	struct jf_local_entry e[];
};

static inline char *thread_pointer(void)
{
	char *tp;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* Initial-exec TLS: the same offset from the thread pointer on every thread. */
__attribute__((constructor)) static void local_offset_init(void)
{
	jf__local_tp_offset = (long)((char *)&jf_local_cur - thread_pointer());
}

/* The running uthread's fast slots, read as one %fs-relative load (asm volatile: never reused
 * across a switch, and outside the sanitizers' view, which do not handle %fs: accesses). */
static inline void **cur_slots(void)
{
	void **s;
	__asm__ volatile("movq jf_local_cur@gottpoff(%%rip), %0\n\t"
			 "movq %%fs:(%0), %0"
			 : "=r"(s));
	return s;
}

void **jf__local_slots_slow(void)
{
	return cur_slots();
}

static inline struct jf_thread *thread_of_slots(void **slots)
{
	return (struct jf_thread *)((char *)slots - offsetof(struct jf_thread, local_fast));
}

/* Split @key: its slot index and sequence. False if it cannot be a key (even sequence). */
static inline bool key_split(jf_key_t key, unsigned *idx, uint32_t *seq)
{
	*idx = key & (JF_KEYS_MAX - 1);
	*seq = key >> KEY_IDX_BITS;
	return (*seq & 1) != 0;
}

static inline bool key_live(unsigned idx, uint32_t seq)
{
	return __atomic_load_n(&keys[idx].seq, __ATOMIC_ACQUIRE) == seq;
}

int jf_key_create(jf_key_t *key, void (*dtor)(void *))
{
	if (!key)
		return -EINVAL;
	for (unsigned i = 0; i < JF_KEYS_MAX; i++) {
		uint32_t s = __atomic_load_n(&keys[i].seq, __ATOMIC_RELAXED), n;

		if (s & 1)
			continue; /* in use */
		n = (s + 1) & KEY_SEQ_MASK; /* odd, so never 0 */
		if (!__atomic_compare_exchange_n(&keys[i].seq, &s, n, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue; /* taken meanwhile: try the next */
		/* Nobody has the key yet, so no value can be set under it before this store. */
		__atomic_store_n(&keys[i].dtor, dtor, __ATOMIC_RELEASE);
		*key = n << KEY_IDX_BITS | i;
		return 0;
	}
	return -EAGAIN;
}

int jf_key_delete(jf_key_t key)
{
	unsigned idx;
	uint32_t seq;

	if (!key_split(key, &idx, &seq))
		return -EINVAL;
	if (!__atomic_compare_exchange_n(&keys[idx].seq, &seq, (seq + 1) & KEY_SEQ_MASK, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return -EINVAL; /* not live: never created, or deleted already */
	return 0;
}

void *jf_getspecific(jf_key_t key)
{
	void **slots = cur_slots();
	struct jf_local_table *tab;
	unsigned idx;
	uint32_t seq;

	if (!slots)
		return NULL;
	tab = thread_of_slots(slots)->local;
	if (!tab || !key_split(key, &idx, &seq) || idx >= tab->cap || tab->e[idx].seq != seq ||
	    !key_live(idx, seq))
		return NULL;
	return tab->e[idx].value;
}

/* Make @t's table hold index @idx: allocate or grow it (zeroed entries). */
static int table_reserve(struct jf_thread *t, unsigned idx)
{
	struct jf_local_table *tab = t->local, *n;
	uint32_t cap = tab ? tab->cap : 0, ncap = 8;

	if (idx < cap)
		return 0;
	while (ncap <= idx)
		ncap *= 2;
	n = realloc(tab, sizeof(*n) + sizeof(n->e[0]) * ncap);
	if (!n)
		return -ENOMEM;
	if (!tab)
		n->exiting = 0;
	memset(&n->e[cap], 0, sizeof(n->e[0]) * (ncap - cap));
	n->cap = ncap;
	t->local = n;
	return 0;
}

int jf_setspecific(jf_key_t key, const void *value)
{
	void **slots = cur_slots();
	struct jf_thread *t;
	unsigned idx;
	uint32_t seq;
	int r;

	if (!slots)
		return -EPERM;
	if (!key_split(key, &idx, &seq) || !key_live(idx, seq))
		return -EINVAL;
	t = thread_of_slots(slots);
	if (!value && (!t->local || idx >= t->local->cap))
		return 0; /* nothing to clear: no table for it */
	r = table_reserve(t, idx);
	if (r)
		return r;
	t->local->e[idx].value = (void *)(uintptr_t)value;
	t->local->e[idx].seq = seq;
	return 0;
}

void jf_local_thread_init(struct jf_thread *t, struct worker *w, const struct jf_attr *attr)
{
	memset(t->local_fast, 0, sizeof(t->local_fast));
	t->local = NULL;
	t->pin_depth = 0;
	t->task.pinned = 0;
	t->task.pin_worker = -1;
	if (attr && attr->pin) {
		t->pin_depth = 1;
		t->task.pin_worker = attr->sched.worker >= 0 ? attr->sched.worker : w->id;
		t->task.pinned = 1;
	}
}

void jf_local_exit(struct jf_thread *t)
{
	int32_t count = jf_pcount();

	if (t->local->exiting) { /* jf_exit() from a destructor: the rest is dropped */
		jf_local_discard(t);
		return;
	}
	__atomic_store_n(&t->cancel_mode, JF_CANCEL_DISABLE, __ATOMIC_RELAXED);
	t->local->exiting = 1;
	for (int round = 0; round < JF_KEY_DESTRUCTOR_ITERATIONS; round++) {
		bool called = false;

		/* t->local is re-read: a destructor's jf_setspecific() may have grown it */
		for (unsigned i = 0; i < t->local->cap; i++) {
			struct jf_local_entry *e = &t->local->e[i];
			void (*dtor)(void *);
			void *v = e->value;

			if (!v)
				continue;
			/* The destructor first, then the key: if the slot went to a later key meanwhile,
			 * its destructor's store follows its sequence's, so the check below fails. */
			dtor = __atomic_load_n(&keys[i].dtor, __ATOMIC_ACQUIRE);
			if (!key_live(i, e->seq) || !dtor)
				continue; /* its key was deleted: no destructor (as pthreads), or none */
			e->value = NULL;
			jf_pcount_set(0); /* the uthread's own code: preemptible */
			dtor(v);
			jf_pcount_set(count);
			called = true;
		}
		if (!called)
			break;
	}
	jf_local_discard(t);
}

void jf_local_discard(struct jf_thread *t)
{
	free(t->local);
	t->local = NULL;
}

/* --- pinning --------------------------------------------------------------------------------- */

/* No migration between reading the worker and pinning to it: inside the runtime. */
static int pin(struct jf_thread *cur, void *arg)
{
	(void)arg;
	if (cur->pin_depth >= (uint32_t)INT32_MAX)
		return -EOVERFLOW;
	if (cur->pin_depth++ == 0) {
		/* It runs, so it is in no policy queue: the policy sees this at its next enqueue. */
		__atomic_store_n(&cur->task.pin_worker, cur->worker->id, __ATOMIC_RELAXED);
		__atomic_store_n(&cur->task.pinned, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

int jf_thread_pin(void)
{
	return jf_on_current(pin, NULL);
}

static int unpin(struct jf_thread *cur, void *arg)
{
	(void)arg;
	if (cur->pin_depth == 0)
		return -EINVAL;
	if (--cur->pin_depth == 0)
		__atomic_store_n(&cur->task.pinned, 0, __ATOMIC_RELAXED);
	return 0;
}

int jf_thread_unpin(void)
{
	return jf_on_current(unpin, NULL);
}

int jf_thread_pinned(const jf_thread_t *t)
{
	if (!t || !__atomic_load_n(&t->task.pinned, __ATOMIC_RELAXED))
		return -1;
	return __atomic_load_n(&t->task.pin_worker, __ATOMIC_RELAXED);
}
