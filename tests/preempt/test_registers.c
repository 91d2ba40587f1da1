/*
 * preempt/test_registers.c - proves that a preempted uthread resumes with every register the CPU
 * has, on whichever worker: many uthreads on 2 workers (policy ws; each asks every 64 chunks to
 * move to the other worker, so that its next preemption migrates it) run, with a short quantum,
 * inline-assembly loops that keep distinct per-thread values live in registers for the whole
 * loop while other uthreads use the same registers with other values:
 *   - AVX2: ymm0-15, each incremented by a per-thread vector (vpaddq) hundreds of times;
 *   - AVX-512F (when the CPU has it): zmm0-31 incremented under the masks k1-k7, which must keep
 *     their values too (VEX code in other uthreads clears the upper halves of zmm0-15, so a
 *     runtime that saves less than the whole XCR0 state loses them);
 *   - x87: pi (fldpi) and seven other values in st0-st7, st0 updated by fadd/fmul/fsub/fdiv with
 *     st1-st7, under a per-thread x87 rounding mode;
 *   - SSE: a mul/add/div chain under a per-thread MXCSR rounding mode;
 * and compares every result bit for bit with a scalar computation (vectors) or with the same
 * code run before the runtime starts (x87, SSE), and the control words with the thread's own.
 * Interleaved with the loops, glibc's memcpy, memmove (both directions, unaligned), memset and
 * strlen run on multi-megabyte buffers (they use vector registers too, and preemption must wait
 * for them to return) and are verified with checksums computed by the test's own code.
 * Between chunks of about 1 us the uthreads call jf_safepoint() (all of them under "safepoint",
 * half of them under the other mechanisms, so that "hybrid" has to use its signal for the
 * rest). The run lasts until the workers counted at least 1000 preemptions and 2 s have passed
 * (100 and 1 s under sanitizers), which must happen within 30 s.
 */
#include <stdalign.h>

#include "pt_common.h"

#define NAME "preempt.registers"

#define Y_ITERS 256 /* ~0.5-1 us per chunk */
#define Z_ITERS 128
#define X87_ITERS 64
#define SSE_ITERS 100
#define MEM_EVERY 16384 /* chunks between two rounds of libc memory calls */

static const char *mech;
static int nthreads;
static size_t bufsize;
static int have_avx2, have_avx512;
static atomic_int stop;
static atomic_ullong total_chunks, total_memops, total_migrations;

/* ---- per-thread state ---- */

struct regs {
	alignas(64) uint64_t yin[16][4];
	alignas(64) uint64_t yinc[16][4];
	alignas(64) uint64_t yout[16][4];
	alignas(64) uint64_t ywant[16][4];
	alignas(64) uint64_t zin[32][8];
	alignas(64) uint64_t zinc[32][8];
	alignas(64) uint64_t zout[32][8];
	alignas(64) uint64_t zwant[32][8];
	alignas(16) uint16_t kin[8];
	alignas(16) uint16_t kout[8];
	alignas(16) long double xin[8];
	alignas(16) long double xout[8];
	alignas(16) long double xwant[8];
	alignas(16) double sin_[4];
	double sout;
	double swant;
	uint16_t x87_cw;
	uint32_t mxcsr;
	int id;
	int safepoints;
	uint64_t rng;
	uint64_t chunks, memrounds; /* what it got done */
	unsigned char *a, *b; /* bufsize bytes each */
};

static struct regs *threads[64];

/* ---- the register loops ---- */

#define STR_(x) #x
#define STR(x) STR_(x)

#define Y_LOAD(i) "vmovdqu " STR(i) "*32(%[in]), %%ymm" STR(i) "\n\t"
#define Y_ADD(i) "vpaddq " STR(i) "*32(%[inc]), %%ymm" STR(i) ", %%ymm" STR(i) "\n\t"
#define Y_STORE(i) "vmovdqu %%ymm" STR(i) ", " STR(i) "*32(%[out])\n\t"

