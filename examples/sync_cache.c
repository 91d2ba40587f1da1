/*
 * examples/sync_cache.c - the synchronization set in one small program: a read-mostly table
 * behind a jf_rwlock_t, set up once (jf_once), a jf_sem_t that admits at most 3 "requests" at a
 * time, a jf_barrier_t between two phases, and a jf_mutex_lock_until() that gives up.
 *
 * Phase 1: 16 uthreads each look up keys (read lock) and update some (write lock), at most 3 at a
 * time inside the "request" (the semaphore). Phase 2, after the barrier: each checks the table is
 * what all the updates together made it. The exit status is the verdict (0: every check held).
 * Build: cc sync_cache.c $(pkg-config --cflags --libs jiffy)
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include <jiffy/jiffy.h>

#define KEYS 64
#define UTHREADS 16
#define ROUNDS 200

static jf_once_t table_once = JF_ONCE_INIT;
static jf_rwlock_t table_lock = JF_RWLOCK_INITIALIZER;
static long table[KEYS];
static jf_sem_t slots = JF_SEM_INITIALIZER(3);
static jf_barrier_t phase = JF_BARRIER_INITIALIZER(UTHREADS);
static atomic_int in_request, max_in_request, failures, inits;

static void table_init(void)
{
	atomic_fetch_add(&inits, 1);
	for (int k = 0; k < KEYS; k++)
		table[k] = 0;
}

static void fail(const char *what)
{
	fprintf(stderr, "sync_cache: FAIL: %s\n", what);
	atomic_fetch_add(&failures, 1);
}

static void *request_loop(void *arg)
{
	int me = (int)(intptr_t)arg;

	jf_once(&table_once, table_init);
	for (int r = 0; r < ROUNDS; r++) {
		int k = (me * 7 + r) % KEYS;

		jf_sem_wait(&slots);
		int n = atomic_fetch_add(&in_request, 1) + 1;
		int m = atomic_load(&max_in_request);
		while (n > m && !atomic_compare_exchange_weak(&max_in_request, &m, n))
			;
		if (r % 10 == 0) { /* an update */
			jf_rwlock_wrlock(&table_lock);
			table[k] += 1;
			jf_rwlock_unlock(&table_lock);
		} else { /* a lookup */
			jf_rwlock_rdlock(&table_lock);
			if (table[k] < 0)
				fail("negative count");
			jf_yield(); /* readers share: others read meanwhile */
			jf_rwlock_unlock(&table_lock);
		}
		atomic_fetch_sub(&in_request, 1);
		jf_sem_post(&slots);
	}
	if (jf_barrier_wait(&phase) == JF_BARRIER_SERIAL)
		printf("sync_cache: all %d uthreads finished phase 1\n", UTHREADS);
	/* phase 2: everyone's updates are in */
	long sum = 0;
	jf_rwlock_rdlock(&table_lock);
	for (int k = 0; k < KEYS; k++)
		sum += table[k];
	jf_rwlock_unlock(&table_lock);
	if (sum != (long)UTHREADS * (ROUNDS / 10))
		fail("lost update");
	return NULL;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[UTHREADS];
	jf_mutex_t m = JF_MUTEX_INITIALIZER;

	(void)arg;
	for (int i = 0; i < UTHREADS; i++)
		jf_spawn(&t[i], NULL, request_loop, (void *)(intptr_t)i);
	for (int i = 0; i < UTHREADS; i++)
		jf_join(t[i], NULL);
	/* a lock that is held gives up at its deadline instead of waiting for ever */
	jf_mutex_lock(&m);
	if (jf_mutex_lock_until(&m, jf_now_ns() + 1000000) != -EDEADLK)
		fail("relocking one's own mutex is not refused");
	jf_mutex_unlock(&m);
	if (atomic_load(&inits) != 1)
		fail("the table was set up more than once");
	if (atomic_load(&max_in_request) > 3)
		fail("more than 3 requests at once");
	printf("sync_cache: at most %d requests at once, table set up %d time(s)\n",
	       atomic_load(&max_in_request), atomic_load(&inits));
	return NULL;
}

int main(void)
{
	if (jf_run(NULL, main_fn, NULL, NULL) != 0)
		return 1;
	if (atomic_load(&failures)) {
		printf("sync_cache: FAILED\n");
		return 1;
	}
	printf("sync_cache: ok\n");
	return 0;
}
