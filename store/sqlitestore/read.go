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
//
// The statement's first row is the session's: its count (as -1-entries,
// so that it sorts first and cannot be taken for a position) and head;
// every other row is an entry's position and body. Two columns, and not
// the session's columns repeated on every entry's row (a join): each
// column of each row costs a step of the driver, and a read of a long
// session was a third columns it did not need. No rows: no session.
const (
	readSessionSQL = `SELECT -1 - s.entries, s.head FROM sessions s
		WHERE s.agent = ?1 AND s.owner = ?2 AND s.id = ?3 AND (s.last_activity >= ?4 OR s.pending > 0)`
	readSidSQL = `(SELECT s.sid FROM sessions s
		WHERE s.agent = ?1 AND s.owner = ?2 AND s.id = ?3 AND (s.last_activity >= ?4 OR s.pending > 0))`
	readRangeSQL = readSessionSQL + `
		UNION ALL
		SELECT e.seq, e.body FROM entries e WHERE e.sid = ` + readSidSQL + ` AND e.seq >= ?5 AND e.seq < ?6
		ORDER BY 1`
	readTailSQL = readSessionSQL + `
		UNION ALL
		SELECT e.seq, e.body FROM entries e WHERE e.sid = ` + readSidSQL + `
			AND e.seq >= (SELECT s.entries FROM sessions s WHERE s.agent = ?1 AND s.owner = ?2 AND s.id = ?3) - ?5
		ORDER BY 1`
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
	rows, err := s.query(ctx, readRangeSQL, key.Agent, key.Owner, key.ID, s.cutoff(), start, end)
	return s.readRows(ctx, key, rows, err, func(total int) (int, int) { return min(start, total), min(end, total) })
}

// ReadTail returns the newest n entries in append order and the number of
// entries in the transcript.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	n = max(n, 0)
	rows, err := s.query(ctx, readTailSQL, key.Agent, key.Owner, key.ID, s.cutoff(), n)
	return s.readRows(ctx, key, rows, err, func(total int) (int, int) { return max(total-n, 0), total })
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
func (s *Store) readRows(ctx context.Context, key store.Key, rows *sql.Rows, err error, bounds func(total int) (start, end int)) ([]transcript.Entry, int, error) {
	if err != nil {
		return nil, 0, s.fail("read", key, err)
	}
	defer rows.Close()
	var (
		found bool
		head  string
		total int
		next  int
		end   int
		arena []byte
		cuts  []int // body i is arena[cuts[i]:cuts[i+1]]
		// The corruption that ended the rows, after the bodies before
		// it: its position and error.
		stopAt  int
		stopErr error
		seq     int64
		body    sql.RawBytes
	)
	// The session's sid, for an error's Where: it is looked up only then,
	// once the rows are closed (the read pool may have one connection).
	sid := func() int64 { rows.Close(); return s.sidOf(ctx, key) }
	for rows.Next() {
		if err := rows.Scan(&seq, &body); err != nil {
			return nil, 0, s.fail("read", key, err)
		}
		if !found {
			if seq >= 0 {
				return nil, 0, s.fail("read", key, fmt.Errorf("an entry's row came before the session's (at %d)", seq))
			}
			found = true
			total, head = int(-1-seq), string(body)
			next, end = bounds(total)
			if end > next {
				cuts = make([]int, 1, end-next+1)
			}
			continue
		}
		if next >= end {
			stopAt, stopErr = int(seq), fmt.Errorf("entry stored beyond the session's %d", total)
			break
		}
		if int(seq) != next {
			stopAt, stopErr = next, fmt.Errorf("entry missing (next stored position is %d)", seq)
			break
		}
		if arena == nil {
			// Sized as if every body were as long as the first, up to
			// arenaGuess past it: a long first entry (a pasted
			// document) would make that the whole session's length
			// times its own (gigabytes); append grows the rest.
			arena = make([]byte, 0, min(len(body)*(end-next), len(body)+arenaGuess))
		}
		arena = append(arena, body...)
		cuts = append(cuts, len(arena))
		next++
	}
	if err := rows.Err(); err != nil && stopErr == nil {
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
			return nil, 0, s.corrupt(key, sid(), pos, fmt.Errorf("entry %q has parent %q, not the entry before it (%q)", e.ID, e.ParentID, entries[i-1].ID))
		}
		if pos == total-1 && e.ID != head {
			return nil, 0, s.corrupt(key, sid(), pos, fmt.Errorf("last entry is %q, but the session's head is %q", e.ID, head))
		}
	}
	switch {
	case badErr != nil:
		return nil, 0, s.corrupt(key, sid(), first+bad, badErr)
	case stopErr != nil:
		return nil, 0, s.corrupt(key, sid(), stopAt, stopErr)
	case next < end:
		return nil, 0, s.corrupt(key, sid(), next, fmt.Errorf("entry missing (the session has %d)", total))
	}
	return entries, total, nil
}

// sidOf returns the session's sid, or -1 when it cannot be read: what a
// corruption's Where names.
func (s *Store) sidOf(ctx context.Context, key store.Key) int64 {
	var sid int64
	err := s.r.QueryRowContext(ctx, `SELECT sid FROM sessions WHERE agent = ? AND owner = ? AND id = ?`,
		key.Agent, key.Owner, key.ID).Scan(&sid)
	if err != nil {
		return -1
	}
	return sid
}

// arenaGuess bounds what a read's buffer of bodies is given beyond its
// first body before the rest are seen: about the bodies of a read of ten
// thousand usual entries.
const arenaGuess = 8 << 20

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
		var p transcript.Parser
		for i := lo; i < hi; i++ {
			e, err := s.openWith(&p, key, first+i, arena[cuts[i]:cuts[i+1]])
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
	return s.openWith(nil, key, seq, body)
}

// openWith is open parsing with p, or with transcript.Parse when p is nil.
func (s *Store) openWith(p *transcript.Parser, key store.Key, seq int, body []byte) (transcript.Entry, error) {
	if pr := s.cfg.protector; pr != nil {
		plain, err := pr.Open(body, seal.AssociatedData(key.Agent, key.Owner, key.ID, seq))
		if err != nil {
			return transcript.Entry{}, err
		}
		body = plain
	}
	if p == nil {
		return transcript.Parse(body)
	}
	return p.Parse(body)
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
