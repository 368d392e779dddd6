/* cache_schema.c: the schema of the cache's index: its migrations from each version to the next, and the statements the cache prepares once. */
#include <stdio.h>

#include "cache/cache_impl.h"

/* Schema migrations: entry i takes user_version i to i + 1. */
static const char *const cache_migrations[CACHE_SCHEMA_VERSION] = {
	"CREATE TABLE meta ("
	"  name TEXT PRIMARY KEY NOT NULL,"
	"  value TEXT NOT NULL);"
	"CREATE TABLE neff ("
	"  key TEXT PRIMARY KEY NOT NULL,"
	"  kernel TEXT NOT NULL DEFAULT '',"
	"  format TEXT NOT NULL DEFAULT '',"
	"  target TEXT NOT NULL DEFAULT '',"
	"  backend TEXT NOT NULL,"
	"  compiler_version TEXT NOT NULL,"
	"  options TEXT NOT NULL DEFAULT '',"
	"  size INTEGER NOT NULL,"
	"  digest TEXT NOT NULL,"
	"  inline INTEGER NOT NULL,"
	"  created REAL NOT NULL,"
	"  last_used REAL NOT NULL,"
	"  hits INTEGER NOT NULL DEFAULT 0,"
	"  compile_ms REAL NOT NULL DEFAULT 0,"
	"  pinned INTEGER NOT NULL DEFAULT 0,"
	"  status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),"
	"  log TEXT NOT NULL DEFAULT '',"
	"  data BLOB);"
	"CREATE INDEX neff_lru ON neff (last_used);"
	"CREATE INDEX neff_digest ON neff (digest);"
	"CREATE TABLE spec ("
	"  spec_key TEXT PRIMARY KEY NOT NULL,"
	"  neff_key TEXT NOT NULL,"
	"  kernel TEXT NOT NULL DEFAULT '',"
	"  signature TEXT NOT NULL DEFAULT '',"
	"  created REAL NOT NULL,"
	"  last_used REAL NOT NULL);"
	"INSERT INTO meta VALUES ('entries', '0'), ('bytes', '0'),"
	"  ('recoveries', '0');",
	/*
	 * 2: NEFF keys are derived from the IR's digest, and specializations
	 * (keys a client asserted) are gone: every row of version 1 is
	 * unreachable. Their blob files are removed by cache_migrate.
	 */
	"DROP TABLE spec;"
	"DELETE FROM neff;"
	"UPDATE meta SET value = '0' WHERE name IN ('entries', 'bytes');",
	/*
	 * 3: who pinned an entry (a uid; -1: nobody's quota), and whose it
	 * is (the uid whose request stored it; -1: unknown, stored before).
	 */
	"ALTER TABLE neff ADD COLUMN pinned_by INTEGER NOT NULL DEFAULT -1;"
	"CREATE INDEX neff_pinned_by ON neff (pinned_by) WHERE pinned = 1;"
	"ALTER TABLE neff ADD COLUMN owner INTEGER NOT NULL DEFAULT -1;",
};

const char *const cache_schema_sql[CST_COUNT] = {
	[CST_GET] = "SELECT kernel, format, target, backend, compiler_version,"
	    " options, size, digest, inline, created, last_used, hits,"
	    " compile_ms, pinned, status, log, data, owner, pinned_by FROM neff"
	    " WHERE key = ?1",
	[CST_TOUCH] = "UPDATE neff SET hits = hits + 1, last_used = ?2"
	    " WHERE key = ?1",
	[CST_TOUCH_N] = "UPDATE neff SET hits = hits + ?3,"
	    " last_used = max(last_used, ?2) WHERE key = ?1",
	[CST_PUT] = "INSERT OR REPLACE INTO neff (key, kernel, format, target,"
	    " backend, compiler_version, options, size, digest, inline,"
	    " created, last_used, hits, compile_ms, pinned, status, log, data,"
	    " pinned_by, owner)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, 0,"
	    " ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
	[CST_DEL] = "DELETE FROM neff WHERE key = ?1",
	[CST_PIN] = "UPDATE neff SET pinned = ?2, pinned_by = ?3"
	    " WHERE key = ?1",
	[CST_PINNED_BY] = "SELECT coalesce(sum(size), 0) FROM neff"
	    " WHERE pinned = 1 AND pinned_by = ?1",
	[CST_LRU] = "SELECT key, size, digest, inline FROM neff WHERE pinned = 0"
	    " AND key <> ?1 ORDER BY last_used LIMIT 64",
	[CST_REFS] = "SELECT count(*) FROM neff WHERE digest = ?1 AND"
	    " inline = 0",
	[CST_SIZE] = "SELECT size, pinned, created, hits, pinned_by, owner"
	    " FROM neff WHERE key = ?1",
	[CST_META_PUT] = "INSERT OR REPLACE INTO meta VALUES (?1, ?2)",
};

