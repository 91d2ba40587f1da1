/*
 * bench/fiber_sync_bench.cpp - the synchronization-primitive benchmarks run with Boost.Fiber.
 *
 * Owns: the Boost.Fiber version of every op of bench/sync_common.h: boost::fibers::mutex,
 * barrier, buffered_channel and unbuffered_channel. Uncontended ops and ping-pongs run on the main
 * thread (pinned to the first CPU) with the default round_robin scheduler; the contended ops run
 * their fibers on two threads pinned to the first two CPUs, alternately (fiber i on thread i % 2),
 * each with its own round_robin scheduler: Boost.Fiber's primitives work across threads, and a
 * thread whose fibers all wait sleeps in the kernel until another thread wakes it.
 *
 * n/a: the rwlock ops, the semaphore ops and waitgroup_round (Boost.Fiber has no rwlock, no
 * semaphore and no waitgroup). once_fast uses std::call_once, which Boost.Fiber code uses (the
 * library has no once of its own): the fast path never blocks, so it is fiber-safe.
 *
 * The same loops, with the same counting, are in jiffy_sync_bench.c, pthread_sync_bench.c and
 * go/sync.go: change them together.
 */
#include <boost/fiber/all.hpp>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bench_pin.h"
#include "sync_common.h"

namespace {

const char *const kRuntime = "boost_fiber";

int cpu_first = -1;
int cpu_second = -1;

uint64_t now_ns()
{
	return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

[[noreturn]] void die(const char *what)
{
	fprintf(stderr, "fiber_sync_bench: %s\n", what);
	exit(1);
}

void find_cpus()
{
	if (bench_find_cpus(&cpu_first, &cpu_second) != 0)
		die("sched_getaffinity failed");
}

void pin_self(int cpu)
{
	if (bench_pin_self(cpu) != 0)
		die("pthread_setaffinity_np failed");
}

/* State shared by the fibers of one run (see jiffy_sync_bench.c's struct group). */
struct Group {
	Group(unsigned n_, uint64_t per_) : per(per_), n(n_), start(n_), left(n_), barrier(n_) {}
	uint64_t per;
	unsigned n;
	boost::fibers::barrier start;
	std::atomic<unsigned> left;
	std::atomic<unsigned> started{0};
	uint64_t t0 = 0, t1 = 0;
	uint64_t stop_at = now_ns() + bench_sync_cap_ns();
	std::atomic<uint64_t> done{0};
	std::atomic<uint64_t> stop_round{UINT64_MAX};
	uint64_t counter = 0;
	std::atomic<uint64_t> sum{0};
	boost::fibers::mutex mutex;
	boost::fibers::barrier barrier;
	boost::fibers::unbuffered_channel<uint64_t> ping, pong;
	boost::fibers::buffered_channel<uint64_t> queue{BENCH_SYNC_CHAN_CAP};
};

void group_start(Group &g)
{
	g.start.wait();
	if (g.started.fetch_add(1) == 0)
		g.t0 = now_ns();
}

bool expired(const Group &g, uint64_t i)
{
	return i % BENCH_SYNC_CHECK_EVERY == 0 && now_ns() > g.stop_at;
}

void group_end(Group &g)
{
	if (g.left.fetch_sub(1) == 1)
		g.t1 = now_ns();
}

/*
 * run_group() - run fn(g, i) for i < g.n as fibers: all on this thread (@threads 1), or fiber i
 * on thread i % 2 of two pinned threads (@threads 2). Returns the timed span.
 */
uint64_t run_group(Group &g, const std::function<void(Group &, unsigned)> &fn, unsigned threads)
{
	if (threads == 1) {
		std::vector<boost::fibers::fiber> fs;
		for (unsigned i = 0; i < g.n; i++)
			fs.emplace_back([&g, &fn, i] { fn(g, i); });
		for (auto &f : fs)
			f.join();
	} else {
		std::vector<std::thread> ts;
		for (unsigned t = 0; t < 2; t++) {
			ts.emplace_back([&g, &fn, t] {
				pin_self(t ? cpu_second : cpu_first);
				std::vector<boost::fibers::fiber> fs;
				for (unsigned i = t; i < g.n; i += 2)
					fs.emplace_back([&g, &fn, i] { fn(g, i); });
				for (auto &f : fs)
					f.join();
			});
		}
		for (auto &t : ts)
			t.join();
	}
	return g.t1 - g.t0;
}

/* ---- mutex ---- */

bench_sample op_mutex_uncontended(void *, uint64_t iters)
{
	static boost::fibers::mutex m;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		m.lock();
		m.unlock();
	}
	return bench_sample{now_ns() - t0, iters};
}

bench_sample op_mutex_contended(void *, uint64_t iters)
{
	Group g(BENCH_SYNC_THREADS, bench_sync_per_thread(iters, BENCH_SYNC_THREADS));
	uint64_t ns = run_group(
		g,
		[](Group &g, unsigned) {
			uint64_t i;
			group_start(g);
			for (i = 0; i < g.per && !expired(g, i); i++) {
				g.mutex.lock();
				g.counter++;
				g.mutex.unlock();
			}
			g.done += i;
			group_end(g);
		},
		BENCH_SYNC_WORKERS);
	if (g.counter != g.done.load())
		die("mutex_contended: lost updates");
	return bench_sample{ns, g.counter};
}

/* ---- barrier ---- */

bench_sample op_barrier_round(void *, uint64_t iters)
{
	Group g(BENCH_SYNC_THREADS, iters);
	uint64_t ns = run_group(
		g,
		[](Group &g, unsigned idx) {
			uint64_t i;
			group_start(g);
			for (i = 0; i < g.per && i < g.stop_round.load(); i++) {
				if (idx == 0 && expired(g, i))
					g.stop_round = i + 1; /* see jiffy_sync_bench.c */
				g.barrier.wait();
			}
			if (idx == 0)
				g.done = i;
			group_end(g);
		},
		BENCH_SYNC_WORKERS);
	return bench_sample{ns, g.done.load()};
}

/* ---- once: std::call_once (Boost.Fiber has no once) ---- */

unsigned once_runs;

bench_sample op_once_fast(void *, uint64_t iters)
{
	static std::once_flag o;
	auto fn = [] { once_runs++; };
	std::call_once(o, fn);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++)
		std::call_once(o, fn);
	uint64_t ns = now_ns() - t0;
	if (once_runs != 1)
		die("once_fast: the function ran more than once");
	return bench_sample{ns, iters};
}

