package filestore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spool-go/spool/store"
)

// Deferred records: the appends of a burst write no index record.
//
// A record a line used to cost an append four system calls on the index
// file and, worse, a dirty page of it for the transcript's fdatasync to
// commit with the journal, a fifth of the append. Instead, the first
// append to a session in a burst writes the session's record and opens it
//
//	U	<crc>	<nonce>	<id>   writer nonce appends to id without records
//
// and the appends after it write nothing to the index. Once the session
// has been idle for flushIdle (or dirty for flushMax), and at Close, the
// Store writes its record under the session's lock, if the transcript is
// still what the Store last wrote, and closes the mark:
//
//	V	<crc>	<nonce>	<id>   the mark is closed; the record before it is current
//
// Another process reading the index sees the open mark and, before every
// List, Stat or retention decision, compares that session's transcript
// with its record and reads it again where they differ: O(open marks)
// stats, not O(sessions). Its own appends need nothing: an append compares
// the transcript with the record under the lock anyway. A writer that
// dies with marks open has its W mark open too, which makes the next Store
// compare the whole folder (marks.go); its C mark closes them all.

// pending is a session this Store appended to without a record.
type pending struct {
	nonce       string    // the writer mark the session's U names
	since, last time.Time // the first and the last append of the burst
}

// The flush of idle sessions' records (variables for tests).
var (
	flushIdle = 200 * time.Millisecond
	flushMax  = 5 * time.Second
)

// unknownMtime is a record's mtime after a deferred append: the append
// knows the file's size (it holds the lock) but not the mtime it got
// without an fstat. Such a record matches a file of its size and inode
// (sameAs); it is never written out as it is.
const unknownMtime = -1

// sameAs reports whether a file in state st is the one the record state
// r describes.
func (r fileState) sameAs(st fileState) bool {
	return r.size == st.size && r.ino == st.ino && (r.mtime == st.mtime || r.mtime == unknownMtime)
}

// openMarkLocked notes mark U (open) or V (closed) of nonce for id. The
// caller holds ix.mu.
func (ix *index) openMarkLocked(nonce, id string, open bool) {
	if !open {
		if m := ix.unsure[id]; m != nil {
			delete(m, nonce)
			if len(m) == 0 {
				delete(ix.unsure, id)
			}
		}
		return
	}
	if ix.unsure == nil {
		ix.unsure = map[string]map[string]bool{}
	}
	if ix.unsure[id] == nil {
		ix.unsure[id] = map[string]bool{}
	}
	ix.unsure[id][nonce] = true
}

// closeWriterMarksLocked closes every U mark of nonce (its C mark). The
// caller holds ix.mu.
func (ix *index) closeWriterMarksLocked(nonce string) {
	for id := range ix.unsure {
		ix.openMarkLocked(nonce, id, false)
	}
}

// mark body of U and V.
func unsureBody(nonce, id string) string { return nonce + "\t" + id }

// aheadLocked reports whether the session's record in memory is newer than
// r, a record read from the index file: the session is one of this Store's
// deferred ones and r is from before the burst's last appends. The caller
// holds ix.mu.
func (ix *index) aheadLocked(r *rec) bool {
	if ix.mine[r.info.ID] == nil {
		return false
	}
	m := ix.recs[r.info.ID]
	return m != nil && m.ino == r.ino && m.size > r.size
}

// scheduleFlush makes sure a flush of idle deferred records is due.
func (s *Store) scheduleFlush() {
	s.mu.Lock()
	if s.flushTimer == nil && !s.closed {
		s.flushTimer = time.AfterFunc(flushIdle, s.flushTick)
	}
	s.mu.Unlock()
}

func (s *Store) flushTick() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	s.flushTimer = nil
	if s.closed {
		s.mu.Unlock()
		return
	}
	indexes := make([]*index, 0, len(s.indexes))
	for _, ix := range s.indexes {
		indexes = append(indexes, ix)
	}
	s.mu.Unlock()
	if s.flush(indexes, false) {
		s.scheduleFlush()
	}
}

