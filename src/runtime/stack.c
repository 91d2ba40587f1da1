/*
 * stack.c - uthread stacks: mapping with a guard page, the per-worker cache, the registry that
 * shutdown frees, and the SIGSEGV handler that names the uthread whose stack overflowed.
 *
 * Owns: the memory of every uthread. Layout of one mapping (low to high addresses):
 *     [guard, PROT_NONE][stack, grows down ...................][struct jf_thread]
 * so one mmap holds a uthread, and an overflow faults in the guard instead of corrupting memory.
 * Invariant: every mapping is in the registry from mmap to munmap, so jf_stack_free_all() can free
 * uthreads that were still blocked or runnable at shutdown.
 *
 * Caching: each worker keeps up to cfg.stack_cache free stacks (no lock). When its cache is full,
 * half of it moves to a shared pool (a spinlock, batched); an empty cache refills from the pool.
 * Only past the pool's cap (8 x stack_cache per worker) is a stack unmapped: munmap on a
 * multi-threaded process costs a TLB shootdown on every CPU (~10-30 us on this VM), which made a
 * burst of thousands of detached uthreads 100x slower per spawn before the pool existed.
 *
 * Valgrind: every mapping's stack part is registered with Valgrind from mmap to munmap (a cached
 * stack stays registered while it waits for reuse), so that memcheck sees a switch between two
 * uthreads as a change of stack rather than a huge frame pushed or popped. The client requests
 * are a few instructions outside Valgrind; without <valgrind/valgrind.h> at build time they are
 * compiled out (and test debug.valgrind fails).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define JF_HAVE_VALGRIND 1
#endif
#endif

/* Big enough that a large frame (a 16 KiB local buffer) still lands in it rather than beyond. */
#define GUARD_SIZE (64u * 1024u)

static size_t page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

static size_t thread_struct_size(void)
{
	return (sizeof(struct jf_thread) + JF_CACHELINE - 1) & ~(size_t)(JF_CACHELINE - 1);
}

static size_t map_size_for(size_t stack_size)
{
	size_t ps = page_size();
	return GUARD_SIZE + ((stack_size + ps - 1) & ~(ps - 1));
}

size_t jf_stack_map_size(size_t stack_size)
{
	return map_size_for(stack_size);
}

/*
 * Under AddressSanitizer: frames that never returned (an exited or discarded uthread's) leave
 * redzones poisoned in the shadow memory, and munmap does not clear it; a stack reused from the
 * cache, or a new mapping at a recycled address, must start clean.
 */
static void asan_forget_frames(char *base, size_t size)
{
#if defined(__SANITIZE_ADDRESS__)
	__asan_unpoison_memory_region(base + GUARD_SIZE, size - GUARD_SIZE);
#else
	(void)base, (void)size;
#endif
}

/* Tell Valgrind that [base + guard, t) is a stack (its highest byte is just below @t). */
static void vg_register(struct jf_thread *t)
{
#if defined(JF_HAVE_VALGRIND)
	t->vg_stack_id = VALGRIND_STACK_REGISTER(t->map_base + t->guard_size, (char *)t - 1);
#else
	t->vg_stack_id = 0;
#endif
}

static void vg_deregister(struct jf_thread *t)
{
#if defined(JF_HAVE_VALGRIND)
	VALGRIND_STACK_DEREGISTER(t->vg_stack_id);
#else
	(void)t;
#endif
}

/* The worker's own pthread stack (its scheduler loop), registered as well: when a uthread stack
 * lies within 2 MB of it, Valgrind would otherwise take a switch between the two for a frame
 * pushed or popped and mark the other stack's saved registers undefined. */
#if defined(JF_HAVE_VALGRIND)
static __thread unsigned vg_worker_stack_id; /* 0: none (Valgrind's own main stack has id 0) */
#endif

static void vg_register_worker(struct worker *w)
{
#if defined(JF_HAVE_VALGRIND)
	char *lo = w->pthread_stack_lo;

	if (lo && w->pthread_stack_size)
		vg_worker_stack_id = VALGRIND_STACK_REGISTER(lo, lo + w->pthread_stack_size - 1);
#else
	(void)w;
#endif
}

static void vg_deregister_worker(void)
{
#if defined(JF_HAVE_VALGRIND)
	if (vg_worker_stack_id)
		VALGRIND_STACK_DEREGISTER(vg_worker_stack_id);
	vg_worker_stack_id = 0;
#endif
}

