//go:build js && wasm

package idbstore

import (
	"context"
	"fmt"
	"syscall/js"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// Append adds e at the end of the session in one readwrite transaction
// over both object stores: it reads the session's record, refuses e with
// store.ErrConflict unless e.ParentID is the record's last entry id, and
// writes the entry and the updated record. IndexedDB runs readwrite
// transactions over the same stores one at a time, across every page of
// the origin, so two writers can never both append to the same head.
//
// A first entry creates the session, and the same transaction first
// deletes the sessions of the namespace that the retention does not keep
// (the new session counts as kept).
//
// Append returns once the transaction has committed, which is the
// durability point: with the default durability the browser has flushed
// it to disk. On a done ctx Append aborts the transaction and returns
// ctx.Err() with nothing written, unless the commit won the race, in which
// case the entry is stored and Append returns nil.
func (s *Store) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	// Everything but the parent can be checked before the transaction.
	line, err := storekit.CheckEntry(key, e)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x, err := s.begin(ctx, true, entriesStore, sessionsStore)
	if err != nil {
		return err
	}
	if err := s.appendIn(ctx, x, key, e, line); err != nil {
		x.abort() // nothing of it stays, whatever step failed
		return err
	}
	if err := x.commit(ctx); err != nil {
		return fmt.Errorf("idbstore: append to %s: %w", key, err)
	}
	return nil
}

// appendIn makes the append's requests in transaction x. On an error the
// caller aborts x.
func (s *Store) appendIn(ctx context.Context, x *tx, key store.Key, e transcript.Entry, line []byte) error {
	sessions, entries := x.store(sessionsStore), x.store(entriesStore)
	v, err := x.request(ctx, sessions, "get", sessionKey(key))
	if err != nil {
		return requestErr(ctx, "append to "+key.String(), err)
	}
	var rec record
	if !v.IsUndefined() {
		if rec, err = decodeRecord(v, key); err != nil {
			return err
		}
	}
	if err := storekit.CheckAppend(key, rec.head, e); err != nil {
		return err
	}
	if rec.info.Entries == 0 && !s.cfg.retention.Unlimited() {
		if _, err := retain(ctx, x, key.Namespace(), s.cfg.retention, s.cfg.now(), true); err != nil {
			return requestErr(ctx, "retention on creating "+key.String(), err)
		}
	}
	seq := rec.info.Entries
	rec.info.Apply(key, e)
	rec.head = e.ID
	// The puts need no handlers: a failed one aborts the transaction, and
	// commit reports why.
	if _, err := call(entries, "put", entryValue(line), entryKey(key, seq)); err != nil {
		return fmt.Errorf("idbstore: append to %s: %w", key, err)
	}
	if _, err := call(sessions, "put", rec.value()); err != nil {
		return fmt.Errorf("idbstore: append to %s: %w", key, err)
	}
	return nil
}

// requestErr returns ctx's error unchanged, and names the operation in
// any other.
func requestErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && err == ctx.Err() {
		return err
	}
	return fmt.Errorf("idbstore: %s: %w", op, err)
}

// maxAdvance is the largest count IDBCursor.advance takes.
const maxAdvance = 1<<32 - 1

// retain deletes, in readwrite transaction x, the sessions of namespace that r
// does not keep as of now, and returns how many. With newSession, a session
// being created counts as the first kept one (it is not stored yet).
//
// Listing order is newest activity first, and both limits cut that order:
// the sessions kept are the first min(active, MaxSessions) of it, where
// active counts those not idle over MaxAge. So retain counts, skips that
// many on the activity index and deletes the rest, reading nothing of the
// sessions it keeps.
func retain(ctx context.Context, x *tx, ns store.Namespace, r store.Retention, now time.Time, newSession bool) (int, error) {
	if r.Unlimited() {
		return 0, nil
	}
	index := x.store(sessionsStore).Call("index", activityIndex)
	keep := -1 // no limit
	if r.MaxAge > 0 {
		// storekit.Expired: idle longer than MaxAge, that is, last active
		// before now-MaxAge.
		n, err := x.request(ctx, index, "count", activitySince(ns, now.Add(-r.MaxAge)))
		if err != nil {
			return 0, err
		}
		keep = n.Int()
	}
	if r.MaxSessions > 0 {
		limit := r.MaxSessions
		if newSession {
			limit--
		}
		if keep < 0 || limit < keep {
			keep = limit
		}
	}
	if keep < 0 {
		return 0, nil
	}
	c, err := openCursor(index, "openKeyCursor", namespaceRange(ns), "prev")
	if err != nil {
		return 0, err
	}
	defer c.close()
	sessions, entries := x.store(sessionsStore), x.store(entriesStore)
	skipped, deleted := false, 0
	for {
		cur, err := c.next(ctx, x)
		if err != nil {
			return deleted, err
		}
		if cur.IsNull() {
			return deleted, nil
		}
		if !skipped && keep > 0 {
			skipped = true
			if err := move(cur, "advance", min(keep, maxAdvance)); err != nil {
				return deleted, err
			}
			continue
		}
		skipped = true
		if err := deleteSession(sessions, entries, cur.Get("primaryKey")); err != nil {
			return deleted, err
		}
		deleted++
		if err := move(cur, "continue"); err != nil {
			return deleted, err
		}
	}
}

// deleteSession deletes the record and the entries of the session whose
// primary key is pk, in a readwrite transaction over both stores.
func deleteSession(sessions, entries js.Value, pk js.Value) error {
	lower := []any{pk.Index(0), pk.Index(1), pk.Index(2)}
	upper := []any{pk.Index(0), pk.Index(1), pk.Index(2), []any{}}
	if _, err := call(entries, "delete", keyRange.Call("bound", lower, upper)); err != nil {
		return err
	}
	_, err := call(sessions, "delete", pk)
	return err
}
