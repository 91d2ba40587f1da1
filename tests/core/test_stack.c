/*
 * core/test_stack.c - proves that a uthread gets the whole stack it asked for and that overflowing
 * it is caught loudly: (a) recursion using ~85% of a 64 KiB stack (attr.stack_size = 65536), and
 * of the default stack size, completes and returns the right value; (b) unbounded recursion in a
 * uthread named "deep-recursion" hits the guard page and stops the process (a child, forked
 * before any runtime starts) by a signal or a non-zero exit, with a message on stderr that says
 * "stack overflow" and names the uthread; (c) the same inside a preemptible function that uthread
 * launched (jiffy/pfn.h: the message says so). Under ASan, its own stack-overflow report is
 * accepted instead of the runtime's message, but the child must still die.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "jf_test.h"

#define FRAME_BUF 512

static uintptr_t entry_frame;   /* frame address of the uthread's function: ~ the stack top */
static uintptr_t deepest_frame; /* frame address of the deepest recursive call */
static uintptr_t probe_frames[2];

/* Each frame holds a FRAME_BUF buffer the compiler cannot drop; no tail call (uses buf after). */
__attribute__((noinline)) static long recurse(long depth, int probe)
{
	volatile char buf[FRAME_BUF];
	long r;

	buf[0] = (char)depth;
	buf[FRAME_BUF - 1] = (char)(depth >> 8);
	if (probe && depth < 2)
		probe_frames[depth] = (uintptr_t)__builtin_frame_address(0);
	if (depth == 0) {
		deepest_frame = (uintptr_t)__builtin_frame_address(0);
		return 1;
	}
	r = recurse(depth - 1, probe);
	return r + (buf[0] == (char)depth) + (buf[FRAME_BUF - 1] == (char)(depth >> 8)) - 2;
}

/* Recurse to use @arg * 0.85 bytes of stack; returns the depth used. */
static void *use_stack(void *arg)
{
	size_t stack_size = (size_t)(uintptr_t)arg;
	size_t frame, target, used;
	long depth;

	entry_frame = (uintptr_t)__builtin_frame_address(0);
	CHECK_EQ(recurse(1, 1), 1);
	frame = probe_frames[1] - probe_frames[0];
	/* Under ASan the buffer may live on its fake stack: only the real frame is measured. */
	CHECK(frame >= 32 && frame < 16 * FRAME_BUF);

	target = stack_size / 100 * 85;
	depth = (long)(target / frame);
	CHECK_EQ(recurse(depth, 0), 1);
	used = entry_frame - deepest_frame;
	printf("stack %zu: frame %zu bytes, depth %ld, used %zu bytes (%.1f%%)\n", stack_size,
	       frame, depth, used, 100.0 * (double)used / (double)stack_size);
	CHECK_GE(used, stack_size / 100 * 80);
	return (void *)(intptr_t)depth;
}

static void *main_deep_ok(void *arg)
{
	const struct jf_config *cfg = arg;
	struct jf_attr attr;
	jf_thread_t *t;
	int i;

	/* Several times: a recycled stack must be whole too. */
	for (i = 0; i < 3; i++) {
		jf_attr_init(&attr);
		attr.stack_size = 65536;
		attr.name = "deep-but-fine";
		t = jft_spawn(&attr, use_stack, (void *)(uintptr_t)65536);
		CHECK(jft_join(t) != NULL);
	}
	/* The default stack size. */
	t = jft_spawn(NULL, use_stack, (void *)(uintptr_t)cfg->stack_size);
	CHECK(jft_join(t) != NULL);
	return NULL;
}

/* ---- overflow in a child process ---- */

static volatile long never_stop; /* 0: recurse until the stack runs out */

__attribute__((noinline)) static long recurse_forever(long depth)
{
	volatile char buf[256];
	long r;

	buf[0] = (char)depth;
	if (never_stop && depth >= never_stop)
		return 0;
	r = recurse_forever(depth + 1);
	return r + buf[0];
}

