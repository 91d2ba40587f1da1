/*
 * tests/jf_test.h - the few helpers every Jiffy test shares.
 *
 * Owns: CHECK()/CHECK_EQ() (a failed check prints file:line and what failed, then ends the
 * process with status 1 at once, from any uthread or kernel thread), the configuration every test
 * starts from (defaults, the test's own fields, then the JIFFY_* environment so that CTest's
 * JIFFY_POLICY applies) or a clean environment (jft_clear_jiffy_env), accessors of MXCSR and the
 * x87 control word, JFT_SANITIZED for scaling loop counts down under ASan and TSan, and a crash
 * report: outside the sanitizers (which report crashes themselves) a SIGSEGV, SIGBUS, SIGILL or
 * SIGFPE prints the signal, the faulting address and instruction, and a backtrace to stderr before
 * the process dies of it as before, and stdout is line-buffered, so a crash in CI (where a test's
 * buffered stdout died with it) says which phase it was in and where.
 *
 * A check fails with _exit(1), not exit(1): other workers are still running uthreads, and running
 * atexit handlers (or LeakSanitizer) under them would only add noise to the real message.
 */
#ifndef JF_TEST_H
#define JF_TEST_H

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JFT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JFT_SANITIZED 1
#endif
#endif
#ifndef JFT_SANITIZED
#define JFT_SANITIZED 0
#endif

#if !JFT_SANITIZED && defined(__x86_64__)
#include <ucontext.h>

static inline void jft_crash_report(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = (ucontext_t *)ucv;
	void *frames[64];
	char msg[160];
	/* gregs[16] is REG_RIP, which <sys/ucontext.h> names only under _GNU_SOURCE */
	int n = snprintf(msg, sizeof(msg), "jf_test: signal %d (%s), fault address %p, at pc %p\n",
			 sig, strsignal(sig), si->si_addr, (void *)uc->uc_mcontext.gregs[16]);
	if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0) {
		/* nothing more to do from here */
	}
	n = backtrace(frames, 64);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	/* Every uthread's state too, if a runtime is up (not async-signal-safe, but the process is
	 * dying; a lock held by the crashed code ends it by SIGALRM after 5 s instead of a hang). */
	alarm(5);
	jf_dump_threads(stderr);
	signal(sig, SIG_DFL); /* die of it, as without this report: the faulting instruction again */
}

/* Runs before main(); the runtime's own SIGSEGV handler (stack overflow) chains to this one. */
__attribute__((constructor)) static void jft_crash_setup(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
	struct sigaction sa, old;
	void *warm[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	(void)backtrace(warm, 2); /* loads libgcc's unwinder now, not inside the handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = jft_crash_report;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
}
#endif

/* JFT_SCALE(plain, sanitized): a loop count for the plain build and one for the ASan build. */
#define JFT_SCALE(plain, sanitized) (JFT_SANITIZED ? (sanitized) : (plain))

static inline _Noreturn void jft_fail(void)
{
	fflush(stdout);
	fflush(stderr);
	_exit(1);
}

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,      \
				#cond);                                                       \
			jft_fail();                                                           \
		}                                                                             \
	} while (0)

