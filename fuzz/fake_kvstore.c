/*
 * fuzz/fake_kvstore.c - an in-memory stand-in for apps/kv/kvstore.c (the RocksDB store), so the
 * RESP commands (resp_exec) and the UDP request handler (kvproto_handle) can be fuzzed without
 * RocksDB. It implements kvstore.h's contract, not RocksDB's behaviour: keys kept sorted
 * bytewise (memcmp, then length: RocksDB's default comparator), get/put/del/scan/dbsize.
 *
 * Owns: one store per process (the fuzzers are single-threaded), emptied and preloaded by
 * fake_kvstore_reset() before every input, so that a run depends on its input alone, and freed
 * after it (reset to 0 keys), so that libFuzzer's per-input leak check has nothing to look for.
 * Invariant: entries[0, n) sorted strictly ascending; every key and value is a malloc'd copy.
 * Failures: fake_kvstore_fail_every(k) makes every k-th call fail with a malloc'd *err, as
 * RocksDB's errors come back, so the callers' error paths are fuzzed too.
 */
#define _GNU_SOURCE
#include "fake_kvstore.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvstore.h"
#include "proto.h"

struct entry {
	char *key, *val;
	size_t klen, vlen;
};

struct kvstore {
	struct entry *e;
	size_t n, cap;
	unsigned calls, fail_every;
};

static struct kvstore store;

struct kvstore *fake_kvstore(void)
{
	return &store;
}

static int cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* The first index whose key is >= @key. */
static size_t lower_bound(const char *key, size_t klen)
{
	size_t lo = 0, hi = store.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp(store.e[mid].key, store.e[mid].klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is @key stored at @i (lower_bound()'s answer)? */
static bool found_at(size_t i, const char *key, size_t klen)
{
	return i < store.n && cmp(store.e[i].key, store.e[i].klen, key, klen) == 0;
}

static char *dup_bytes(const char *p, size_t n)
{
	char *d = malloc(n ? n : 1);
	if (d && n)
		memcpy(d, p, n);
	return d;
}

/* Does this call fail (as RocksDB may)? Then *err is set. */
static int injected_failure(char **err)
{
	if (!store.fail_every || ++store.calls % store.fail_every)
		return 0;
	*err = strdup("fake_kvstore: injected failure");
	return 1;
}

void fake_kvstore_fail_every(unsigned k)
{
	store.fail_every = k;
	store.calls = 0;
}

void fake_kvstore_reset(uint32_t keys)
{
	for (size_t i = 0; i < store.n; i++) {
		free(store.e[i].key);
		free(store.e[i].val);
	}
	store.n = 0;
	store.fail_every = 0;
	if (keys == 0) { /* nothing left allocated */
		free(store.e);
		store.e = NULL;
		store.cap = 0;
	}
	for (uint32_t i = 0; i < keys; i++) {
		static char v[FAKE_KVSTORE_BIG_VALUE];
		char k[JP_KEY_LEN + 1];
		size_t kl = kvstore_key(k, i);
		memset(v, 'a' + (int)(i % 26), sizeof(v));
		kvstore_put(&store, k, kl, v, i == 7 ? sizeof(v) : i % 2 ? 64 : 8, NULL);
	}
}

size_t kvstore_key(char *buf, uint32_t i)
{
	return (size_t)snprintf(buf, JP_KEY_LEN + 1, JP_KEY_FMT, i);
}

const char *kvstore_path(const struct kvstore *kv)
{
	(void)kv;
	return "(fuzz: in memory)";
}

int kvstore_get(struct kvstore *kv, const char *key, size_t klen, kvstore_value_fn fn, void *ctx,
		char **err)
{
	(void)kv;
	if (injected_failure(err))
		return -1;
	size_t i = lower_bound(key, klen);
	if (!found_at(i, key, klen))
		return 0;
	if (fn)
		fn(ctx, store.e[i].val, store.e[i].vlen);
	return 1;
}

int kvstore_put(struct kvstore *kv, const char *key, size_t klen, const char *val, size_t vlen,
		char **err)
{
	(void)kv;
	if (err && injected_failure(err))
		return -1;
	char *v = dup_bytes(val, vlen);
	if (!v)
		return -1;
	size_t i = lower_bound(key, klen);
	if (found_at(i, key, klen)) {
		free(store.e[i].val);
		store.e[i].val = v;
		store.e[i].vlen = vlen;
		return 0;
	}
	if (store.n == store.cap) {
		size_t cap = store.cap ? store.cap * 2 : 64;
		struct entry *e = realloc(store.e, cap * sizeof(*e));
		if (!e) {
			free(v);
			return -1;
		}
		store.e = e;
		store.cap = cap;
	}
	char *k = dup_bytes(key, klen);
	if (!k) {
		free(v);
		return -1;
	}
	memmove(&store.e[i + 1], &store.e[i], (store.n - i) * sizeof(*store.e));
	store.e[i] = (struct entry){k, v, klen, vlen};
	store.n++;
	return 0;
}

int kvstore_del(struct kvstore *kv, const char *key, size_t klen, char **err)
{
	(void)kv;
	if (injected_failure(err))
		return -1;
	size_t i = lower_bound(key, klen);
	if (!found_at(i, key, klen))
		return 0;
	free(store.e[i].key);
	free(store.e[i].val);
	memmove(&store.e[i], &store.e[i + 1], (store.n - i - 1) * sizeof(*store.e));
	store.n--;
	return 1;
}

int64_t kvstore_scan(struct kvstore *kv, const char *start, size_t start_len, uint64_t n,
		     kvstore_visit_fn visit, void *ctx, char **err)
{
	(void)kv;
	if (injected_failure(err))
		return -1;
	int64_t visited = 0;
	for (size_t i = start_len ? lower_bound(start, start_len) : 0; i < store.n && n; i++, n--) {
		int more = !visit || visit(ctx, store.e[i].key, store.e[i].klen, store.e[i].val,
					   store.e[i].vlen);
		visited++; /* counted even when @visit stops here, as kvstore.c does */
		if (!more)
			break;
	}
	return visited;
}

uint64_t kvstore_dbsize(struct kvstore *kv)
{
	(void)kv;
	return store.n;
}