static void registry_add(struct jf_thread *t)
{
	struct runtime *rt = jf_rt;
	pthread_mutex_lock(&rt->reg_lock);
	t->reg_prev = NULL;
	t->reg_next = rt->reg_head;
	if (rt->reg_head)
		rt->reg_head->reg_prev = t;
	rt->reg_head = t;
	pthread_mutex_unlock(&rt->reg_lock);
}

static void registry_del(struct jf_thread *t)
{
	struct runtime *rt = jf_rt;
	pthread_mutex_lock(&rt->reg_lock);
	if (t->reg_prev)
		t->reg_prev->reg_next = t->reg_next;
	else
		rt->reg_head = t->reg_next;
	if (t->reg_next)
		t->reg_next->reg_prev = t->reg_prev;
	pthread_mutex_unlock(&rt->reg_lock);
}

/* Take up to half a cache's worth of stacks from the shared pool. */
static void pool_refill(struct runtime *rt, struct worker *w)
{
	unsigned want = (rt->cfg.stack_cache + 1) / 2;

	if (__atomic_load_n(&rt->pool_n, __ATOMIC_RELAXED) == 0 || want == 0)
		return;
	jf_spin_lock(&rt->pool_lock);
	while (want-- && rt->pool_head) {
		struct jf_thread *t = rt->pool_head;
		rt->pool_head = t->wq_next;
		__atomic_store_n(&rt->pool_n, rt->pool_n - 1, __ATOMIC_RELAXED);
		w->stack_cache[w->nr_cached++] = t;
	}
	jf_spin_unlock(&rt->pool_lock);
}

/* Move half of a full cache to the shared pool, as far as the pool's cap allows. */
static void pool_spill(struct runtime *rt, struct worker *w)
{
	unsigned move = w->nr_cached / 2;

	jf_spin_lock(&rt->pool_lock);
	while (move-- && rt->pool_n < rt->pool_max) {
		struct jf_thread *t = w->stack_cache[--w->nr_cached];
		t->wq_next = rt->pool_head;
		rt->pool_head = t;
		__atomic_store_n(&rt->pool_n, rt->pool_n + 1, __ATOMIC_RELAXED);
	}
	jf_spin_unlock(&rt->pool_lock);
}

struct jf_thread *jf_stack_alloc_slow(struct worker *w, size_t stack_size)
{
	struct runtime *rt = jf_rt;
	size_t map_size = map_size_for(stack_size);
	struct jf_thread *t;
	char *base;

	if (map_size == rt->stack_map_default) {
		if (w->nr_cached == 0)
			pool_refill(rt, w);
		if (w->nr_cached > 0) {
			t = w->stack_cache[--w->nr_cached];
			asan_forget_frames(t->map_base, t->map_size);
			return t;
		}
	}