__attribute__((target("avx2"), noinline)) static void ymm_chunk(struct regs *r, long n)
{
	__asm__ volatile(Y_LOAD(0) Y_LOAD(1) Y_LOAD(2) Y_LOAD(3) Y_LOAD(4) Y_LOAD(5) Y_LOAD(6)
			 Y_LOAD(7) Y_LOAD(8) Y_LOAD(9) Y_LOAD(10) Y_LOAD(11) Y_LOAD(12)
			 Y_LOAD(13) Y_LOAD(14) Y_LOAD(15)
			 "1:\n\t"
			 Y_ADD(0) Y_ADD(1) Y_ADD(2) Y_ADD(3) Y_ADD(4) Y_ADD(5) Y_ADD(6) Y_ADD(7)
			 Y_ADD(8) Y_ADD(9) Y_ADD(10) Y_ADD(11) Y_ADD(12) Y_ADD(13) Y_ADD(14)
			 Y_ADD(15)
			 "dec %[n]\n\t"
			 "jnz 1b\n\t"
			 Y_STORE(0) Y_STORE(1) Y_STORE(2) Y_STORE(3) Y_STORE(4) Y_STORE(5)
			 Y_STORE(6) Y_STORE(7) Y_STORE(8) Y_STORE(9) Y_STORE(10) Y_STORE(11)
			 Y_STORE(12) Y_STORE(13) Y_STORE(14) Y_STORE(15)
			 "vzeroupper\n\t"
			 : [n] "+r"(n)
			 : [in] "r"(r->yin), [inc] "r"(r->yinc), [out] "r"(r->yout)
			 : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
			   "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
			   "xmm15");
}

#define Z_LOAD(i) "vmovdqu64 " STR(i) "*64(%[in]), %%zmm" STR(i) "\n\t"
/* zmm i is added to under mask k(i % 7 + 1). */
#define Z_ADD(i, k)                                                                            \
	"vpaddq " STR(i) "*64(%[inc]), %%zmm" STR(i) ", %%zmm" STR(i) "%{%%k" STR(k) "%}\n\t"
#define Z_STORE(i) "vmovdqu64 %%zmm" STR(i) ", " STR(i) "*64(%[out])\n\t"
#define K_LOAD(j) "kmovw " STR(j) "*2(%[kin]), %%k" STR(j) "\n\t"
#define K_STORE(j) "kmovw %%k" STR(j) ", " STR(j) "*2(%[kout])\n\t"

