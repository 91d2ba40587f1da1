/*
 * local_pin.c - uthread-local storage and pinning (jiffy/local.h): a per-request context kept
 * under a key (freed by its destructor when the uthread ends), a request id in a fast slot, and
 * a uthread pinned to its worker so that a __thread cache stays the same kernel thread's while it
 * sleeps and yields. Exits 0 only if every check held.
 * Build against an installed Jiffy:
 *     cc local_pin.c $(pkg-config --cflags --libs jiffy) -o local_pin
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jiffy/jiffy.h>

enum { SLOT_REQUEST_ID = 0 }; /* the program's own numbering of the fast slots */

struct ctx {
	int request;
	char log[64];
};

static jf_key_t ctx_key;
static int freed, failures;
static jf_mutex_t lock = JF_MUTEX_INITIALIZER;
static __thread int worker_cache = -1; /* per kernel thread: only safe while pinned */

static void ctx_free(void *p)
{
	struct ctx *c = p;
	jf_mutex_lock(&lock);
	freed++;
	jf_mutex_unlock(&lock);
	free(c);
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "local_pin: FAIL: %s\n", what);
		__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	}
}

static void *request(void *arg)
{
	struct ctx *c = malloc(sizeof(*c));
	int id = (int)(intptr_t)arg;

	c->request = id;
	snprintf(c->log, sizeof(c->log), "request %d", id);
	jf_setspecific(ctx_key, c);                            /* freed by ctx_free at the end */
	jf_local_set(SLOT_REQUEST_ID, (void *)(intptr_t)id); /* cheapest: inline, no destructor */
	for (int i = 0; i < 100; i++) {
		jf_yield(); /* may move to another worker: the values move with the uthread */
		struct ctx *mine = jf_getspecific(ctx_key);
		check(mine == c && mine->request == id, "the key's value is this uthread's");
		check((intptr_t)jf_local_get(SLOT_REQUEST_ID) == id, "the fast slot is this uthread's");
	}
	return NULL;
}

static void *pinned(void *arg)
{
	int w;

	(void)arg;
	jf_thread_pin(); /* Go's runtime.LockOSThread: from now on only this worker runs it */
	w = jf_worker_id();
	worker_cache = w; /* a __thread variable of this worker's kernel thread */
	for (int i = 0; i < 100; i++) {
		jf_sleep_ns(10000);
		jf_yield();
		check(jf_worker_id() == w, "a pinned uthread stays on its worker");
		check(worker_cache == w, "and sees the same __thread variable");
	}
	jf_thread_unpin();
	return NULL;
}

static void *app_main(void *arg)
{
	jf_thread_t *t[9];
	(void)arg;

	for (int i = 0; i < 8; i++)
		jf_spawn(&t[i], NULL, request, (void *)(intptr_t)(i + 1));
	jf_spawn(&t[8], NULL, pinned, NULL);
	for (int i = 0; i < 9; i++)
		jf_join(t[i], NULL);
	check(freed == 8, "every context freed by its destructor");
	printf("local_pin: 8 requests with their own context and id, %d contexts freed at their end; "
	       "a pinned uthread stayed on its worker\n", freed);
	return NULL;
}

int main(void)
{
	if (jf_key_create(&ctx_key, ctx_free) != 0)
		return 1;
	if (jf_run(NULL, app_main, NULL, NULL) != 0)
		return 1;
	jf_key_delete(ctx_key);
	printf("local_pin: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