	base = mmap(NULL, map_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	if (mprotect(base, GUARD_SIZE, PROT_NONE) != 0) {
		munmap(base, map_size);
		return NULL;
	}
	asan_forget_frames(base, map_size);
	t = (struct jf_thread *)(void *)(base + map_size - thread_struct_size());
	t->map_base = base;
	t->tsan_fiber = NULL;
	t->map_size = map_size;
	t->guard_size = GUARD_SIZE;
	vg_register(t);
	registry_add(t);
	return t;
}

void jf_stack_free_slow(struct worker *w, struct jf_thread *t)
{
	struct runtime *rt = jf_rt;

	jf_tsan_thread_freed(t);
	JF_VIEW_SET(t, vstate, UV_FREE);
	if (t->map_size == rt->stack_map_default && rt->cfg.stack_cache > 0) {
		if (w->nr_cached == rt->cfg.stack_cache)
			pool_spill(rt, w);
		if (w->nr_cached < rt->cfg.stack_cache) {
			w->stack_cache[w->nr_cached++] = t;
			return;
		}
	}
	registry_del(t);
	vg_deregister(t);
	munmap(t->map_base, t->map_size);
}

void jf_stack_free_all(void)
{
	struct runtime *rt = jf_rt;
	struct jf_thread *t = rt->reg_head, *next;

	for (; t; t = next) {
		next = t->reg_next;
		jf_local_discard(t); /* a uthread discarded at shutdown: no destructors (local.h) */
		jf_tsan_thread_freed(t);
		vg_deregister(t);
		munmap(t->map_base, t->map_size);
	}
	rt->reg_head = NULL;
	rt->pool_head = NULL;
	rt->pool_n = 0;
	for (int i = 0; i < rt->nworkers; i++)
		rt->workers[i].nr_cached = 0;
}

/* --- overflow reporting ----------------------------------------------------------------------- */

static struct sigaction old_segv, old_bus;
static int handler_installed;

static size_t fmt_u64(char *buf, uint64_t v, unsigned base)
{
	char tmp[24];
	size_t n = 0, i;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

static size_t append(char *buf, size_t off, size_t cap, const char *s)
{
	while (*s && off < cap)
		buf[off++] = *s++;
	return off;
}

/* Async-signal-safe: only write(2) and local formatting. */
static void report_overflow(struct worker *w, struct jf_thread *t, void *addr, bool in_pfn)
{
	char msg[320], num[24];
	size_t n = 0, cap = sizeof(msg);

	n = append(msg, n, cap, in_pfn ? "jiffy: stack overflow in a preemptible function of uthread '"
				       : "jiffy: stack overflow in uthread '");
	n = append(msg, n, cap, t->name[0] ? t->name : "(unnamed)");
	n = append(msg, n, cap, "' (id ");
	num[fmt_u64(num, t->task.id, 10)] = '\0';
	n = append(msg, n, cap, num);
	n = append(msg, n, cap, ", stack ");
	num[fmt_u64(num, (uint64_t)((char *)t - (t->map_base + t->guard_size)), 10)] = '\0';
	n = append(msg, n, cap, num);
	n = append(msg, n, cap, " bytes) on worker ");
	num[fmt_u64(num, (uint64_t)w->id, 10)] = '\0';
	n = append(msg, n, cap, num);
	n = append(msg, n, cap, ": fault at 0x");
	num[fmt_u64(num, (uint64_t)(uintptr_t)addr, 16)] = '\0';
	n = append(msg, n, cap, num);
	n = append(msg, n, cap, " in its guard page; raise jf_attr.stack_size or JIFFY_STACK_SIZE\n");
	if (write(STDERR_FILENO, msg, n) < 0) {
		/* nothing more can be done from here */
	}
}

/* Does @old name a handler of the program's (not the default action, not ignore)? */
static bool has_handler(const struct sigaction *old)
{
	return ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) ||
	       (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN);
}

static void chain(const struct sigaction *old, int sig, siginfo_t *si, void *uc)
{
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, uc);
	} else if (has_handler(old)) {
		old->sa_handler(sig);
	} else {
		/* Default action: let the faulting instruction run again without us. */
		signal(sig, SIG_DFL);
	}
}

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	struct worker *w = jf_this_worker();
	struct jf_thread *t = w ? w->cur : NULL;
	char *addr = si->si_addr;

	if (t && addr >= t->map_base && addr < t->map_base + t->guard_size) {
		report_overflow(w, t, addr, false);
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	for (struct jf_pfn *p = t ? t->pfn : NULL; p; p = p->parent) {
		if (addr >= p->stk->map_base && addr < p->stk->map_base + p->stk->guard_size) {
			report_overflow(w, t, addr, true); /* a preemptible function's stack */
			signal(SIGABRT, SIG_DFL);
			abort();
		}
	}
	const struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
	/* Dying of it (no handler of the program's to chain to): say where, who, and every
	 * uthread (monitor.c). A program that handles its own faults (guard pages, a GC) is left
	 * to it, without a report per fault. */
	if (!has_handler(old))
		jf_crash_report(sig, si, uc);
	chain(old, sig, si, uc);
}

int jf_overflow_handler_install(void)
{
	struct sigaction sa;

	jf_crash_report_init();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &old_segv) != 0 || sigaction(SIGBUS, &sa, &old_bus) != 0)
		return -errno;
	handler_installed = 1;
	return 0;
}

void jf_overflow_handler_remove(void)
{
	if (!handler_installed)
		return;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	handler_installed = 0;
}

int jf_stack_worker_init(struct worker *w)
{
	stack_t ss;
	size_t min = (size_t)getauxval(AT_MINSIGSTKSZ);
	size_t size = 64 * 1024;

	vg_register_worker(w);
	if (min * 4 > size)
		size = min * 4;
	w->altstack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->altstack == MAP_FAILED) {
		w->altstack = NULL;
		return -ENOMEM;
	}
	w->altstack_size = size;
	ss.ss_sp = w->altstack;
	ss.ss_size = size;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0) {
		munmap(w->altstack, size);
		w->altstack = NULL;
		return -errno;
	}
	return 0;
}

void jf_stack_worker_fini(struct worker *w)
{
	stack_t ss;

	vg_deregister_worker();
	if (!w->altstack)
		return;
	memset(&ss, 0, sizeof(ss));
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	munmap(w->altstack, w->altstack_size);
	w->altstack = NULL;
}
