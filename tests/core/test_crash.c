/*
 * core/test_crash.c - a crash leaves a report to start from: a uthread that returns to address 0
 * (the `ret` to a zeroed return address of the net.netpoll.ws.timer crash seen once in CI,
 * issue 27) makes the process print, on stderr, the signal and address, ip and sp, the worker
 * and the uthread that faulted, the words at sp, a backtrace, and every uthread of the runtime
 * with its state; then it still dies of SIGSEGV (the default action: a core where enabled).
 * The crash runs in a child process (no core file: RLIMIT_CORE 0); the parent reads its stderr.
 * A program with a SIGSEGV handler of its own gets no report: the fault is chained to it.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../jf_test.h"

static atomic_int parked_ready;

/* Blocks until the process dies: shows up as "blocked" in the report. */
static void *bystander(void *arg)
{
	static jf_mutex_t m = JF_MUTEX_INITIALIZER;
	static jf_cond_t c = JF_COND_INITIALIZER;

	(void)arg;
	jf_mutex_lock(&m);
	atomic_fetch_add(&parked_ready, 1);
	for (;;)
		jf_cond_wait(&c, &m);
	return NULL;
}

static void *crasher(void *arg)
{
	(void)arg;
	while (atomic_load(&parked_ready) < 2)
		jf_yield();
	/* A return to address 0, as a smashed or zeroed return address does. */
	__asm__ volatile("pushq $0\n\tret" ::: "memory");
	return NULL;
}

static void *child_main(void *arg)
{
	struct jf_attr a;
	jf_thread_t *t;

	(void)arg;
	jf_attr_init(&a);
	a.detached = 1;
	a.name = "bystander-1";
	CHECK_EQ(jf_spawn(&t, &a, bystander, NULL), 0);
	a.name = "bystander-2";
	CHECK_EQ(jf_spawn(&t, &a, bystander, NULL), 0);
	a.name = "crasher";
	CHECK_EQ(jf_spawn(&t, &a, crasher, NULL), 0);
	jf_sleep_ns(10ull * 1000 * 1000 * 1000); /* the crash comes first */
	return NULL;
}

static void expect(const char *out, const char *what)
{
	if (!strstr(out, what)) {
		fprintf(stderr, "core.crash: the report lacks \"%s\"; it was:\n%s\n", what, out);
		jft_fail();
	}
}

int main(void)
{
	static char out[65536];
	struct rlimit no_core = {0, 0};
	int fds[2], status;
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	CHECK_EQ(pipe(fds), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct jf_config cfg;

		setrlimit(RLIMIT_CORE, &no_core);
		/* The default action, as in a program without a SIGSEGV handler of its own (the
		 * report is for faults nothing else handles; jf_test.h installed one). */
		signal(SIGSEGV, SIG_DFL);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		jft_config(&cfg, 2);
		jf_run(&cfg, child_main, NULL, NULL);
		_exit(3); /* not reached: the crash ends the child */
	}
	close(fds[1]);
	while (n < sizeof(out) - 1 && (k = read(fds[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	printf("%s", out);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
		fprintf(stderr, "core.crash: the child ended with status %#x, not SIGSEGV\n", status);
		jft_fail();
	}
	expect(out, "jiffy: crash: SIGSEGV at address 0x0, ip 0x0, sp 0x");
	expect(out, "running uthread");
	expect(out, "'crasher'");
	expect(out, "jiffy: crash: stack at sp:");
	expect(out, "jiffy: crash: backtrace:");
	expect(out, "jiffy: crash: uthreads (id, state, last worker, name):");
	expect(out, "blocked");
	expect(out, "bystander-1");
	expect(out, "bystander-2");
	expect(out, "crasher   <- faulted");
	jft_ok("core.crash");
	return 0;
}
