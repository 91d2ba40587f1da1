/*
 * bench/probe-study/sqlite.c - SQLite: an in-memory database, a bulk insert and three queries.
 *
 * Owns: the "sqlite" program. ROWS rows go into an in-memory table in one transaction (one
 * prepared INSERT), an index is built, then: a GROUP BY aggregate, an ORDER BY over every row
 * (the sorter), and a self-join through the index. The checksum covers every result row.
 * SQLite is the amalgamation built with SQLITE_THREADSAFE=0: one connection used by one uthread
 * needs no mutexes, and with them the pthread-lock shim would make each sqlite3_step() holding
 * the connection's mutex a region no mechanism preempts (docs/libraries.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "study.h"

#define ROWS 200000

const char study_program[] = "sqlite";

void study_prepare(void)
{
	sqlite3_initialize();
}

static void must(int rc, sqlite3 *db, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
		fprintf(stderr, "sqlite: %s: %s\n", what, sqlite3_errmsg(db));
		abort();
	}
}

static void exec(sqlite3 *db, const char *sql)
{
	must(sqlite3_exec(db, sql, NULL, NULL, NULL), db, sql);
}

/* Runs @sql and mixes every column of every row into @h. */
static uint64_t query(sqlite3 *db, const char *sql, uint64_t h)
{
	sqlite3_stmt *st;
	must(sqlite3_prepare_v2(db, sql, -1, &st, NULL), db, sql);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int c = 0; c < sqlite3_column_count(st); c++) {
			switch (sqlite3_column_type(st, c)) {
			case SQLITE_INTEGER:
				h = study_mix(h, (uint64_t)sqlite3_column_int64(st, c));
				break;
			case SQLITE_FLOAT: {
				double d = sqlite3_column_double(st, c);
				uint64_t bits;
				memcpy(&bits, &d, sizeof(bits));
				h = study_mix(h, bits);
				break;
			}
			case SQLITE_TEXT:
				h = study_hash(h, sqlite3_column_text(st, c),
					       (size_t)sqlite3_column_bytes(st, c));
				break;
			default:
				h = study_mix(h, 0x4e554c4c); /* NULL */
			}
		}
	}
	must(rc, db, sql);
	sqlite3_finalize(st);
	return h;
}

static void insert_rows(sqlite3 *db)
{
	sqlite3_stmt *st;
	const char *sql = "INSERT INTO t(id, k, ref, grp, name, val) VALUES (?, ?, ?, ?, ?, ?)";
	must(sqlite3_prepare_v2(db, sql, -1, &st, NULL), db, sql);
	uint64_t rnd = 7;
	for (int i = 1; i <= ROWS; i++) {
		uint64_t r = study_rand(&rnd);
		char name[32];
		/* A name of 8 letters from r: sorts in no relation to the id. */
		for (int c = 0; c < 8; c++)
			name[c] = (char)('a' + (r >> (c * 5) & 15));
		name[8] = 0;
		sqlite3_bind_int64(st, 1, i);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)(r >> 20)); /* k: unique in practice */
		/* ref: the k of an earlier row about half the time, else a k nobody has. */
		sqlite3_bind_int64(st, 3, (sqlite3_int64)((r & 1) ? (r >> 20) : (r >> 21) * 2 + 1));
		sqlite3_bind_int(st, 4, (int)(r % 1000));
		sqlite3_bind_text(st, 5, name, 8, SQLITE_TRANSIENT);
		sqlite3_bind_double(st, 6, (double)(r % 100000) / 100.0);
		must(sqlite3_step(st), db, "insert");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
}

uint64_t work(void)
{
	sqlite3 *db;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		abort();
	exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, ref INTEGER, grp INTEGER, "
		 "name TEXT, val REAL)");
	exec(db, "BEGIN");
	insert_rows(db);
	exec(db, "COMMIT");
	exec(db, "CREATE INDEX t_k ON t(k)");

	uint64_t h = STUDY_HASH_SEED;
	h = query(db, "SELECT grp, count(*), sum(val), min(name), max(id) FROM t "
		      "GROUP BY grp ORDER BY grp", h);
	h = query(db, "SELECT id, name, val FROM t ORDER BY name, id", h);
	h = query(db, "SELECT count(*), total(b.val), sum(a.id - b.id) FROM t a "
		      "JOIN t b ON b.k = a.ref", h);
	sqlite3_close(db);
	return h;
}
