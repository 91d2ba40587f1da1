/*
 * fiber.h - the sanitizers' view of a stack switch, shared by the uthread switch (thread.c) and
 * preemptible functions (pfn.c).
 *
 * Owns: the AddressSanitizer fake-stack annotations (start/finish_switch_fiber) and the
 * ThreadSanitizer fiber switch, and the answer to "which stack, which TSan fiber does this
 * uthread run on right now": its own, or that of the innermost preemptible function it runs
 * (struct jf_pfn, pfn.h). Outside sanitizer builds every function here compiles to nothing.
 */
#ifndef JIFFY_FIBER_H
#define JIFFY_FIBER_H

#include "runtime.h"
#include "pfn.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define JF_ASAN 1
#else
#define JF_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define JF_TSAN 1
#else
#define JF_TSAN 0
#endif

/* About to switch to the stack [@bottom, @bottom + @size); @fake_save NULL: this one dies. */
static inline void asan_enter(void **fake_save, const void *bottom, size_t size)
{
#if JF_ASAN
	__sanitizer_start_switch_fiber(fake_save, bottom, size);
#else
	(void)fake_save, (void)bottom, (void)size;
#endif
}

/* Arrived on a stack (first thing after the switch returns there). */
static inline void asan_entered(void *fake)
{
#if JF_ASAN
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
	(void)fake;
#endif
}

/* The stack @p runs on: from above its mapping's guard to just below the struct at its top. */
static inline void jf_pfn_stack(const struct jf_pfn *p, char **lo, size_t *size)
{
	*lo = p->stk->map_base + p->stk->guard_size;
	*size = (size_t)((const char *)p - *lo);
}

/* The stack @t runs on: its own, or its innermost preemptible function's. */
static inline void jf_ut_stack(const struct jf_thread *t, char **lo, size_t *size)
{
	if (t->pfn) {
		jf_pfn_stack(t->pfn, lo, size);
	} else {
		*lo = t->map_base + t->guard_size;
		*size = (size_t)((const char *)t - *lo);
	}
}

static inline void asan_enter_thread(void **fake_save, struct jf_thread *t)
{
#if JF_ASAN
	char *lo;
	size_t size;
	jf_ut_stack(t, &lo, &size);
	asan_enter(fake_save, lo, size);
#else
	(void)fake_save, (void)t;
#endif
}

static inline void asan_enter_sched(void **fake_save, struct worker *w)
{
	asan_enter(fake_save, w->pthread_stack_lo, w->pthread_stack_size);
}

static inline void tsan_enter(void *fiber)
{
#if JF_TSAN
	__tsan_switch_to_fiber(fiber, 0);
#else
	(void)fiber;
#endif
}

/* The ThreadSanitizer fiber @t runs on (its own, or its innermost function's). */
static inline void *jf_ut_fiber(const struct jf_thread *t)
{
	return t->pfn ? t->pfn->stk->tsan_fiber : t->tsan_fiber;
}

/*
 * Switch ThreadSanitizer to the fiber @t runs on. A macro, not a function: an instrumented
 * function that switched fibers would enter on one fiber's shadow stack and leave on the other's
 * (one frame more on one, one less on the other at every switch, until the shadow stack overran:
 * core.sleep crashed inside TSan). tsan_enter() makes no memory access, so it gets no entry/exit.
 */
#if JF_TSAN
#define tsan_enter_thread(t) tsan_enter(jf_ut_fiber(t))
#else
#define tsan_enter_thread(t) ((void)(t))
#endif

#endif /* JIFFY_FIBER_H */
