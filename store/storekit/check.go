package storekit

import (
	"fmt"
	"net/url"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/rules"
	"github.com/spool-go/spool/transcript"
)

// Timestamps a store must keep. Stores hold times as Unix nanoseconds
// (SQL columns, Redis scores, IndexedDB numbers), which reach from 1678 to
// 2262; CheckAppend refuses anything outside, so every store keeps the
// same entries.
var (
	MinTimestamp = rules.MinTimestamp
	MaxTimestamp = rules.MaxTimestamp
)

// CheckAppend checks e before a store appends it to session key whose last
// entry id is head (empty for a new session): store.ErrInvalidEntry for an
// entry that cannot be stored and read back exactly (no id, no type, a
// time outside MinTimestamp and MaxTimestamp, an unknown status, ids or a
// type that are not valid UTF-8 or hold control characters, data that is
// not a JSON object), store.ErrConflict for a parent that is not head.
// Every store calls it (or CheckEntry and CheckParent, or CheckBatch), so
// an entry one store takes, every store takes.
func CheckAppend(key store.Key, head string, e transcript.Entry) error {
	if err := ValidEntry(key, e); err != nil {
		return err
	}
	return CheckParent(key, head, e)
}

// CheckEntry is CheckAppend without the parent: it checks e alone and
// returns its wire encoding (transcript.AppendJSON), so that a store that
// keeps lines encodes each entry once. What it accepts reads back exactly
// as e (transcript.Parse of the encoding equals e); FuzzCheckEntry holds
// it to that.
func CheckEntry(key store.Key, e transcript.Entry) ([]byte, error) {
	return rules.CheckEntry(key, e, store.ErrInvalidEntry)
}

// ValidEntry is CheckEntry without the encoding, for a store that keeps
// entries rather than lines: it refuses exactly what CheckEntry refuses,
// with the same error.
func ValidEntry(key store.Key, e transcript.Entry) error {
	return rules.ValidEntry(key, e, store.ErrInvalidEntry)
}

// CheckParent returns store.ErrConflict (see ConflictError) unless e's
// parent is head, the id of the session's last entry (empty for a new
// session).
func CheckParent(key store.Key, head string, e transcript.Entry) error {
	return rules.CheckParent(key, head, e, store.ErrConflict)
}

// CheckBatch checks entries, to be appended together in this order to
// session key (store.BatchAppender): each alone as CheckEntry does, and
// each one's parent the entry before it (store.ErrConflict otherwise, as
// appending them one by one would fail there). The first one's parent is
// the store's to check against the session's head. It returns their wire
// encodings. store.AppendBatch checks a batch the same way.
func CheckBatch(key store.Key, entries []transcript.Entry) ([][]byte, error) {
	return rules.CheckBatch(key, entries, store.ErrInvalidEntry, store.ErrConflict)
}

// ValidBatch is CheckBatch without the encodings, for a store that keeps
// entries rather than lines: it refuses exactly what CheckBatch refuses.
func ValidBatch(key store.Key, entries []transcript.Entry) error {
	return rules.ValidBatch(key, entries, store.ErrInvalidEntry, store.ErrConflict)
}

// CheckChain checks that entries, read from session key starting at
// position start, are one chain: each entry's ParentID is the id of the
// entry before it (prev for the first; prev empty means unknown, and the
// first is not checked). An empty ParentID after the first entry is
// accepted, as other programs' transcripts may leave it out. A broken link
// (an entry missing, moved or replaced) is a *store.CorruptError naming the
// session and position.
func CheckChain(key store.Key, start int, prev string, entries []transcript.Entry) error {
	for i, e := range entries {
		if e.ParentID != "" && prev != "" && e.ParentID != prev {
			return &store.CorruptError{Key: key, Position: start + i,
				Err: fmt.Errorf("entry %.40q follows %.40q but names %.40q as its parent: an entry is missing or out of place", e.ID, prev, e.ParentID)}
		}
		if i == 0 && prev == "" && start == 0 && e.ParentID != "" {
			return &store.CorruptError{Key: key, Position: 0,
				Err: fmt.Errorf("the first entry %.40q names a parent %.40q: the start of the transcript is missing", e.ID, e.ParentID)}
		}
		prev = e.ID
	}
	return nil
}

// ConflictError returns an error matching store.ErrConflict for an append
// to key whose parent was parent while the session's last entry is head.
func ConflictError(key store.Key, parent, head string) error {
	return rules.Conflict(key, parent, head, store.ErrConflict)
}

// ParseURL parses the URL a store's Open is given, as store.Open does: its
// error leaves the URL out, since a store URL may hold a password, and
// says only what is wrong with it. Wrap it with the store's name.
func ParseURL(rawURL string) (*url.URL, error) { return rules.ParseURL(rawURL) }

// Repeated returns the first of a store's own URL parameters, names, that
// q gives more than once, and how many times: each takes one value, and
// which of two wins (ttl=720h&ttl=1s) must not depend on the store, so a
// store refuses the URL ("URL parameter ttl given 2 times"). It returns
// "", 0 when each is given at most once.
func Repeated(q url.Values, names ...string) (name string, times int) {
	for _, name := range names {
		if n := len(q[name]); n > 1 {
			return name, n
		}
	}
	return "", 0
}
