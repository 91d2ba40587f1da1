/*
 * apps/pfn/zjob.c - the decoder and the inputs of the decompression-bomb demo (zjob.h says what
 * it owns and why its bookkeeping runs in regions that cannot be cut off).
 */
#include "zjob.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/preempt.h>

static int64_t live_bytes;
static uint64_t rescued;

int64_t zjob_live_bytes(void)
{
	return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

uint64_t zjob_rescued(void)
{
	return __atomic_load_n(&rescued, __ATOMIC_RELAXED);
}

static void live_add(int64_t n)
{
	__atomic_add_fetch(&live_bytes, n, __ATOMIC_RELAXED);
}

/* A region the decoder is not cut off in: its bookkeeping (a malloc and the store of its result,
 * as one step) happens here. */
static void crit_begin(const struct zjob *j, int *old)
{
	if (j->ctx == ZJOB_PFN)
		jf_preempt_disable();
	else if (j->ctx == ZJOB_PTHREAD)
		pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, old);
}

static void crit_end(const struct zjob *j, int old)
{
	if (j->ctx == ZJOB_PFN)
		jf_preempt_enable();
	else if (j->ctx == ZJOB_PTHREAD)
		pthread_setcanceltype(old, NULL);
}

/* zlib's allocator: tracked malloc, or the preemptible function's arena. */
static voidpf zj_alloc(voidpf opaque, uInt items, uInt size)
{
	struct zjob *j = opaque;
	size_t n = (size_t)items * size;
	void *p = NULL;
	int old = 0;

	if (j->arena)
		return jf_pfn_alloc(n);
	crit_begin(j, &old);
	for (int i = 0; i < ZJOB_MAX_ALLOCS; i++) {
		if (j->allocs[i])
			continue;
		p = malloc(n);
		if (p) {
			j->allocs[i] = p;
			j->alloc_sizes[i] = n;
			live_add((int64_t)n);
		}
		break;
	}
	crit_end(j, old);
	return p;
}

static void zj_free(voidpf opaque, voidpf p)
{
	struct zjob *j = opaque;
	int old = 0;

	if (j->arena || !p)
		return;
	crit_begin(j, &old);
	for (int i = 0; i < ZJOB_MAX_ALLOCS; i++) {
		if (j->allocs[i] != p)
			continue;
		live_add(-(int64_t)j->alloc_sizes[i]);
		j->allocs[i] = NULL;
		free(p);
		break;
	}
	crit_end(j, old);
}

void zjob_init(struct zjob *j, const unsigned char *in, size_t len, size_t cycle_from,
	       enum zjob_ctx ctx, size_t out_cap)
{
	memset(j, 0, sizeof(*j));
	j->in = in;
	j->in_len = len;
	j->cycle_from = cycle_from;
	j->ctx = ctx;
	j->out_cap = out_cap ? out_cap : (size_t)1 << 30;
}

/* Room for output: grow the buffer (realloc, doubling) up to out_cap, then reuse it. */
static int out_room(struct zjob *j)
{
	size_t used, n;
	unsigned char *p;
	int old = 0;

	if (j->zs.avail_out)
		return 0;
	used = j->out ? (size_t)(j->zs.next_out - j->out) : 0;
	if (j->out && j->out_size >= j->out_cap) {
		j->out_len = j->out_size;
		j->zs.next_out = j->out;
		j->zs.avail_out = (uInt)(j->out_size > UINT_MAX ? UINT_MAX : j->out_size);
		return 0;
	}
	n = j->out_size ? j->out_size * 2 : (j->in_len * 4 > 65536 ? j->in_len * 4 : 65536);
	if (n > j->out_cap)
		n = j->out_cap;
	crit_begin(j, &old);
	p = realloc(j->out, n);
	if (p) {
		live_add((int64_t)n - (int64_t)j->out_size);
		j->out = p;
		j->out_size = n;
	}
	crit_end(j, old);
	if (!p)
		return -1;
	j->zs.next_out = p + used;
	j->zs.avail_out = (uInt)(n - used > UINT_MAX ? UINT_MAX : n - used);
	return 0;
}