// flush writes the records of the deferred sessions of indexes that are
// due (all of them with all), and reports whether some remain. The caller
// holds s.flushMu and no lock of a session or an index.
func (s *Store) flush(indexes []*index, all bool) (more bool) {
	now := time.Now()
	for _, ix := range indexes {
		ix.mu.Lock()
		var due []string
		for id, p := range ix.mine {
			if all || now.Sub(p.last) >= flushIdle || now.Sub(p.since) >= flushMax {
				due = append(due, id)
			} else {
				more = true
			}
		}
		ix.mu.Unlock()
		for _, id := range due {
			s.flushOne(ix, id)
		}
	}
	return more
}

// flushOne writes the record of the deferred session id and closes its
// mark. Under the session's lock, the record is written only if the
// transcript is still the one the Store last wrote: otherwise another
// process appended since, and its records describe the session.
func (s *Store) flushOne(ix *index, id string) {
	ctx := context.Background()
	ss, err := ix.lockSession(ctx, id, nil)
	if err != nil {
		return
	}
	defer ix.unlockSession(ss)
	sf, _, err := s.openSession(ctx, ix, id, true, false, ss, nil)
	if err != nil {
		return // still pending: tried again at the next flush
	}
	ix.mu.Lock()
	p := ix.mine[id]
	if p == nil {
		ix.mu.Unlock()
		if sf != nil {
			sf.close()
		}
		return
	}
	var b []byte
	if r := ix.recs[id]; sf != nil && r != nil && r.sameAs(sf.fileState) {
		r.fileState = sf.fileState
		b = appendRecord(b, r, s.cfg.protector != nil)
	}
	b = appendMark(b, 'V', unsureBody(p.nonce, id))
	ix.forgetMineLocked(id)
	ix.writeLocked(b)
	ix.mu.Unlock()
	if sf != nil {
		sf.close()
	}
}

// forgetMineLocked drops id from the deferred sessions. The caller holds
// ix.mu.
func (ix *index) forgetMineLocked(id string) {
	if _, ok := ix.mine[id]; ok {
		delete(ix.mine, id)
		ix.pending.Add(-1)
	}
}

// refreshUnsure brings up to date the records of the sessions that other
// writers' open U marks name: each transcript is compared with its record
// and read again where they differ. Nothing is written: the writer records
// its sessions itself.
func (s *Store) refreshUnsure(ctx context.Context, ix *index) error {
	s.mu.Lock()
	own := ""
	if s.writer != nil {
		own = s.writer.nonce
	}
	s.mu.Unlock()
	ix.mu.Lock()
	if len(ix.unsure) == 0 {
		ix.mu.Unlock()
		return nil
	}
	type check struct {
		id    string
		state fileState
		known bool
	}
	var checks []check
	for id, nonces := range ix.unsure {
		if len(nonces) == 1 && nonces[own] {
			continue
		}
		c := check{id: id}
		if r := ix.recs[id]; r != nil {
			c.state, c.known = r.fileState, true
		}
		checks = append(checks, c)
	}
	ix.mu.Unlock()
	for _, c := range checks {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := os.Lstat(sessionPath(ix.dir, c.id))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && c.known && c.state.sameAs(stateOf(st)) {
			continue
		}
		if err != nil && !c.known {
			continue
		}
		s.rescan(ctx, ix, c.id, false)
	}
	return nil
}

// parseUnsure splits a U or V mark's body. Its id is checked as a
// record's is: a path is made of it (refreshUnsure), and the index is a
// file anyone with the folder can write.
func parseUnsure(body string) (nonce, id string, ok bool) {
	nonce, id, ok = strings.Cut(body, "\t")
	return nonce, id, ok && nonce != "" && store.ValidID(id)
}