/*
 * A version 3 made before owner joined it (development builds only: 3
 * was never released) gets the column it lacks. 0 or a cache_err.
 */
static int
cache_schema_owner_add(struct cache *c, char *err, size_t errlen)
{
	sqlite3_stmt	*st;
	int		 rc;

	if (sqlite3_prepare_v2(c->db, "SELECT owner FROM neff LIMIT 0", -1,
	    &st, NULL) == SQLITE_OK) {
		sqlite3_finalize(st);
		return (0);
	}
	if (c->readonly) {
		snprintf(err, errlen, "schema version 3 without the owner "
		    "column needs a migration (open it read-write)");
		return (CACHE_EREADONLY);
	}
	if ((rc = cache_exec(c, "ALTER TABLE neff ADD COLUMN owner INTEGER "
	    "NOT NULL DEFAULT -1")) != SQLITE_OK) {
		snprintf(err, errlen, "cannot add the owner column: %s",
		    sqlite3_errmsg(c->db));
		return (cache_sqlite_err(rc));
	}
	cache_logf(c, CACHE_LOG_INFO, "cache: '%s' gained the owner column of "
	    "schema version 3", c->dbpath);
	return (0);
}

int
cache_schema_migrate(struct cache *c, char *err, size_t errlen)
{
	sqlite3_stmt	*st;
	int		 v = 0, v0, rc;
	char		 sql[64];

	if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st,
	    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(c->db));
		return (cache_sqlite_err(sqlite3_errcode(c->db)));
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (v > CACHE_SCHEMA_VERSION) {
		snprintf(err, errlen, "schema version %d is newer than this "
		    "program's %d", v, CACHE_SCHEMA_VERSION);
		return (CACHE_EDB);
	}
	if (v < CACHE_SCHEMA_VERSION && c->readonly) {
		snprintf(err, errlen, "schema version %d needs a migration "
		    "(open it read-write)", v);
		return (CACHE_EREADONLY);
	}
	if (v == 3 && (rc = cache_schema_owner_add(c, err, errlen)) != 0)
		return (rc);
	for (v0 = v; v < CACHE_SCHEMA_VERSION; v++) {
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
		if ((rc = cache_exec(c, "BEGIN IMMEDIATE")) != SQLITE_OK ||
		    (rc = cache_exec(c, cache_migrations[v])) != SQLITE_OK ||
		    (rc = cache_exec(c, sql)) != SQLITE_OK ||
		    (rc = cache_exec(c, "COMMIT")) != SQLITE_OK) {
			snprintf(err, errlen, "cannot migrate the schema to "
			    "version %d: %s", v + 1, sqlite3_errmsg(c->db));
			cache_exec(c, "ROLLBACK");
			return (cache_sqlite_err(rc));
		}
		if (v0 > 0)
			cache_logf(c, CACHE_LOG_INFO, "cache: migrated '%s' to "
			    "schema version %d", c->dbpath, v + 1);
		if (v0 == 1 && v == 1)
			c->purge_blobs = 1;
	}
	return (0);
}
