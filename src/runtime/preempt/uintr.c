/*
 * uintr.c - "uintr": Intel user interrupts (SENDUIPI from the timer thread to a worker).
 *
 * Used only when the compiler accepts -muintr, the CPU reports UINTR (CPUID.(7,0):EDX[5]) and
 * the kernel has Intel's out-of-tree UINTR system calls (uintr_register_handler = 471,
 * uintr_unregister_handler = 472, uintr_vector_fd = 473, uintr_register_sender = 474; upstream
 * Linux has none of them). Otherwise jf_run() refuses the mechanism with the reason, and
 * jf_preempt_available("uintr") says why.
 *
 * Everything but the delivery is shared with the signal path: the timer thread (dispatcher.c)
 * decides exactly as for "dispatcher" and calls jf_uintr_send() instead of tgkill(); the handler
 * (uintr_entry.S) saves the general registers and the whole XCR0 state with XSAVE, re-enables
 * user interrupts (STUI: the frame may stay suspended while other uthreads run) and calls
 * jf_preempt_request_at() with the interrupted instruction pointer, like the signal handler.
 *
 * WARNING: no machine available to this project has user interrupts; this code is compiled but
 * has never run. See docs/preemption.md.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../runtime.h"
#include "preempt.h"

#define SYS_uintr_register_handler 471
#define SYS_uintr_unregister_handler 472
#define SYS_uintr_vector_fd 473
#define SYS_uintr_register_sender 474

extern char jf_uintr_entry[];           /* uintr_entry.S */
__attribute__((visibility("hidden"))) unsigned long jf_uintr_xsave_size = 4096; /* bytes XSAVE needs for XCR0 (CPUID 0xD) */

static bool cpu_has_uintr(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid_max(0, NULL) < 7)
		return false;
	__cpuid_count(7, 0, a, b, c, d);
	return (d >> 5) & 1u;
}

static int uintr_available(char *why, size_t len)
{
	long r;

#if !defined(__UINTR__)
	snprintf(why, len, "this build's compiler did not accept -muintr");
	return -ENOTSUP;
#endif
	if (!cpu_has_uintr()) {
		snprintf(why, len,
			 "the CPU has no user-interrupt support (CPUID.(EAX=7,ECX=0):EDX[5] UINTR = 0)");
		return -ENOTSUP;
	}
	r = syscall(SYS_uintr_register_handler, NULL, 0u);
	if (r < 0 && errno == ENOSYS) {
		snprintf(why, len,
			 "the kernel has no user-interrupt system calls (uintr_register_handler, "
			 "syscall %d, returned ENOSYS: it needs Intel's out-of-tree UINTR patches)",
			 SYS_uintr_register_handler);
		return -ENOTSUP;
	}
	return 0;
}

/* Called by uintr_entry.S on the interrupted uthread's stack, state saved, UIF set again. */
__attribute__((visibility("hidden"))) void jf_uintr_preempt(uintptr_t pc)
{
	struct worker *w = jf_this_worker();
	if (w)
		STAT_INC(w, preempt_requests);
	jf_preempt_request_at(pc);
}

#if defined(__UINTR__)
#include <x86gprintrin.h>

/* Per worker, in its mech_state: the vector's descriptor (the worker's) and the timer thread's
 * sender index for it (registered on first use). */
struct ui_worker {
	int fd, uipi_index;
};
JF_MECH_STATE_FITS(struct ui_worker);

static inline struct ui_worker *uiw(struct worker *w)
{
	return JF_MECH_STATE(w, struct ui_worker);
}

static int uintr_init(struct runtime *rt)
{
	unsigned a, b, c, d;

	(void)rt;
	__cpuid_count(0xD, 0, a, b, c, d);
	jf_uintr_xsave_size = b; /* XSAVE area size for the features enabled in XCR0 */
	jf_tt_set_uintr_mode();
	return 0;
}

/* On the worker: register the handler and a vector whose fd the timer thread will send to. */
static int uintr_worker_start(struct worker *w)
{
	long fd;

	if (syscall(SYS_uintr_register_handler, jf_uintr_entry, 0u) != 0)
		return -errno;
	fd = syscall(SYS_uintr_vector_fd, (unsigned long)w->id % 64u, 0u);
	if (fd < 0)
		return -errno;
	uiw(w)->fd = (int)fd;
	uiw(w)->uipi_index = -1;
	_stui();
	return 0;
}

static void uintr_worker_stop(struct worker *w)
{
	_clui();
	syscall(SYS_uintr_unregister_handler, 0u);
	if (uiw(w)->fd >= 0)
		close(uiw(w)->fd);
	uiw(w)->fd = -1;
}

/* Timer thread: register as a sender to @w on first use, then SENDUIPI. */
int jf_uintr_send(struct worker *w)
{
	if (uiw(w)->uipi_index < 0) {
		long idx = syscall(SYS_uintr_register_sender, uiw(w)->fd, 0u);
		if (idx < 0)
			return -errno;
		uiw(w)->uipi_index = (int)idx;
	}
	_senduipi((unsigned long long)uiw(w)->uipi_index);
	return 0;
}
#else
static int uintr_init(struct runtime *rt)
{
	(void)rt;
	return -ENOTSUP;
}

int jf_uintr_send(struct worker *w)
{
	(void)w;
	return -ENOTSUP;
}
#define uintr_worker_start NULL
#define uintr_worker_stop NULL
#endif

static void uintr_fini(struct runtime *rt)
{
	jf_timer_thread_stop(rt);
}

const struct jf_preempt_mech jf_mech_uintr = {
	.name = "uintr",
	.uses_thread = true,
	.available = uintr_available,
	.init = uintr_init,
	.fini = uintr_fini,
	.worker_start = uintr_worker_start,
	.worker_stop = uintr_worker_stop,
	.stats = jf_timer_thread_stats,
	.quantum_ns = 20 * 1000, /* µs quanta cost it little: docs/preemption.md */
};
