/*
 * preempt/test_signals.c - proves that preemption leaves the application's own use of signals
 * alone: (1) a SIGUSR1 handler installed with sigaction() keeps working while uthreads on
 * 2 workers are preempted around it: raise() and pthread_sigqueue() from uthreads run it before
 * they return, every time (tens of thousands of times), although the preemption signal may land
 * inside the handler; the runtime neither replaces the handler nor leaves SIGUSR1 blocked. (2) A
 * uthread blocked in read() on a pipe, on a worker where another uthread waits to run (so the
 * mechanism keeps requesting preemption), gets its data when a helper pthread writes 50 ms later
 * (5 times): the preemption signals that interrupt the read (at least one in all) are installed
 * with SA_RESTART, so read() never fails with EINTR (auto with a grace period under 1 ms: its
 * default timer counts CPU time, which the blocked thread does not use). (3) Under the signal mechanisms each uthread
 * keeps its own signal mask across preemptions: two uthreads taking turns on 1 worker only
 * through preemption (at least 5 turns each, in 300 ms or, on a loaded machine, up to 10 s more),
 * one with SIGUSR1 blocked and one with SIGWINCH blocked, find their own mask every time they
 * look, in particular right after each resumption.
 * CTest runs it with the default preemption signal (SIGURG) and again with
 * JIFFY_PREEMPT_SIGNAL=SIGUSR2.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pt_common.h"

#define NAME "preempt.signals"
#define NRAISERS 2

static const char *mech;
static int preempt_signal;
static struct jf_config base_cfg;

/* ---- part 1: an application signal handler ---- */

static atomic_ullong handled[NRAISERS];
static atomic_ullong handled_other;
static atomic_int stop;
static long raises;

static void usr1_handler(int sig, siginfo_t *info, void *uc)
{
	int idx = 0;

	(void)uc;
	if (sig != SIGUSR1) {
		atomic_fetch_add(&handled_other, 1);
		return;
	}
	if (info->si_code == SI_QUEUE)
		idx = info->si_value.sival_int;
	if (idx < 0 || idx >= NRAISERS) {
		atomic_fetch_add(&handled_other, 1);
		return;
	}
	/* A couple of microseconds, so that preemption signals land in here too. */
	(void)pt_work((uint64_t)idx + 11, 500);
	atomic_fetch_add(&handled[idx], 1);
}

static void check_handlers_installed(const char *when)
{
	struct sigaction sa;

	CHECK_EQ(sigaction(SIGUSR1, NULL, &sa), 0);
	if (!(sa.sa_flags & SA_SIGINFO) || sa.sa_sigaction != usr1_handler) {
		fprintf(stderr, "%s [%s]: %s: the application's SIGUSR1 handler was replaced\n",
			NAME, mech, when);
		CHECK(!"application signal handler replaced");
	}
	if (pt_is_signal(mech) && jf_self()) {
		CHECK_EQ(sigaction(preempt_signal, NULL, &sa), 0);
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) {
			fprintf(stderr, "%s [%s]: no handler for the preemption signal %d\n", NAME,
				mech, preempt_signal);
			CHECK(!"preemption signal has no handler");
		}
		if (!(sa.sa_flags & SA_RESTART)) {
			fprintf(stderr, "%s [%s]: the preemption signal %d lacks SA_RESTART\n", NAME,
				mech, preempt_signal);
			CHECK(!"preemption signal installed without SA_RESTART");
		}
	}
}

static void *raiser_fn(void *arg)
{
	int idx = (int)(intptr_t)arg;
	uint64_t x = (uint64_t)idx;

	for (long i = 0; i < raises; i++) {
		unsigned long long before = atomic_load(&handled[idx]), after;

		if (idx == 0) {
			CHECK_EQ(raise(SIGUSR1), 0);
		} else {
			union sigval v = {.sival_int = idx};

			/* pthread_self() must still be this kernel thread at the call. */
			jf_preempt_disable();
			CHECK_EQ(pthread_sigqueue(pthread_self(), SIGUSR1, v), 0);
			jf_preempt_enable();
		}
		after = atomic_load(&handled[idx]);
		if (after != before + 1) {
			sigset_t cur;

			pthread_sigmask(SIG_BLOCK, NULL, &cur);
			fprintf(stderr,
				"%s [%s]: raiser %d, signal %ld on worker %d: the handler ran %llu "
				"times during the call, not once; SIGUSR1 %s on this worker\n",
				NAME, mech, idx, i, jf_worker_id(), after - before,
				sigismember(&cur, SIGUSR1) ? "is BLOCKED" : "is not blocked");
			CHECK(!"application signal handler did not run synchronously");
		}
		x = pt_work(x, 250);
	}
	return (void *)(uintptr_t)(x | 1);
}

