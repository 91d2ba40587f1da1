/*
 * placement_counted.c - the -jiffy-probe-every=N counter (run by check-placement.sh).
 *
 * Owns: the counter rule. With -jiffy-probe-every=8, an innermost loop of at most
 * -jiffy-probe-tiny-body instructions gets a counter (a phi in its header, an add and a test in
 * its latch) and runs the probe every 8th iteration; a loop with a bigger body keeps the plain
 * probe. The default (every=1) is tested by placement_loops.c.
 */
// FLAGS: -mllvm -jiffy-probe-every=8 -mllvm -jiffy-probe-tiny-body=40

// CHECK: jiffy-probes: tiny: latch 0 counted 1 entry 0
// CHECK: jiffy-probes: big: latch 1 counted 0 entry 0

// CHECK-LABEL: define {{.*}}@tiny(
// CHECK: %jf.iter = phi i32
// CHECK: %jf.iter.next = add i32 %jf.iter, 1
// CHECK: and i32 %jf.iter.next, 7
// CHECK: br i1 %jf.iter.hit, label %jf.probe.every
// CHECK: jf.probe.every:
// CHECK-NEXT: %jf.poll = call i64 asm sideeffect
unsigned long tiny(unsigned long h, long n)
{
#pragma clang loop unroll(disable)
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
	return h;
}

// CHECK-LABEL: define {{.*}}@big(
// CHECK-NOT: jf.iter
// CHECK: %jf.poll = call i64 asm sideeffect
// CHECK-NOT: jf.iter
// CHECK: {{^}}}
unsigned long big(unsigned long h, long n)
{
#pragma clang loop unroll(disable)
	for (long i = 0; i < n; i++) {
		h = (h ^ (unsigned long)i) * 0x100000001b3ul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul;
		h = (h ^ (h >> 32)) * 0x94d049bb133111ebul;
	}
	return h;
}
