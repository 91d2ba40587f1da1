/*
 * core/test_storm.c - proves that under a random storm of spawn, yield, sleep and mutex traffic on
 * 2 workers (run under every policy) no uthread is lost or run twice and mutual exclusion holds.
 *
 * The storm is a forest of task trees whose shape is fixed by the seeds alone: task ids are heap
 * positions (child j of h is h*F + j + 1 within its root's block), a task's number of children
 * and its random actions come from splitmix64 of its id. Each task marks its id exactly once
 * (ran[] byte, sum, xor); main computes the expected forest independently before the run and
 * compares afterwards. Children are randomly joinable (joined by the parent, which checks the
 * return value) or detached (counted by a wait group), and randomly placed on a worker.
 */
#include <stdatomic.h>

#include "jf_test.h"

#define FANOUT 4    /* at most this many children per task */
#define MAX_DEPTH 6 /* roots are depth 0 */
/* Heap positions in one root's tree: (F^(D+1) - 1) / (F - 1). */
#define PER_ROOT 5461
#define WAVE 25 /* roots in flight at once: bounds live stacks to a few thousand */

static long n_roots;
static long n_ids; /* ids are 1 .. n_roots * PER_ROOT */

static atomic_uchar *ran;
static unsigned char *expected;
static atomic_ullong sum, xsum;
static atomic_long tasks_ran;

static jf_waitgroup_t wg; /* detached tasks (and main's token) of the current wave */

static jf_mutex_t m = JF_MUTEX_INITIALIZER;
static uint64_t in_cs;     /* id of the task inside the critical section, 0 if none */
static long cs_count;      /* protected by m */
static atomic_long cs_entries;

static uint64_t mix(uint64_t x)
{
	return jft_splitmix64(&x);
}

static int depth_of(uint64_t h)
{
	uint64_t first = 0, width = 1;
	int d = 0;

	while (h >= first + width) {
		first += width;
		width *= FANOUT;
		d++;
	}
	return d;
}

static int nchildren(uint64_t id)
{
	uint64_t h = (id - 1) % PER_ROOT;

	if (depth_of(h) >= MAX_DEPTH)
		return 0;
	return (int)(mix(id ^ 0xc0ffee) % (FANOUT + 1));
}

static uint64_t child_id(uint64_t id, int j)
{
	uint64_t root = (id - 1) / PER_ROOT, h = (id - 1) % PER_ROOT;

	return root * PER_ROOT + h * FANOUT + (uint64_t)j + 1 + 1;
}

/* The expected forest, computed without the runtime. */
static void expect_tree(uint64_t id, long *count, uint64_t *esum, uint64_t *exor)
{
	int j, n = nchildren(id);

	CHECK(id >= 1 && (long)id <= n_ids);
	CHECK_EQ(expected[id], 0);
	expected[id] = 1;
	(*count)++;
	*esum += id;
	*exor ^= id;
	for (j = 0; j < n; j++)
		expect_tree(child_id(id, j), count, esum, exor);
}

static void *task(void *arg);
static void *detached_task(void *arg);

/* Spawn child @cid: joinable (handle returned) or detached (NULL returned), on a random worker. */
static jf_thread_t *spawn_task(uint64_t cid, uint64_t *rng)
{
	struct jf_attr attr;
	jf_thread_t *t = NULL;
	uint64_t r = jft_splitmix64(rng);
	int rc;

	jf_attr_init(&attr);
	attr.detached = (int)(r & 1);
	attr.sched.worker = (int)((r >> 1) % 3) - 1; /* -1, 0 or 1 */
	if (attr.detached)
		CHECK_EQ(jf_waitgroup_add(&wg, 1), 0);
	rc = jf_spawn(attr.detached ? NULL : &t, &attr, attr.detached ? detached_task : task,
		      (void *)(uintptr_t)cid);
	if (rc != 0) {
		fprintf(stderr, "spawn of task %llu failed: %d\n", (unsigned long long)cid, rc);
		CHECK_EQ(rc, 0);
	}
	return t;
}

static void critical_section(uint64_t id, uint64_t r)
{
	if (r & 1) {
		jf_mutex_lock(&m);
	} else {
		while (jf_mutex_trylock(&m) != 0)
			jf_yield();
	}
	CHECK_EQ(in_cs, 0);
	in_cs = id;
	cs_count++;
	if ((r >> 1) % 3 == 0)
		jf_yield(); /* others must queue, not enter */
	CHECK_EQ(in_cs, id);
	in_cs = 0;
	CHECK_EQ(jf_mutex_unlock(&m), 0);
	atomic_fetch_add(&cs_entries, 1);
}

