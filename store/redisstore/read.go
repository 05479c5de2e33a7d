package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// Read returns every entry of the session in append order, or none for a
// session the store does not have. The list and the session hash's head
// and count are read in one MULTI (one consistent snapshot) and checked
// against each other: an element that is not an entry, entries that are
// not one chain, or a list that does not end at the hash's head or has
// another length, fail the call with a *store.CorruptError naming the
// session and, where there is one, the position.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	entries, _, err := s.read(ctx, key, &span{0, -1})
	return entries, err
}

// ReadRange returns the entries at positions [start, end) and the
// session's length, reading only those elements. They are checked as Read
// checks a transcript, within the range: the entry before it is not read,
// and the hash's head is compared only when the range reaches the end.
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	start = max(start, 0)
	end = max(end, start)
	var r *span
	if end > start {
		r = &span{int64(start), int64(end - 1)}
	}
	return s.read(ctx, key, r)
}

// ReadTail returns the newest n entries in append order and the session's
// length, reading only those elements, checked as ReadRange checks them.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	var r *span
	if n > 0 {
		r = &span{int64(-n), -1}
	}
	return s.read(ctx, key, r)
}

// span is the first and last index of an LRANGE; a negative first counts
// from the end, and then the last is -1.
type span struct{ first, last int64 }

// read runs, in one MULTI, LLEN, an HMGET of the session hash's head and
// count, and the LRANGE of r (none when r is nil), then parses and checks
// what it got.
func (s *Store) read(ctx context.Context, key store.Key, r *span) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	k := s.keys(key.Namespace())
	logKey, infoKey := k.log(key.ID), k.info(key.ID)
	var length *redis.IntCmd
	var hash *redis.SliceCmd
	var lines *redis.StringSliceCmd
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		length = p.LLen(ctx, logKey)
		hash = p.HMGet(ctx, infoKey, "head", "n")
		if r != nil {
			lines = p.LRange(ctx, logKey, r.first, r.last)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("redisstore: read session %s: %w", key, err)
	}
	total := int(length.Val())
	var entries []transcript.Entry
	first := 0
	if lines != nil && len(lines.Val()) > 0 {
		if first = int(r.first); first < 0 {
			first = total - len(lines.Val())
		}
		if entries, err = parseLines(key, logKey, first, lines.Val()); err != nil {
			return nil, total, err
		}
		if err := storekit.CheckChain(key, first, "", entries); err != nil {
			var ce *store.CorruptError
			if errors.As(err, &ce) && ce.Where == "" && ce.Position >= 0 {
				ce.Where = fmt.Sprintf("redis list %s index %d", logKey, ce.Position)
			}
			return nil, total, err
		}
	}
	if err := checkHash(key, logKey, infoKey, first, total, entries, hash.Val()); err != nil {
		return nil, total, err
	}
	return entries, total, nil
}

// checkHash checks the session hash's head and count (the reply h of HMGET
// head n) against the list's length, and, when entries (read from position
// first) reach the end of the list, the last one against the head.
func checkHash(key store.Key, logKey, infoKey string, first, total int, entries []transcript.Entry, h []any) error {
	head, ok := h[0].(string)
	if !ok {
		if total == 0 {
			return nil // no session
		}
		return &store.CorruptError{Key: key, Position: -1, Where: "redis hash " + infoKey,
			Err: fmt.Errorf("the session's list holds %d entries but its hash has no head", total)}
	}
	count, _ := h[1].(string)
	if n, err := strconv.Atoi(count); err != nil || n != total {
		return &store.CorruptError{Key: key, Position: -1, Where: "redis hash " + infoKey,
			Err: fmt.Errorf("the session hash counts %q entries but its list holds %d: entries are missing or were added behind the store's back", count, total)}
	}
	last := first + len(entries) - 1
	if len(entries) > 0 && last == total-1 && entries[len(entries)-1].ID != head {
		return &store.CorruptError{Key: key, Position: last, Where: fmt.Sprintf("redis list %s index %d", logKey, last),
			Err: fmt.Errorf("the last entry is %.40q but the session hash names %.40q as the last: the end of the transcript is missing or replaced", entries[len(entries)-1].ID, head)}
	}
	return nil
}

// parseLines decodes list elements that start at position first, with one
// Parser, each element copied in turn into one buffer for it (a string
// converted to bytes would be a copy of its own).
func parseLines(key store.Key, logKey string, first int, lines []string) ([]transcript.Entry, error) {
	entries := make([]transcript.Entry, len(lines))
	var p transcript.Parser
	var buf []byte
	for i, line := range lines {
		buf = append(buf[:0], line...)
		e, err := p.Parse(buf)
		if err != nil {
			return nil, &store.CorruptError{Key: key, Position: first + i,
				Where: fmt.Sprintf("redis list %s index %d", logKey, first+i), Err: err}
		}
		entries[i] = e
	}
	return entries, nil
}

// Stat returns the session's info from its hash alone, or
// store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.SessionInfo{}, err
	}
	infoKey := s.keys(key.Namespace()).info(key.ID)
	h, err := s.c.HGetAll(ctx, infoKey).Result()
	if err != nil {
		return store.SessionInfo{}, fmt.Errorf("redisstore: stat session %s: %w", key, err)
	}
	if len(h) == 0 {
		return store.SessionInfo{}, fmt.Errorf("redisstore: session %s: %w", key, store.ErrNotFound)
	}
	return parseInfo(key, infoKey, h)
}

// parseInfo builds a SessionInfo from the fields of a session hash.
func parseInfo(key store.Key, infoKey string, h map[string]string) (store.SessionInfo, error) {
	info := store.SessionInfo{ID: key.ID, Agent: key.Agent, Owner: key.Owner, Title: h["title"]}
	var bad []string
	num := func(field string) int64 {
		n, err := strconv.ParseInt(h[field], 10, 64)
		if err != nil {
			bad = append(bad, field)
		}
		return n
	}
	info.Started = time.Unix(0, num("started")).UTC()
	info.LastActivity = time.Unix(0, num("last")).UTC()
	info.MessageCount = int(num("msgs"))
	info.PendingApprovals = int(num("pending"))
	if _, ok := h["compactions"]; ok { // absent until a session's first append since the field came
		info.Compactions = int(num("compactions"))
	}
	info.Entries = int(num("n"))
	if len(bad) > 0 {
		return store.SessionInfo{}, &store.CorruptError{Key: key, Position: -1, Where: "redis hash " + infoKey,
			Err: fmt.Errorf("fields %v missing or not integers", bad)}
	}
	return info, nil
}
