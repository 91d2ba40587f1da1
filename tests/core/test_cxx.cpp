/*
 * tests/core/test_cxx.cpp - the public headers compile as C++17 (-Wall -Wextra -Werror, built
 * by CTest) and the C API works from C++: uthreads spawned, a mutex, yields, joins.
 */
#include <jiffy/jiffy.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

jf_mutex_t lock = JF_MUTEX_INITIALIZER;
long total;

void *worker(void *arg)
{
	for (long i = 0; i < reinterpret_cast<intptr_t>(arg); i++) {
		jf_mutex_lock(&lock);
		total++;
		jf_mutex_unlock(&lock);
		if (i % 64 == 0)
			jf_yield();
	}
	return arg;
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
	std::printf("test_cxx: 8 uthreads x 5000 locked increments from C++: ok (Jiffy %s)\n",
		    jf_version(nullptr));
	return 0;
}
