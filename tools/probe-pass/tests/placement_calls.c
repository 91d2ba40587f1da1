/*
 * placement_calls.c - which functions get a probe at entry (run by check-placement.sh).
 *
 * Owns: the entry rule. A function gets an entry probe when it contains a call that can lead
 * back to user code: recursion, a call to a function defined elsewhere, an indirect call, or a
 * C library function given a function (qsort's comparator). Calls to intrinsics and to C library
 * functions the compiler knows (strlen, memcpy) do not count: they cannot recurse into the
 * program. The probe sits in the entry block, after the stack slots.
 */
#include <stdlib.h>
#include <string.h>

void external_work(long);

// CHECK: jiffy-probes: fib: {{.*}}entry 1
// CHECK: jiffy-probes: calls_external: latch 0 counted 0 entry 1
// CHECK: jiffy-probes: calls_pointer: latch 0 counted 0 entry 1
// CHECK: jiffy-probes: calls_strlen: latch 0 counted 0 entry 0
// CHECK: jiffy-probes: by_value: latch 0 counted 0 entry 0
// CHECK: jiffy-probes: calls_qsort: latch 0 counted 0 entry 1
// CHECK: jiffy-probes: calls_leaf: latch 0 counted 0 entry 0

// CHECK-LABEL: define {{.*}}@fib(
// CHECK-NEXT: entry:
// CHECK-NOT: {{^[[:alnum:]._]+:}}
// CHECK: %jf.poll{{[0-9]*}} = call i64 asm sideeffect "movq jf__preempt@gottpoff(%rip)
long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

// CHECK-LABEL: define {{.*}}@calls_external(
// CHECK-NEXT: entry:
// CHECK-NOT: {{^[[:alnum:]._]+:}}
// CHECK: %jf.poll = call i64 asm sideeffect
// CHECK: call void @external_work(
void calls_external(long x)
{
	external_work(x + 1);
}

// CHECK-LABEL: define {{.*}}@calls_pointer(
// CHECK: %jf.poll = call i64 asm sideeffect
long calls_pointer(long (*fn)(long), long x)
{
	return fn(x) + 1;
}

// CHECK-LABEL: define {{.*}}@calls_strlen(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
size_t calls_strlen(const char *s)
{
	return strlen(s) + 1;
}

// A memcpy of a struct is an intrinsic, not a call.
struct big {
	long v[32];
};
// CHECK-LABEL: define {{.*}}@by_value(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
void by_value(struct big *dst, const struct big *src)
{
	*dst = *src;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

// CHECK-LABEL: define {{.*}}@calls_qsort(
// CHECK: %jf.poll = call i64 asm sideeffect
void calls_qsort(long *p, size_t n)
{
	qsort(p, n, sizeof(*p), cmp_long);
}

/* A leaf defined here (not inlined, not replaceable at link time) cannot lead back. */
__attribute__((noinline)) static long leaf_helper(long x)
{
	return x * 3 + 1;
}

// CHECK-LABEL: define {{.*}}@calls_leaf(
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
long calls_leaf(long x)
{
	return leaf_helper(x) + leaf_helper(x + 1);
}
