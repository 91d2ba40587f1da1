/*
 * core/test_local.c - proves uthread-local storage (jiffy/local.h) keeps its promises: keys made
 * outside the runtime work inside it and in a second runtime; each uthread sees only its own
 * values (and its own fast slots) across yields, sleeps and migrations between 2 workers;
 * destructors run once per non-NULL value, with that value, in the ending uthread, whether it
 * returns, calls jf_exit() or is cancelled, may use Jiffy calls, and run again for values set
 * again, up to JF_KEY_DESTRUCTOR_ITERATIONS rounds; the main uthread's run before jf_run()
 * returns; a deleted key's values get no destructor and are unreachable, also through a later
 * key in the same slot; keys run out with -EAGAIN at JF_KEYS_MAX; uthreads discarded at shutdown
 * get no destructor (and nothing leaks: the ASan build checks); every misuse gets its -errno.
 */
#include <stdatomic.h>

#include "jf_test.h"

static jf_key_t k_val, k_cnt, k_again, k_nodtor;
static atomic_int dtor_calls, dtor_bad, again_calls, main_dtor, cnt_calls;
static int nthreads, rounds;

/* k_val's destructor: the value is a heap int holding its owner's id, freed here. */
static void val_dtor(void *v)
{
	int *p = v;

	if (jf_getspecific(k_val) != NULL) /* set to NULL before the call */
		atomic_fetch_add(&dtor_bad, 1);
	if (*p != (int)jf_thread_id(jf_self()))
		atomic_fetch_add(&dtor_bad, 1); /* someone else's value */
	jf_yield(); /* a destructor may use the runtime */
	free(p);
	atomic_fetch_add(&dtor_calls, 1);
}

/* k_again's destructor sets the value again each time: called once per round. */
static void again_dtor(void *v)
{
	(void)v;
	atomic_fetch_add(&again_calls, 1);
	CHECK_EQ(jf_setspecific(k_again, (void *)(intptr_t)1), 0);
}

static void main_val_dtor(void *v)
{
	CHECK(v == (void *)&main_dtor);
	atomic_fetch_add(&main_dtor, 1);
}

static int *own_value(void)
{
	int *p = malloc(sizeof(*p));

	CHECK(p != NULL);
	*p = (int)jf_thread_id(jf_self());
	return p;
}

/* Values and fast slots stay the uthread's own across scheduling points. */
static void *independent_fn(void *arg)
{
	int *p = own_value();
	uintptr_t tag = (uintptr_t)jf_thread_id(jf_self()) << 4;

	(void)arg;
	CHECK(jf_getspecific(k_val) == NULL); /* values start NULL */
	for (unsigned s = 0; s < JF_LOCAL_FAST_SLOTS; s++)
		CHECK(jf_local_get(s) == NULL);
	CHECK_EQ(jf_setspecific(k_val, p), 0);
	CHECK_EQ(jf_setspecific(k_nodtor, (void *)tag), 0);
	for (unsigned s = 0; s < JF_LOCAL_FAST_SLOTS; s++)
		CHECK_EQ(jf_local_set(s, (void *)(tag | s)), 0);
	for (int i = 0; i < rounds; i++) {
		if (i % 3 == 0)
			jf_yield();
		else if (i % 3 == 1)
			CHECK_EQ(jf_sleep_ns(1000), 0);
		else
			for (volatile int j = 0; j < 2000; j++)
				; /* preemptible work */
		CHECK(jf_getspecific(k_val) == p);
		CHECK(jf_getspecific(k_nodtor) == (void *)tag);
		for (unsigned s = 0; s < JF_LOCAL_FAST_SLOTS; s++)
			CHECK(jf_local_get(s) == (void *)(tag | s));
	}
	return NULL;
}

static void *exit_fn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_setspecific(k_val, own_value()), 0);
	jf_yield();
	jf_exit(NULL); /* destructors run on jf_exit() too */
}

