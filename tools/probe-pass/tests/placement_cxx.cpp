/*
 * placement_cxx.cpp - the probe pass on C++ (run by check-placement.sh with clang++-14).
 *
 * Owns: C++ shapes the pass must handle: a template instantiation's loop, a loop whose body may
 * throw (its calls are invokes with a landing pad), a lambda called through std::function, and
 * a destructor-only leaf (no probe). The probe's slow call is nounwind: it never needs a landing
 * pad of its own.
 */
#include <functional>
#include <stdexcept>
#include <vector>

// CHECK: jiffy-probes: {{.*}}accumulate{{.*}}: latch {{[1-9]}}
// CHECK: jiffy-probes: {{.*}}may_throw{{.*}}: latch {{[1-9]}} counted 0 entry 1

template <typename T> T accumulate(const std::vector<T> &v)
{
	T s{};
	for (const T &x : v)
		s += x * x;
	return s;
}

long use_accumulate(const std::vector<long> &v)
{
	return accumulate(v);
}

void check(long x);

// CHECK-LABEL: define {{.*}}may_throw
// CHECK: %jf.poll{{[0-9]*}} = call i64 asm sideeffect
// CHECK: invoke void @_Z5checkl(
// CHECK: landingpad
// CHECK: call void @jf__probe_armed() #[[NOUNWIND:[0-9]+]]
long may_throw(const std::vector<long> &v)
{
	long bad = 0;
	for (long x : v) {
		try {
			check(x);
		} catch (const std::exception &) {
			bad++;
		}
	}
	return bad;
}

long call_lambda(const std::function<long(long)> &f, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += f(i);
	return s;
}

struct Pod {
	long a, b;
	long sum() const { return a + b; }
};

// CHECK-LABEL: define {{.*}}pod_sum
// CHECK-NOT: jf__preempt
// CHECK: {{^}}}
long pod_sum(const Pod &p)
{
	return p.sum();
}

// CHECK: attributes #[[NOUNWIND]] = {{{.*}}nounwind
