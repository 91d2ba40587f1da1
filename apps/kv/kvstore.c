/*
 * apps/kv/kvstore.c - the RocksDB backend of jiffy-kv and kv-pthread (see kvstore.h).
 *
 * Owns: RocksDB options, the scratch directory, preloading, the exact key count.
 *
 * Layout choice: after preloading, the memtable is flushed and the whole key range compacted, so
 * the benchmark reads hit SST files (through a block cache big enough to hold them, warmed by the
 * counting pass at open), as in the papers' RocksDB setups; the service time of a GET or SCAN then
 * does not drift as PUTs fill a memtable, and a reopened user database behaves like a fresh one.
 * No compression (the values are small and CPU is what we measure); a bloom filter for GETs of
 * absent keys.
 *
 * DBSIZE is exact: the keys are counted once at open (one pass, which also warms the cache) and
 * put/del keep the count. Both look the key up first, under a mutex, so the count cannot drift
 * when two writers race on one key; reads take no lock.
 */
#define _GNU_SOURCE
#include "kvstore.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "../common/proto.h"

struct kvstore {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *table;
	rocksdb_cache_t *cache;
	rocksdb_filterpolicy_t *filter; /* owned by @table once set */
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;
	struct kvstore_hooks hooks;
	pthread_mutex_t write_lock; /* put/del: lookup + write + count, atomically */
	_Atomic uint64_t count;
	int scratch; /* we created the directory: remove it at close */
	char path[4096];
};

void kvstore_opts_default(struct kvstore_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->keys = 100000;
	o->value_size = 64;
}

size_t kvstore_key(char *buf, uint32_t i)
{
	return (size_t)snprintf(buf, JP_KEY_LEN + 1, JP_KEY_FMT, i);
}

const char *kvstore_path(const struct kvstore *kv)
{
	return kv->path;
}

static char *errfmt(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* Move a RocksDB error string into *err (our own malloc'd copy). Return -1. */
static int take_err(char **err, char *rerr, const char *what)
{
	if (err)
		*err = errfmt("%s: %s", what, rerr ? rerr : "unknown RocksDB error");
	rocksdb_free(rerr);
	return -1;
}

static inline void enter(const struct kvstore *kv)
{
	if (kv->hooks.enter)
		kv->hooks.enter();
}

static inline void leave(const struct kvstore *kv)
{
	if (kv->hooks.leave)
		kv->hooks.leave();
}

/* enter()/leave() when @kv is not NULL (a guarded scan step), nothing otherwise. */
static inline void enter_if(const struct kvstore *kv)
{
	if (kv)
		enter(kv);
}

static inline void leave_if(const struct kvstore *kv)
{
	if (kv)
		leave(kv);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

static void remove_tree(const char *path)
{
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "kvstore: could not remove %s: %s\n", path, strerror(errno));
}

static int make_scratch(struct kvstore *kv, char **err)
{
	struct stat st;
	const char *base = "/dev/shm";
	if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) != 0) {
		base = getenv("TMPDIR");
		if (!base || !*base)
			base = "/tmp";
	}
	snprintf(kv->path, sizeof(kv->path), "%s/jiffy-kv-%d-XXXXXX", base, (int)getpid());
	if (!mkdtemp(kv->path)) {
		*err = errfmt("cannot create a scratch directory %s: %s", kv->path, strerror(errno));
		return -1;
	}
	kv->scratch = 1;
	return 0;
}

/* Preload key%012u for i in [0, keys); with @check_existing, keys already there are kept. */
static int preload(struct kvstore *kv, const struct kvstore_opts *o, int check_existing,
		   uint64_t *written, char **err)
{
	char key[JP_KEY_LEN + 1];
	char *val = malloc(o->value_size ? o->value_size : 1);
	rocksdb_writebatch_t *b = rocksdb_writebatch_create();
	rocksdb_writeoptions_t *w = rocksdb_writeoptions_create();
	char *rerr = NULL;
	int rc = 0;

	if (!val || !b || !w) {
		*err = errfmt("out of memory while preloading");
		rc = -1;
		goto out;
	}
	rocksdb_writeoptions_disable_WAL(w, 1); /* flushed right after */
	*written = 0;
	for (uint32_t i = 0; i < o->keys; i++) {
		size_t kl = kvstore_key(key, i);
		if (check_existing) {
			size_t vl;
			char *v = rocksdb_get(kv->db, kv->ropts, key, kl, &vl, &rerr);
			if (rerr) {
				rc = take_err(err, rerr, "preload: get");
				goto out;
			}
			if (v) {
				rocksdb_free(v);
				continue;
			}
		}
		/* A value that names its key, padded: easy to check by eye, not compressible to 0. */
		for (uint32_t j = 0; j < o->value_size; j++)
			val[j] = (char)('a' + (i + j) % 26);
		memcpy(val, key, o->value_size < kl ? o->value_size : kl);
		rocksdb_writebatch_put(b, key, kl, val, o->value_size);
		(*written)++;
		if (rocksdb_writebatch_count(b) >= 10000 || i + 1 == o->keys) {
			rocksdb_write(kv->db, w, b, &rerr);
			if (rerr) {
				rc = take_err(err, rerr, "preload: write");
				goto out;
			}
			rocksdb_writebatch_clear(b);
		}
	}
	if (rocksdb_writebatch_count(b) > 0) {
		rocksdb_write(kv->db, w, b, &rerr);
		if (rerr)
			rc = take_err(err, rerr, "preload: write");
	}
out:
	if (w)
		rocksdb_writeoptions_destroy(w);
	if (b)
		rocksdb_writebatch_destroy(b);
	free(val);
	return rc;
}

