/*
 * tests/core/test_cxx.cpp - the public headers compile as C++17 (-Wall -Wextra -Werror, built
 * by CTest) and the C API works from C++: uthreads spawned, a mutex, yields, joins; the fast
 * slots of jiffy/local.h through their C++ form (a call) and jf::pin_guard of jiffy.hpp.
 */
#include <jiffy/jiffy.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

jf_mutex_t lock = JF_MUTEX_INITIALIZER;
long total;

void *worker(void *arg)
{
	if (jf_local_set(0, arg) != 0)
		return nullptr;
	for (long i = 0; i < reinterpret_cast<intptr_t>(arg); i++) {
		jf_mutex_lock(&lock);
		total++;
		jf_mutex_unlock(&lock);
		if (i % 64 == 0)
			jf_yield();
		if (i % 1000 == 0) { /* pinned for a while: the worker does not change */
			jf::pin_guard stay;
			int w = jf_worker_id();
			jf_yield();
			if (!stay.pinned() || jf_thread_pinned(jf_self()) != w || jf_worker_id() != w)
				return nullptr;
		}
	}
	if (jf_thread_pinned(jf_self()) != -1) /* every guard unpinned */
		return nullptr;
	return jf_local_get(0); /* this uthread's own slot: arg */
}

void *app_main(void *)
{
	jf_thread_t *t[8];
	for (auto &h : t)
		if (jf_spawn(&h, nullptr, worker, reinterpret_cast<void *>(intptr_t{5000})) != 0)
			return reinterpret_cast<void *>(intptr_t{1});
	for (auto h : t) {
		void *ret = nullptr;
		jf_join(h, &ret);
		if (ret != reinterpret_cast<void *>(intptr_t{5000}))
			return reinterpret_cast<void *>(intptr_t{1});
	}
	return nullptr;
}

} // namespace

int main()
{
	void *ret = reinterpret_cast<void *>(intptr_t{1});
	int rc = jf_run(nullptr, app_main, nullptr, &ret);
	if (rc != 0 || ret != nullptr || total != 8 * 5000) {
		std::fprintf(stderr, "test_cxx: FAIL: jf_run %d, result %p, total %ld (want %d)\n", rc,
			     ret, total, 8 * 5000);
		return 1;
	}
	if (std::strcmp(jf_version(nullptr), JIFFY_VERSION) != 0) {
		std::fprintf(stderr, "test_cxx: FAIL: jf_version() %s, headers %s\n",
			     jf_version(nullptr), JIFFY_VERSION);
		return 1;
	}
	if (jf::pin_guard().pinned()) { /* outside the runtime */
		std::fprintf(stderr, "test_cxx: FAIL: jf::pin_guard pinned outside a uthread\n");
		return 1;
	}
	std::printf("test_cxx: 8 uthreads x 5000 locked increments from C++, fast slots and "
		    "jf::pin_guard: ok (Jiffy %s)\n",
		    jf_version(nullptr));
	return 0;
}