static void *overflow_fn(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)recurse_forever(0);
}

static int in_pfn; /* the overflow happens in a preemptible function the uthread launched */

static void *overflow_launcher(void *arg)
{
	jf_pfn_t *c;
	return (void *)(intptr_t)jf_pfn_launch(overflow_fn, arg, JF_PFN_UNLIMITED, NULL, &c);
}

static void *main_overflow(void *arg)
{
	struct jf_attr attr;
	jf_thread_t *t;

	(void)arg;
	jf_attr_init(&attr);
	attr.stack_size = 65536;
	attr.name = "deep-recursion";
	t = jft_spawn(&attr, in_pfn ? overflow_launcher : overflow_fn, NULL);
	jft_join(t);
	return NULL;
}

static _Noreturn void child(int errfd)
{
	struct jf_config cfg;
	struct rlimit no_core = {0, 0};

	setrlimit(RLIMIT_CORE, &no_core);
	if (dup2(errfd, STDERR_FILENO) < 0)
		_exit(90);
	close(errfd);
	jft_config(&cfg, 2);
	if (in_pfn)
		cfg.stack_size = 65536; /* a function's stack is the configured size */
	jf_run(&cfg, main_overflow, NULL, NULL);
	fprintf(stderr, "child: jf_run returned after a stack overflow\n");
	_exit(0);
}

static void check_overflow(void)
{
	char out[65536];
	size_t len = 0;
	int fds[2], status = 0, died;
	pid_t pid;
	uint64_t deadline;

	CHECK_EQ(pipe(fds), 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		child(fds[1]);
	}
	close(fds[1]);

	/* Read the child's stderr until EOF; a child that hangs is killed after 60 s. */
	deadline = jf_now_ns() + 60ull * 1000000000ull;
	for (;;) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		ssize_t n;
		int rc = poll(&p, 1, 1000);

		if (rc < 0 && errno == EINTR)
			continue;
		CHECK(rc >= 0);
		if (rc == 0) {
			if (jf_now_ns() > deadline) {
				fprintf(stderr, "child still running after 60 s: killing it\n");
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				out[len < sizeof(out) ? len : sizeof(out) - 1] = '\0';
				fprintf(stderr, "child stderr:\n%s\n", out);
				CHECK(!"stack overflow did not stop the process");
			}
			continue;
		}
		n = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(out) - 1) {
			/* Keep draining so the child never blocks on a full pipe. */
			char sink[4096];

			while (read(fds[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	out[len] = '\0';
	close(fds[0]);
	CHECK_EQ(waitpid(pid, &status, 0), pid);

	printf("child stderr (%zu bytes):\n%.4000s\n", len, out);
	if (WIFSIGNALED(status))
		printf("child killed by signal %d (%s)\n", WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		printf("child exited with status %d\n", WEXITSTATUS(status));

	died = (WIFSIGNALED(status) &&
		(WTERMSIG(status) == SIGABRT || WTERMSIG(status) == SIGSEGV ||
		 WTERMSIG(status) == SIGBUS)) ||
	       (WIFEXITED(status) && WEXITSTATUS(status) != 0);
	CHECK(died);
	if (JFT_SANITIZED && strstr(out, "AddressSanitizer") &&
	    (strstr(out, "stack-overflow") || strstr(out, "stack overflow"))) {
		printf("(ASan reported the overflow itself)\n");
		return;
	}
	CHECK_STR_CONTAINS(out, "stack overflow");
	CHECK_STR_CONTAINS(out, "deep-recursion");
	if (in_pfn)
		CHECK_STR_CONTAINS(out, "preemptible function");
}

int main(void)
{
	struct jf_config cfg;

	/* Fork before this process starts any runtime (or any thread). */
	check_overflow();
	in_pfn = 1; /* again, in a preemptible function's stack (jiffy/pfn.h) */
	check_overflow();

	jft_config(&cfg, 2);
	jft_run(&cfg, main_deep_ok, &cfg);
	jft_ok("core.stack");
	return 0;
}
