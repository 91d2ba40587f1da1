/*
 * blocking_file.c - the blocking offload (docs/blocking.md): a uthread writes, syncs and reads
 * back a file and resolves "localhost" with jf_file_* and jf_getaddrinfo(), which run on the
 * blocking pool, while a ticker uthread on the same (single) worker keeps running; and
 * jf_run_blocking() of an ordinary blocking function. Its exit status is the verdict: 0 only when
 * the data came back, the name resolved and the ticker ran during the blocking calls.
 * Build against an installed Jiffy:  cc blocking_file.c $(pkg-config --cflags --libs jiffy)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jiffy/jiffy.h>

static atomic_long ticks;
static atomic_int stop;

static void *ticker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		atomic_fetch_add(&ticks, 1);
		jf_sleep_ns(100 * 1000); /* 100 us: runs only if the worker is free */
	}
	return NULL;
}

/* Any blocking code: here a 50 ms sleep in the kernel (a libc call, a legacy library, ...). */
static void *slow_square(void *arg)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	long x = (long)(intptr_t)arg;

	nanosleep(&ts, NULL);
	return (void *)(intptr_t)(x * x);
}

static int failures;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
	failures += !ok;
}

static void *app_main(void *arg)
{
	char path[] = "/tmp/jiffy-example-XXXXXX";
	const char msg[] = "written and read back by a uthread, its worker never blocked\n";
	char back[sizeof(msg)] = "";
	struct addrinfo hints, *res = NULL;
	jf_thread_t *tick;
	long before;
	void *sq = NULL;
	int fd;

	(void)arg;
	jf_spawn(&tick, NULL, ticker, NULL);
	jf_yield();
	before = atomic_load(&ticks);

	/* Files: each call runs on a pool thread while this uthread is parked. */
	fd = mkstemp(path); /* only to get a unique name */
	if (fd >= 0)
		close(fd);
	fd = jf_file_open(path, O_RDWR | O_TRUNC | O_CLOEXEC);
	check(fd >= 0, "jf_file_open");
	check(jf_file_write(fd, msg, sizeof(msg)) == (ssize_t)sizeof(msg), "jf_file_write");
	check(jf_file_fsync(fd) == 0, "jf_file_fsync");
	check(jf_file_pread(fd, back, sizeof(back), 0) == (ssize_t)sizeof(back) &&
		      memcmp(back, msg, sizeof(msg)) == 0,
	      "jf_file_pread gives the data back");
	check(jf_file_close(fd) == 0, "jf_file_close");
	unlink(path);

	/* Names: getaddrinfo may wait seconds for DNS; "localhost" comes from /etc/hosts. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	check(jf_getaddrinfo("localhost", "80", &hints, &res) == 0 && res, "jf_getaddrinfo");
	jf_freeaddrinfo(res);

	/* Any function. */
	check(jf_run_blocking(slow_square, (void *)(intptr_t)12, &sq) == 0 &&
		      (intptr_t)sq == 144,
	      "jf_run_blocking(slow_square, 12) = 144");

	printf("the ticker on the same worker ticked %ld times meanwhile\n",
	       atomic_load(&ticks) - before);
	check(atomic_load(&ticks) - before >= 10, "the worker kept running the ticker");
	atomic_store(&stop, 1);
	jf_join(tick, NULL);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	char err[256];
	int rc;

	jf_config_default(&cfg);
	if (jf_config_apply_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "blocking_file: %s\n", err);
		return 1;
	}
	cfg.workers = 1; /* one worker: the ticker can only run if the calls do not block it */
	rc = jf_run(&cfg, app_main, NULL, NULL);
	if (rc) {
		fprintf(stderr, "blocking_file: jf_run failed: %d\n", rc);
		return 1;
	}
	printf("blocking_file: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