static void *spinner_fn(void *arg)
{
	int i = (int)(intptr_t)arg;
	int safepoints = pt_uses_safepoints(mech, i);
	uint64_t x = (uint64_t)i;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		x = pt_work(x, 250);
		if (safepoints)
			jf_safepoint();
	}
	return (void *)(uintptr_t)(x | 1);
}

static void *part1_main(void *arg)
{
	jf_thread_t *r[NRAISERS], *s[2];
	struct jf_worker_stats st;
	int i;

	(void)arg;
	CHECK(strcmp(jf_preempt_mechanism(), mech) == 0);
	check_handlers_installed("inside the runtime");
	atomic_store(&stop, 0);
	for (i = 0; i < 2; i++)
		s[i] = jft_spawn_on(i % jf_nworkers(), spinner_fn, (void *)(intptr_t)i);
	for (i = 0; i < NRAISERS; i++)
		r[i] = jft_spawn_on(i % jf_nworkers(), raiser_fn, (void *)(intptr_t)i);
	for (i = 0; i < NRAISERS; i++)
		jft_join(r[i]);
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++)
		jft_join(s[i]);
	check_handlers_installed("after the raisers");
	for (i = 0; i < NRAISERS; i++)
		CHECK_EQ(atomic_load(&handled[i]), raises);
	CHECK_EQ(atomic_load(&handled_other), 0);
	st = pt_stats();
	pt_print_stats(NAME " (SIGUSR1 handler)", mech, &st);
	CHECK_GE(st.preempts, 1);
	return NULL;
}

/* ---- part 2: read() on a pipe under preemption signals ---- */

#define ROUNDS 5
#define MSG 100

static int pipefd[2];
static atomic_int reading; /* round number + 1 the reader is about to read */
static atomic_int reader_done;

static void *writer_thread(void *arg)
{
	unsigned char msg[MSG];
	struct timespec ts = {0, 50 * 1000 * 1000}, poll = {0, 200 * 1000};

	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		while (atomic_load(&reading) != round + 1)
			nanosleep(&poll, NULL);
		nanosleep(&ts, NULL);
		for (int i = 0; i < MSG; i++)
			msg[i] = (unsigned char)(round * 31 + i);
		CHECK_EQ(write(pipefd[1], msg, MSG), MSG);
	}
	return NULL;
}

static void *reader_fn(void *arg)
{
	unsigned char buf[MSG];
	uint64_t requests = 0;

	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		struct jf_worker_stats w0, w1;
		uint64_t t0, el;
		ssize_t n;
		int err;

		CHECK_EQ(jf_stats_worker(0, &w0), 0);
		t0 = jf_now_ns();
		atomic_store(&reading, round + 1);
		n = read(pipefd[0], buf, MSG);
		err = errno;
		el = jf_now_ns() - t0;
		CHECK_EQ(jf_stats_worker(0, &w1), 0);
		if (n != MSG) {
			fprintf(stderr, "%s [%s]: round %d: read() returned %zd (errno %d: %s) after "
					"%.1f ms\n",
				NAME, mech, round, n, err, strerror(err), (double)el / 1e6);
			CHECK(!"read() interrupted by preemption");
		}
		for (int i = 0; i < MSG; i++)
			CHECK_EQ(buf[i], (unsigned char)(round * 31 + i));
		printf("%s [%s]: read() round %d: %zd bytes after %.1f ms, %llu preemption "
		       "requests meanwhile\n",
		       NAME, mech, round, n, (double)el / 1e6,
		       (unsigned long long)(w1.preempt_requests - w0.preempt_requests));
		/* It really blocked (the writer waits 50 ms). */
		CHECK_GE(el, 40 * PT_MS);
		requests += w1.preempt_requests - w0.preempt_requests;
	}
	/*
	 * ... under preemption requests (a signal each, here): over all rounds, as a timer thread
	 * may not get a CPU for tens of milliseconds on a loaded machine.
	 */
	if (pt_is_signal(mech))
		CHECK_GE(requests, 1);
	atomic_store(&reader_done, 1);
	return NULL;
}

