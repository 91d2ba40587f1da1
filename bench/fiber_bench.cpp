/*
 * bench/fiber_bench.cpp - the microbenchmark ops run with Boost.Fiber, the C++ user-level thread
 * library Jiffy is compared with.
 *
 * Owns: the Boost.Fiber version of every op of bench/README.md. Single-core ops run two fibers on
 * the main thread with Boost's default round_robin scheduler (the main fiber only waits in join()).
 * wakeup_xworker runs one fiber on each of two threads pinned to the first two CPUs and makes them
 * ping-pong through boost::fibers::mutex/condition_variable, which work across threads; a thread
 * whose only fiber waits sleeps in the kernel until the other thread wakes it.
 * The same loops, with the same counting, are in jiffy_bench.c, pthread_bench.c and go/main.go:
 * change them together.
 */
#include <boost/fiber/all.hpp>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "bench_pin.h"
#include "bench_common.h"

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

void find_cpus()
{
	int rc = bench_find_cpus(&cpu_first, &cpu_second);
	if (rc) {
		fprintf(stderr, "fiber_bench: sched_getaffinity: %s\n", strerror(rc));
		exit(1);
	}
}

void pin_self(int cpu)
{
	int rc = bench_pin_self(cpu);
	if (rc) {
		fprintf(stderr, "fiber_bench: pthread_setaffinity_np: %s\n", strerror(rc));
		exit(1);
	}
}

/* State shared by fiber A (the initiator, which times its loop) and fiber B. */
struct Pair {
	explicit Pair(uint64_t n) : iters(n) {}
	uint64_t iters;
	boost::fibers::barrier start{2};
	std::atomic<int> stop{0};
	uint64_t b_count = 0;
	uint64_t elapsed_ns = 0;
	std::atomic<unsigned> turn{0}; /* 0: A's turn, 1: B's turn */
	boost::fibers::mutex mutex;
	boost::fibers::condition_variable cond_a;
	boost::fibers::condition_variable cond_b;
	boost::fibers::condition_variable *wait_a = &cond_a;
	boost::fibers::condition_variable *wait_b = &cond_a;
};

using Lock = std::unique_lock<boost::fibers::mutex>;

template <typename A, typename B> void run_fibers(A a, B b)
{
	boost::fibers::fiber fa(a);
	boost::fibers::fiber fb(b);
	fa.join();
	fb.join();
}

/* ---- yield ---- */

bench_sample op_yield(void *, uint64_t iters)
{
	Pair p(iters);
	run_fibers(
		[&p] {
			p.start.wait();
			uint64_t t0 = now_ns();
			for (uint64_t i = 0; i < p.iters; i++)
				boost::this_fiber::yield();
			p.elapsed_ns = now_ns() - t0;
			p.stop.store(1);
		},
		[&p] {
			uint64_t n = 0;
			p.start.wait();
			while (!p.stop.load(std::memory_order_relaxed)) {
				boost::this_fiber::yield();
				n++;
			}
			p.b_count = n;
		});
	return bench_sample{p.elapsed_ns, iters + p.b_count};
}

/* ---- spawn_join ---- */

bench_sample op_spawn_join(void *, uint64_t iters)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		boost::fibers::fiber f([] {});
		f.join();
	}
	return bench_sample{now_ns() - t0, iters};
}

/* ---- ctx_switch: strict alternation by yielding until it is my turn ---- */

void yield_await(Pair &p, unsigned me)
{
	while (p.turn.load(std::memory_order_relaxed) != me)
		boost::this_fiber::yield();
}

bench_sample op_ctx_switch(void *, uint64_t iters)
{
	Pair p(iters);
	run_fibers(
		[&p] {
			p.start.wait();
			uint64_t t0 = now_ns();
			for (uint64_t i = 0; i < p.iters; i++) {
				p.turn.store(1, std::memory_order_relaxed);
				yield_await(p, 0);
			}
			p.elapsed_ns = now_ns() - t0;
		},
		[&p] {
			p.start.wait();
			for (uint64_t i = 0; i < p.iters; i++) {
				yield_await(p, 1);
				p.turn.store(0, std::memory_order_relaxed);
			}
		});
	return bench_sample{p.elapsed_ns, 2 * iters};
}