__attribute__((target("avx512f"), noinline)) static void zmm_chunk(struct regs *r, long n)
{
	__asm__ volatile(K_LOAD(1) K_LOAD(2) K_LOAD(3) K_LOAD(4) K_LOAD(5) K_LOAD(6) K_LOAD(7)
			 Z_LOAD(0) Z_LOAD(1) Z_LOAD(2) Z_LOAD(3) Z_LOAD(4) Z_LOAD(5) Z_LOAD(6)
			 Z_LOAD(7) Z_LOAD(8) Z_LOAD(9) Z_LOAD(10) Z_LOAD(11) Z_LOAD(12)
			 Z_LOAD(13) Z_LOAD(14) Z_LOAD(15) Z_LOAD(16) Z_LOAD(17) Z_LOAD(18)
			 Z_LOAD(19) Z_LOAD(20) Z_LOAD(21) Z_LOAD(22) Z_LOAD(23) Z_LOAD(24)
			 Z_LOAD(25) Z_LOAD(26) Z_LOAD(27) Z_LOAD(28) Z_LOAD(29) Z_LOAD(30)
			 Z_LOAD(31)
			 "1:\n\t"
			 Z_ADD(0, 1) Z_ADD(1, 2) Z_ADD(2, 3) Z_ADD(3, 4) Z_ADD(4, 5) Z_ADD(5, 6)
			 Z_ADD(6, 7) Z_ADD(7, 1) Z_ADD(8, 2) Z_ADD(9, 3) Z_ADD(10, 4) Z_ADD(11, 5)
			 Z_ADD(12, 6) Z_ADD(13, 7) Z_ADD(14, 1) Z_ADD(15, 2) Z_ADD(16, 3)
			 Z_ADD(17, 4) Z_ADD(18, 5) Z_ADD(19, 6) Z_ADD(20, 7) Z_ADD(21, 1)
			 Z_ADD(22, 2) Z_ADD(23, 3) Z_ADD(24, 4) Z_ADD(25, 5) Z_ADD(26, 6)
			 Z_ADD(27, 7) Z_ADD(28, 1) Z_ADD(29, 2) Z_ADD(30, 3) Z_ADD(31, 4)
			 "dec %[n]\n\t"
			 "jnz 1b\n\t"
			 Z_STORE(0) Z_STORE(1) Z_STORE(2) Z_STORE(3) Z_STORE(4) Z_STORE(5)
			 Z_STORE(6) Z_STORE(7) Z_STORE(8) Z_STORE(9) Z_STORE(10) Z_STORE(11)
			 Z_STORE(12) Z_STORE(13) Z_STORE(14) Z_STORE(15) Z_STORE(16) Z_STORE(17)
			 Z_STORE(18) Z_STORE(19) Z_STORE(20) Z_STORE(21) Z_STORE(22) Z_STORE(23)
			 Z_STORE(24) Z_STORE(25) Z_STORE(26) Z_STORE(27) Z_STORE(28) Z_STORE(29)
			 Z_STORE(30) Z_STORE(31)
			 K_STORE(1) K_STORE(2) K_STORE(3) K_STORE(4) K_STORE(5) K_STORE(6)
			 K_STORE(7)
			 "vzeroupper\n\t"
			 : [n] "+r"(n)
			 : [in] "r"(r->zin), [inc] "r"(r->zinc), [out] "r"(r->zout),
			   [kin] "r"(r->kin), [kout] "r"(r->kout)
			 : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
			   "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
			   "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
			   "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",
			   "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7");
}

/*
 * st0 = x; st1 = pi (fldpi); st2-st7 = constants. Each iteration:
 * x = ((((((x + st1) * st2) - st3) / st4) * st5) + st6) * st7. The multipliers are within 1e-6
 * of 1, so x drifts slowly and a wrong value is never washed out within a chunk.
 */
static __attribute__((noinline)) void x87_chunk(const long double *in, long double *out, long n)
{
	__asm__ volatile("fldt 7*16(%[in])\n\t"
			 "fldt 6*16(%[in])\n\t"
			 "fldt 5*16(%[in])\n\t"
			 "fldt 4*16(%[in])\n\t"
			 "fldt 3*16(%[in])\n\t"
			 "fldt 2*16(%[in])\n\t"
			 "fldpi\n\t"
			 "fldt 0*16(%[in])\n\t"
			 "1:\n\t"
			 "fadd %%st(1), %%st\n\t"
			 "fmul %%st(2), %%st\n\t"
			 "fsub %%st(3), %%st\n\t"
			 "fdiv %%st(4), %%st\n\t"
			 "fmul %%st(5), %%st\n\t"
			 "fadd %%st(6), %%st\n\t"
			 "fmul %%st(7), %%st\n\t"
			 "dec %[n]\n\t"
			 "jnz 1b\n\t"
			 "fstpt 0*16(%[out])\n\t"
			 "fstpt 1*16(%[out])\n\t"
			 "fstpt 2*16(%[out])\n\t"
			 "fstpt 3*16(%[out])\n\t"
			 "fstpt 4*16(%[out])\n\t"
			 "fstpt 5*16(%[out])\n\t"
			 "fstpt 6*16(%[out])\n\t"
			 "fstpt 7*16(%[out])\n\t"
			 : [n] "+r"(n)
			 : [in] "r"(in), [out] "r"(out)
			 : "memory", "cc", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)",
			   "st(6)", "st(7)");
}

