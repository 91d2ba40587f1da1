/*
 * switch.S - the uthread context switch for x86-64 System V.
 *
 * Owns: jf_ctx_switch() and the first frame of a new uthread (jf_ctx_start).
 * A switch is a function call, so only what the ABI says a callee must preserve is saved: rbx,
 * rbp, r12-r15, rsp, the MXCSR control bits and the x87 control word. Everything is pushed on the
 * outgoing stack and the stack pointer is stored in struct jf_ctx (offset 0, see context.h).
 * Invariant: after the store to *from_on_cpu nothing touches the outgoing stack: another worker
 * may already be resuming that context. "Nothing" includes the kernel: a signal delivered to this
 * thread is given a frame below the current stack pointer, so the store comes only after the
 * stack pointer has left the outgoing stack. (It came before until 2026-11-28: a preemption
 * signal landing between the two instructions had its frame written, 1-3 KB of saved registers,
 * over the stack of a uthread that another worker was already running, which later returned to
 * address 0: core.handoff under cfs + dispatcher crashed in 36 of 60 runs, ws + dispatcher in 9.)
 */
	.text

/* void jf_ctx_switch(struct jf_ctx *from, const struct jf_ctx *to, uint32_t *from_on_cpu) */
	.globl	jf_ctx_switch
	.hidden	jf_ctx_switch
	.type	jf_ctx_switch, @function
	.p2align 4
jf_ctx_switch:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	%rsp, (%rdi)
	movq	(%rsi), %rsp
	movl	$0, (%rdx)		/* outgoing context saved and left: it may be resumed elsewhere now */
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	jf_ctx_switch, .-jf_ctx_switch

/*
 * The first "return address" of a new uthread. context.c set r12 = entry function, r13 = its
 * argument, and aligned the stack so that rsp is 16-byte aligned here (the call pushes 8 more,
 * as the ABI expects at a function's first instruction). The entry function never returns.
 */
	.globl	jf_ctx_start
	.hidden	jf_ctx_start
	.type	jf_ctx_start, @function
	.p2align 4
jf_ctx_start:
	.cfi_startproc
	.cfi_undefined rip		/* outermost frame: debuggers stop unwinding here */
	movq	%r13, %rdi
	callq	*%r12
	ud2
	.cfi_endproc
	.size	jf_ctx_start, .-jf_ctx_start

	.section .note.GNU-stack,"",@progbits
