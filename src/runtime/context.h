/*
 * context.h - saved machine context of a uthread or a worker's scheduler loop.
 *
 * Owns: struct jf_ctx (the layout switch.S relies on) and the creation of a new context's first
 * frame. What a switch saves is documented in arch/x86_64/switch.S.
 */
#ifndef JIFFY_CONTEXT_H
#define JIFFY_CONTEXT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

struct jf_ctx {
	void *sp; /* offset 0: switch.S stores and loads it */
};
static_assert(offsetof(struct jf_ctx, sp) == 0, "switch.S expects sp at offset 0");

void jf_ctx_switch(struct jf_ctx *from, const struct jf_ctx *to, uint32_t *from_on_cpu);
void jf_ctx_start(void);

/* Default control state for a new context: all FP exceptions masked, round to nearest. */
#define JF_MXCSR_DEFAULT 0x1F80u
#define JF_FPUCW_DEFAULT 0x037Fu

/*
 * jf_ctx_init() - prepare @ctx so that switching to it calls @entry(@arg) on the stack whose
 * highest usable address is @stack_top. @entry must never return.
 */
static inline void jf_ctx_init(struct jf_ctx *ctx, void *stack_top, void (*entry)(void *),
			       void *arg)
{
	uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)15;
	uint64_t *sp = (uint64_t *)top;

	*--sp = (uint64_t)(uintptr_t)jf_ctx_start; /* popped by ret; leaves rsp == top */
	*--sp = 0;                                 /* rbp */
	*--sp = 0;                                 /* rbx */
	*--sp = (uint64_t)(uintptr_t)entry;        /* r12 */
	*--sp = (uint64_t)(uintptr_t)arg;          /* r13 */
	*--sp = 0;                                 /* r14 */
	*--sp = 0;                                 /* r15 */
	*--sp = (uint64_t)JF_MXCSR_DEFAULT | ((uint64_t)JF_FPUCW_DEFAULT << 32);
	ctx->sp = sp;
}

#endif /* JIFFY_CONTEXT_H */