static void *cancelled_fn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_setspecific(k_val, own_value()), 0);
	CHECK_EQ(jf_sleep_ns(60ull * 1000000000), -ECANCELED); /* until cancelled */
	jf_testcancel(); /* ends it: JF_CANCELED, through jf_exit() */
	CHECK(!"a cancelled uthread went on");
	return NULL;
}

static void *again_fn(void *arg)
{
	(void)arg;
	CHECK_EQ(jf_setspecific(k_again, (void *)(intptr_t)1), 0);
	return NULL;
}

/* Blocks for good: discarded at shutdown with a value set. */
static void *stuck_fn(void *arg)
{
	jf_mutex_t *m = arg;

	CHECK_EQ(jf_setspecific(k_cnt, &cnt_calls), 0); /* would be counted by cnt_dtor */
	jf_mutex_lock(m);
	return NULL;
}

static void cnt_dtor(void *v)
{
	(void)v;
	atomic_fetch_add(&cnt_calls, 1);
}

static void *main1(void *arg)
{
	static jf_mutex_t m; /* outlives main1: stuck_fn still waits on it at shutdown */
	jf_thread_t *t[64];
	jf_key_t k2;
	int before;

	(void)arg;
	/* misuse inside */
	CHECK_EQ(jf_setspecific(0, NULL), -EINVAL);
	CHECK_EQ(jf_setspecific(k_val + 0x200, NULL), -EINVAL); /* another generation */
	CHECK_EQ(jf_local_set(JF_LOCAL_FAST_SLOTS, NULL), -EINVAL);
	CHECK(jf_local_get(JF_LOCAL_FAST_SLOTS) == NULL);
	CHECK(jf_getspecific(0) == NULL);
	CHECK_EQ(jf_setspecific(k_val, NULL), 0); /* clearing with no table is fine */

	/* the main uthread's own value: its destructor runs when main returns */
	CHECK_EQ(jf_key_create(&k2, main_val_dtor), 0);
	CHECK_EQ(jf_setspecific(k2, &main_dtor), 0);

	for (int i = 0; i < nthreads; i++)
		t[i] = jft_spawn(NULL, independent_fn, NULL);
	for (int i = 0; i < nthreads; i++)
		jft_join(t[i]);
	CHECK_EQ(atomic_load(&dtor_calls), nthreads); /* once per uthread, at its end */
	CHECK_EQ(atomic_load(&dtor_bad), 0);
	CHECK(jf_getspecific(k_val) == NULL); /* main never set it */

	before = atomic_load(&dtor_calls);
	t[0] = jft_spawn(NULL, exit_fn, NULL);
	jft_join(t[0]);
	CHECK_EQ(atomic_load(&dtor_calls), before + 1);

	t[0] = jft_spawn(NULL, cancelled_fn, NULL);
	CHECK_EQ(jf_sleep_ns(2000000), 0);
	CHECK_EQ(jf_cancel(t[0]), 0);
	CHECK(jft_join(t[0]) == JF_CANCELED);
	CHECK_EQ(atomic_load(&dtor_calls), before + 2);

	t[0] = jft_spawn(NULL, again_fn, NULL);
	jft_join(t[0]);
	CHECK_EQ(atomic_load(&again_calls), JF_KEY_DESTRUCTOR_ITERATIONS);
	CHECK_EQ(atomic_load(&dtor_bad), 0);

	/* a uthread still blocked when main returns is discarded: no destructor */
	jf_mutex_init(&m);
	jf_mutex_lock(&m);
	t[0] = jft_spawn(NULL, stuck_fn, &m);
	CHECK_EQ(jf_sleep_ns(2000000), 0);
	return NULL; /* m stays locked: stuck_fn never runs again */
}