/* ---- condvar ping-pong (condvar_pingpong on one thread, wakeup_xworker on two) ---- */

void cond_a(Pair &p)
{
	p.start.wait();
	uint64_t t0 = now_ns();
	{
		Lock lk(p.mutex);
		for (uint64_t i = 0; i < p.iters; i++) {
			p.turn.store(1, std::memory_order_relaxed);
			p.wait_b->notify_one();
			while (p.turn.load(std::memory_order_relaxed) != 0)
				p.wait_a->wait(lk);
		}
	}
	p.elapsed_ns = now_ns() - t0;
}

void cond_b(Pair &p)
{
	p.start.wait();
	Lock lk(p.mutex);
	for (uint64_t i = 0; i < p.iters; i++) {
		while (p.turn.load(std::memory_order_relaxed) != 1)
			p.wait_b->wait(lk);
		p.turn.store(0, std::memory_order_relaxed);
		p.wait_a->notify_one();
	}
}

bench_sample op_condvar_pingpong(void *, uint64_t iters)
{
	Pair p(iters);
	run_fibers([&p] { cond_a(p); }, [&p] { cond_b(p); });
	return bench_sample{p.elapsed_ns, 2 * iters};
}

bench_sample op_wakeup_xworker(void *, uint64_t iters)
{
	Pair p(iters);
	p.wait_b = &p.cond_b;
	std::thread ta([&p] {
		pin_self(cpu_first);
		boost::fibers::fiber f([&p] { cond_a(p); });
		f.join();
	});
	std::thread tb([&p] {
		pin_self(cpu_second);
		boost::fibers::fiber f([&p] { cond_b(p); });
		f.join();
	});
	ta.join();
	tb.join();
	return bench_sample{p.elapsed_ns, iters};
}

/* ---- mutex_pingpong: see pthread_bench.c for the protocol ---- */

void mutex_await(Pair &p, unsigned me)
{
	p.mutex.lock();
	while (p.turn.load(std::memory_order_relaxed) != me) {
		p.mutex.unlock();
		boost::this_fiber::yield();
		p.mutex.lock();
	}
}

void mutex_pass(Pair &p, unsigned me)
{
	p.turn.store(!me, std::memory_order_relaxed);
	boost::this_fiber::yield();
	p.mutex.unlock();
}

bench_sample op_mutex_pingpong(void *, uint64_t iters)
{
	Pair p(iters);
	run_fibers(
		[&p] {
			p.start.wait();
			uint64_t t0 = now_ns();
			for (uint64_t i = 0; i < p.iters; i++) {
				mutex_await(p, 0);
				mutex_pass(p, 0);
			}
			mutex_await(p, 0);
			p.elapsed_ns = now_ns() - t0;
			p.mutex.unlock();
		},
		[&p] {
			p.start.wait();
			for (uint64_t i = 0; i < p.iters; i++) {
				mutex_await(p, 1);
				mutex_pass(p, 1);
			}
		});
	return bench_sample{p.elapsed_ns, 2 * iters};
}

} // namespace

int main(int argc, char **argv)
{
	static const bench_fn fns[BENCH_NOPS] = {
		op_yield,          op_spawn_join,     op_ctx_switch,
		op_wakeup_xworker, op_mutex_pingpong, op_condvar_pingpong,
	};

	if (bench_check_args(argc, argv))
		return 2;
	find_cpus();
	pin_self(cpu_first); /* single-core ops run on the main thread: keep it on one CPU */
	for (int k = 0; k < BENCH_NOPS; k++) {
		const char *op = bench_op_names[k];
		if (!bench_selected(argc, argv, op))
			continue;
		if (fns[k] == op_wakeup_xworker && cpu_second < 0) {
			fprintf(stderr, "fiber_bench: %s needs two CPUs\n", op);
			bench_print_na(kRuntime, op);
			continue;
		}
		bench_run(kRuntime, op, fns[k], nullptr);
	}
	return 0;
}
