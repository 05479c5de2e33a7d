package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// applicationID marks a database file as spool's (PRAGMA application_id;
// "spol"), so Open refuses a file that belongs to another program rather
// than adding tables to it.
const applicationID = 0x73706f6c

// migrations are the schema, one step per version: the database's
// PRAGMA user_version is the number of steps applied. Steps are only ever
// added at the end; an applied step is never edited.
var migrations = [][]string{
	// 1: sessions, entries, full-text index.
	{
		`CREATE TABLE settings (
			name  TEXT PRIMARY KEY,
			value TEXT NOT NULL
		) WITHOUT ROWID`,
		// One row per session: the SessionInfo fields, kept by Append, so
		// that listing never reads entries. Times are unix nanoseconds.
		// title is plain text, or sealed bytes under a protector, or NULL
		// while the session has none.
		`CREATE TABLE sessions (
			sid           INTEGER PRIMARY KEY,
			agent         TEXT NOT NULL,
			owner         TEXT NOT NULL,
			id            TEXT NOT NULL,
			started       INTEGER NOT NULL,
			last_activity INTEGER NOT NULL,
			title         BLOB,
			messages      INTEGER NOT NULL,
			pending       INTEGER NOT NULL,
			entries       INTEGER NOT NULL,
			head          TEXT NOT NULL,
			UNIQUE (agent, owner, id)
		)`,
		// Listing order per namespace: newest activity first, then id.
		`CREATE INDEX sessions_by_activity ON sessions (agent, owner, last_activity DESC, id DESC)`,
		// One row per entry, at position seq of its session. eid orders
		// entries by time (see rowid.go). body is the entry's wire JSON, or
		// sealed bytes under a protector. indexed says whether the entry
		// has a row in entries_fts (from version 3: or in fts_pending).
		`CREATE TABLE entries (
			eid     INTEGER PRIMARY KEY,
			sid     INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
			seq     INTEGER NOT NULL,
			ts      INTEGER NOT NULL,
			indexed INTEGER NOT NULL,
			body    BLOB NOT NULL,
			UNIQUE (sid, seq)
		)`,
		// Contentless: the text lives only in entries.body; the trigram
		// tokenizer makes MATCH a case-insensitive substring test, which is
		// what storekit.MatchText does.
		`CREATE VIRTUAL TABLE entries_fts USING fts5 (
			text, content='', contentless_delete=1, tokenize='trigram'
		)`,
		// Whatever deletes entries (Delete, Prune, expiry, the cascade from
		// sessions) takes their index rows with them.
		`CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries WHEN old.indexed BEGIN
			DELETE FROM entries_fts WHERE rowid = old.eid;
		END`,
		fmt.Sprintf(`PRAGMA application_id = %d`, applicationID),
	},
	// 2: sessions.compactions, SessionInfo.Compactions, counted from the
	// entries a session has: in SQL where they are plain JSON; a sealed
	// database's are counted at the next Open with its protector
	// (countCompactions), which the settings row 'compactions' asks for.
	{
		`ALTER TABLE sessions ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0`,
		`UPDATE sessions SET compactions = (SELECT count(*) FROM entries e
			WHERE e.sid = sessions.sid AND json_valid(CAST(e.body AS TEXT))
				AND json_extract(CAST(e.body AS TEXT), '$.type') = 'session.compaction')`,
		`INSERT INTO settings (name, value)
			SELECT 'compactions', 'uncounted' FROM settings WHERE name = 'sealed' AND value = '1'`,
	},
	// 3: fts_pending, the searchable entries not yet in entries_fts. An
	// append queues its entries' row ids here rather than indexing them,
	// which cost two thirds of the pages a turn's commit wrote; a later
	// append indexes the queue in one go (see indexPending), and Search
	// reads the queued entries besides the index's matches. indexed now
	// says whether the entry is searchable: in entries_fts or queued.
	{
		`CREATE TABLE fts_pending (eid INTEGER PRIMARY KEY)`,
		`DROP TRIGGER entries_fts_delete`,
		`CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries WHEN old.indexed BEGIN
			DELETE FROM entries_fts WHERE rowid = old.eid;
			DELETE FROM fts_pending WHERE eid = old.eid;
		END`,
	},
	// 4: the search index moves to a database file of its own (index.go),
	// kept by a background indexer, so that no append waits for it. What
	// stays here is fts_log: one row for each entry that may have text to
	// search (indexed, from now on: a user or assistant message) as it is
	// inserted, and one (del) as it is deleted, numbered in the order of
	// their transactions' commits. The index records the position of the
	// log it has applied, in its own transaction, so that it neither loses
	// nor repeats a change; appends trim the log behind it. The old index
	// is dropped: the new one is built from the entries.
	{
		`DROP TRIGGER entries_fts_delete`,
		`DROP TABLE fts_pending`,
		`DROP TABLE entries_fts`,
		`CREATE TABLE fts_log (
			seq INTEGER PRIMARY KEY,
			eid INTEGER NOT NULL,
			del INTEGER NOT NULL
		)`,
		`CREATE TRIGGER fts_log_insert AFTER INSERT ON entries WHEN new.indexed BEGIN
			INSERT INTO fts_log (eid, del) VALUES (new.eid, 0);
		END`,
		`CREATE TRIGGER fts_log_delete AFTER DELETE ON entries WHEN old.indexed BEGIN
			INSERT INTO fts_log (eid, del) VALUES (old.eid, 1);
		END`,
	},
}