/* CHECK_EQ(a, b): integers (or pointers cast to integers); prints both values on failure. */
#define CHECK_EQ(a, b)                                                                        \
	do {                                                                                  \
		long long jft_a_ = (long long)(a);                                            \
		long long jft_b_ = (long long)(b);                                            \
		if (jft_a_ != jft_b_) {                                                       \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n",  \
				__FILE__, __LINE__, #a, #b, jft_a_, jft_b_);                  \
			jft_fail();                                                           \
		}                                                                             \
	} while (0)

/* CHECK_GE(a, b): unsigned 64-bit a >= b (times, counters); prints both values on failure. */
#define CHECK_GE(a, b)                                                                        \
	do {                                                                                  \
		unsigned long long jft_a_ = (unsigned long long)(a);                          \
		unsigned long long jft_b_ = (unsigned long long)(b);                          \
		if (!(jft_a_ >= jft_b_)) {                                                    \
			fprintf(stderr, "%s:%d: CHECK_GE failed: %s >= %s (%llu vs %llu)\n",  \
				__FILE__, __LINE__, #a, #b, jft_a_, jft_b_);                  \
			jft_fail();                                                           \
		}                                                                             \
	} while (0)

/* CHECK_STR_CONTAINS(hay, needle): the message must mention needle. */
#define CHECK_STR_CONTAINS(hay, needle)                                                       \
	do {                                                                                  \
		const char *jft_h_ = (hay);                                                   \
		const char *jft_n_ = (needle);                                                \
		if (!jft_h_ || !strstr(jft_h_, jft_n_)) {                                     \
			fprintf(stderr, "%s:%d: CHECK failed: \"%s\" does not contain \"%s\"\n",  \
				__FILE__, __LINE__, jft_h_ ? jft_h_ : "(null)", jft_n_);      \
			jft_fail();                                                           \
		}                                                                             \
	} while (0)

/*
 * jft_config() - the configuration a test runs with: defaults, @workers (0: keep the default),
 * then the JIFFY_* environment (JIFFY_POLICY from CTest). A test that depends on a field (a worker
 * count, a policy) sets it again after this call.
 */
static inline void jft_config(struct jf_config *cfg, unsigned workers)
{
	char err[256] = "";
	int rc;

	jf_config_default(cfg);
	if (workers)
		cfg->workers = workers;
	rc = jf_config_apply_env(cfg, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "jf_config_apply_env failed (%d): %s\n", rc, err);
		jft_fail();
	}
}

/*
 * jft_config_fixed() - the defaults with @workers, @policy and @preempt set, the environment
 * ignored: for tests whose checks hold only under that configuration.
 */
static inline void jft_config_fixed(struct jf_config *cfg, unsigned workers, const char *policy,
				    const char *preempt)
{
	jf_config_default(cfg);
	cfg->workers = workers;
	snprintf(cfg->policy, sizeof(cfg->policy), "%s", policy);
	snprintf(cfg->preempt, sizeof(cfg->preempt), "%s", preempt);
}

/*
 * jft_config_good_env() - the defaults with one JIFFY_* variable @name=@value applied: it must
 * be accepted and validate (the variable is unset again afterwards).
 */
static inline struct jf_config jft_config_good_env(const char *name, const char *value)
{
	struct jf_config cfg;
	char err[256] = "";
	int rc;

	jf_config_default(&cfg);
	CHECK_EQ(setenv(name, value, 1), 0);
	rc = jf_config_apply_env(&cfg, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "%s=%s rejected: %d %s\n", name, value, rc, err);
	CHECK_EQ(rc, 0);
	CHECK_EQ(unsetenv(name), 0);
	CHECK_EQ(jf_config_validate(&cfg, err, sizeof(err)), 0);
	return cfg;
}

/* jft_run() - jf_run() that must succeed; returns main_fn's return value. */
static inline void *jft_run(const struct jf_config *cfg, jf_thread_fn main_fn, void *arg)
{
	void *ret = NULL;
	int rc = jf_run(cfg, main_fn, arg, &ret);

	if (rc != 0) {
		fprintf(stderr, "jf_run(policy=%s, workers=%u) failed: %d\n", cfg->policy,
			cfg->workers, rc);
		jft_fail();
	}
	return ret;
}

/* jft_spawn() - jf_spawn() that must succeed. */
static inline jf_thread_t *jft_spawn(const struct jf_attr *attr, jf_thread_fn fn, void *arg)
{
	jf_thread_t *t = NULL;
	int rc = jf_spawn(attr && attr->detached ? NULL : &t, attr, fn, arg);

	if (rc != 0) {
		fprintf(stderr, "jf_spawn failed: %d\n", rc);
		jft_fail();
	}
	return t;
}

/* jft_spawn_on() - spawn joinable @fn(@arg) preferring @worker (-1: the policy decides). */
static inline jf_thread_t *jft_spawn_on(int worker, jf_thread_fn fn, void *arg)
{
	struct jf_attr attr;

	jf_attr_init(&attr);
	attr.sched.worker = worker;
	return jft_spawn(&attr, fn, arg);
}

/* jft_join() - jf_join() that must succeed; returns the thread's return value. */
static inline void *jft_join(jf_thread_t *t)
{
	void *ret = NULL;
	int rc = jf_join(t, &ret);

	if (rc != 0) {
		fprintf(stderr, "jf_join failed: %d\n", rc);
		jft_fail();
	}
	return ret;
}

/* splitmix64 - a deterministic seed/stream per task; tests never use rand(). */
static inline uint64_t jft_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

extern char **environ;

/* Remove every JIFFY_* variable so the test starts from a clean environment. */
static inline void jft_clear_jiffy_env(void)
{
	for (;;) {
		char name[256];
		char **e;
		int found = 0;

		for (e = environ; e && *e; e++) {
			const char *eq = strchr(*e, '=');
			size_t len;

			if (strncmp(*e, "JIFFY_", 6) != 0 || !eq)
				continue;
			len = (size_t)(eq - *e);
			CHECK(len < sizeof(name));
			memcpy(name, *e, len);
			name[len] = '\0';
			found = 1;
			break;
		}
		if (!found)
			return;
		CHECK_EQ(unsetenv(name), 0);
	}
}

/* The SSE control/status register and the x87 control word (per-uthread state under test). */
static inline uint32_t jft_get_mxcsr(void)
{
	uint32_t v;

	__asm__ volatile("stmxcsr %0" : "=m"(v) : : "memory");
	return v;
}

static inline void jft_set_mxcsr(uint32_t v)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(v) : "memory");
}

static inline uint16_t jft_get_x87_cw(void)
{
	uint16_t v;

	__asm__ volatile("fnstcw %0" : "=m"(v) : : "memory");
	return v;
}

static inline void jft_set_x87_cw(uint16_t v)
{
	__asm__ volatile("fldcw %0" : : "m"(v) : "memory");
}

/* jft_ok() - the last line of every passing test. */
static inline void jft_ok(const char *name)
{
	printf("%s: ok\n", name);
	fflush(stdout);
}

#endif /* JF_TEST_H */