static void action(uint64_t id, uint64_t *rng)
{
	uint64_t r = jft_splitmix64(rng);
	volatile uint64_t spin = 0;
	int i;

	switch (r % 10) {
	case 0:
	case 1:
	case 2:
		jf_yield();
		break;
	case 3:
	case 4:
		CHECK_EQ(jf_sleep_ns(1000 + (r >> 8) % 30000), 0);
		break;
	case 5:
	case 6:
	case 7:
		critical_section(id, r >> 8);
		break;
	default:
		for (i = 0; i < (int)((r >> 8) % 2000); i++)
			spin += (uint64_t)i;
		break;
	}
}

static void *task(void *arg)
{
	uint64_t id = (uintptr_t)arg;
	uint64_t rng = id;
	jf_thread_t *joinable[FANOUT];
	uint64_t joinable_id[FANOUT];
	int nj = 0, spawned = 0, step;
	int nch = nchildren(id);
	int steps = 1 + (int)(jft_splitmix64(&rng) % 6);

	CHECK(id >= 1 && (long)id <= n_ids);
	/* Mark first: a second run of the same task is seen even if it then crashes. */
	if (atomic_fetch_add(&ran[id], 1) != 0) {
		fprintf(stderr, "task %llu runs a second time\n", (unsigned long long)id);
		CHECK(0);
	}
	atomic_fetch_add(&sum, id);
	atomic_fetch_xor(&xsum, id);
	atomic_fetch_add(&tasks_ran, 1);

	for (step = 0; step < steps || spawned < nch; step++) {
		if (spawned < nch && (step >= steps || (jft_splitmix64(&rng) & 1))) {
			uint64_t cid = child_id(id, spawned++);
			jf_thread_t *t = spawn_task(cid, &rng);

			if (t) {
				joinable[nj] = t;
				joinable_id[nj++] = cid;
			}
		}
		if (step < steps)
			action(id, &rng);
	}
	/* Join the joinable children, newest first. */
	while (nj > 0) {
		nj--;
		CHECK_EQ((uintptr_t)jft_join(joinable[nj]), joinable_id[nj]);
	}
	return (void *)(uintptr_t)id;
}

/* A detached task has no joiner: it releases its wait-group count when it is done. */
static void *detached_task(void *arg)
{
	task(arg);
	CHECK_EQ(jf_waitgroup_done(&wg), 0);
	return NULL;
}

static void *main_fn(void *arg)
{
	long r0;

	(void)arg;
	CHECK_EQ(jf_nworkers(), 2);
	for (r0 = 0; r0 < n_roots; r0 += WAVE) {
		jf_thread_t *roots[WAVE];
		uint64_t root_ids[WAVE];
		long r, n = 0;
		uint64_t rng = (uint64_t)r0 * 7919;

		CHECK_EQ(jf_waitgroup_add(&wg, 1), 0); /* main's token */
		for (r = r0; r < r0 + WAVE && r < n_roots; r++) {
			uint64_t id = (uint64_t)r * PER_ROOT + 1;
			jf_thread_t *t = spawn_task(id, &rng);

			if (t) {
				roots[n] = t;
				root_ids[n++] = id;
			}
		}
		while (n > 0) {
			n--;
			CHECK_EQ((uintptr_t)jft_join(roots[n]), root_ids[n]);
		}
		CHECK_EQ(jf_waitgroup_done(&wg), 0);
		jf_waitgroup_wait(&wg);
	}
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	long count = 0, r, i;
	uint64_t esum = 0, exor = 0;

	n_roots = JFT_SCALE(200, 40);
	n_ids = n_roots * PER_ROOT;
	ran = calloc((size_t)n_ids + 1, sizeof(*ran));
	expected = calloc((size_t)n_ids + 1, 1);
	CHECK(ran != NULL && expected != NULL);
	for (r = 0; r < n_roots; r++)
		expect_tree((uint64_t)r * PER_ROOT + 1, &count, &esum, &exor);

	jft_config(&cfg, 2);
	cfg.workers = 2;
	printf("policy %s: %ld tasks in %ld trees\n", cfg.policy, count, n_roots);
	jft_run(&cfg, main_fn, NULL);

	for (i = 1; i <= n_ids; i++) {
		unsigned v = atomic_load(&ran[i]);

		if (v != expected[i]) {
			fprintf(stderr, "task %ld ran %u times, expected %u\n", i, v, expected[i]);
			CHECK_EQ(v, expected[i]);
		}
	}
	CHECK_EQ(atomic_load(&tasks_ran), count);
	CHECK_EQ(atomic_load(&sum), esum);
	CHECK_EQ(atomic_load(&xsum), exor);
	CHECK_EQ(cs_count, atomic_load(&cs_entries));
	printf("%ld critical sections\n", cs_count);
	free(ran);
	free(expected);
	jft_ok("core.storm");
	return 0;
}
