/*
 * apps/pfn/zjob.h - an untrusted zlib stream decoded into memory, the work of the
 * decompression-bomb demo (pfn-bomb, docs/pfn-bomb.md) and of its test (tests/apps/test_pfn_bomb.c).
 *
 * Owns: the inputs (a benign, realistic payload: synthetic web-server log lines compressed at
 * level 6; a bomb: N MiB of zeros in ~N KiB, built from two deflate blocks without compressing
 * N MiB; and the same bomb without end, whose input repeats its steady block forever), the
 * decoder (inflate into a buffer grown with realloc, as a naive "decode it all" caller does, or
 * into a ring of a fixed size), and what a cancelled decoder leaves: every zlib allocation is
 * tracked so that a cleanup handler (zjob_cleanup) frees the zlib state and the output even when
 * the decoder was cut between zlib's malloc and the store of its result.
 *
 * Where the decoder may be cut off depends on its context (enum zjob_ctx): inside a preemptible
 * function (jf_pfn_launch) its bookkeeping runs in jf_preempt_disable() regions; in a pthread with
 * asynchronous cancellation enabled it switches to deferred cancellation around them (malloc,
 * realloc and free are not async-cancel-safe); in a child process it needs neither.
 */
#ifndef JIFFY_APPS_ZJOB_H
#define JIFFY_APPS_ZJOB_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include <jiffy/pfn.h>

enum zjob_ctx {
	ZJOB_PLAIN = 0,   /* nothing can cut it off (direct call, child process) */
	ZJOB_PFN = 1,     /* inside jf_pfn_launch(): bookkeeping in jf_preempt_disable() */
	ZJOB_PTHREAD = 2, /* a pthread with async cancellation: deferred around bookkeeping */
};

#define ZJOB_MAX_ALLOCS 8

/* One decode. Fill the input fields (zjob_init), run zjob_decode, read the results. */
struct zjob {
	/* input */
	const unsigned char *in;
	size_t in_len;
	size_t cycle_from; /* > 0: after in_len the input goes on at in[cycle_from] forever */
	/* how */
	enum zjob_ctx ctx;
	int arena;      /* ZJOB_PFN only: zlib's state from jf_pfn_alloc() (freed by the runtime) */
	size_t out_cap; /* the output buffer grows to this, then is reused from its start (ring) */
	/* results */
	unsigned char *out; /* malloc'd; the caller frees it (zjob_release) */
	size_t out_size;    /* bytes allocated */
	size_t out_len;     /* valid bytes at out (the last ring lap) */
	uint64_t total_out; /* bytes inflated */
	int zrc;            /* Z_STREAM_END when it finished; a zlib error; 0 while it runs */
	/* state a cleanup handler reads (consistent at every instruction outside a region) */
	z_stream zs;
	int zs_live;
	void *allocs[ZJOB_MAX_ALLOCS];
	size_t alloc_sizes[ZJOB_MAX_ALLOCS];
	int pushed;   /* zjob_decode_pfn pushed its handler (a stop may come before it does) */
	int cleanups; /* times zjob_cleanup ran */
	struct jf_cleanup cleanup;
};

/* Bytes this process holds for zjobs now (zlib state through malloc + output buffers). */
int64_t zjob_live_bytes(void);
/* zlib allocations that zlib itself did not free and zjob_cleanup had to (cut between a malloc
 * and its store, or never ended). */
uint64_t zjob_rescued(void);

/* zjob_init() - a job decoding @in[0..@len) (see struct zjob for @cycle_from). */
void zjob_init(struct zjob *j, const unsigned char *in, size_t len, size_t cycle_from,
	       enum zjob_ctx ctx, size_t out_cap);

/* zjob_decode() - inflate it all (or until cut off). Return: j->zrc. */
int zjob_decode(struct zjob *j);

/* zjob_decode_pfn() - jf_thread_fn for jf_pfn_launch(): pushes zjob_cleanup, decodes, pops. */
void *zjob_decode_pfn(void *arg);

/* zjob_cleanup() - a cleanup handler (jf_ and pthread): inflateEnd, free what zlib left, free the
 * output. Idempotent. */
void zjob_cleanup(void *arg);

/* zjob_release() - after a decode that returned: end the stream and free the output. */
void zjob_release(struct zjob *j);

/*
 * The inputs. Each returns a malloc'd buffer (*@out, *@len) or -1 (errno set).
 * zjob_make_benign: about @raw_bytes of log lines, compressed at level 6; *@raw receives the
 *   uncompressed bytes (malloc'd) to compare with.
 * zjob_make_bomb: a zlib stream of @mib MiB of zeros, about 1 KiB per MiB. With @mib == 0, the
 *   endless bomb: *@cycle_from receives where its repeated part starts.
 */
int zjob_make_benign(size_t raw_bytes, unsigned char **out, size_t *len, unsigned char **raw,
		     size_t *raw_len);
int zjob_make_bomb(unsigned mib, unsigned char **out, size_t *len, size_t *cycle_from);

#endif /* JIFFY_APPS_ZJOB_H */
