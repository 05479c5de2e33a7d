// Package pgstore keeps session transcripts in PostgreSQL, through pgx v5,
// so that several stateless replicas can serve the same sessions from one
// database. Importing it registers the URL schemes postgres:// and
// postgresql:// with store.Open.
//
// # Tables
//
// In the store's schema (the URL parameter schema=, or WithSchema; else
// the first schema of the search_path):
//
//   - entries, keyed by (agent, owner, session, seq): each entry exactly as
//     transcript.AppendJSON wrote it (bytea, so Read returns it byte for
//     byte), its id and timestamp, and the lower-cased text that search
//     matches. To look at one by hand: convert_from(entry, 'UTF8').
//   - sessions, keyed by (agent, owner, id): the SessionInfo fields
//     (timestamps as bigint unix nanoseconds, which round-trip exactly),
//     the head (last entry id) and the entry count. The index
//     sessions_listing (agent, owner, last_ns DESC, id DESC) serves
//     listings newest activity first: a page is an index scan from the
//     cursor that reads the page and never touches entries. It is partial
//     on a condition only listings state, so that a session looked up by
//     its key is found through the primary key even on tables never
//     analyzed.
//   - schema_migrations: the versions applied.
//
// # Guarantees
//
// Append is one statement that updates the session row only if its head is
// the entry's parent, and inserts the entry at the position the row
// counted; a first entry creates the row, and of two writers creating the
// same session exactly one succeeds. Any other append is store.ErrConflict.
// When Append returns the transaction has committed: the entry is as
// durable as the server makes a commit (with the default
// synchronous_commit=on, flushed to its write-ahead log, and to
// synchronous standbys when configured).
//
// Read returns entries exactly as appended. A row that does not parse, a
// missing position, or a chain whose parent links do not hold fails the
// call with a *store.CorruptError naming the session and position; nothing
// is skipped.
//
// Delete, Prune and the TTL sweep remove a session's row and entries in
// one transaction, after any append in flight, so nothing of a deleted
// session comes back under a new session with the same id.
//
// Lock (store.Locker) is a per-session advisory lock held for a turn:
// replicas serving the same session take turns one after another. The
// locks of every session share two connections; one that another process
// holds is waited for on a connection of its own. See Store.Lock.
//
// # TTL
//
// With WithTTL (or ttl=24h in the URL) a session idle longer than the TTL
// (store clock minus its last activity) with no approval pending is hidden
// by an SQL condition from Read, List, Stat, Search and the conditional
// append, as though deleted; appending a first entry under its id starts a
// fresh session. The rows go at the next sweep: of the namespace when a session
// is created in it, and of everything with Store.Sweep. A session idle past
// the TTL with an approval pending is kept and readable, so that the
// runtime can report store.ErrSessionExpired for it.
//
// # Migrations
//
// Open and New bring the schema to the newest version this code knows,
// each step in its own transaction under a transaction-level advisory lock
// on the schema's name: replicas starting together apply each step exactly
// once, the others wait and find it done. A schema that a newer spool has
// migrated further is refused with ErrSchemaVersion. The role needs the
// right to create tables in the schema (and the schema, if missing) on the
// first start only.
//
// # Search
//
// Search matches like storekit.MatchText: every word of the query, as a
// substring, ignoring case. Each word is a LIKE pattern parameter. A
// pg_trgm GIN index serves rare words when the extension is installed or
// can be installed (pg_trgm is trusted: a role with CREATE on the database
// may install it); for common words the index entries_recent walks the
// namespace's messages newest first and stops at the limit. Each search is
// planned for its own words. Without pg_trgm search still works, scanning
// in the database.
//
// # Connections
//
// The pool Open makes has pgx's defaults (at most the larger of 4 and the
// number of CPUs; pool_max_conns= in the URL sets it). Session locks use
// a second pool (lock_conns=, default 16): two connections hold the locks
// of any number of turns in flight, and the rest wait for locks that
// other replicas hold, so a server holds at most lock_conns +
// pool_max_conns connections, however many turns it runs. Behind
// PgBouncer, use session pooling: locks and cached statements belong to a
// connection.
//
// # Other Postgres-wire databases
//
// The store uses plain SQL: data-modifying CTEs, ON CONFLICT DO NOTHING,
// row comparisons, GREATEST and LEAST, COLLATE "C" columns, bytea, and
// advisory locks; it retries statements that a distributed database aborts
// with a serialization failure (SQLSTATE 40001). PostgreSQL (13 and later;
// tested on 15) and YugabyteDB (2.25 and later, with advisory locks switched on) have all
// of it. CockroachDB, as of this writing, does not run it unchanged: it
// refuses COLLATE "C" on a column (its default order is already bytewise,
// so the columns would simply drop it), lacks pg_advisory_xact_lock before
// its newest releases (run the first Open from one process), and answers
// pg_advisory_lock with a stub that always succeeds, so Lock would not
// exclude there. The conditional append alone still keeps every
// transcript a chain, but the runtime trusts the lock it is given: a
// replica that finds another's running turn without its end takes it for a
// dead one and closes it as cancelled, so turns sent to two replicas on
// one session cancel each other. On such a database route each session to
// one replica. Without pg_trgm, search works unindexed.
//
// An Append that fails with a connection or context error (not a
// database error) after its statement was sent may have committed, as
// with any database. When the connection failed and ctx allows, the pool
// is reset (a restart, a failover or a cut network leaves every pooled
// connection dead) and the append is sent once more on a new connection;
// that cannot store it twice (its parent is no longer the head once the
// first try commits), and a conflict that shows the entry as the head
// means it was appended. Reads are sent once more alike. When that fails
// too, or ctx ended, Append reads the session's head: when it shows the
// entry, Append returns nil; otherwise it fails with ErrOutcomeUnknown
// (the statement may still commit), and a re-read of the session tells.
// Appending the same entry again cannot store it twice: its parent is no
// longer the head, so it is a conflict.
package pgstore