static int count_keys(struct kvstore *kv, uint64_t *n, char **err)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(kv->db, kv->ropts);
	char *rerr = NULL;
	uint64_t c = 0;
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t vl;
		(void)rocksdb_iter_value(it, &vl);
		c++;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return take_err(err, rerr, "counting keys");
	*n = c;
	return 0;
}

struct kvstore *kvstore_open(const struct kvstore_opts *o, char **err)
{
	struct kvstore *kv = calloc(1, sizeof(*kv));
	char *rerr = NULL;
	int existed = 0;

	*err = NULL;
	if (!kv) {
		*err = errfmt("out of memory");
		return NULL;
	}
	kv->hooks = o->hooks;
	pthread_mutex_init(&kv->write_lock, NULL);
	if (o->path) {
		struct stat st;
		if (strlen(o->path) >= sizeof(kv->path)) {
			*err = errfmt("database path too long");
			free(kv);
			return NULL;
		}
		snprintf(kv->path, sizeof(kv->path), "%s", o->path);
		existed = stat(o->path, &st) == 0;
	} else if (make_scratch(kv, err) != 0) {
		free(kv);
		return NULL;
	}

	kv->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(kv->opts, 1);
	rocksdb_options_set_compression(kv->opts, rocksdb_no_compression);
	rocksdb_options_set_info_log_level(kv->opts, 3 /* WARN: no LOG noise per operation */);
	kv->table = rocksdb_block_based_options_create();
	/* Big enough for the whole benchmark data set: reads come from the cache after warm-up. */
	size_t want = (size_t)o->keys * ((size_t)o->value_size + 64) * 2;
	kv->cache = rocksdb_cache_create_lru(want > ((size_t)256 << 20) ? want : (size_t)256 << 20);
	rocksdb_block_based_options_set_block_cache(kv->table, kv->cache);
	kv->filter = rocksdb_filterpolicy_create_bloom(10);
	rocksdb_block_based_options_set_filter_policy(kv->table, kv->filter);
	rocksdb_options_set_block_based_table_factory(kv->opts, kv->table);

	kv->ropts = rocksdb_readoptions_create();
	rocksdb_readoptions_set_fill_cache(kv->ropts, 1);
	kv->wopts = rocksdb_writeoptions_create();
	/* A scratch database dies with the process: no WAL. A user's keeps one (not synced):
	 * what a client stored survives a clean stop and a crash of the server process. */
	rocksdb_writeoptions_disable_WAL(kv->wopts, kv->scratch);

	kv->db = rocksdb_open(kv->opts, kv->path, &rerr);
	if (rerr) {
		take_err(err, rerr, kv->path);
		kv->db = NULL;
		kvstore_close(kv);
		return NULL;
	}

	uint64_t written = 0;
	if (o->keys && preload(kv, o, existed && !kv->scratch, &written, err) != 0) {
		kvstore_close(kv);
		return NULL;
	}
	if (written) {
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(kv->db, fo, &rerr);
		rocksdb_flushoptions_destroy(fo);
		if (rerr) {
			take_err(err, rerr, "flush");
			kvstore_close(kv);
			return NULL;
		}
		rocksdb_compact_range(kv->db, NULL, 0, NULL, 0);
	}
	uint64_t n = 0;
	if (count_keys(kv, &n, err) != 0) {
		kvstore_close(kv);
		return NULL;
	}
	atomic_store(&kv->count, n);
	if (!o->quiet)
		fprintf(stderr, "kvstore: %s: %llu keys (%llu preloaded now), %u-byte values\n",
			kv->path, (unsigned long long)n, (unsigned long long)written,
			o->value_size);
	return kv;
}