int zjob_decode(struct zjob *j)
{
	int old = 0, rc;

	j->zs.zalloc = zj_alloc;
	j->zs.zfree = zj_free;
	j->zs.opaque = j;
	j->zs.next_in = (Bytef *)j->in;
	j->zs.avail_in = (uInt)j->in_len;
	crit_begin(j, &old);
	rc = inflateInit(&j->zs);
	if (rc == Z_OK)
		j->zs_live = 1;
	crit_end(j, old);
	if (rc != Z_OK)
		return j->zrc = rc;
	for (;;) {
		size_t pos;

		if (out_room(j)) {
			rc = Z_MEM_ERROR;
			break;
		}
		if (!j->zs.avail_in) {
			if (!j->cycle_from) {
				rc = Z_DATA_ERROR; /* truncated */
				break;
			}
			j->zs.next_in = (Bytef *)j->in + j->cycle_from;
			j->zs.avail_in = (uInt)(j->in_len - j->cycle_from);
		}
		rc = inflate(&j->zs, Z_NO_FLUSH);
		pos = (size_t)(j->zs.next_out - j->out);
		if (pos > j->out_len)
			j->out_len = pos;
		j->total_out = j->zs.total_out;
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK && rc != Z_BUF_ERROR)
			break;
	}
	/* The stream is ended here, done or failed: its state may be in the launch's arena,
	 * which goes when the function returns. */
	crit_begin(j, &old);
	inflateEnd(&j->zs);
	j->zs_live = 0;
	crit_end(j, old);
	return j->zrc = rc;
}

void *zjob_decode_pfn(void *arg)
{
	struct zjob *j = arg;

	jf_cleanup_push(&j->cleanup, zjob_cleanup, j);
	j->pushed = 1;
	zjob_decode(j);
	jf_cleanup_pop(&j->cleanup, 0);
	return j;
}

static void release(struct zjob *j)
{
	if (j->zs_live) {
		inflateEnd(&j->zs);
		j->zs_live = 0;
	}
	for (int i = 0; i < ZJOB_MAX_ALLOCS; i++) {
		if (!j->allocs[i])
			continue;
		free(j->allocs[i]);
		live_add(-(int64_t)j->alloc_sizes[i]);
		j->allocs[i] = NULL;
		__atomic_add_fetch(&rescued, 1, __ATOMIC_RELAXED);
	}
	if (j->out) {
		free(j->out);
		live_add(-(int64_t)j->out_size);
		j->out = NULL;
		j->out_size = 0;
	}
}

void zjob_cleanup(void *arg)
{
	struct zjob *j = arg;

	j->cleanups++;
	release(j);
}

void zjob_release(struct zjob *j)
{
	release(j);
}

