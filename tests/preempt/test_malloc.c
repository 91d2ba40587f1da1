/*
 * preempt/test_malloc.c - a soak test proving that preemption never interrupts glibc's allocator
 * or stdio mid-call: uthreads on 2 workers, with the shortest quantum each mechanism allows
 * (20 us for the signal mechanisms, 5 us for "safepoint", whose uthreads call jf_safepoint()
 * between allocations), call malloc, calloc, realloc (growing and shrinking), posix_memalign,
 * aligned_alloc and free on random sizes from 1 byte to 2 MiB (mmap-sized blocks too), hand blocks
 * to each other through a shared exchange so that blocks are freed by other uthreads on other
 * workers, and write with snprintf and with fprintf into open_memstream buffers. Every block
 * carries a pattern derived from its own seed that is verified before it is resized or freed
 * (calloc memory must be zero, realloc must keep the prefix, alignments must hold), every
 * formatted string is parsed back. Preemption signals arrive mid-malloc all the time; they must be
 * deferred and taken later (stats preempt_deferred), or a worker would deadlock on an arena lock
 * held by a preempted uthread (CTest's timeout catches that) or corrupt the heap (the patterns,
 * and in the ASan build ASan itself, catch that). Runs for JFT_SOAK_SECONDS seconds (default 5;
 * CTest sets 60 in the plain build) and reports the preemptions and deferrals counted.
 */
#include "pt_common.h"

#define NAME "preempt.malloc"

#define SLOTS 64
#define XCHG 32

struct hdr {
	uint64_t seed;
	size_t size;  /* usable bytes after the header */
	uint32_t zero; /* calloc'd: the payload was verified zero before the pattern */
	uint32_t align;
};

static const char *mech;
static int nthreads;
static atomic_int stop;
static _Atomic(struct hdr *) exchange[XCHG];
static atomic_ullong ops_total, bytes_total, stdio_total, xchg_total, frees_total;

static uint64_t rnd(uint64_t *s)
{
	return jft_splitmix64(s);
}

/* The pattern of block @h: byte i is a function of the seed and i. */
static inline unsigned char pat(uint64_t seed, size_t i)
{
	uint64_t v = seed + (uint64_t)(i >> 3) * 0x9e3779b97f4a7c15ull;

	return (unsigned char)(v >> ((i & 7) * 8));
}

static void fill(struct hdr *h, size_t from)
{
	unsigned char *p = (unsigned char *)(h + 1);

	for (size_t i = from; i < h->size; i++)
		p[i] = pat(h->seed, i);
}

static void verify(const struct hdr *h, size_t len, const char *what)
{
	const unsigned char *p = (const unsigned char *)(h + 1);

	for (size_t i = 0; i < len; i++)
		if (p[i] != pat(h->seed, i)) {
			fprintf(stderr,
				"%s [%s]: block %p (%zu bytes, seed %#llx, %s): byte %zu is %#x, "
				"expected %#x\n",
				NAME, mech, (const void *)h, h->size, (unsigned long long)h->seed,
				what, i, p[i], pat(h->seed, i));
			CHECK(!"heap block corrupted");
		}
}

static size_t random_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;

	if (r < 700)
		return 1 + rnd(s) % 256;
	if (r < 950)
		return 1 + rnd(s) % 8192;
	if (r < 995)
		return 1 + rnd(s) % (256 * 1024);
	return 1 + rnd(s) % (2 * 1024 * 1024); /* beyond the mmap threshold */
}

static struct hdr *new_block(uint64_t *s)
{
	size_t size = random_size(s);
	size_t total = sizeof(struct hdr) + size;
	struct hdr *h = NULL;
	uint32_t align = 0, zero = 0;
	void *p = NULL;

