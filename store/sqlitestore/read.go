package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Both reads are one statement, so the count and the entries come from one
// snapshot even while appends go on; the range walks the (sid, seq) index,
// so a page costs the same in a session of ten entries or of a million.
const (
	readRangeSQL = `SELECT s.sid, s.entries, s.head, e.seq, e.body FROM sessions s
		LEFT JOIN entries e ON e.sid = s.sid AND e.seq >= ? AND e.seq < ?
		WHERE s.agent = ? AND s.owner = ? AND s.id = ? AND ` + visible + `
		ORDER BY e.seq`
	readTailSQL = `SELECT s.sid, s.entries, s.head, e.seq, e.body FROM sessions s
		LEFT JOIN entries e ON e.sid = s.sid AND e.seq >= s.entries - ?
		WHERE s.agent = ? AND s.owner = ? AND s.id = ? AND ` + visible + `
		ORDER BY e.seq`
)

// Read returns every entry of the session in append order; none for a
// session the store does not have or that has expired.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	entries, _, err := s.ReadRange(ctx, key, 0, math.MaxInt)
	return entries, err
}

// ReadRange returns the entries at positions [start, end), clamped to the
// transcript, and the number of entries in it.
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	start = max(start, 0)
	end = max(end, start)
	rows, err := s.query(ctx, readRangeSQL, start, end, key.Agent, key.Owner, key.ID, s.cutoff())
	return s.readRows(key, rows, err, func(total int) (int, int) { return min(start, total), min(end, total) })
}

// ReadTail returns the newest n entries in append order and the number of
// entries in the transcript.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	n = max(n, 0)
	rows, err := s.query(ctx, readTailSQL, n, key.Agent, key.Owner, key.ID, s.cutoff())
	return s.readRows(key, rows, err, func(total int) (int, int) { return max(total-n, 0), total })
}

// readRows checks what a read query returns: entries at every position of
// bounds(total), each one parsing, each the child of the one before, and
// the last of the session the head its row names. Anything else is
// corruption, reported with the session and position: the first position
// that fails, as a read that checked row by row would report it.
//
// The rows' bodies are gathered first, in one buffer, and decoded after
// the statement is done; a read of parallelMin entries or more decodes
// them on up to GOMAXPROCS goroutines, since decoding is most of what a
// long read costs besides SQLite's own steps.
func (s *Store) readRows(key store.Key, rows *sql.Rows, err error, bounds func(total int) (start, end int)) ([]transcript.Entry, int, error) {
	if err != nil {
		return nil, 0, s.fail("read", key, err)
	}
	defer rows.Close()
	var (
		found bool
		sid   int64
		head  string
		total int
		next  int
		end   int
		arena []byte
		cuts  []int // body i is arena[cuts[i]:cuts[i+1]]
		stop  error // the corruption that ended the rows, after the bodies before it
	)
	for rows.Next() {
		var seq sql.NullInt64
		var body sql.RawBytes
		if err := rows.Scan(&sid, &total, &head, &seq, &body); err != nil {
			return nil, 0, s.fail("read", key, err)
		}
		if !found {
			found = true
			next, end = bounds(total)
			if end > next {
				cuts = make([]int, 1, end-next+1)
			}
		}
		if !seq.Valid {
			continue // the session has no entries in the range
		}
		if next >= end {
			stop = s.corrupt(key, sid, int(seq.Int64), fmt.Errorf("entry stored beyond the session's %d", total))
			break
		}
		if int(seq.Int64) != next {
			stop = s.corrupt(key, sid, next, fmt.Errorf("entry missing (next stored position is %d)", seq.Int64))
			break
		}
		if arena == nil {
			arena = make([]byte, 0, len(body)*(end-next))
		}
		arena = append(arena, body...)
		cuts = append(cuts, len(arena))
		next++
	}
	if err := rows.Err(); err != nil && stop == nil {
		return nil, 0, s.fail("read", key, err)
	}
	if !found {
		return nil, 0, nil
	}
	first, _ := bounds(total)
	entries, bad, badErr := s.decodeAll(key, first, arena, cuts)
	for i := range entries[:bad] {
		pos := first + i
		e := entries[i]
		if i > 0 && e.ParentID != entries[i-1].ID {
			return nil, 0, s.corrupt(key, sid, pos, fmt.Errorf("entry %q has parent %q, not the entry before it (%q)", e.ID, e.ParentID, entries[i-1].ID))
		}
		if pos == total-1 && e.ID != head {
			return nil, 0, s.corrupt(key, sid, pos, fmt.Errorf("last entry is %q, but the session's head is %q", e.ID, head))
		}
	}
	switch {
	case badErr != nil:
		return nil, 0, s.corrupt(key, sid, first+bad, badErr)
	case stop != nil:
		return nil, 0, stop
	case next < end:
		return nil, 0, s.corrupt(key, sid, next, fmt.Errorf("entry missing (the session has %d)", total))
	}
	return entries, total, nil
}

