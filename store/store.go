// Package store defines where transcripts live: the Store contract every
// store implements, session keys and their validation, the sentinel errors,
// listing with opaque cursors, the optional capabilities a store may offer,
// and the URL opener that picks a store by scheme.
//
// The contract is small on purpose, in the manner of database/sql/driver: a
// store appends, reads, lists and deletes. A store that can do more says so
// by implementing an optional interface (BatchAppender, BulkAppender,
// RangeReader, TailReader, Stater, Pruner, Searcher, Locker,
// NamespaceLister, Pinger, Notifier, Expiring); the functions of this
// package with the same names use the capability when it is there and
// fall back to the four required methods when it is not (Notify and
// Listen are errors.ErrUnsupported without a Notifier).
//
// Rules every store keeps, checked for any store by package storetest:
//
//   - Append is durable when it returns, and rejects an entry whose ParentID
//     is not the session's last entry id with ErrConflict, so two writers can
//     never interleave a session.
//   - Read returns entries exactly as appended, in append order, and an empty
//     slice for a session it does not have. A corrupt record fails the call
//     with an error matching ErrCorrupt that names the session and position.
//   - List returns SessionInfo values, newest activity first, without
//     reading transcripts, in pages joined by opaque cursors.
//   - Delete removes everything of a session; the same id then starts empty.
//   - Keys are validated (ValidateKey); an invalid key is ErrInvalidKey, and
//     no key ever reaches another key's data.
//
// # The shape of a store package
//
// Every store of this module is built the same way, and a new one should
// be too:
//
//	func New(ctx context.Context, handle H, opts ...Option) (*Store, error)
//	func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error)
//	type Option func(*config) error
//
// New builds the store on what it keeps sessions in: a folder (filestore),
// a database file (sqlitestore), a connection pool (pgstore), a client
// (redisstore), an IndexedDB database name (idbstore); what the caller
// passes in stays the caller's to close. Open does the same from a URL of
// the store's scheme, whose query parameters set options as the package
// documents, with opts applied after them, and the store it opens owns
// what it opened; the package's init registers it with Register, so
// store.Open reaches it. Each Option checks its own
// argument and New fails with the first refusal. memstore, which keeps
// sessions in the process, has nothing to open and nothing that can fail:
// New() *Store.
//
// Package storekit holds what a store's author needs to keep these rules:
// the check every entry passes before it is appended, the listing order
// and its cursors, retention, the rules of search, in-process locks.
// Package storetest checks any store against them.
package store

import (
	"context"
	"time"

	"github.com/spool-go/spool/transcript"
)

// Store keeps session transcripts. Implementations must be safe for
// concurrent use.
type Store interface {
	// Append adds e at the end of the session. It fails with ErrConflict
	// when e.ParentID is not the id of the session's last entry (empty for
	// a session that has none). It returns once e is durable.
	Append(ctx context.Context, key Key, e transcript.Entry) error

	// Read returns every entry of the session in append order, or no
	// entries and no error for a session the store does not have.
	Read(ctx context.Context, key Key) ([]transcript.Entry, error)

	// List returns one page of the sessions in the namespace, newest activity
	// first, built without reading transcripts.
	List(ctx context.Context, ns Namespace, opt ListOptions) (SessionPage, error)

	// Delete removes the session and everything in it. Deleting a session
	// the store does not have is not an error.
	Delete(ctx context.Context, key Key) error
}

// Namespace is the sessions of one agent for one owner: the set in which a
// session id names exactly one session. An empty Owner is the project's
// namespace, shared by every caller of a project-scoped agent; a user id
// as Owner is that user's own, for a user-scoped agent.
type Namespace struct {
	Agent string // the agent's name
	Owner string // the user whose sessions these are; empty for the project's
}

// Key names one session.
type Key struct {
	Agent string // the agent's name
	Owner string // the user who owns the session; empty for project scope
	ID    string // the session id
}

// Namespace returns the namespace the session belongs to.
func (k Key) Namespace() Namespace { return Namespace{Agent: k.Agent, Owner: k.Owner} }

// Key returns the key of session id in ns.
func (ns Namespace) Key(id string) Key { return Key{Agent: ns.Agent, Owner: ns.Owner, ID: id} }

// String renders the key for messages, as agent/id or agent/owner/id.
func (k Key) String() string {
	if k.Owner == "" {
		return k.Agent + "/" + k.ID
	}
	return k.Agent + "/" + k.Owner + "/" + k.ID
}

// String renders the namespace for messages.
func (ns Namespace) String() string {
	if ns.Owner == "" {
		return ns.Agent
	}
	return ns.Agent + "/" + ns.Owner
}

// SessionInfo describes a session for listings. Stores maintain it as
// entries are appended (see Apply), so listing never reads a transcript.
type SessionInfo struct {
	ID               string    `json:"id"`
	Agent            string    `json:"agent"`
	Owner            string    `json:"owner,omitempty"`
	Started          time.Time `json:"started"`          // the first entry's timestamp
	LastActivity     time.Time `json:"lastActivity"`     // the newest entry's timestamp
	Title            string    `json:"title"`            // the beginning of the first user message
	MessageCount     int       `json:"messageCount"`     // entries whose type IsMessage
	PendingApprovals int       `json:"pendingApprovals"` // approval requests not yet decided
	Compactions      int       `json:"compactions"`      // session.compaction entries: how often the history was compacted
	Entries          int       `json:"entries"`          // every entry of the transcript
}

// Key returns the session's key.
func (i SessionInfo) Key() Key { return Key{Agent: i.Agent, Owner: i.Owner, ID: i.ID} }

// Page sizes for List.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// ListOptions selects a page of a listing.
type ListOptions struct {
	// Limit is the most sessions to return: DefaultListLimit when zero or
	// less, at most MaxListLimit.
	Limit int
	// Cursor is the NextCursor of the page before, or empty for the first.
	// It is opaque: a caller passes it back and never builds one.
	Cursor string
}

// PageSize returns the effective page size of o.
func (o ListOptions) PageSize() int {
	switch {
	case o.Limit <= 0:
		return DefaultListLimit
	case o.Limit > MaxListLimit:
		return MaxListLimit
	}
	return o.Limit
}

// SessionPage is one page of a listing.
type SessionPage struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor"` // empty on the last page
}

// Retention says which sessions of a namespace a store keeps. A zero field is
// no limit, so the zero Retention keeps everything.
type Retention struct {
	MaxSessions int           // keep the newest this many sessions
	MaxAge      time.Duration // delete sessions idle longer than this
}

// DefaultRetention is what the device stores (filestore, idbstore) keep
// unless told otherwise: the newest 50 sessions, none idle over 90 days.
var DefaultRetention = Retention{MaxSessions: 50, MaxAge: 90 * 24 * time.Hour}

// Unlimited reports whether r keeps everything.
func (r Retention) Unlimited() bool { return r.MaxSessions <= 0 && r.MaxAge <= 0 }
