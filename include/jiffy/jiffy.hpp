/*
 * jiffy/jiffy.hpp - thin C++17 conveniences over Jiffy's C API (header-only, C++ only).
 *
 * Owns: jf::lock_guard, a scoped lock for jf_mutex_t, and jf::pin_guard, a scoped
 * jf_thread_pin() (jiffy/local.h). Everything else is the C API of
 * <jiffy/jiffy.h>, which this header includes and which C++ programs call directly: this header
 * adds no types that the C API lacks, only what saves real boilerplate in C++.
 *
 * Uthread functions called by the runtime (jf_run's main, jf_spawn's function) are called from C:
 * an exception must not leave them. Declare them noexcept, so that an escaping exception calls
 * std::terminate() instead of unwinding into the runtime.
 */
#ifndef JIFFY_JIFFY_HPP
#define JIFFY_JIFFY_HPP

#ifndef __cplusplus
#error "jiffy/jiffy.hpp is C++ only (C++17 or later); C programs include <jiffy/jiffy.h>"
#endif
#if __cplusplus < 201703L
#error "jiffy/jiffy.hpp needs C++17 or later (-std=c++17)"
#endif

#include <jiffy/jiffy.h>

namespace jf {

/**
 * jf::lock_guard - holds a jf_mutex_t from construction to the end of the scope.
 *
 *     jf::lock_guard hold(lock);   // jf_mutex_lock(&lock): blocks the uthread, never the worker
 *     ...                          // jf_mutex_unlock(&lock) on every way out of the scope
 *
 * jf_cond_wait(&cond, &lock) inside the scope is fine: it returns with the mutex held again.
 * Must be used from uthreads, like jf_mutex_lock().
 */
class lock_guard {
public:
	explicit lock_guard(jf_mutex_t &m) noexcept : m_(m) { jf_mutex_lock(&m_); }
	~lock_guard() { jf_mutex_unlock(&m_); }
	lock_guard(const lock_guard &) = delete;
	lock_guard &operator=(const lock_guard &) = delete;

private:
	jf_mutex_t &m_;
};

/**
 * jf::pin_guard - keeps the calling uthread on its worker (jf_thread_pin()) from construction
 * to the end of the scope, where it undoes that pin (jf_thread_unpin()); pins nest.
 *
 *     jf::pin_guard stay;          // from here on only this worker runs the uthread
 *     if (!stay.pinned()) ...      // not in a uthread (jf_thread_pin() said -EPERM)
 *
 * Must be destroyed by the uthread that made it.
 */
class pin_guard {
public:
	pin_guard() noexcept : ok_(jf_thread_pin() == 0) {}
	~pin_guard()
	{
		if (ok_)
			jf_thread_unpin();
	}
	pin_guard(const pin_guard &) = delete;
	pin_guard &operator=(const pin_guard &) = delete;
	/** pinned() - whether the constructor pinned the uthread. */
	bool pinned() const noexcept { return ok_; }

private:
	bool ok_;
};

} // namespace jf

#endif /* JIFFY_JIFFY_HPP */
