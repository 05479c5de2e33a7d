package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spool-go/spool/store/internal/rules"
	"github.com/spool-go/spool/transcript"
)

// AppendBatch appends entries to key, in order, with s's BatchAppender
// when it has one and one Append at a time when not (a failure then leaves
// the entries before it appended). It checks the batch first either way
// (the checks of storekit.CheckBatch), so a batch that cannot be stored
// appends nothing.
func AppendBatch(ctx context.Context, s Store, key Key, entries []transcript.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if b, ok := s.(BatchAppender); ok {
		return b.AppendBatch(ctx, key, entries)
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := rules.ValidBatch(key, entries, ErrInvalidEntry, ErrConflict); err != nil {
		return err
	}
	for _, e := range entries {
		if err := s.Append(ctx, key, e); err != nil {
			return err
		}
	}
	return nil
}

// AppendBulk appends batches to their sessions with s's BulkAppender when
// it has one, and one AppendBatch at a time when not.
func AppendBulk(ctx context.Context, s Store, batches []Batch) error {
	if b, ok := s.(BulkAppender); ok {
		return b.AppendBulk(ctx, batches)
	}
	for _, b := range batches {
		if err := AppendBatch(ctx, s, b.Key, b.Entries); err != nil {
			return err
		}
	}
	return nil
}

// ReadRange returns the entries of key at positions [start, end) and the
// transcript's length, with s's RangeReader when it has one and by reading
// the whole transcript when not.
func ReadRange(ctx context.Context, s Store, key Key, start, end int) ([]transcript.Entry, int, error) {
	if rr, ok := s.(RangeReader); ok {
		return rr.ReadRange(ctx, key, start, end)
	}
	all, err := s.Read(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	start, end = clamp(start, end, len(all))
	return all[start:end:end], len(all), nil
}

// ReadTail returns the newest n entries of key and the transcript's length,
// with s's TailReader, else its RangeReader and Stater, else by reading the
// whole transcript.
func ReadTail(ctx context.Context, s Store, key Key, n int) ([]transcript.Entry, int, error) {
	if tr, ok := s.(TailReader); ok {
		return tr.ReadTail(ctx, key, n)
	}
	if rr, ok := s.(RangeReader); ok {
		if st, ok := s.(Stater); ok {
			info, err := st.Stat(ctx, key)
			if errors.Is(err, ErrNotFound) {
				return nil, 0, nil
			}
			if err != nil {
				return nil, 0, err
			}
			entries, total, err := rr.ReadRange(ctx, key, info.Entries-n, info.Entries)
			if err == nil && total != info.Entries {
				// Appended between the two calls: read the new tail.
				entries, total, err = rr.ReadRange(ctx, key, total-n, total)
			}
			return entries, total, err
		}
	}
	all, err := s.Read(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	start, _ := clamp(len(all)-n, len(all), len(all))
	return all[start:], len(all), nil
}

func clamp(start, end, n int) (int, int) {
	start = min(max(start, 0), n)
	end = min(max(end, start), n)
	return start, end
}

// Stat returns the SessionInfo of key, or ErrNotFound for a session the
// store does not have, with s's Stater when it has one and by reading the
// transcript when not.
func Stat(ctx context.Context, s Store, key Key) (SessionInfo, error) {
	if st, ok := s.(Stater); ok {
		return st.Stat(ctx, key)
	}
	if err := ValidateKey(key); err != nil {
		return SessionInfo{}, err
	}
	entries, err := s.Read(ctx, key)
	if err != nil {
		return SessionInfo{}, err
	}
	if len(entries) == 0 {
		return SessionInfo{}, fmt.Errorf("%w (session %s)", ErrNotFound, key)
	}
	var info SessionInfo
	for _, e := range entries {
		info.Apply(key, e)
	}
	return info, nil
}

// Prune deletes the sessions of ns that r does not keep as of now, with
// s's Pruner when it has one and by listing and deleting when not.
func Prune(ctx context.Context, s Store, ns Namespace, r Retention, now time.Time) (int, error) {
	if r.Unlimited() {
		return 0, nil
	}
	if p, ok := s.(Pruner); ok {
		return p.Prune(ctx, ns, r, now)
	}
	if err := ValidateNamespace(ns); err != nil {
		return 0, err
	}
	next := func(ctx context.Context, cursor string) ([]SessionInfo, string, error) {
		page, err := s.List(ctx, ns, ListOptions{Limit: MaxListLimit, Cursor: cursor})
		return page.Sessions, page.NextCursor, err
	}
	victims, err := rules.Victims(ctx, next, func(i SessionInfo) time.Time { return i.LastActivity }, r.MaxSessions, r.MaxAge, now)
	if err != nil {
		return 0, err
	}
	for i, info := range victims {
		if err := s.Delete(ctx, info.Key()); err != nil {
			return i, err
		}
	}
	return len(victims), nil
}