/* x = ((x * m) + a) / d, SSE2 double, under the thread's MXCSR rounding mode. */
static __attribute__((noinline)) double sse_chunk(const double *in, long n)
{
	double out;

	__asm__ volatile("movsd 0(%[in]), %%xmm0\n\t"
			 "movsd 8(%[in]), %%xmm1\n\t"
			 "movsd 16(%[in]), %%xmm2\n\t"
			 "movsd 24(%[in]), %%xmm3\n\t"
			 "1:\n\t"
			 "mulsd %%xmm1, %%xmm0\n\t"
			 "addsd %%xmm2, %%xmm0\n\t"
			 "divsd %%xmm3, %%xmm0\n\t"
			 "dec %[n]\n\t"
			 "jnz 1b\n\t"
			 "movsd %%xmm0, %[out]\n\t"
			 : [n] "+r"(n), [out] "=m"(out)
			 : [in] "r"(in)
			 : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3");
	return out;
}

/* ---- set-up: parameters and the expected results ---- */

static struct regs *make_thread(int id)
{
	struct regs *r = aligned_alloc(64, sizeof(*r));
	uint64_t s = 0x5eed0000ull + (uint64_t)id * 7919;
	int i, l;

	CHECK(r != NULL);
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->safepoints = pt_uses_safepoints(mech, id);
	r->rng = s ^ 0xabcdefull;
	for (i = 0; i < 16; i++)
		for (l = 0; l < 4; l++) {
			r->yin[i][l] = jft_splitmix64(&s);
			r->yinc[i][l] = jft_splitmix64(&s);
			r->ywant[i][l] = r->yin[i][l] + (uint64_t)Y_ITERS * r->yinc[i][l];
		}
	for (i = 1; i < 8; i++) {
		/* Never all zero or all one in the 8 lanes a qword vector uses. */
		r->kin[i] = (uint16_t)((jft_splitmix64(&s) & 0xff7e) | 0x0001);
		if ((r->kin[i] & 0xff) == 0xff)
			r->kin[i] &= 0xfffd;
	}
	for (i = 0; i < 32; i++) {
		unsigned mask = r->kin[i % 7 + 1];

		for (l = 0; l < 8; l++) {
			r->zin[i][l] = jft_splitmix64(&s);
			r->zinc[i][l] = jft_splitmix64(&s);
			r->zwant[i][l] = r->zin[i][l] +
					 (((mask >> l) & 1) ? (uint64_t)Z_ITERS * r->zinc[i][l] : 0);
		}
	}
	r->xin[0] = 1.0L + id * 0.01L;
	r->xin[1] = 0.0L; /* st1 is fldpi */
	r->xin[2] = 1.000001L + id * 1e-9L;
	r->xin[3] = 3.14159L;
	r->xin[4] = 1.0000013L;
	r->xin[5] = 0.9999997L;
	r->xin[6] = 1e-6L * (1 + id);
	r->xin[7] = 1.0000001L;
	/* 64-bit precision, all exceptions masked, rounding mode by thread. */
	r->x87_cw = (uint16_t)(0x037f | ((unsigned)(id % 4) << 10));
	/* All exceptions masked, rounding mode by thread, no flush-to-zero. */
	r->mxcsr = 0x1f80u | ((unsigned)((id + 1) % 4) << 13);
	r->sin_[0] = 1.0 + id / 3.0;
	r->sin_[1] = 1.0 / 3.0;
	r->sin_[2] = 0.7 + id * 1e-3;
	r->sin_[3] = 0.3333333333333;
	r->a = malloc(bufsize);
	r->b = malloc(bufsize + 1);
	CHECK(r->a != NULL && r->b != NULL);
	return r;
}

/*
 * Run the x87 and SSE chunks once outside the runtime, under the thread's modes.
 * Return: whether the thread's modes give other results than round-to-nearest.
 */
static int compute_fp_references(struct regs *r)
{
	uint32_t mxcsr = jft_get_mxcsr();
	uint16_t cw = jft_get_x87_cw();
	long double xnearest[8];
	double snearest;
	int differs;

	jft_set_x87_cw(r->x87_cw & ~0x0c00u);
	jft_set_mxcsr(r->mxcsr & ~0x6000u);
	x87_chunk(r->xin, xnearest, X87_ITERS);
	snearest = sse_chunk(r->sin_, SSE_ITERS);
	jft_set_x87_cw(r->x87_cw);
	jft_set_mxcsr(r->mxcsr);
	x87_chunk(r->xin, r->xwant, X87_ITERS);
	r->swant = sse_chunk(r->sin_, SSE_ITERS);
	jft_set_mxcsr(mxcsr);
	jft_set_x87_cw(cw);
	differs = memcmp(&snearest, &r->swant, sizeof(double)) != 0 ||
		  memcmp(&xnearest[0], &r->xwant[0], 10) != 0;
	return differs;
}

/* ---- checks ---- */

static _Noreturn void reg_fail(struct regs *r, const char *what, int reg, int lane, uint64_t got,
			       uint64_t want, uint64_t chunk)
{
	fprintf(stderr,
		"%s [%s]: uthread %d, chunk %llu, worker %d: %s register %d lane %d is %#llx, "
		"expected %#llx\n",
		NAME, mech, r->id, (unsigned long long)chunk, jf_worker_id(), what, reg, lane,
		(unsigned long long)got, (unsigned long long)want);
	CHECK(!"register state lost across preemption");
	jft_fail();
}

static void check_ymm(struct regs *r, uint64_t chunk)
{
	for (int i = 0; i < 16; i++)
		for (int l = 0; l < 4; l++)
			if (r->yout[i][l] != r->ywant[i][l])
				reg_fail(r, "ymm", i, l, r->yout[i][l], r->ywant[i][l], chunk);
}

static void check_zmm(struct regs *r, uint64_t chunk)
{
	for (int j = 1; j < 8; j++)
		if (r->kout[j] != r->kin[j])
			reg_fail(r, "mask k", j, 0, r->kout[j], r->kin[j], chunk);
	for (int i = 0; i < 32; i++)
		for (int l = 0; l < 8; l++)
			if (r->zout[i][l] != r->zwant[i][l])
				reg_fail(r, "zmm", i, l, r->zout[i][l], r->zwant[i][l], chunk);
}

static void check_fp(struct regs *r, uint64_t chunk)
{
	uint32_t mxcsr = jft_get_mxcsr();
	uint16_t cw = jft_get_x87_cw();

	if ((mxcsr & ~0x3fu) != r->mxcsr)
		reg_fail(r, "MXCSR", 0, 0, mxcsr, r->mxcsr, chunk);
	if (cw != r->x87_cw)
		reg_fail(r, "x87 control word", 0, 0, cw, r->x87_cw, chunk);
	for (int i = 0; i < 8; i++) {
		uint64_t got[2] = {0, 0}, want[2] = {0, 0};

		memcpy(got, &r->xout[i], 10);
		memcpy(want, &r->xwant[i], 10);
		if (got[0] != want[0] || got[1] != want[1])
			reg_fail(r, "x87 st", i, 0, got[0] ^ (got[1] << 48), want[0] ^ (want[1] << 48),
				 chunk);
	}
	if (memcmp(&r->sout, &r->swant, sizeof(double)) != 0) {
		uint64_t got, want;

		memcpy(&got, &r->sout, 8);
		memcpy(&want, &r->swant, 8);
		reg_fail(r, "SSE xmm", 0, 0, got, want, chunk);
	}
}

/* ---- glibc's memory functions on large buffers ---- */

static inline void maybe_safepoint(const struct regs *r)
{
	if (r->safepoints)
		jf_safepoint();
}

/* Checksum of @len bytes at any alignment, computed with plain loads (not libc). */
static uint64_t cs_bytes(const struct regs *r, const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;

	while (i + 8 <= len) {
		uint64_t w;

		__builtin_memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
		i += 8;
		if ((i & 0xffff) == 0)
			maybe_safepoint(r);
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void mem_fail(const struct regs *r, const char *what)
{
	fprintf(stderr, "%s [%s]: uthread %d: %s produced wrong bytes\n", NAME, mech, r->id, what);
	CHECK(!"glibc memory function result wrong under preemption");
}

static void memory_round(struct regs *r)
{
	size_t n = bufsize, off, off2, p, i;
	uint64_t seed = jft_splitmix64(&r->rng), s = seed, ca, cb;
	unsigned char c;
	uint64_t cword;

	/* Fill A with a pattern; memcpy to B. */
	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w = jft_splitmix64(&s);

		__builtin_memcpy(r->a + i, &w, 8);
		if ((i & 0xffff) == 0)
			maybe_safepoint(r);
	}
	ca = cs_bytes(r, r->a, n);
	memcpy(r->b, r->a, n);
	if (cs_bytes(r, r->b, n) != ca)
		mem_fail(r, "memcpy");
	maybe_safepoint(r);

	/* memmove down within B (source above destination), unaligned. */
	off2 = 1 + jft_splitmix64(&r->rng) % 4099;
	cb = cs_bytes(r, r->a + off2, n - off2);
	memmove(r->b, r->b + off2, n - off2);
	if (cs_bytes(r, r->b, n - off2) != cb)
		mem_fail(r, "memmove (down)");
	if (cs_bytes(r, r->b + n - off2, off2) != cs_bytes(r, r->a + n - off2, off2))
		mem_fail(r, "memmove (down) beyond its range");
	maybe_safepoint(r);

	/* memmove up within A (destination above source), unaligned. */
	off = 1 + jft_splitmix64(&r->rng) % 4097;
	ca = cs_bytes(r, r->a, n - off);
	cb = cs_bytes(r, r->a, off);
	memmove(r->a + off, r->a, n - off);
	if (cs_bytes(r, r->a + off, n - off) != ca)
		mem_fail(r, "memmove (up)");
	if (cs_bytes(r, r->a, off) != cb)
		mem_fail(r, "memmove (up) below its range");
	maybe_safepoint(r);

	/* memset B to a nonzero byte, then strlen up to a zero placed at random. */
	c = (unsigned char)(1 + jft_splitmix64(&r->rng) % 255);
	cword = 0x0101010101010101ull * c;
	memset(r->b, c, n);
	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w;

		__builtin_memcpy(&w, r->b + i, 8);
		if (w != cword)
			mem_fail(r, "memset");
		if ((i & 0xffff) == 0)
			maybe_safepoint(r);
	}
	p = n / 2 + jft_splitmix64(&r->rng) % (n / 2);
	r->b[p] = 0;
	r->b[n] = 0;
	if (strlen((const char *)r->b) != p)
		mem_fail(r, "strlen");
	r->b[p] = c;
	if (strlen((const char *)r->b + 1) != n - 1)
		mem_fail(r, "strlen (unaligned start)");
	maybe_safepoint(r);
	r->memrounds++;
	atomic_fetch_add_explicit(&total_memops, 1, memory_order_relaxed);
}

/* ---- the uthreads ---- */

static void *reg_fn(void *arg)
{
	struct regs *r = arg;
	uint64_t chunk = 0, migrations = 0, next_mem = 1 + (uint64_t)r->id * 97;
	int kinds = 3, last_worker = jf_worker_id();

	jft_set_x87_cw(r->x87_cw);
	jft_set_mxcsr(r->mxcsr);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int w;

		switch ((chunk + (uint64_t)r->id) % (uint64_t)kinds) {
		case 0:
			if (have_avx2) {
				ymm_chunk(r, Y_ITERS);
				check_ymm(r, chunk);
				break;
			}
			/* fall through */
		case 1:
			if (have_avx512) {
				zmm_chunk(r, Z_ITERS);
				check_zmm(r, chunk);
				break;
			}
			/* fall through */
		default:
			x87_chunk(r->xin, r->xout, X87_ITERS);
			r->sout = sse_chunk(r->sin_, SSE_ITERS);
			check_fp(r, chunk);
			break;
		}
		chunk++;
		if (chunk % 64 == 0)
			pt_hint_other_worker();
		if (chunk >= next_mem) {
			memory_round(r);
			next_mem += MEM_EVERY;
		}
		maybe_safepoint(r);
		w = jf_worker_id();
		if (w != last_worker) {
			migrations++;
			last_worker = w;
		}
	}
	/* The control state still is the thread's own at the end. */
	check_fp(r, chunk);
	r->chunks = chunk;
	atomic_fetch_add(&total_chunks, chunk);
	atomic_fetch_add(&total_migrations, migrations);
	return NULL;
}

