package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Read returns every entry of the session in append order (one LRANGE, so
// one consistent snapshot), or none for a session the store does not
// have. An element that is not an entry fails the call with a
// *store.CorruptError naming the session and position.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	logKey := s.keys(key.Scope()).log(key.ID)
	lines, err := s.c.LRange(ctx, logKey, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", key, err)
	}
	return parseLines(key, logKey, 0, lines)
}

// ReadRange returns the entries at positions [start, end) and the
// session's length, reading only those elements (LLEN and LRANGE in one
// MULTI, so the two agree).
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	start = max(start, 0)
	end = max(end, start)
	logKey := s.keys(key.Scope()).log(key.ID)
	var length *redis.IntCmd
	var lines *redis.StringSliceCmd
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		length = p.LLen(ctx, logKey)
		if end > start {
			lines = p.LRange(ctx, logKey, int64(start), int64(end-1))
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read session %s: %w", key, err)
	}
	if lines == nil {
		return nil, int(length.Val()), nil
	}
	entries, err := parseLines(key, logKey, start, lines.Val())
	return entries, int(length.Val()), err
}

// ReadTail returns the newest n entries in append order and the session's
// length, reading only those elements.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	logKey := s.keys(key.Scope()).log(key.ID)
	var length *redis.IntCmd
	var lines *redis.StringSliceCmd
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		length = p.LLen(ctx, logKey)
		if n > 0 {
			lines = p.LRange(ctx, logKey, int64(-n), -1)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read session %s: %w", key, err)
	}
	total := int(length.Val())
	if lines == nil {
		return nil, total, nil
	}
	entries, err := parseLines(key, logKey, total-len(lines.Val()), lines.Val())
	return entries, total, err
}

// parseLines decodes list elements that start at position first.
func parseLines(key store.Key, logKey string, first int, lines []string) ([]transcript.Entry, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	entries := make([]transcript.Entry, len(lines))
	for i, line := range lines {
		e, err := transcript.Parse([]byte(line))
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
	infoKey := s.keys(key.Scope()).info(key.ID)
	h, err := s.c.HGetAll(ctx, infoKey).Result()
	if err != nil {
		return store.SessionInfo{}, fmt.Errorf("stat session %s: %w", key, err)
	}
	if len(h) == 0 {
		return store.SessionInfo{}, fmt.Errorf("session %s: %w", key, store.ErrNotFound)
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
	info.Entries = int(num("n"))
	if len(bad) > 0 {
		return store.SessionInfo{}, &store.CorruptError{Key: key, Position: -1, Where: "redis hash " + infoKey,
			Err: fmt.Errorf("fields %v missing or not integers", bad)}
	}
	return info, nil
}
