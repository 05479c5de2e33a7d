//go:build js && wasm

package idbstore

import (
	"context"
	"fmt"
	"math"
	"syscall/js"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Read returns every entry of the session in append order, or none for a
// session the store does not have. A stored entry that does not parse, a
// missing position, or a parent link that does not hold fails the call
// with a *store.CorruptError naming the session and position.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	entries, _, err := s.read(ctx, key, func(int) (int, int) { return 0, math.MaxInt })
	return entries, err
}

// ReadRange returns the entries at positions [start, end), clamped to the
// transcript, and the number of entries in it; only those entries are
// read.
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	return s.read(ctx, key, func(int) (int, int) { return start, end })
}

// ReadTail returns the newest n entries in append order and the number of
// entries in the transcript; only those entries are read.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	return s.read(ctx, key, func(total int) (int, int) {
		if n <= 0 {
			return total, total
		}
		return total - min(n, total), total
	})
}

// read reads the positions span returns for the session's length, in one
// readonly transaction: the session's record (for the length), then the
// entries in range.
func (s *Store) read(ctx context.Context, key store.Key, span func(total int) (start, end int)) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	x, err := s.begin(ctx, false, entriesStore, sessionsStore)
	if err != nil {
		return nil, 0, err
	}
	v, err := x.request(ctx, x.store(sessionsStore), "get", sessionKey(key))
	if err != nil {
		return nil, 0, requestErr(ctx, "read "+key.String(), err)
	}
	if v.IsUndefined() {
		return nil, 0, nil
	}
	rec, err := decodeRecord(v, key)
	if err != nil {
		return nil, 0, err
	}
	total := rec.info.Entries
	start, end := span(total)
	start = min(max(start, 0), total)
	end = min(max(end, start), total)
	if start == end {
		return []transcript.Entry{}, total, nil
	}
	entries := x.store(entriesStore)
	vals, err := x.request(ctx, entries, "getAll", entryRange(key, start, end))
	if err != nil {
		return nil, 0, requestErr(ctx, "read "+key.String(), err)
	}
	n := vals.Length()
	if n != end-start {
		return nil, 0, missing(ctx, x, entries, key, start, end, n)
	}
	out := make([]transcript.Entry, n)
	for i := range n {
		pos := start + i
		e, err := parseEntry(vals.Index(i))
		if err != nil {
			return nil, 0, &store.CorruptError{Key: key, Position: pos, Where: "entries store", Err: err}
		}
		parent := ""
		if i > 0 {
			parent = out[i-1].ID
		}
		if (i > 0 || pos == 0) && e.ParentID != parent {
			return nil, 0, &store.CorruptError{Key: key, Position: pos, Where: "entries store",
				Err: fmt.Errorf("entry %q has parent %q, but the entry before it is %q", e.ID, e.ParentID, parent)}
		}
		out[i] = e
	}
	if end == total && out[n-1].ID != rec.head {
		return nil, 0, &store.CorruptError{Key: key, Position: end - 1, Where: "entries store",
			Err: fmt.Errorf("the last entry is %q, but the session record says %q", out[n-1].ID, rec.head)}
	}
	return out, total, nil
}

// missing returns the error for a range [start, end) of which only n
// entries are stored, naming the first missing position.
func missing(ctx context.Context, x *tx, entries js.Value, key store.Key, start, end, n int) error {
	pos := start + n
	keys, err := x.request(ctx, entries, "getAllKeys", entryRange(key, start, end))
	if err == nil {
		for i := range keys.Length() {
			if seq := keys.Index(i).Index(3); seq.Type() != js.TypeNumber || seq.Int() != start+i {
				pos = start + i
				break
			}
		}
	}
	return &store.CorruptError{Key: key, Position: pos, Where: "entries store",
		Err: fmt.Errorf("entry missing: %d of the %d entries at positions %d to %d are stored", n, end-start, start, end-1)}
}

// Stat returns the session's info from its record, or store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.SessionInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.SessionInfo{}, err
	}
	x, err := s.begin(ctx, false, sessionsStore)
	if err != nil {
		return store.SessionInfo{}, err
	}
	v, err := x.request(ctx, x.store(sessionsStore), "get", sessionKey(key))
	if err != nil {
		return store.SessionInfo{}, requestErr(ctx, "stat "+key.String(), err)
	}
	if v.IsUndefined() {
		return store.SessionInfo{}, fmt.Errorf("idbstore: session %s: %w", key, store.ErrNotFound)
	}
	rec, err := decodeRecord(v, key)
	if err != nil {
		return store.SessionInfo{}, err
	}
	return rec.info, nil
}