static void *main_fn(void *arg)
{
	jf_thread_t *t[64];
	struct jf_worker_stats st;
	uint64_t want = JFT_SCALE(1000, 100), preempts, t0 = jf_now_ns();
	int i;

	(void)arg;
	CHECK(strcmp(jf_preempt_mechanism(), mech) == 0);
	for (i = 0; i < nthreads; i++)
		t[i] = jft_spawn_on(i % jf_nworkers(), reg_fn, threads[i]);
	preempts = pt_watch(&stop, JFT_SCALE(2, 1) * PT_S, 30 * PT_S, want);
	for (i = 0; i < nthreads; i++)
		jft_join(t[i]);
	st = pt_stats();
	pt_print_stats(NAME, mech, &st);
	printf("%s [%s]: %.2f s, %d uthreads, %llu register chunks, %llu memory rounds, "
	       "%llu migrations\n",
	       NAME, mech, (double)(jf_now_ns() - t0) / 1e9, nthreads,
	       (unsigned long long)atomic_load(&total_chunks),
	       (unsigned long long)atomic_load(&total_memops),
	       (unsigned long long)atomic_load(&total_migrations));
	CHECK_GE(preempts, want);
	/* Every uthread got far enough to call the memory functions (its first round comes
	 * within its first 700 chunks, well under a millisecond of its own). */
	for (i = 0; i < nthreads; i++)
		if (!threads[i]->memrounds) {
			fprintf(stderr,
				"%s [%s]: uthread %d did only %llu chunks and no memory round in %.2f "
				"s (total %llu chunks): starved or slowed down by preemption\n",
				NAME, mech, i, (unsigned long long)threads[i]->chunks,
				(double)(jf_now_ns() - t0) / 1e9,
				(unsigned long long)atomic_load(&total_chunks));
			CHECK(!"a uthread made almost no progress");
		}
	/* Preempted uthreads resumed on the other worker, not only on their own. */
	CHECK_GE(atomic_load(&total_migrations), 10);
	return NULL;
}

