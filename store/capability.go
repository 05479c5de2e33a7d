package store

import (
	"context"
	"time"

	"github.com/spool-go/spool/transcript"
)

// Optional capabilities. The runtime discovers them by type assertion and
// falls back to the required methods without them; the package functions
// of the same names (AppendBatch, AppendBulk, ReadRange, ReadTail, Stat,
// Prune, Search)
// do exactly that, so callers never need to check.

// BatchAppender appends several entries to one session in one durable
// write: one sync, one transaction. The runtime gives it the entries that
// are ready together (a step's answer and the turn's end; a step's tool
// results), and imports and migrations a session's entries a chunk at a
// time.
type BatchAppender interface {
	// AppendBatch adds entries, in order, at the end of the session: the
	// first one's ParentID must be the session's last entry id (empty for
	// a session that has none), and each next one's the id of the entry
	// before it. It fails with ErrConflict or ErrInvalidEntry (see
	// storekit.CheckBatch) before appending anything, and returns once every entry
	// is durable. Any other failure (a disk, a connection) may leave a
	// prefix of the entries appended, as appending them one by one would;
	// the session tells which. An empty batch appends nothing.
	AppendBatch(ctx context.Context, key Key, entries []transcript.Entry) error
}

// Batch is entries to append to one session, in order (see AppendBatch).
type Batch struct {
	Key     Key
	Entries []transcript.Entry
}

// BulkAppender appends to many sessions at once, for imports and
// migrations: the batches of one call in one transaction, or a few at once
// (SQL stores), or their syncs overlapping (files).
type BulkAppender interface {
	// AppendBulk appends each batch as AppendBatch would, and returns once
	// all of them are durable. Batches of the same session follow each
	// other in order. A failure may leave some batches, or a prefix of
	// one, appended, and others not; the error names a session that
	// failed. Whatever it returns, nothing of the call lands after it has
	// returned, also when ctx ended while it ran (a store whose server runs
	// what it was sent whole waits for the outcome): a transfer run again
	// finds what is there and goes on from it.
	AppendBulk(ctx context.Context, batches []Batch) error
}

// RangeReader reads part of a transcript without reading all of it.
type RangeReader interface {
	// ReadRange returns the entries at positions [start, end) (0-based,
	// clamped to the transcript) and the number of entries in it.
	ReadRange(ctx context.Context, key Key, start, end int) (entries []transcript.Entry, total int, err error)
}

// TailReader reads the newest entries of a transcript without reading all
// of it.
type TailReader interface {
	// ReadTail returns the newest n entries in append order and the number
	// of entries in the transcript.
	ReadTail(ctx context.Context, key Key, n int) (entries []transcript.Entry, total int, err error)
}

// Stater returns one session's SessionInfo without reading its transcript.
type Stater interface {
	// Stat returns the session's info, or ErrNotFound.
	Stat(ctx context.Context, key Key) (SessionInfo, error)
}

// Pruner deletes, in bulk, the sessions of a namespace that a retention policy
// does not keep.
type Pruner interface {
	// Prune deletes the sessions of ns beyond r, as of now, and returns
	// how many it deleted.
	Prune(ctx context.Context, ns Namespace, r Retention, now time.Time) (deleted int, err error)
}

// SearchQuery is a text search over sessions.
type SearchQuery struct {
	Text    string // the words to find; matched case-insensitively
	Session string // only this session, when set
	Limit   int    // the most hits; DefaultListLimit when zero or less
}

// SearchHit is one entry that matched a search.
type SearchHit struct {
	SessionID string    `json:"sessionId"`
	EntryID   string    `json:"entryId"`
	Snippet   string    `json:"snippet"`
	Time      time.Time `json:"time"`
}

// Searcher searches the text of transcripts natively.
type Searcher interface {
	// Search returns the newest entries of ns that match q, newest first.
	Search(ctx context.Context, ns Namespace, q SearchQuery) ([]SearchHit, error)
}

// Locker holds a per-session lock across processes for the length of a
// turn (Postgres: an advisory lock; files: an OS file lock). The runtime
// takes it when the store offers it; the conditional append keeps order
// either way.
type Locker interface {
	// Lock blocks until the session's lock is held or ctx is done, and
	// returns the function that releases it.
	Lock(ctx context.Context, key Key) (unlock func(), err error)
}

// NamespaceLister enumerates every namespace that holds sessions, for exports,
// migrations and pruning everything.
type NamespaceLister interface {
	Namespaces(ctx context.Context) ([]Namespace, error)
}

// Expiring is implemented by stores that expire idle sessions natively
// (a TTL given to the store, for example in its URL). The runtime adopts
// that TTL when its own Config.TTL is not set, so that the store's expiry
// and the runtime's rules (a fresh start for an expired session, and
// ErrSessionExpired for one with an approval pending) agree.
type Expiring interface {
	// TTL returns how long a session may be idle before it expires; zero
	// means never.
	TTL() time.Duration
}
