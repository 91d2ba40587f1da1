/*
 * hello.c - the README example: spawn uthreads, share a counter under a jf_mutex, join them.
 * Build against an installed Jiffy:  cc hello.c $(pkg-config --cflags --libs jiffy) -o hello
 */
#include <stdint.h>
#include <stdio.h>

#include <jiffy/jiffy.h>

static jf_mutex_t lock = JF_MUTEX_INITIALIZER;
static long total;

static void *worker(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 0; i < n; i++) {
		jf_mutex_lock(&lock);
		total++;
		jf_mutex_unlock(&lock);
		if (i % 100 == 0)
			jf_yield(); /* a scheduling point: others run, we may move to another worker */
	}
	jf_sleep_ns(1000 * 1000); /* blocks this uthread for 1 ms, not the worker */
	return (void *)(intptr_t)jf_worker_id();
}

static void *app_main(void *arg)
{
	jf_thread_t *t[8];
	(void)arg;
	for (int i = 0; i < 8; i++) {
		struct jf_attr attr;
		jf_attr_init(&attr);
		attr.name = "counter";
		jf_spawn(&t[i], &attr, worker, (void *)(intptr_t)10000);
	}
	for (int i = 0; i < 8; i++) {
		void *ret;
		jf_join(t[i], &ret);
		printf("uthread %d finished on worker %ld\n", i, (long)(intptr_t)ret);
	}
	printf("total = %ld (expected 80000) on %d workers\n", total, jf_nworkers());
	return NULL;
}

int main(void)
{
	/* NULL: defaults, overridden by JIFFY_* environment variables (JIFFY_POLICY=fifo, ...) */
	int rc = jf_run(NULL, app_main, NULL, NULL);
	if (rc) {
		fprintf(stderr, "jf_run failed: %d\n", rc);
		return 1;
	}
	return total == 80000 ? 0 : 1;
}
