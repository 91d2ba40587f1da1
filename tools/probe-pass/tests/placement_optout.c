/*
 * placement_optout.c - functions the probe pass must leave alone (run by check-placement.sh).
 *
 * Owns: the opt-outs. Compiled with -jiffy-probe-entry=all, so every function the pass may touch
 * gets a probe at entry (and on its loop): the control function proves the pass ran; the others
 * (annotate("jiffy_no_probe"), names jf_* and jf__*, a .text.jiffy section, naked) must have none.
 */
// FLAGS: -mllvm -jiffy-probe-entry=all

// CHECK: jiffy-probes: control: latch 1 counted 0 entry 1
// CHECK-NOT: jiffy-probes: opted_out
// CHECK-NOT: jiffy-probes: jf_
// CHECK-NOT: jiffy-probes: in_jiffy_section
// CHECK-NOT: jiffy-probes: naked_fn
// CHECK: ModuleID

// CHECK-LABEL: define {{.*}}@control(
// CHECK: jf__preempt
unsigned long control(unsigned long h, long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// CHECK-LABEL: define {{.*}}@opted_out(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
__attribute__((annotate("jiffy_no_probe"), noinline)) unsigned long opted_out(unsigned long h,
									      long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// CHECK-LABEL: define {{.*}}@jf_user_named(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
unsigned long jf_user_named(unsigned long h, long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// CHECK-LABEL: define {{.*}}@jf__internal(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
unsigned long jf__internal(unsigned long h, long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// CHECK-LABEL: define {{.*}}@in_jiffy_section(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
__attribute__((section(".text.jiffy"))) unsigned long in_jiffy_section(unsigned long h, long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// CHECK-LABEL: define {{.*}}@naked_fn(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
__attribute__((naked)) void naked_fn(void)
{
	__asm__ volatile("ret");
}
