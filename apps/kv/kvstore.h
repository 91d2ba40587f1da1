/*
 * apps/kv/kvstore.h - the RocksDB backend shared by jiffy-kv (apps/kv/jiffy_kv.c) and its
 * pthread peer (apps/peers/kv_pthread.c), through RocksDB's C API.
 *
 * Owns: opening/creating the database (a scratch directory under /dev/shm removed at close, or a
 * user-given path that is never deleted), preloading the benchmark keys (key%012u, docs/
 * protocol.md), and the operations the front ends need: get, put, del, scan, dbsize.
 *
 * Errors from RocksDB come back as malloc'd strings in *err (free with free()); nothing here
 * aborts. Every call is thread-safe (RocksDB is) and may be made from any kernel thread.
 *
 * Jiffy: uthreads may be preempted anywhere outside libc, and a preempted uthread may resume on
 * another kernel thread. RocksDB keeps per-thread state (its thread-local SuperVersion cache) and
 * takes pthread mutexes, so a RocksDB call must never be split by a preemption. The hooks below
 * let a Jiffy server make every RocksDB call a non-preemptible region (enter/leave =
 * jf_preempt_disable/jf_preempt_enable) while a long SCAN still offers a preemption point
 * between keys (check = jf_safepoint; a deferred timer preemption is also taken at each leave).
 * The pthread peer leaves them NULL.
 *
 * steps_unguarded (issue 14 §4, docs/libraries.md): a SCAN's iterator steps (seek, next, key,
 * value) run outside enter/leave and without check, so a preemption may land inside RocksDB's own
 * code: by its compiler probes (RocksDB built with Jiffy's pass, jiffy-kv-probes) or by a signal.
 * That is safe because an iterator owns its SuperVersion reference (no thread-local is held across
 * a step) and the pthread shim defers a preemption while RocksDB holds a pthread lock. Creating
 * and destroying the iterator, GET, PUT and DEL stay regions: GET holds the thread-local
 * SuperVersion slot for its whole body.
 */
#ifndef JIFFY_APPS_KVSTORE_H
#define JIFFY_APPS_KVSTORE_H

#include <stddef.h>
#include <stdint.h>

struct kvstore;

struct kvstore_hooks {
	void (*enter)(void); /* before each RocksDB call */
	void (*leave)(void); /* after it */
	void (*check)(void); /* between keys of a scan, outside enter/leave */
	int steps_unguarded; /* a scan's iterator steps outside enter/leave, no check (see above) */
};

struct kvstore_opts {
	const char *path;   /* NULL: a fresh /dev/shm/jiffy-kv-<pid>-<n>, removed at close */
	uint32_t keys;      /* preload key%012u for i in [0, keys) */
	uint32_t value_size; /* bytes per preloaded value */
	int quiet;          /* no progress lines on stderr */
	struct kvstore_hooks hooks;
};

/* Defaults: path NULL, 100000 keys, 64-byte values. */
void kvstore_opts_default(struct kvstore_opts *o);

/* Open (creating if needed), preload missing keys, flush and compact. NULL on error (*err set). */
struct kvstore *kvstore_open(const struct kvstore_opts *o, char **err);
/* Close RocksDB (data of a user path persists); remove the scratch directory if we made it. */
void kvstore_close(struct kvstore *kv);
const char *kvstore_path(const struct kvstore *kv);

/* Called with the value while RocksDB pins it: copy what you need, keep no pointer. */
typedef void (*kvstore_value_fn)(void *ctx, const char *val, size_t vlen);
/* Called for every key a scan visits; return 0 to stop early. */
typedef int (*kvstore_visit_fn)(void *ctx, const char *key, size_t klen, const char *val,
				size_t vlen);

/* Return 1 found (fn called if not NULL), 0 not found, -1 error. */
int kvstore_get(struct kvstore *kv, const char *key, size_t klen, kvstore_value_fn fn, void *ctx,
		char **err);
/* Return 0 or -1. */
int kvstore_put(struct kvstore *kv, const char *key, size_t klen, const char *val, size_t vlen,
		char **err);
/* Return 1 deleted, 0 was absent, -1 error. */
int kvstore_del(struct kvstore *kv, const char *key, size_t klen, char **err);
/*
 * Visit up to @n keys in order, starting at the first key >= @start (@start_len 0: the first
 * key). @visit may be NULL (the scan then only reads each key and value). The check hook runs
 * after every key. Return the number of keys visited, or -1 on error.
 */
int64_t kvstore_scan(struct kvstore *kv, const char *start, size_t start_len, uint64_t n,
		     kvstore_visit_fn visit, void *ctx, char **err);
/* Exact number of keys: counted once at open, then kept by put and del. */
uint64_t kvstore_dbsize(struct kvstore *kv);

/* Format key i of the benchmark key space into @buf (>= JP_KEY_LEN + 1 bytes); return length. */
size_t kvstore_key(char *buf, uint32_t i);

#endif /* JIFFY_APPS_KVSTORE_H */