	switch (rnd(s) % 4) {
	case 0:
		p = malloc(total);
		break;
	case 1:
		p = calloc(1, total);
		zero = 1;
		break;
	case 2:
		align = 1u << (4 + rnd(s) % 9); /* 16 .. 4096 */
		CHECK_EQ(posix_memalign(&p, align, total), 0);
		break;
	default:
		align = 1u << (3 + rnd(s) % 10); /* 8 .. 4096 */
		total = (total + align - 1) / align * align;
		p = aligned_alloc(align, total);
		break;
	}
	CHECK(p != NULL);
	if (align)
		CHECK_EQ((uintptr_t)p % align, 0);
	h = p;
	if (zero) {
		const unsigned char *b = p;

		for (size_t i = 0; i < total; i++)
			if (b[i]) {
				fprintf(stderr, "%s [%s]: calloc'd block byte %zu is %#x\n", NAME,
					mech, i, b[i]);
				CHECK(!"calloc memory not zero");
			}
	}
	h->seed = rnd(s);
	h->size = size;
	h->zero = zero;
	h->align = align;
	fill(h, 0);
	atomic_fetch_add_explicit(&bytes_total, size, memory_order_relaxed);
	return h;
}

static void free_block(struct hdr *h, const char *what)
{
	verify(h, h->size, what);
	free(h);
	atomic_fetch_add_explicit(&frees_total, 1, memory_order_relaxed);
}

static struct hdr *resize_block(struct hdr *h, uint64_t *s)
{
	size_t old = h->size, size = random_size(s);
	struct hdr *n;

	verify(h, old, "before realloc");
	n = realloc(h, sizeof(struct hdr) + size);
	CHECK(n != NULL);
	n->size = size;
	n->align = 0;
	verify(n, old < size ? old : size, "after realloc");
	if (size > old)
		fill(n, old);
	return n;
}

/* snprintf and an open_memstream stream, parsed back. */
static void stdio_round(int who, uint64_t *s)
{
	char buf[128], *mem = NULL, *line;
	size_t len = 0;
	unsigned long long v = rnd(s), got;
	int lines = 1 + (int)(rnd(s) % 40), i, n, w;
	double d = (double)(v % 1000000) / 7.0;
	FILE *f;

	n = snprintf(buf, sizeof(buf), "uthread %d value %llu half %.3f hex %llx", who, v, d, v);
	CHECK(n > 0 && n < (int)sizeof(buf));
	CHECK_EQ(sscanf(buf, "uthread %d value %llu", &w, &got), 2);
	CHECK_EQ(w, who);
	CHECK(got == v);

	f = open_memstream(&mem, &len);
	CHECK(f != NULL);
	for (i = 0; i < lines; i++)
		CHECK(fprintf(f, "line %d of %d: %llu %s\n", i, lines, v + (unsigned)i, buf) > 0);
	CHECK_EQ(fclose(f), 0);
	CHECK(mem != NULL);
	CHECK_EQ(strlen(mem), len);
	line = mem;
	for (i = 0; i < lines; i++) {
		int a, b;
		char *nl = strchr(line, '\n');

		CHECK(nl != NULL);
		CHECK_EQ(sscanf(line, "line %d of %d: %llu", &a, &b, &got), 3);
		CHECK_EQ(a, i);
		CHECK_EQ(b, lines);
		CHECK(got == v + (unsigned)i);
		line = nl + 1;
	}
	CHECK_EQ(*line, '\0');
	free(mem);
	atomic_fetch_add_explicit(&stdio_total, 1, memory_order_relaxed);
}