static void *waiter_fn(void *arg)
{
	int safepoints = pt_uses_safepoints(mech, 0);
	uint64_t x = 1;

	(void)arg;
	while (!atomic_load_explicit(&reader_done, memory_order_relaxed)) {
		x = pt_work(x, 250);
		if (safepoints)
			jf_safepoint();
	}
	return (void *)(uintptr_t)(x | 1);
}

/* A reader and a uthread that waits behind it, both on worker 0 (parts 2 and 4). */
static void run_reader_and_waiter(jf_thread_fn reader, jf_thread_fn waiter)
{
	jf_thread_t *r = jft_spawn_on(0, reader, NULL);
	jf_thread_t *w = jft_spawn_on(0, waiter, NULL);

	jft_join(r);
	jft_join(w);
}

static void *part2_main(void *arg)
{
	(void)arg;
	run_reader_and_waiter(reader_fn, waiter_fn);
	return NULL;
}

/* ---- part 3: per-uthread signal masks across preemption ---- */

struct masker {
	int id;
	int blocked; /* the signal this uthread blocks */
	int other;   /* the signal the other one blocks */
	uint64_t checks, turns; /* turns: times it ran after the other had run */
};

static struct masker maskers[2] = {{0, SIGUSR1, SIGWINCH, 0, 0}, {1, SIGWINCH, SIGUSR1, 0, 0}};
static atomic_int last_masker;
static uint64_t mask_deadline, mask_hard_deadline;

#define MASK_TURNS 5

/* 300 ms have passed and both took turns often enough (or 10 s more have passed). */
static int masks_done(uint64_t now)
{
	if (now >= mask_hard_deadline)
		return 1;
	return now >= mask_deadline &&
	       __atomic_load_n(&maskers[0].turns, __ATOMIC_RELAXED) >= MASK_TURNS &&
	       __atomic_load_n(&maskers[1].turns, __ATOMIC_RELAXED) >= MASK_TURNS;
}