// parallelMin is the length of a read from which its entries are decoded
// in parallel (a variable for tests).
var parallelMin = 512

// decodeAll opens and parses the bodies arena[cuts[i]:cuts[i+1]], the
// entries at positions first, first+1, …, and returns them with the index
// of the first that failed and its error (bad is len(entries) when none
// did).
func (s *Store) decodeAll(key store.Key, first int, arena []byte, cuts []int) (entries []transcript.Entry, bad int, err error) {
	n := max(len(cuts)-1, 0)
	entries = make([]transcript.Entry, n)
	part := func(lo, hi int) (int, error) {
		for i := lo; i < hi; i++ {
			e, err := s.open(key, first+i, arena[cuts[i]:cuts[i+1]])
			if err != nil {
				return i, err
			}
			entries[i] = e
		}
		return hi, nil
	}
	workers := min(runtime.GOMAXPROCS(0), n/max(parallelMin/2, 1))
	if n < parallelMin || workers < 2 {
		bad, err = part(0, n)
		if err == nil {
			bad = n
		}
		return entries, bad, err
	}
	bads := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { bads[w], errs[w] = part(w*n/workers, (w+1)*n/workers) })
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			return entries, bads[w], errs[w] // ranges are in order: the first is the lowest
		}
	}
	return entries, n, nil
}

// decode opens and parses the stored form of the entry at position seq.
func (s *Store) decode(key store.Key, sid int64, seq int, body []byte) (transcript.Entry, error) {
	e, err := s.open(key, seq, body)
	if err != nil {
		return transcript.Entry{}, s.corrupt(key, sid, seq, err)
	}
	return e, nil
}

// open opens (with a protector) and parses the stored form of the entry at
// position seq.
func (s *Store) open(key store.Key, seq int, body []byte) (transcript.Entry, error) {
	if p := s.cfg.protector; p != nil {
		plain, err := p.Open(body, seal.AssociatedData(key.Agent, key.Owner, key.ID, seq))
		if err != nil {
			return transcript.Entry{}, err
		}
		body = plain
	}
	return transcript.Parse(body)
}

func (s *Store) corrupt(key store.Key, sid int64, seq int, err error) error {
	return &store.CorruptError{
		Key:      key,
		Position: seq,
		Where:    fmt.Sprintf("%s: table entries, sid %d, seq %d", s.path, sid, seq),
		Err:      err,
	}
}

// Stat returns the session's info from its row, or ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.SessionInfo{}, err
	}
	st, err := s.readStmt(ctx, statSQL)
	if err != nil {
		return store.SessionInfo{}, s.fail("stat", key, err)
	}
	info, err := s.scanInfo(key.Namespace(), st.QueryRowContext(ctx, key.Agent, key.Owner, key.ID, s.cutoff()))
	if errors.Is(err, sql.ErrNoRows) {
		return store.SessionInfo{}, fmt.Errorf("sqlitestore: session %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.SessionInfo{}, err
	}
	return info, nil
}

// infoColumns are what scanInfo reads, from a sessions row aliased s.
const infoColumns = `s.id, s.started, s.last_activity, s.title, s.messages, s.pending, s.compactions, s.entries`

const statSQL = `SELECT ` + infoColumns + ` FROM sessions s
	WHERE s.agent = ? AND s.owner = ? AND s.id = ? AND ` + visible

func (s *Store) scanInfo(ns store.Namespace, row interface{ Scan(...any) error }) (store.SessionInfo, error) {
	var (
		info          store.SessionInfo
		started, last int64
		title         []byte
	)
	if err := row.Scan(&info.ID, &started, &last, &title, &info.MessageCount, &info.PendingApprovals, &info.Compactions, &info.Entries); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return info, err
		}
		return info, fmt.Errorf("sqlitestore: %s: reading sessions of %s: %w", s.path, ns, err)
	}
	info.Agent, info.Owner = ns.Agent, ns.Owner
	info.Started = time.Unix(0, started).UTC()
	info.LastActivity = time.Unix(0, last).UTC()
	t, err := s.openTitle(info.Key(), title)
	if err != nil {
		return info, err
	}
	info.Title = t
	return info, nil
}
