// Package sqlitestore keeps session transcripts in one SQLite database
// file, through a pure-Go driver (no cgo): modernc.org/sqlite.
//
// Build a store with New(ctx, path, options…), or open one by URL with
// Open, or with store.Open once this package is imported (Open takes the
// same URLs, and options besides):
//
//	sqlite:/var/lib/spool/spool.db   an absolute path
//	sqlite:spool.db                  relative to the working folder
//	sqlite:spool.db?ttl=720h         with an idle TTL (see Expiry)
//
// New creates a missing file with mode 0600 and a missing folder with mode
// 0700; SQLite gives the -wal and -shm files beside it the file's own mode.
// Existing files and folders keep theirs.
//
// # Durability
//
// The database runs in write-ahead-log mode with synchronous=FULL. Each
// Append is one transaction, and committing it writes the log and syncs it
// to disk (fdatasync on Linux and the BSDs, fsync elsewhere) before Append
// returns: when Append returns nil, the entry, its session's row and its
// row in the log of the search index (see Search) are on disk and survive
// a crash of the process or of the machine. A crash before that loses the
// whole transaction and never part of it. Delete, Prune and the TTL sweep
// are durable the same way. The log is copied into the main file later, by
// checkpoints; until then the -wal file is part of the database, so a
// backup copies all three files while no Store is open, or uses
// VACUUM INTO. The search index, in a file of its own beside them, is not
// needed for a backup: it is built again from the entries when missing.
//
// # Concurrency
//
// A Store is safe for concurrent use, and several Stores, in one process
// or in several, may share one file. Every write is a BEGIN IMMEDIATE
// transaction, so Append's check of the session's head and its insert hold
// the write lock together: of two appends with the same parent exactly one
// lands, and the other fails with store.ErrConflict. Within a Store, writes
// queue for its one write connection; between Stores, for SQLite's lock, up
// to the busy timeout (WithBusyTimeout, 10 seconds) or until the write's
// context ends. Reads never wait for
// writes, see committed data only, and are each one statement, so a count
// and the entries it counts come from one snapshot. Several processes may
// open a new database file at the same moment: switching it to write-ahead
// logging, which SQLite refuses at once while another opens it, is retried
// up to the busy timeout.
//
// Lock (store.Locker) holds a session's turn lock across the processes of
// one machine: an OS file lock in the folder <database>.locks beside the
// database, which the OS releases when its process dies. The runtime takes
// it for every turn, so a session whose process was killed mid-turn is
// continued at once, its dead turn closed as cancelled.
//
// # Layout
//
// Table sessions has one row per session: the store.SessionInfo fields
// (maintained with SessionInfo.Apply), the head entry id and the entry
// count, indexed by (agent, owner, last activity, id) so that a listing page
// reads its own rows and never an entry. Table entries has one row per
// entry, keyed by its session and position (agent, owner, session, seq),
// holding the entry in its wire form (transcript.AppendJSON) beside the
// timestamp. Table fts_log lists, in commit order, the entries inserted
// and deleted that the search index has yet to apply. Times are integer
// unix nanoseconds, so LastActivity and
// cursors round-trip exactly; an entry whose timestamp falls outside the
// years 1678 to 2261, which that form cannot hold, is refused with
// store.ErrInvalidEntry.
//
// Costs: Append, Stat, ReadTail(n), ReadRange and a List page read only
// what they return, whatever the length of the transcript or the number of
// sessions. Delete and Prune are proportional to what they delete.
//
// The schema is versioned (PRAGMA user_version) and migrated step by step
// when a Store opens, each step in a transaction of its own. A database
// that a newer version of this package wrote is refused with
// ErrSchemaTooNew, and another program's database with ErrNotSpool.
// Version 4 moved the search index out of the database: opening an older
// database drops the index it holds (later writes reuse the space, or
// VACUUM returns it) and builds the new one in the background.
//
// # Search
//
// Store implements store.Searcher with an FTS5 index of the text
// storekit.SearchText gives (what the user wrote and what the assistant
// answered), contentless and tokenized in trigrams, so that a match is a
// case-insensitive substring test as in storekit.MatchText; every candidate is
// then checked with storekit.MatchText itself, so that the hits and snippets
// are exactly those of store.Search's scan. Query words are never SQL or
// FTS5 syntax: each is one quoted FTS5 string inside a bound parameter.
// Words of one or two characters cannot use the index; they are checked
// on the candidates of the longer words, and a query of only such words
// walks the entries newest first. Candidates come newest first from the
// index without sorting (entry row ids are ordered by time), so a search
// reads as many candidates as it needs to fill its limit.
//
// The index is kept beside the database rather than in it: in the file
// <database>-search (mode 0600, with its own -wal and -shm), by an
// indexer that each Store runs in the background, so that an append never
// waits for it (indexing a turn's text cost more than the rest of the
// turn) and never shares a commit with it. An append logs its entries in
// table fts_log, in its own transaction; the indexer applies the log in
// batches (512 entries, or what a Store finds when it opens), once the
// Store's appends pause for 10 ms (a burst of turns is indexed after it,
// not beside it) or 2,048 entries wait, and at once after a delete,
// recording in the index's own transaction how far it got, so that a crash of
// either side neither loses nor repeats an entry; appends trim the log
// behind it. Search reads the index's matches and, besides them, the
// entries logged past that point, merged newest first, and checks them
// the same way, so its results are exact however far behind the indexer
// is. Deleting entries logs them too, and the indexer takes their rows out
// of the index. The index is derived data: a missing one, or one that does
// not match the database (a database restored from a backup without it,
// say), is built again from the entries, in the background; Search scans
// the entries until it is. Close stops the indexer, rolling back the batch
// it is in. A search within one session of at most 2,000 entries reads
// that session's entries instead. Owner isolation holds: a search sees its
// own namespace's sessions only.
//
// # Expiry
//
// With WithTTL(d), a session whose LastActivity (the newest entry's
// timestamp) is more than d before now (WithClock) and that has no
// approval pending has expired: List, Read, ReadRange, ReadTail, Stat,
// Search and Namespaces act as if it did not exist. Appending to it with an
// empty ParentID starts a fresh session under the same id, deleting the old
// one in the same transaction; appending after its old head fails with
// store.ErrConflict. Expired sessions are deleted by a sweep: of the whole
// database when a Store opens and when Sweep is called, and of a namespace (at
// most 16 sessions) each time a session is created in it. Each entry
// appended resets the clock, an approval decision included. A session idle
// past the TTL that still has an approval pending is kept, listed and
// readable, so that the runtime can report it as store.ErrSessionExpired
// rather than let a late decision land in a fresh conversation.
//
// # Encryption at rest
//
// With WithProtector(p), each entry is stored sealed by p, bound with
// seal.AssociatedData to its session and position, so that an entry copied
// into another session or moved within its own no longer opens; titles are
// sealed too, bound to position -1. There is no full-text index then (no
// -search file, nothing logged for one), as it would hold the text in the
// clear, and Search falls back to
// store.Search's scan, which opens every transcript of the namespace. What
// remains in the clear is the keys (agent, owner, session id), entry
// timestamps and positions, the counts of store.SessionInfo and the head
// entry id. A database is sealed or not for its whole life: New refuses
// the other with ErrProtectorMismatch. A sealed database keeps a key check
// (settings row keycheck: a fixed text sealed by its protector), and New
// refuses a protector that cannot open it with an error wrapping
// seal.ErrWrongKey; both refusals come before anything is written or swept.
// Reseal re-encrypts every session under a new key, one transaction per
// session, and the key check last, for key rotation.
//
// # Corruption
//
// Reads check what they read: every position present, every stored entry
// opening and parsing, each the child of the entry before it, and the last
// one the session's head. Anything else fails the call with a
// *store.CorruptError (errors.Is store.ErrCorrupt) naming the session, the
// position and the row; nothing is skipped silently, in Search either.
// Other sessions stay readable.
//
// # Notifications
//
// On Unix a Store is a store.Notifier between the processes sharing the
// file (a process follows the turns another runs, delta by delta, and
// stops them): each Store that listens binds a Unix domain socket in the
// folder <file>-live beside the database (0700; the socket 0600), and
// Notify writes to every socket there without waiting (package
// store/internal/sockbus). When that path is too long for a socket
// address, the sockets go in $XDG_RUNTIME_DIR/spool-UID/HASH (or the same
// under os.TempDir()), HASH a hash of the file's path. Only the user's
// processes can connect; no id appears on the wire. Elsewhere the Store
// has no Notifier, and processes follow each other's turns through the
// database.
//
// # The driver
//
// The store runs on modernc.org/sqlite, chosen over
// github.com/ncruces/go-sqlite3 (through its database/sql driver) by
// running this store's own code, SQL and data set on both (SQLite 3.54.1 in
// each; driver_bench_test.go, build tag drivercompare):
//
//	go test -tags drivercompare -run '^$' -bench Driver -benchtime 2s -count 2 ./store/sqlitestore/
//
// CPU time per operation, the mean of two runs on a 2-core machine shared
// with other work (wall times there varied by up to 2x between runs and
// are not comparable; a durable append took 0.9 to 1.9 ms of wall time
// with either driver, bound by fsync):
//
//	                                            modernc   ncruces
//	durable append, 300-byte entry               473 µs    496 µs
//	newest 50 of a 100,000-entry session         347 µs    356 µs
//	first page (50) of 10,000 sessions           159 µs    190 µs
//	search 1,000,000 entries, rare word          0.97 ms   0.97 ms
//	search, common word                          12.2 ms   13.3 ms
//	search, two words                             5.8 ms    6.6 ms
//	search, one word within one session           4.9 ms    5.5 ms
//
// Speed is close to a tie, slightly in modernc's favour. What decided is
// the files: modernc.org/sqlite runs SQLite's own unix VFS, which gives the
// -wal and -shm files the database file's mode (0600), while ncruces's Go
// VFS creates them with mode 0666 less the umask (0644 under the usual
// 022), and the write-ahead log holds transcript text.
//
// modernc.org/sqlite commits with fsync(2) unless told otherwise, where
// SQLite built for Linux commits with fdatasync(2), which is as durable
// (it writes the data and the size needed to read it back, not the
// timestamps). The first New switches the library to fdatasync, with
// sqlite.Fdatasync(true): on ext4 an fsync of the log, which SQLite
// overwrites in place once it has grown, can also wait for a journal
// commit of the file's new timestamps. How much that costs depends on the
// disk: appends were 1.5 to 1.9 times quicker without it on this
// machine's disk once (BenchmarkAppendFsync against BenchmarkAppend), and
// within the noise at other times, when a sync of either kind took about
// 100 µs (BENCHMARKS.md). The switch is process-wide: every connection of modernc.org/sqlite in the
// process then commits the way stock SQLite does on Linux. A program
// that must sync with fsync(2) (a seccomp filter that refuses fdatasync,
// say) calls sqlite.Fdatasync(false) after its first New; later ones do
// not switch it back.
package sqlitestore
