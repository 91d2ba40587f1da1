/*
 * uintr_entry.S - the user-interrupt handler: save everything, call the common preemption entry,
 * restore everything, UIRET. Never run on any machine this project has (see uintr.c).
 *
 * On delivery the CPU has pushed, below the interrupted stack (minus the 128-byte red zone):
 * RSP, RFLAGS, RIP, then the vector; UIF is clear. We save the general registers, XSAVE the whole
 * XCR0 state into a 64-byte-aligned area of jf_uintr_xsave_size bytes, set UIF again (STUI: other
 * uthreads may run while this frame waits), and call jf_uintr_preempt(rip). When the uthread is
 * resumed, possibly on another worker, we come back here and undo it all.
 */
	.text
	.globl	jf_uintr_entry
	.hidden	jf_uintr_entry
	.type	jf_uintr_entry, @function
	.p2align 4
jf_uintr_entry:
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, %rbp			/* rbp: the saved registers; vector at 120(%rbp), rip at 128 */
	subq	jf_uintr_xsave_size(%rip), %rsp
	andq	$-64, %rsp
	movq	%rsp, %rbx			/* rbx: the XSAVE area (callee-saved across the call) */
	movq	jf_uintr_xsave_size(%rip), %rcx
	movq	%rbx, %rdi
	xorl	%eax, %eax
	rep stosb				/* XSAVE needs a zeroed header */
	movl	$-1, %eax
	movl	$-1, %edx
	xsave64	(%rbx)
	.byte	0xf3, 0x0f, 0x01, 0xed		/* stui */
	movq	128(%rbp), %rdi			/* the interrupted rip */
	call	jf_uintr_preempt
	movl	$-1, %eax
	movl	$-1, %edx
	xrstor64 (%rbx)
	movq	%rbp, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rax
	addq	$8, %rsp			/* the vector */
	.byte	0xf3, 0x0f, 0x01, 0xec		/* uiret */
	.size	jf_uintr_entry, .-jf_uintr_entry

	.section .note.GNU-stack,"",@progbits