void kvstore_close(struct kvstore *kv)
{
	if (!kv)
		return;
	if (kv->db)
		rocksdb_close(kv->db);
	if (kv->wopts)
		rocksdb_writeoptions_destroy(kv->wopts);
	if (kv->ropts)
		rocksdb_readoptions_destroy(kv->ropts);
	if (kv->opts)
		rocksdb_options_destroy(kv->opts);
	if (kv->table)
		rocksdb_block_based_options_destroy(kv->table); /* frees the filter policy too */
	if (kv->cache)
		rocksdb_cache_destroy(kv->cache);
	if (kv->scratch)
		remove_tree(kv->path);
	pthread_mutex_destroy(&kv->write_lock);
	free(kv);
}

int kvstore_get(struct kvstore *kv, const char *key, size_t klen, kvstore_value_fn fn, void *ctx,
		char **err)
{
	char *rerr = NULL;
	int found;
	enter(kv);
	rocksdb_pinnableslice_t *p = rocksdb_get_pinned(kv->db, kv->ropts, key, klen, &rerr);
	if (rerr) {
		leave(kv);
		return take_err(err, rerr, "get");
	}
	found = p != NULL;
	if (p) {
		size_t vl;
		const char *v = rocksdb_pinnableslice_value(p, &vl);
		if (fn)
			fn(ctx, v, vl);
		rocksdb_pinnableslice_destroy(p);
	}
	leave(kv);
	return found;
}

/* With write_lock held: does @key exist? 1, 0 or -1. */
static int exists_locked(struct kvstore *kv, const char *key, size_t klen, char **err)
{
	char *rerr = NULL;
	rocksdb_pinnableslice_t *p = rocksdb_get_pinned(kv->db, kv->ropts, key, klen, &rerr);
	if (rerr)
		return take_err(err, rerr, "get");
	if (!p)
		return 0;
	rocksdb_pinnableslice_destroy(p);
	return 1;
}

int kvstore_put(struct kvstore *kv, const char *key, size_t klen, const char *val, size_t vlen,
		char **err)
{
	char *rerr = NULL;
	int rc;
	enter(kv);
	pthread_mutex_lock(&kv->write_lock);
	int had = exists_locked(kv, key, klen, err);
	if (had < 0) {
		rc = -1;
		goto out;
	}
	rocksdb_put(kv->db, kv->wopts, key, klen, val, vlen, &rerr);
	if (rerr) {
		rc = take_err(err, rerr, "put");
		goto out;
	}
	if (!had)
		atomic_fetch_add(&kv->count, 1);
	rc = 0;
out:
	pthread_mutex_unlock(&kv->write_lock);
	leave(kv);
	return rc;
}

int kvstore_del(struct kvstore *kv, const char *key, size_t klen, char **err)
{
	char *rerr = NULL;
	int rc;
	enter(kv);
	pthread_mutex_lock(&kv->write_lock);
	rc = exists_locked(kv, key, klen, err);
	if (rc == 1) {
		rocksdb_delete(kv->db, kv->wopts, key, klen, &rerr);
		if (rerr)
			rc = take_err(err, rerr, "del");
		else
			atomic_fetch_sub(&kv->count, 1);
	}
	pthread_mutex_unlock(&kv->write_lock);
	leave(kv);
	return rc;
}

int64_t kvstore_scan(struct kvstore *kv, const char *start, size_t start_len, uint64_t n,
		     kvstore_visit_fn visit, void *ctx, char **err)
{
	char *rerr = NULL;
	int64_t visited = 0;
	volatile char sink = 0;

	/* Guarded: every step is its own region (check between them); unguarded: only the
	 * iterator's creation and destruction are (kvstore.h). */
	const struct kvstore *g = kv->hooks.steps_unguarded ? NULL : kv;

	enter(kv);
	rocksdb_iterator_t *it = rocksdb_create_iterator(kv->db, kv->ropts);
	leave(kv);
	enter_if(g);
	if (start_len)
		rocksdb_iter_seek(it, start, start_len);
	else
		rocksdb_iter_seek_to_first(it);
	leave_if(g);
	for (uint64_t i = 0; i < n; i++) {
		int more = 1;
		enter_if(g);
		if (!rocksdb_iter_valid(it)) {
			leave_if(g);
			break;
		}
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);
		if (visit)
			more = visit(ctx, k, kl, v, vl);
		else if (vl)
			sink ^= v[vl - 1]; /* touch the value as a reader would */
		visited++;
		if (more)
			rocksdb_iter_next(it);
		leave_if(g);
		if (g && g->hooks.check)
			g->hooks.check();
		if (!more)
			break;
	}
	enter(kv);
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	leave(kv);
	(void)sink;
	if (rerr)
		return take_err(err, rerr, "scan");
	return visited;
}

uint64_t kvstore_dbsize(struct kvstore *kv)
{
	return atomic_load(&kv->count);
}