static void *mask_fn(void *arg)
{
	struct masker *m = arg;
	sigset_t set, cur;
	uint64_t x = (uint64_t)m->blocked;

	sigemptyset(&set);
	sigaddset(&set, m->blocked);
	CHECK_EQ(pthread_sigmask(SIG_SETMASK, &set, NULL), 0);
	for (uint64_t k = 0; !masks_done(jf_now_ns()); k++) {
		bool resumed = false;

		if (atomic_load_explicit(&last_masker, memory_order_relaxed) != m->id) {
			/* The other one ran since this one last looked: a new turn. */
			atomic_store_explicit(&last_masker, m->id, memory_order_relaxed);
			__atomic_store_n(&m->turns, m->turns + 1, __ATOMIC_RELAXED);
			resumed = true;
		}
		/*
		 * Mostly user code: pthread_sigmask() is in libc, where preemption is deferred by
		 * design, so a loop that spends most of its time there is rarely preempted.
		 */
		x = pt_work(x, JFT_SCALE(2500, 250)); /* under a quantum, also with ASan */
		/* Right after each resumption, and now and then (the call is a system call). */
		if (!resumed && k % 8 != 0)
			continue;
		CHECK_EQ(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
		if (!sigismember(&cur, m->blocked) || sigismember(&cur, m->other) ||
		    sigismember(&cur, preempt_signal)) {
			fprintf(stderr,
				"%s [%s]: uthread blocking signal %d, check %llu: mask has %d %s, "
				"%d %s, preemption signal %d %s\n",
				NAME, mech, m->blocked, (unsigned long long)m->checks, m->blocked,
				sigismember(&cur, m->blocked) ? "blocked" : "UNBLOCKED", m->other,
				sigismember(&cur, m->other) ? "BLOCKED" : "unblocked", preempt_signal,
				sigismember(&cur, preempt_signal) ? "BLOCKED" : "unblocked");
			CHECK(!"signal mask not kept across preemption");
		}
		m->checks++;
	}
	sigemptyset(&set);
	CHECK_EQ(pthread_sigmask(SIG_SETMASK, &set, NULL), 0);
	return (void *)(uintptr_t)(x | 1);
}

static void *part3_main(void *arg)
{
	jf_thread_t *t[2];
	struct jf_worker_stats st;
	int i;

	(void)arg;
	atomic_store(&last_masker, -1);
	mask_deadline = jf_now_ns() + 300 * PT_MS;
	mask_hard_deadline = mask_deadline + 10 * PT_S;
	for (i = 0; i < 2; i++)
		t[i] = jft_spawn_on(0, mask_fn, &maskers[i]);
	for (i = 0; i < 2; i++)
		jft_join(t[i]);
	st = pt_stats();
	pt_print_stats(NAME " (signal masks)", mech, &st);
	for (i = 0; i < 2; i++)
		printf("%s [%s]: uthread blocking signal %d: %llu mask checks in %llu turns\n", NAME,
		       mech, maskers[i].blocked, (unsigned long long)maskers[i].checks,
		       (unsigned long long)maskers[i].turns);
	for (i = 0; i < 2; i++) {
		CHECK_GE(maskers[i].checks, 1);
		/* They took turns, each resuming (with its own mask) again and again. */
		CHECK_GE(maskers[i].turns, MASK_TURNS);
	}
	/* 5 turns each are 9 switches between them at least, each one a preemption. */
	CHECK_GE(st.preempts, 2 * MASK_TURNS - 1);
	return NULL;
}

/* ---- part 4: an application handler that interrupted libc ---- */

#define P4_ROUNDS 5

static int p4_pipe[2];
static atomic_int p4_reading;      /* round + 1 while the reader is in read() */
static atomic_int p4_tid;          /* the reader's kernel thread (its worker's) */
static atomic_int p4_in_handler;   /* the handler is running */
static atomic_int p4_handled;      /* handler runs */
static atomic_int p4_violations;   /* another uthread ran while the handler was running */
static atomic_int p4_done;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Runs on top of the reader's read() (libc): 5 ms of application code, long enough for several
 * preemption requests to land in it. */
static void p4_handler(int sig, siginfo_t *info, void *uc)
{
	uint64_t end = mono_ns() + 5 * PT_MS, x = 1;

	(void)sig, (void)info, (void)uc;
	atomic_store(&p4_in_handler, 1);
	while (mono_ns() < end)
		x = pt_work(x, 50);
	atomic_store(&p4_in_handler, 0);
	atomic_fetch_add(&p4_handled, (int)(x & 1) | 1);
}

static void *p4_helper(void *arg)
{
	struct timespec settle = {0, 10 * 1000 * 1000}, after = {0, 20 * 1000 * 1000},
			poll = {0, 200 * 1000};
	char c = 'x';

	(void)arg;
	for (int round = 0; round < P4_ROUNDS; round++) {
		while (atomic_load(&p4_reading) != round + 1)
			nanosleep(&poll, NULL);
		nanosleep(&settle, NULL); /* in read(), with preemption requests coming */
		CHECK_EQ(syscall(SYS_tgkill, getpid(), atomic_load(&p4_tid), SIGUSR1), 0);
		nanosleep(&after, NULL);
		CHECK_EQ(write(p4_pipe[1], &c, 1), 1);
	}
	return NULL;
}

static void *p4_reader(void *arg)
{
	char c;

	(void)arg;
	for (int round = 0; round < P4_ROUNDS; round++) {
		atomic_store(&p4_tid, (int)syscall(SYS_gettid));
		atomic_store(&p4_reading, round + 1);
		CHECK_EQ(read(p4_pipe[0], &c, 1), 1);
	}
	atomic_store(&p4_done, 1);
	return NULL;
}

/* Waits on the reader's worker, so the mechanism keeps asking to preempt the reader. */
static void *p4_waiter(void *arg)
{
	(void)arg;
	while (!atomic_load(&p4_done)) {
		if (atomic_load(&p4_in_handler))
			atomic_fetch_add(&p4_violations, 1);
		(void)pt_work(3, 100);
	}
	return NULL;
}

static void *part4_main(void *arg)
{
	(void)arg;
	run_reader_and_waiter(p4_reader, p4_waiter);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	struct sigaction sa;
	const char *want_sig = getenv("JIFFY_PREEMPT_SIGNAL");
	pthread_t writer;

	mech = pt_config(&base_cfg, 2, NAME, true);
	preempt_signal = base_cfg.preempt_signal;
	printf("%s [%s]: preemption signal %d (%s)\n", NAME, mech, preempt_signal,
	       strsignal(preempt_signal));
	if (want_sig && (!strcmp(want_sig, "SIGUSR2") || !strcmp(want_sig, "USR2")))
		CHECK_EQ(preempt_signal, SIGUSR2);
	else if (!want_sig)
		CHECK_EQ(preempt_signal, SIGURG);
	CHECK(preempt_signal != SIGUSR1 && preempt_signal != SIGWINCH);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = usr1_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);

	/* (1) */
	cfg = base_cfg;
	cfg.quantum_ns = pt_is_safepoint(mech) ? 20 * PT_US : 50 * PT_US;
	raises = JFT_SCALE(50000L, 5000L);
	jft_run(&cfg, part1_main, NULL);
	check_handlers_installed("after jf_run() returned");

	/* (2) */
	CHECK_EQ(pipe(pipefd), 0);
	CHECK_EQ(pthread_create(&writer, NULL, writer_thread, NULL), 0);
	cfg = base_cfg;
	cfg.workers = 1;
	cfg.quantum_ns = pt_is_safepoint(mech) ? 20 * PT_US : 100 * PT_US;
	/* auto's default timer counts the worker's CPU time, which a thread blocked in read() does
	 * not use: no signal would come (nor could one preempt a uthread inside read()). Below 1 ms
	 * of grace its timer is on the wall clock and signals the blocked thread. */
	if (!strcmp(mech, "auto"))
		cfg.grace_ns = 500 * PT_US;
	jft_run(&cfg, part2_main, NULL);
	CHECK_EQ(pthread_join(writer, NULL), 0);
	close(pipefd[0]);
	close(pipefd[1]);

	/* (3) signal masks belong to the uthread only where a signal preempts it */
	if (pt_is_signal(mech)) {
		cfg = base_cfg;
		cfg.workers = 1;
		cfg.quantum_ns = 100 * PT_US;
		jft_run(&cfg, part3_main, NULL);
	}

	/*
	 * (4) A handler of the application's that interrupted libc (read(), here; malloc in the
	 * case that matters: its arena lock belongs to the kernel thread) is not preempted: the
	 * code it interrupted is denied, though the handler's own PC is not. The other uthread on
	 * the worker never runs while the handler does (before: it did, in every round).
	 */
	if (pt_is_signal(mech)) {
		struct sigaction sa4, old4;
		pthread_t helper;

		memset(&sa4, 0, sizeof(sa4));
		sa4.sa_sigaction = p4_handler;
		sa4.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa4.sa_mask);
		CHECK_EQ(sigaction(SIGUSR1, &sa4, &old4), 0);
		CHECK_EQ(pipe(p4_pipe), 0);
		CHECK_EQ(pthread_create(&helper, NULL, p4_helper, NULL), 0);
		cfg = base_cfg;
		cfg.workers = 1;
		cfg.quantum_ns = 100 * PT_US;
		jft_run(&cfg, part4_main, NULL);
		CHECK_EQ(pthread_join(helper, NULL), 0);
		close(p4_pipe[0]);
		close(p4_pipe[1]);
		CHECK_EQ(sigaction(SIGUSR1, &old4, NULL), 0);
		printf("%s [%s]: a 5 ms handler over read(), %d times: the other uthread ran inside it "
		       "%d times\n", NAME, mech, atomic_load(&p4_handled), atomic_load(&p4_violations));
		CHECK_EQ(atomic_load(&p4_handled), P4_ROUNDS);
		CHECK_EQ(atomic_load(&p4_violations), 0);
	}
	jft_ok(NAME);
	return 0;
}
