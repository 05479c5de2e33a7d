package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrSchemaVersion is returned by Open and New for a database whose schema
// a newer version of spool has migrated past what this code knows: using it
// could corrupt it. Upgrade spool.
var ErrSchemaVersion = errors.New("pgstore: the database schema is newer than this version of spool knows")

// migration is one step of the schema. Steps are never edited once
// released: a change is a new step.
type migration struct {
	version int
	name    string
	up      func(ctx context.Context, tx pgx.Tx, s *Store) error
}

var migrations = []migration{
	{1, "sessions and entries", execAll(
		// COLLATE "C" makes ids compare byte by byte, as Go strings do, so
		// listing order and cursors agree with storekit.Less whatever the
		// database's collation.
		`CREATE TABLE {s}.sessions (
			agent         text COLLATE "C" NOT NULL,
			owner         text COLLATE "C" NOT NULL,
			id            text COLLATE "C" NOT NULL,
			started_ns    bigint NOT NULL,
			last_ns       bigint NOT NULL,
			title         text NOT NULL,
			message_count integer NOT NULL,
			pending       integer NOT NULL,
			entries       integer NOT NULL,
			head          text COLLATE "C" NOT NULL,
			PRIMARY KEY (agent, owner, id)
		)`,
		`CREATE INDEX sessions_activity ON {s}.sessions (agent, owner, last_ns DESC, id DESC)`,
		// entry holds the entry exactly as transcript.AppendJSON wrote it.
		// bytea, not text: the data of an entry may hold bytes that are
		// not UTF-8 (json.Compact keeps them), which text refuses.
		`CREATE TABLE {s}.entries (
			agent    text COLLATE "C" NOT NULL,
			owner    text COLLATE "C" NOT NULL,
			session  text COLLATE "C" NOT NULL,
			seq      integer NOT NULL,
			entry_id text COLLATE "C" NOT NULL,
			ts_ns    bigint NOT NULL,
			entry    bytea NOT NULL,
			search   text,
			PRIMARY KEY (agent, owner, session, seq)
		)`,
	)},
	{2, "trigram search index when pg_trgm is available", searchIndexUp},
	// Searches for common words walk a namespace's searchable entries newest
	// first and stop at the limit, instead of sorting every match.
	{3, "searchable entries newest first", execAll(
		`CREATE INDEX entries_recent ON {s}.entries (agent, owner, ts_ns DESC, entry_id DESC) WHERE search IS NOT NULL`,
	)},
	{4, "sessions count their compactions", compactionsUp},
	// On tables never analyzed (a new deployment, an import into a new
	// store) the planner costs a lookup by key through either index that
	// begins (agent, owner) at one row, and took sessions_activity: every
	// append and read of a session then scanned all of its namespace's
	// sessions. The listing index is partial on a condition every row
	// meets (a session has at least one entry) and only the listing
	// statements state (listed), so a lookup by key can take only the
	// primary key, whatever the statistics (TestPlansWithoutStatistics).
	{5, "sessions listed through an index lookups by key cannot take", execAll(
		`CREATE INDEX sessions_listing ON {s}.sessions (agent, owner, last_ns DESC, id DESC) WHERE `+listed,
		`DROP INDEX {s}.sessions_activity`,
	)},
}

// listed is the predicate of the index sessions_listing: true of every
// session row. The statements that list sessions by activity state it so
// that the planner may take that index; no other statement does.
const listed = `entries > 0`

// latestVersion is the newest schema this code knows.
var latestVersion = migrations[len(migrations)-1].version

func execAll(stmts ...string) func(context.Context, pgx.Tx, *Store) error {
	return func(ctx context.Context, tx pgx.Tx, s *Store) error {
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, s.sql(q)); err != nil {
				return err
			}
		}
		return nil
	}
}

// lockKey maps a name to a bigint advisory lock key. The prefix keeps
// spool's keys apart from other programs' in the one key space a database
// has.
func lockKey(parts ...string) int64 {
	h := sha256.New()
	h.Write([]byte("spool pgstore"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]))
}

