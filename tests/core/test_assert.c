/*
 * core/test_assert.c - proves the invariant checks report and stop (src/common/assert.h):
 * JF_BUG_ON() aborts with the file, line, condition and message in every build; JF_ASSERT()
 * does the same where JF_ASSERTS is 1 (builds without NDEBUG: the sanitizer builds CI runs) and
 * costs nothing where it is 0 (the plain RelWithDebInfo build), which the test reports; where
 * it is on, a uthread that sleeps holding a runtime spinlock is stopped at the switch. Each
 * check runs in a child process; the parent reads its stderr and its fate.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/common/assert.h"
#include "../../src/common/spinlock.h"
#include "jf_test.h"

/* Run @fn in a child; return its exit status word, its stderr in @err. */
static int run_child(void (*fn)(void), char *err, size_t errlen)
{
	int pfd[2], status;
	pid_t pid;
	ssize_t n, got = 0;

	CHECK_EQ(pipe(pfd), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], err + got, errlen - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = '\0';
	close(pfd[0]);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

/* The child must have died of SIGABRT; say how it ended and what it printed where not. */
static void expect_abort(const char *what, int st, const char *err)
{
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)
		return;
	fprintf(stderr, "core.assert: %s: child %s %d, expected SIGABRT; its stderr:\n%s\n", what,
		WIFSIGNALED(st) ? "died of signal" : "exited with",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), err);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

static volatile int broken = 1;

static void bug_on(void)
{
	JF_BUG_ON(broken, "the widget count is %d", 42);
}

static void assert_fails(void)
{
	JF_ASSERT(!broken, "state %u -> %u", 1u, 3u);
}

/* A uthread that sleeps holding a runtime spinlock: the switch must be refused. */
static void *lock_then_sleep(void *arg)
{
	static uint32_t l;

	(void)arg;
	jf_spin_lock(&l);
	jf_sleep_ns(1000000);
	jf_spin_unlock(&l);
	return NULL;
}

static void switch_holding_lock(void)
{
	struct jf_config cfg;

	jft_config_fixed(&cfg, 1, "fifo", "none");
	jf_run(&cfg, lock_then_sleep, NULL, NULL);
}

static void assert_holds(void)
{
	JF_ASSERT(broken, "never printed");
	JF_BUG_ON(!broken, "never printed");
}

int main(void)
{
	char err[4096];
	int st;

	st = run_child(bug_on, err, sizeof(err));
	expect_abort("JF_BUG_ON", st, err);
	CHECK_STR_CONTAINS(err, "JF_BUG_ON failed at");
	CHECK_STR_CONTAINS(err, "test_assert.c:");
	CHECK_STR_CONTAINS(err, "broken: the widget count is 42");

	st = run_child(assert_fails, err, sizeof(err));
	if (JF_ASSERTS) {
		expect_abort("JF_ASSERT", st, err);
		CHECK_STR_CONTAINS(err, "JF_ASSERT failed at");
		CHECK_STR_CONTAINS(err, "!broken: state 1 -> 3");
	} else {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_EQ(err[0], '\0');
	}

	st = run_child(switch_holding_lock, err, sizeof(err));
	if (JF_ASSERTS) {
		expect_abort("switch holding a spinlock", st, err);
		CHECK_STR_CONTAINS(err, "reschedules holding 1 runtime spinlock(s)");
	} else {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}

	st = run_child(assert_holds, err, sizeof(err));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(err[0], '\0');
	printf("core.assert: ok (JF_ASSERT %s in this build)\n", JF_ASSERTS ? "on" : "off");
	return 0;
}