static void *alloc_fn(void *arg)
{
	int who = (int)(intptr_t)arg;
	int safepoints = pt_uses_safepoints(mech, who);
	struct hdr *slot[SLOTS] = {0};
	uint64_t s = 0xa110c000ull + (uint64_t)who, ops = 0;
	int i;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = rnd(&s) % 100;
		int k = (int)(rnd(&s) % SLOTS);

		if (r < 70) {
			if (!slot[k])
				slot[k] = new_block(&s);
			else if (rnd(&s) % 2)
				slot[k] = resize_block(slot[k], &s);
			else {
				free_block(slot[k], "before free");
				slot[k] = NULL;
			}
		} else if (r < 85) {
			/* Hand a block to whichever uthread comes next; free what was there. */
			struct hdr *mine = slot[k] ? slot[k] : new_block(&s), *theirs;

			slot[k] = NULL;
			theirs = atomic_exchange(&exchange[rnd(&s) % XCHG], mine);
			if (theirs)
				free_block(theirs, "received from another uthread");
			atomic_fetch_add_explicit(&xchg_total, 1, memory_order_relaxed);
		} else if (r < 87) {
			stdio_round(who, &s);
		} else if (slot[k]) {
			verify(slot[k], slot[k]->size, "kept");
		}
		ops++;
		if (safepoints)
			jf_safepoint();
	}
	for (i = 0; i < SLOTS; i++)
		if (slot[i])
			free_block(slot[i], "at the end");
	atomic_fetch_add(&ops_total, ops);
	return NULL;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[32];
	struct jf_worker_stats st;
	const char *env = getenv("JFT_SOAK_SECONDS");
	uint64_t seconds = env ? strtoull(env, NULL, 10) : 5, t0 = jf_now_ns(), preempts, elapsed;
	int i;

	(void)arg;
	if (!seconds)
		seconds = 5;
	CHECK(strcmp(jf_preempt_mechanism(), mech) == 0);
	for (i = 0; i < nthreads; i++)
		t[i] = jft_spawn_on(i % jf_nworkers(), alloc_fn, (void *)(intptr_t)i);
	preempts = pt_watch(&stop, seconds * PT_S, seconds * PT_S, UINT64_MAX);
	for (i = 0; i < nthreads; i++)
		jft_join(t[i]);
	for (i = 0; i < XCHG; i++) {
		struct hdr *h = atomic_exchange(&exchange[i], NULL);

		if (h)
			free_block(h, "left in the exchange");
	}
	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	elapsed = jf_now_ns() - t0;
	printf("%s [%s]: %.1f s, %d uthreads: %llu operations (%.0f/s), %llu MiB allocated, "
	       "%llu frees, %llu exchanges, %llu stdio rounds\n",
	       NAME, mech, (double)elapsed / 1e9, nthreads,
	       (unsigned long long)atomic_load(&ops_total),
	       (double)atomic_load(&ops_total) * 1e9 / (double)elapsed,
	       (unsigned long long)(atomic_load(&bytes_total) >> 20),
	       (unsigned long long)atomic_load(&frees_total),
	       (unsigned long long)atomic_load(&xchg_total),
	       (unsigned long long)atomic_load(&stdio_total));
	printf("%s [%s]: %llu preemptions, %llu deferred (requests that arrived in libc or the "
	       "runtime)\n",
	       NAME, mech, (unsigned long long)st.preempts, (unsigned long long)st.preempt_deferred);
	CHECK_GE(preempts, 1);
	CHECK_GE(atomic_load(&stdio_total), 1);
	/*
	 * main's 10 ms sleeps were served although every uthread computes all the time: deferred
	 * requests were retried without starving the workers (a storm of retries that leaves the
	 * interrupted code no time to leave libc would stretch the run far beyond its length).
	 */
	elapsed = jf_now_ns() - t0;
	if (elapsed > (2 * seconds + 10) * PT_S) {
		fprintf(stderr, "%s [%s]: a %llu s run took %.1f s: main's wakeups were starved\n",
			NAME, mech, (unsigned long long)seconds, (double)elapsed / 1e9);
		CHECK(!"preemption starved the workers");
	}
	return NULL;
}

int main(void)
{
	struct jf_config cfg;

	mech = pt_config(&cfg, 2, NAME, true);
	cfg.quantum_ns = pt_is_safepoint(mech) ? 5 * PT_US : 20 * PT_US;
	nthreads = 6;
	jft_run(&cfg, main_fn, NULL);
	jft_ok(NAME);
	return 0;
}