int main(void)
{
	struct jf_config cfg;
	int i, modes_matter = 0;

	mech = pt_config(&cfg, 2, NAME, true);
	snprintf(cfg.policy, sizeof(cfg.policy), "%s", "ws");
	cfg.quantum_ns = pt_is_safepoint(mech) ? 10 * PT_US : 50 * PT_US;

	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2");
	have_avx512 = __builtin_cpu_supports("avx512f");
	printf("%s [%s]: AVX2 %s, AVX-512F %s, quantum %llu us\n", NAME, mech,
	       have_avx2 ? "yes" : "no", have_avx512 ? "yes" : "no",
	       (unsigned long long)(cfg.quantum_ns / PT_US));

	nthreads = JFT_SCALE(8, 4);
	bufsize = JFT_SCALE(4u << 20, 1u << 20);
	for (i = 0; i < nthreads; i++) {
		threads[i] = make_thread(i);
		modes_matter += compute_fp_references(threads[i]);
	}
	/* The rounding modes change the results, so a lost mode would be seen. */
	CHECK_GE(modes_matter, nthreads / 2);

	jft_run(&cfg, main_fn, NULL);
	for (i = 0; i < nthreads; i++) {
		free(threads[i]->a);
		free(threads[i]->b);
		free(threads[i]);
	}
	jft_ok(NAME);
	return 0;
}
