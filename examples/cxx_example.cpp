/*
 * cxx_example.cpp - Jiffy from C++17: the C API, plus jf::lock_guard from <jiffy/jiffy.hpp>.
 *
 * Owns the C++ example (run by CTest examples.cxx; built against an installed Jiffy by
 * scripts/test-install.sh). On one worker, with the preemption mechanism set in a
 * struct jf_config ("timer", per-worker timer signals, unless argv[1] names another):
 *   1. spawn and join uthreads that append to one std::vector under a jf_mutex_t;
 *   2. preemption: uthread A spins in a plain loop (no yield, no blocking call) after spawning
 *      uthread B on the same worker; B can run while A still spins only if A is preempted.
 * Exits 0 only if both held. `cxx_example none` (run to completion) shows the second fail.
 *
 * Build against an installed Jiffy:
 *   c++ -std=c++17 cxx_example.cpp $(pkg-config --cflags --libs jiffy) -o cxx_example
 */
#include <jiffy/jiffy.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// 1. Shared state under a jf_mutex_t.
constexpr int kCounters = 4;
constexpr int kAppends = 2000;
jf_mutex_t lock = JF_MUTEX_INITIALIZER;
std::vector<int> appended; // who appended, in order; guarded by lock

void *counter(void *arg) noexcept
{
	const int id = static_cast<int>(reinterpret_cast<intptr_t>(arg));
	for (int i = 0; i < kAppends; i++) {
		{
			jf::lock_guard hold(lock); // unlocked at the end of this block
			appended.push_back(id);
		}
		if (i % 100 == 0)
			jf_yield(); // let the others append in between
	}
	return nullptr;
}

bool check_appends()
{
	int per_id[kCounters] = {};
	for (int id : appended)
		if (id >= 0 && id < kCounters)
			per_id[id]++;
	bool ok = appended.size() == std::size_t{kCounters} * kAppends;
	for (int n : per_id)
		ok = ok && n == kAppends;
	std::printf("cxx_example: mutex: %d uthreads appended %zu entries to one std::vector "
		    "(want %d, %d each): %s\n",
		    kCounters, appended.size(), kCounters * kAppends, kAppends, ok ? "ok" : "FAIL");
	return ok;
}

// 2. A plain loop, preempted.
constexpr uint64_t kSpinLimitNs = 2'000'000'000; // A gives up after 2 s
std::atomic<bool> a_spinning{false};
std::atomic<bool> b_ran{false};
std::atomic<bool> b_saw_a_spinning{false};
std::atomic<int> b_worker{-1};
std::atomic<uint64_t> b_at{0};

struct spin_result {
	int worker = -1;
	int spawn_rc = -1;
	uint64_t start_ns = 0;
	uint64_t spun_ns = 0;
	uint64_t iterations = 0;
	uint64_t x = 0;
};

void *b_fn(void *) noexcept
{
	b_saw_a_spinning = a_spinning.load();
	b_worker = jf_worker_id();
	b_at = jf_now_ns();
	b_ran = true;
	return nullptr;
}

void *a_fn(void *arg) noexcept
{
	auto *r = static_cast<spin_result *>(arg);
	jf_thread_t *b = nullptr;

	r->worker = jf_worker_id();
	r->start_ns = jf_now_ns();
	a_spinning = true; // from before B exists: a preemption may come before the loop starts
	r->spawn_rc = jf_spawn(&b, nullptr, b_fn, nullptr); // runnable behind A; does not yield
	uint64_t x = 1, i = 0;
	// No jf_yield(), no jf_ call that blocks: only arithmetic, one atomic load, and a clock
	// read every 65536 iterations for the time limit.
	while (!b_ran.load(std::memory_order_relaxed)) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		if ((++i & 0xffff) == 0 && jf_now_ns() - r->start_ns > kSpinLimitNs)
			break;
	}
	r->spun_ns = jf_now_ns() - r->start_ns;
	a_spinning = false;
	r->iterations = i;
	r->x = x;
	if (b)
		jf_join(b, nullptr);
	return nullptr;
}

bool check_preemption()
{
	spin_result r;
	jf_thread_t *a;
	int rc = jf_spawn(&a, nullptr, a_fn, &r);
	if (rc != 0) {
		std::fprintf(stderr, "cxx_example: jf_spawn(A): %s\n", std::strerror(-rc));
		return false;
	}
	jf_join(a, nullptr);
	if (r.spawn_rc != 0) {
		std::fprintf(stderr, "cxx_example: jf_spawn(B): %s\n", std::strerror(-r.spawn_rc));
		return false;
	}
	const bool ok = b_ran && b_saw_a_spinning && b_worker == r.worker;
	if (ok)
		std::printf("cxx_example: preemption (%s): B ran on worker %d %.1f us after A began "
			    "its plain loop, while A still spun: ok (A: %llu iterations, x=%llx)\n",
			    jf_preempt_mechanism(), b_worker.load(),
			    static_cast<double>(b_at - r.start_ns) / 1e3,
			    static_cast<unsigned long long>(r.iterations),
			    static_cast<unsigned long long>(r.x));
	else
		std::printf("cxx_example: preemption (%s): FAIL: A on worker %d was not preempted: "
			    "B %s (worker %d), A spun %.1f ms%s\n",
			    jf_preempt_mechanism(), r.worker,
			    !b_ran ? "never ran" : b_saw_a_spinning ? "ran elsewhere" : "ran only after A's loop",
			    b_worker.load(), static_cast<double>(r.spun_ns) / 1e6,
			    r.spun_ns > kSpinLimitNs ? " (its limit): this mechanism cannot preempt "
						       "a plain loop; timer, dispatcher, hybrid and "
						       "auto can"
						     : "");
	return ok;
}

void *app_main(void *arg) noexcept
{
	auto *ok = static_cast<bool *>(arg);
	jf_thread_t *t[kCounters];
	for (int i = 0; i < kCounters; i++) {
		int rc = jf_spawn(&t[i], nullptr, counter, reinterpret_cast<void *>(intptr_t{i}));
		if (rc != 0) {
			std::fprintf(stderr, "cxx_example: jf_spawn: %s\n", std::strerror(-rc));
			return nullptr; // the runtime discards the uthreads already spawned
		}
	}
	for (jf_thread_t *h : t)
		jf_join(h, nullptr);
	const bool appends_ok = check_appends();
	const bool preempt_ok = check_preemption();
	*ok = appends_ok && preempt_ok;
	return nullptr;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 2) {
		std::fprintf(stderr, "usage: %s [preemption mechanism, default timer]\n", argv[0]);
		return 2;
	}
	const char *mechanism = argc == 2 ? argv[1] : "timer";
	char why[256] = "";
	int avail = jf_preempt_available(mechanism, why, sizeof why);
	if (avail != 1) {
		std::fprintf(stderr, "cxx_example: preemption mechanism '%s' %s%s\n", mechanism,
			     avail < 0 ? "is unknown" : "cannot run here: ", why);
		return 2;
	}

	jf_config cfg;
	jf_config_default(&cfg); // explicit configuration: JIFFY_* variables are not read
	cfg.workers = 1;         // A and B share one worker
	std::snprintf(cfg.preempt, sizeof cfg.preempt, "%s", mechanism);

	bool ok = false;
	int rc = jf_run(&cfg, app_main, &ok, nullptr);
	if (rc != 0) {
		std::fprintf(stderr, "cxx_example: jf_run: %s\n", std::strerror(-rc));
		return 1;
	}
	std::printf("cxx_example: %s (Jiffy %s)\n", ok ? "ok" : "FAILED", jf_version(nullptr));
	return ok ? 0 : 1;
}