/* ---- inputs ---------------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

int zjob_make_benign(size_t raw_bytes, unsigned char **out, size_t *len, unsigned char **raw,
		     size_t *raw_len)
{
	static const char *const paths[] = {"items", "users", "orders", "search", "cart", "img"};
	static const char *const agents[] = {
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Safari/605.1.15",
		"curl/7.88.1", "Go-http-client/1.1", "python-requests/2.31.0"};
	static const int codes[] = {200, 200, 200, 200, 200, 304, 404, 500};
	uint64_t s = 0x9e3779b97f4a7c15ull;
	size_t cap = raw_bytes + 512, n = 0;
	unsigned char *r = malloc(cap), *c;
	uLongf clen;

	if (!r)
		return -1;
	while (n < raw_bytes) {
		uint64_t a = rng_next(&s), b = rng_next(&s);
		unsigned sec = (unsigned)(n / 4096);
		int w = snprintf((char *)r + n, cap - n,
				 "198.51.%u.%u - - [26/Nov/2026:%02u:%02u:%02u +0000] \"GET /api/v1/%s/%u"
				 "?page=%u HTTP/1.1\" %d %u \"-\" \"%s\" %u.%03us\n",
				 (unsigned)(a & 255), (unsigned)(a >> 8 & 255), sec / 3600 % 24,
				 sec / 60 % 60, sec % 60, paths[(a >> 16) % 6],
				 (unsigned)(b % 100000), (unsigned)(b >> 20 & 15),
				 codes[(a >> 24) & 7], (unsigned)(b >> 32 & 65535),
				 agents[(b >> 48) % 5], (unsigned)(b >> 52 & 1), (unsigned)(a >> 40) % 1000);
		if (w <= 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
	clen = compressBound(n);
	c = malloc(clen);
	if (!c || compress2(c, &clen, r, n, 6) != Z_OK) {
		free(r);
		free(c);
		errno = ENOMEM;
		return -1;
	}
	*out = c;
	*len = clen;
	*raw = r;
	*raw_len = n;
	return 0;
}

int zjob_make_bomb(unsigned mib, unsigned char **out, size_t *len, size_t *cycle_from)
{
	const size_t chunk = (size_t)1 << 20;
	unsigned char *zeros = calloc(1, chunk), *part[3] = {0}, tail[64], *b = NULL;
	size_t plen[3] = {0}, tlen, total;
	z_stream s;
	int rc = -1;

	memset(&s, 0, sizeof(s));
	if (!zeros || deflateInit(&s, 9) != Z_OK)
		goto out;
	/* Three 1 MiB chunks of zeros, each ending in a sync flush (byte-aligned): after the first,
	 * every chunk is the same block (match length 258, distance 1, over and over), so the
	 * bomb repeats it instead of compressing N MiB. */
	for (int i = 0; i < 3; i++) {
		size_t cap = deflateBound(&s, chunk) + 64;
		part[i] = malloc(cap);
		if (!part[i])
			goto out_end;
		s.next_in = zeros;
		s.avail_in = (uInt)chunk;
		s.next_out = part[i];
		s.avail_out = (uInt)cap;
		if (deflate(&s, Z_SYNC_FLUSH) != Z_OK || s.avail_in)
			goto out_end;
		plen[i] = cap - s.avail_out;
	}
	if (plen[1] != plen[2] || memcmp(part[1], part[2], plen[1])) {
		fprintf(stderr, "zjob: deflate's steady block is not constant; cannot build the bomb\n");
		goto out_end;
	}
	s.next_in = zeros;
	s.avail_in = 0;
	s.next_out = tail;
	s.avail_out = sizeof(tail);
	if (deflate(&s, Z_FINISH) != Z_STREAM_END)
		goto out_end;
	tlen = sizeof(tail) - s.avail_out; /* the final (empty) block, then Adler-32 of 3 MiB */
	if (tlen < 4)
		goto out_end;
	tlen -= 4;
	total = plen[0] + plen[1] * (mib ? mib - 1 : 1) + (mib ? tlen + 4 : 0);
	b = malloc(total);
	if (!b)
		goto out_end;
	memcpy(b, part[0], plen[0]);
	for (unsigned i = 0; i < (mib ? mib - 1 : 1); i++)
		memcpy(b + plen[0] + (size_t)i * plen[1], part[1], plen[1]);
	if (mib) {
		/* Adler-32 of n zero bytes: a stays 1, b adds 1 per byte */
		uint64_t n = (uint64_t)mib * chunk;
		uint32_t adler = (uint32_t)(n % 65521) << 16 | 1;
		unsigned char *t = b + total - tlen - 4;
		memcpy(t, tail, tlen);
		t[tlen] = (unsigned char)(adler >> 24);
		t[tlen + 1] = (unsigned char)(adler >> 16);
		t[tlen + 2] = (unsigned char)(adler >> 8);
		t[tlen + 3] = (unsigned char)adler;
	}
	*out = b;
	*len = total;
	if (cycle_from)
		*cycle_from = mib ? 0 : plen[0];
	rc = 0;
out_end:
	deflateEnd(&s);
out:
	for (int i = 0; i < 3; i++)
		free(part[i]);
	free(zeros);
	if (rc)
		errno = EINVAL;
	return rc;
}