// migrate brings the schema up to the newest version, one transaction per
// step, each under an advisory lock on the schema's name, so replicas that
// start together apply every step exactly once.
func (s *Store) migrate(ctx context.Context) error {
	v, err := s.schemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: schema %q: reading its version: %w", s.schema, err)
	}
	if v > latestVersion {
		return s.tooNew(v)
	}
	for _, m := range migrations[v:] {
		if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.apply(ctx, tx, m) }); err != nil {
			if errors.Is(err, ErrSchemaVersion) {
				return err
			}
			return fmt.Errorf("pgstore: schema %q: migration %d (%s): %w", s.schema, m.version, m.name, err)
		}
	}
	return nil
}

func (s *Store) tooNew(v int) error {
	return fmt.Errorf("%w: schema %q is at version %d, this code knows up to %d", ErrSchemaVersion, s.schema, v, latestVersion)
}

// schemaVersion reads the version without taking the lock: 0 for a schema
// or table that does not exist yet.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var v *int
	err := s.pool.QueryRow(ctx, s.sql(`SELECT max(version) FROM {s}.schema_migrations`)).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined table, schema
		return 0, nil
	}
	if err != nil || v == nil {
		return 0, err
	}
	return *v, nil
}

func (s *Store) apply(ctx context.Context, tx pgx.Tx, m migration) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("migrate", s.schema)); err != nil {
		return err
	}
	// CREATE SCHEMA IF NOT EXISTS checks the right to create one before it
	// looks, so a role that may only use an existing schema would fail.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := tx.Exec(ctx, s.sql(`CREATE SCHEMA {s}`)); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {s}.schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`)); err != nil {
		return err
	}
	var v *int
	if err := tx.QueryRow(ctx, s.sql(`SELECT max(version) FROM {s}.schema_migrations`)).Scan(&v); err != nil {
		return err
	}
	cur := 0
	if v != nil {
		cur = *v
	}
	switch {
	case cur > latestVersion:
		return s.tooNew(cur)
	case cur >= m.version:
		return nil // another replica applied it while this one waited
	case cur != m.version-1:
		return fmt.Errorf("schema at version %d, cannot apply %d", cur, m.version)
	}
	if err := m.up(ctx, tx, s); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, s.sql(`INSERT INTO {s}.schema_migrations (version, name) VALUES ($1, $2)`), m.version, m.name)
	return err
}

// searchIndexUp indexes the search text with pg_trgm, which serves the
// substring matches of LIKE '%word%' (the same match as storekit.MatchText).
// Without the extension, and without the right to create it, search works
// the same, scanning the entries of the namespace instead.
func searchIndexUp(ctx context.Context, tx pgx.Tx, s *Store) error {
	// One database has one pg_trgm: stores in other schemas may be
	// creating it right now.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("extension pg_trgm")); err != nil {
		return err
	}
	nsp, err := trigramSchema(ctx, tx)
	if err != nil {
		return err
	}
	// Create it in public when possible rather than in the store's schema:
	// dropping a schema with CASCADE drops the extensions in it, and with
	// them the search indexes of every other store in the database.
	for _, where := range []string{"public", s.schema} {
		if nsp != "" {
			break
		}
		if err := trySavepoint(ctx, tx, `CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA `+pgx.Identifier{where}.Sanitize()); err != nil {
			continue
		}
		if nsp, err = trigramSchema(ctx, tx); err != nil {
			return err
		}
	}
	if nsp == "" {
		return nil
	}
	_, err = tx.Exec(ctx, s.sql(`CREATE INDEX entries_search ON {s}.entries USING gin (search `+
		pgx.Identifier{nsp, "gin_trgm_ops"}.Sanitize()+`) WHERE search IS NOT NULL`))
	return err
}

// trigramSchema returns the schema pg_trgm is installed in, or "".
func trigramSchema(ctx context.Context, tx pgx.Tx) (string, error) {
	var nsp string
	err := tx.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`).Scan(&nsp)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return nsp, err
}

// trySavepoint runs q so that its failure leaves tx usable.
func trySavepoint(ctx context.Context, tx pgx.Tx, q string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, q); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}
