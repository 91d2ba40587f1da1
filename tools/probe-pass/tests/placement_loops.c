/*
 * placement_loops.c - where the probe pass puts probes in loops (run by check-placement.sh).
 *
 * Owns: the loop rules: a loop of unknown trip count gets a probe on its back-edge (in the latch,
 * the block whose branch closes the loop), also once vectorized and unrolled; a loop nest
 * SCEV bounds by 64 iterations gets none (at -O2; at -O0 SCEV cannot see through the stack slots,
 * so every loop is probed); a short loop inside a long one is covered by the outer probe; a
 * function without loops or calls gets nothing.
 */

// The probe: jf_safepoint()'s fast path, the unlikely branch, rdtsc, the slow call.
// CHECK: jiffy-probes: hash: latch 1 counted 0 entry 0
// At -O2 vsum has two loops left: the vector body and the scalar loop, which SCEV cannot bound
// (it runs the whole range when n is below the vector width times the interleave count).
// CHECK: jiffy-probes: vsum:
// O0-SAME: latch 1 counted 0 entry 0
// O2-SAME: latch 2 counted 0 entry 0
// CHECK: jiffy-probes: leaf: latch 0 counted 0 entry 0 short-loops 0
// CHECK: jiffy-probes: short_loop:
// O0-SAME: latch 1 counted 0 entry 0
// O2-SAME: latch 0 counted 0 entry 0 short-loops 1
// CHECK: jiffy-probes: short_nest:
// O0-SAME: latch 2 counted 0 entry 0
// O2-SAME: latch 1 counted 0 entry 0 short-loops 1
// (at -O2 the outer loop is unrolled by 2, so the inner loop has three copies, all left short)
// CHECK: jiffy-probes: long_outer_short_inner:
// O0-SAME: latch 2 counted 0 entry 0
// O2-SAME: latch 1 counted 0 entry 0 short-loops 3

// CHECK-LABEL: define {{.*}}i64 @hash(
// CHECK: %jf.poll = call i64 asm sideeffect "movq jf__preempt@gottpoff(%rip), %rax\0A\09movq %fs:8(%rax), $0", "=r,~{rax}{{.*}}"()
// CHECK-NEXT: %jf.armed = icmp ne i64 %jf.poll, 0
// CHECK-NEXT: br i1 %jf.armed, label %jf.probe.cold, label %jf.probe.cont, !prof ![[UNLIKELY:[0-9]+]]
// CHECK: jf.probe.cold:
// CHECK-NEXT: %jf.left = call i64 asm sideeffect "movq jf__preempt@gottpoff(%rip), %rax\0A\09subq $$1, %fs:16(%rax)\0A\09movq %fs:16(%rax), $0", "=r,~{rax}{{.*}}"()
// CHECK-NEXT: %jf.look = icmp sle i64 %jf.left, 0
// CHECK-NEXT: br i1 %jf.look, label %jf.probe.slow
// CHECK: jf.probe.slow:
// CHECK-NEXT: call void @jf__probe_armed()
// The probe is in the block that closes the loop (at its top: -jiffy-probe-latch-at=top).
// CHECK: jf.probe.cont:
// CHECK-NOT: {{^[[:alnum:]._]+:}}
// CHECK: br {{.*}}!llvm.loop
// CHECK-NOT: jf.poll
// CHECK: {{^}}}
unsigned long hash(unsigned long h, long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// Vectorized (and interleaved) at -O2 first: the probe lands on the vector body's back-edge.
// The scalar remainder loop (at most 3 iterations) is left without one.
// CHECK-LABEL: define {{.*}}@vsum(
// O2: vector.body:
// O2-NOT: {{^[[:alnum:]._]+:}}
// O2: %jf.poll{{[0-9]*}} = call i64 asm sideeffect
// O2: jf.probe.cont{{[0-9]*}}:
// O2-NOT: {{^[[:alnum:]._]+:}}
// O2: add <{{[0-9]+}} x i64>
// O2-NOT: {{^[[:alnum:]._]+:}}
// O2: br {{.*}}!llvm.loop
// O0: %jf.poll = call i64 asm sideeffect
// CHECK: {{^}}}
long vsum(const long *p, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += p[i];
	return s;
}

// CHECK-LABEL: define {{.*}}@leaf(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
int leaf(int a, int b)
{
	return a * b + 3;
}

// 40 iterations, not unrolled: bounded, no probe at -O2.
// CHECK-LABEL: define {{.*}}@short_loop(
// O2-NOT: jf__preempt
// O0: jf__preempt
// CHECK: {{^}}}
unsigned long short_loop(const unsigned long *p)
{
	unsigned long h = 0;
#pragma clang loop unroll(disable) vectorize(disable)
	for (int i = 0; i < 40; i++)
		h = (h ^ p[i]) * 0x100000001b3ul;
	return h;
}

// 8 x 8: each loop is short, but the nest runs 8 * (1 + 8) = 72 > 64 bodies: the outer loop
// gets the probe, the inner one does not.
// CHECK-LABEL: define {{.*}}@short_nest(
// O2: %jf.poll = call
// O2-NOT: %jf.poll = call
// CHECK: {{^}}}
unsigned long short_nest(const unsigned long *p)
{
	unsigned long h = 0;
#pragma clang loop unroll(disable) vectorize(disable)
	for (int i = 0; i < 8; i++) {
#pragma clang loop unroll(disable) vectorize(disable)
		for (int j = 0; j < 8; j++)
			h = (h ^ p[i * 8 + j]) * 0x100000001b3ul;
	}
	return h;
}

// A long loop around a short one: one probe, on the outer back-edge.
// CHECK-LABEL: define {{.*}}@long_outer_short_inner(
// O2: %jf.poll = call
// O2-NOT: %jf.poll = call
// CHECK: {{^}}}
unsigned long long_outer_short_inner(const unsigned long *p, long n)
{
	unsigned long h = 0;
	for (long i = 0; i < n; i++) {
#pragma clang loop unroll(disable) vectorize(disable)
		for (int j = 0; j < 10; j++)
			h = (h ^ p[i * 10 + j]) * 0x100000001b3ul;
	}
	return h;
}

// The branch weights: the probe's slow side is unlikely (1:2000, as __builtin_expect's).
// CHECK: ![[UNLIKELY]] = !{!"branch_weights", i32 1, i32 2000}