/* Key deletion and exhaustion, in a second runtime (keys outlive the first). */
static void *main2(void *arg)
{
	static jf_key_t many[JF_KEYS_MAX];
	static int target;
	jf_key_t k, k3;
	int n = 0, rc;

	(void)arg;
	CHECK_EQ(jf_setspecific(k_val, &target), 0); /* a key made before the first runtime */
	CHECK(jf_getspecific(k_val) == &target);
	CHECK_EQ(jf_setspecific(k_val, NULL), 0);

	CHECK_EQ(jf_key_create(&k, cnt_dtor), 0);
	CHECK_EQ(jf_setspecific(k, &target), 0);
	CHECK_EQ(jf_key_delete(k), 0);
	CHECK(jf_getspecific(k) == NULL); /* unreachable */
	CHECK_EQ(jf_setspecific(k, &target), -EINVAL);
	CHECK_EQ(jf_key_delete(k), -EINVAL);
	CHECK_EQ(jf_key_create(&k3, NULL), 0); /* likely the same slot: must not see the old value */
	CHECK(jf_getspecific(k3) == NULL);
	CHECK_EQ(jf_key_delete(k3), 0);

	while ((rc = jf_key_create(&many[n], NULL)) == 0)
		n++;
	CHECK_EQ(rc, -EAGAIN);
	CHECK(n > 0 && n <= JF_KEYS_MAX - 5);
	for (int i = 0; i < n; i++)
		CHECK_EQ(jf_setspecific(many[i], (void *)(intptr_t)(i + 1)), 0);
	for (int i = 0; i < n; i++)
		CHECK(jf_getspecific(many[i]) == (void *)(intptr_t)(i + 1));
	for (int i = 0; i < n; i++)
		CHECK_EQ(jf_key_delete(many[i]), 0);
	CHECK_EQ(jf_key_create(&k, NULL), 0); /* room again */
	CHECK_EQ(jf_key_delete(k), 0);
	return NULL; /* k was deleted with a value set: no destructor at main's end */
}

int main(void)
{
	struct jf_config cfg;
	jf_key_t k;

	nthreads = JFT_SCALE(32, 8);
	rounds = JFT_SCALE(400, 100);

	/* outside the runtime */
	CHECK_EQ(jf_key_create(NULL, NULL), -EINVAL);
	CHECK_EQ(jf_key_delete(0), -EINVAL);
	CHECK_EQ(jf_key_create(&k_val, val_dtor), 0);
	CHECK(k_val != 0);
	CHECK_EQ(jf_key_create(&k_cnt, cnt_dtor), 0);
	CHECK_EQ(jf_key_create(&k_again, again_dtor), 0);
	CHECK_EQ(jf_key_create(&k_nodtor, NULL), 0);
	CHECK_EQ(jf_setspecific(k_val, NULL), -EPERM);
	CHECK(jf_getspecific(k_val) == NULL);
	CHECK_EQ(jf_local_set(0, NULL), -EPERM);
	CHECK(jf_local_get(0) == NULL);
	CHECK_EQ(jf_key_create(&k, NULL), 0);
	CHECK_EQ(jf_key_delete(k), 0);
	CHECK_EQ(jf_key_delete(k), -EINVAL);

	jft_config(&cfg, 2);
	cfg.workers = 2;
	jft_run(&cfg, main1, NULL);
	CHECK_EQ(atomic_load(&main_dtor), 1);
	CHECK_EQ(atomic_load(&cnt_calls), 0); /* stuck_fn was discarded, not ended */
	/* after jf_run(), this thread is no uthread (if it was a worker, it forgot its uthread) */
	CHECK(jf_local_get(0) == NULL);
	CHECK_EQ(jf_setspecific(k_val, NULL), -EPERM);

	jft_run(&cfg, main2, NULL);
	CHECK_EQ(atomic_load(&cnt_calls), 0);
	printf("core.local: %d uthreads with independent values and fast slots, %d destructor "
	       "calls, %d rounds of a re-setting destructor: OK\n",
	       nthreads, atomic_load(&dtor_calls), atomic_load(&again_calls));
	return 0;
}