/* ---- channels ---- */

bench_sample op_chan_buffered(void *, uint64_t iters)
{
	boost::fibers::buffered_channel<uint64_t> c(BENCH_SYNC_CHAN_CAP);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t w;
		c.push(i);
		c.pop(w);
	}
	return bench_sample{now_ns() - t0, iters};
}

bench_sample op_chan_unbuffered_pingpong(void *, uint64_t iters)
{
	Group g(2, iters);
	uint64_t ns = run_group(
		g,
		[](Group &g, unsigned idx) {
			uint64_t v = 0;
			group_start(g);
			for (uint64_t i = 0; i < g.per; i++) {
				if (idx == 0) {
					g.ping.push(v);
					g.pong.pop(v);
				} else {
					g.ping.pop(v);
					g.pong.push(v + 1);
				}
			}
			group_end(g);
			if (idx == 0 && v != g.per)
				die("chan_unbuffered_pingpong: wrong value");
		},
		1);
	return bench_sample{ns, 2 * iters};
}

bench_sample op_chan_mpmc(void *, uint64_t iters)
{
	Group g(4, bench_sync_per_thread(iters, 2));
	uint64_t ns = run_group(
		g,
		[](Group &g, unsigned idx) {
			uint64_t v = 0, sum = 0;
			group_start(g);
			for (uint64_t i = 0; i < g.per; i++) {
				if (idx < 2) {
					g.queue.push(i + 1);
				} else {
					g.queue.pop(v);
					sum += v;
				}
			}
			group_end(g);
			g.sum += sum;
		},
		BENCH_SYNC_WORKERS);
	if (g.sum.load() != g.per * (g.per + 1))
		die("chan_mpmc: lost or duplicated items");
	return bench_sample{ns, 2 * g.per};
}

} // namespace

int main(int argc, char **argv)
{
	static const struct {
		bench_fn fn;
		unsigned threads;
		const char *na;
	} ops[BENCH_SYNC_NOPS] = {
		{op_mutex_uncontended, 1, nullptr},
		{op_mutex_contended, 2, nullptr},
		{nullptr, 1, "Boost.Fiber has no rwlock"},
		{nullptr, 2, "Boost.Fiber has no rwlock"},
		{nullptr, 2, "Boost.Fiber has no rwlock"},
		{nullptr, 1, "Boost.Fiber has no semaphore"},
		{nullptr, 1, "Boost.Fiber has no semaphore"},
		{op_barrier_round, 2, nullptr},
		{op_once_fast, 1, nullptr},
		{nullptr, 1, "Boost.Fiber has no waitgroup"},
		{op_chan_buffered, 1, nullptr},
		{op_chan_unbuffered_pingpong, 1, nullptr},
		{op_chan_mpmc, 2, nullptr},
	};

	if (bench_sync_check_args(argc, argv))
		return 2;
	find_cpus();
	pin_self(cpu_first);
	for (int k = 0; k < BENCH_SYNC_NOPS; k++) {
		const char *op = bench_sync_op_names[k];
		if (!bench_selected(argc, argv, op))
			continue;
		if (!ops[k].fn)
			bench_sync_print_na(kRuntime, op, ops[k].na);
		else if (ops[k].threads > 1 && cpu_second < 0)
			bench_sync_print_na(kRuntime, op, "needs two CPUs");
		else
			bench_sync_run(kRuntime, op, ops[k].fn, nullptr);
	}
	return 0;
}