// ErrSchemaTooNew: the database was written by a newer version of this
// package, whose schema this one does not know.
var ErrSchemaTooNew = errors.New("sqlitestore: database schema is newer than this program knows")

// ErrNotSpool: the file is an SQLite database of another program.
var ErrNotSpool = errors.New("sqlitestore: not a spool database")

// ErrProtectorMismatch: the database was written with a protector and
// opened without one, or the other way round.
var ErrProtectorMismatch = errors.New("sqlitestore: protector setting differs from the database's")

// migrate brings the database at path up to SchemaVersion, one step per
// transaction, so that a crash or a concurrent Open leaves it at some
// whole version; BEGIN IMMEDIATE makes a second process wait for the first.
func migrate(ctx context.Context, db writeDB, path string) error {
	for {
		done, err := migrateStep(ctx, db, path)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db writeDB, path string) (done bool, err error) {
	tx, err := db.begin(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	defer tx.Rollback()
	var version, appID int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return false, fmt.Errorf("sqlitestore: %s: reading schema version: %w", path, err)
	}
	if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return false, fmt.Errorf("sqlitestore: %s: reading application id: %w", path, err)
	}
	switch {
	case appID != 0 && appID != applicationID, appID == 0 && version != 0:
		return false, fmt.Errorf("%w: %s (application id %#x, schema version %d)", ErrNotSpool, path, appID, version)
	case version > len(migrations):
		return false, fmt.Errorf("%w: %s has schema version %d, this program knows up to %d; use a newer spool", ErrSchemaTooNew, path, version, len(migrations))
	case version == len(migrations):
		return true, nil
	}
	for _, stmt := range migrations[version] {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, fmt.Errorf("sqlitestore: %s: migrating to schema version %d: %w", path, version+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version+1)); err != nil {
		return false, fmt.Errorf("sqlitestore: %s: migrating to schema version %d: %w", path, version+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlitestore: %s: migrating to schema version %d: %w", path, version+1, err)
	}
	return false, nil
}

// checkSealed records on first use whether the database holds sealed
// entries, and refuses to mix: sealed entries do not parse as plain ones,
// and plain ones must not be read as if a protector had checked them.
func checkSealed(ctx context.Context, db writeDB, path string, sealed bool) error {
	want := "0"
	if sealed {
		want = "1"
	}
	tx, err := db.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	defer tx.Rollback()
	var got string
	err = tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'sealed'`).Scan(&got)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('sealed', ?)`, want); err != nil {
			return fmt.Errorf("sqlitestore: %s: %w", path, err)
		}
		return tx.Commit()
	case err != nil:
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	case got == want:
		return nil
	case sealed:
		return fmt.Errorf("%w: %s was written without a protector", ErrProtectorMismatch, path)
	default:
		return fmt.Errorf("%w: %s was written with a protector; open it with the same one", ErrProtectorMismatch, path)
	}
}
