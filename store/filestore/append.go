package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// Append adds e at the end of the session and returns once the line is on
// disk (see the package documentation for what that means). It fails with
// store.ErrConflict when e.ParentID is not the session's last entry. The
// check and the write happen under the session's OS file lock, so two
// processes never interleave a session; Append waits for the lock until ctx
// is done. Creating a session applies the store's retention to its namespace.
func (s *Store) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	if err := checkKey(key); err != nil {
		return err
	}
	// Validate and encode the entry alone first (the parent is checked
	// under the lock), so that an entry that cannot be stored creates
	// nothing.
	plain, err := storekit.CheckEntry(key, e)
	if err != nil {
		return err
	}
	return s.appendAll(ctx, key, []transcript.Entry{e}, [][]byte{plain}, nil)
}

// AppendBatch adds entries at the end of the session as Append adds one
// (store.BatchAppender), with one write and one sync for all their lines:
// when it returns nil every line is on disk. A failure of the write or the
// sync cuts the file back to where it was, so nothing of the batch is
// acknowledged; a crash in the middle of it may keep the batch's first
// lines, complete, and sets a torn one aside, as for Append.
func (s *Store) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	if err := checkKey(key); err != nil {
		return err
	}
	plains, err := storekit.CheckBatch(key, entries)
	if err != nil || len(entries) == 0 {
		return err
	}
	return s.appendAll(ctx, key, entries, plains, nil)
}

// appendAll appends entries, encoded as plains, to the session. With dirs,
// a new transcript's folder is not synced here but noted in dirs, whose
// owner syncs it before it reports the append done.
func (s *Store) appendAll(ctx context.Context, key store.Key, entries []transcript.Entry, plains [][]byte, dirs *dirSyncs) error {
	// A line is at least its plain encoding: one over the limit is
	// refused before the Store marks itself a writer, so that it creates
	// nothing. (A sealed line is longer: lockAndAppend checks that one.)
	for i, plain := range plains {
		if len(plain) > transcript.MaxLineSize {
			return lineTooLong(key, entries[i], len(plain))
		}
	}
	create := entries[0].ParentID == ""
	// An encrypted store is marked before its first sealed line; a plain
	// one never creates a session in a store marked since New.
	if s.cfg.protector != nil {
		if err := s.ensureMarker(); err != nil {
			return err
		}
	} else if create {
		if err := s.refuseIfMarked(); err != nil {
			return err
		}
	}
	ix, err := s.index(ctx, key.Namespace(), create)
	if err != nil {
		return err
	}
	if ix == nil {
		return storekit.ConflictError(key, entries[0].ParentID, "")
	}
	if err := ix.checkCase(key.ID); err != nil {
		return err
	}
	release, nonce := s.markWriter(ix)
	defer release()
	var due bool
	created, err := s.lockAndAppend(ctx, ix, key, entries, plains, create, dirs, nonce, &due)
	if err != nil {
		return err
	}
	if due {
		ix.rewrite() // on failure the old index stays, still right
	}
	if !created || s.cfg.retention.Unlimited() {
		return nil
	}
	s.retain(ctx, ix, key.ID)
	return nil
}

// retain applies the store's retention to the namespace of a session just
// created, id, which it keeps. It runs after the session's lock is
// released: deleting takes other sessions' locks, and holding two could
// deadlock with another process doing the same. It decides on a validated
// index, since a record that a crash left stale must not make a live
// session look idle, and deletes a victim only if it is still as the
// decision saw it (an append may come in between). The entry is durable
// whatever happens here: a session that cannot be deleted now, or whose
// lock is not free before ctx is done, goes at the next creation.
func (s *Store) retain(ctx context.Context, ix *index, id string) {
	if err := s.ready(ctx, ix); err != nil {
		return
	}
	ix.mu.Lock()
	victims := ix.victimsLocked(s.cfg.retention, s.cfg.now(), id)
	ix.mu.Unlock()
	if retentionHook != nil {
		retentionHook(victims)
	}
	for _, v := range victims {
		if ctx.Err() != nil {
			return
		}
		s.deleteSession(ctx, ix.key.Key(v.info.ID), &v)
	}
}

// retentionHook, set by tests only, runs when retention or Prune has chosen
// its victims and before it deletes them.
var retentionHook func(victims []rec)

// lockAndAppend does the append under the session's locks; plains are the
// entries' wire encodings (storekit.CheckEntry), their lines written and
// synced at once. It reports whether the append created the session, and
// sets due when the index is due for a rewrite (compactDueLocked). nonce is the Store's writer mark (markWriter), or "" when it has none:
// with one, only the first append of a burst writes the session's record
// (pending.go).
func (s *Store) lockAndAppend(ctx context.Context, ix *index, key store.Key, entries []transcript.Entry, plains [][]byte, create bool, dirs *dirSyncs, nonce string, due *bool) (bool, error) {
	// Few returns after the defers, so that they cost no more than calls.
	var snap snapshot
	ss, err := ix.lockSession(ctx, key.ID, &snap)
	if err != nil {
		return false, err
	}
	defer ix.unlockSession(ss)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	sf, known, err := s.openSession(ctx, ix, key.ID, true, create, ss, &snap)
	if err != nil || sf == nil {
		if err == nil {
			err = storekit.ConflictError(key, entries[0].ParentID, "")
		}
		return false, err
	}
	defer sf.close()
	return s.appendOpen(ix, key, sf, &snap, known, entries, plains, dirs, nonce, due)
}

// appendOpen is lockAndAppend once the session's file is open and locked,
// snap what openSession saw of its record (all of it when known).
func (s *Store) appendOpen(ix *index, key store.Key, sf *sfile, snap *snapshot, known bool, entries []transcript.Entry, plains [][]byte, dirs *dirSyncs, nonce string, due *bool) (bool, error) {
	e := entries[0]
	next, pend := &snap.rec, snap.pend
	var err error
	if s.fold {
		// On a file system that folds case the file we hold may be
		// another spelling's, made since the check before the lock.
		if err := ix.checkCase(key.ID); err != nil {
			return false, err
		}
		known = false // and the record may have changed meanwhile
	}
	if !known {
		if known, pend, err = s.currentInto(ix, key, sf, next); err != nil {
			return false, err
		}
	}
	head, pos := "", 0
	if known {
		if next.badTail {
			return false, s.tailError(key, sf, next.info.Entries-1)
		}
		head, pos = next.head, next.info.Entries
	} else {
		*next = rec{titleOK: true}
	}
	if err := storekit.CheckParent(key, head, e); err != nil {
		return false, err
	}
	// Everything that can fail goes before the write: once the lines are
	// written and synced, the append has happened and must report so.
	var lines []byte
	var start [1]int64
	starts := start[:] // of each line, from the end of the file
	if len(entries) > 1 {
		starts = make([]int64, len(entries))
	}
	for i, e := range entries {
		line, err := s.lineOf(plains[i], key, pos+i)
		if err != nil {
			return false, err
		}
		if len(line) > transcript.MaxLineSize {
			// No reader would take the line back.
			return false, lineTooLong(key, e, len(line))
		}
		if err := s.applyEntry(next, key, e); err != nil {
			return false, err
		}
		starts[i] = int64(len(lines))
		if len(entries) == 1 {
			lines = line
		} else {
			lines = append(lines, line...)
		}
	}
	next.head = entries[len(entries)-1].ID
	if sf.size == 0 {
		// A new file: its name must survive a crash too. The file is
		// empty until the line below, so a failure here stores nothing.
		if dirs != nil {
			dirs.add(ix.dir) // synced once for the whole bulk
		} else if err := durable.SyncDir(ix.dir); err != nil {
			return false, fmt.Errorf("filestore: session %s: %w", key, err)
		}
	}
	if err := s.writeLine(sf, lines); err != nil {
		return false, fmt.Errorf("filestore: session %s: %w", key, err)
	}
	for i := range entries {
		if pos+i == offsetEvery {
			// The offsets file is made: the folder changes.
			ix.changeDir(func() error { s.noteOffset(sf, pos+i, sf.size+starts[i]); return nil })
			continue
		}
		s.noteOffset(sf, pos+i, sf.size+starts[i])
	}
	if pend != nil {
		// The burst's mark is open: no record and no fstat. The size is
		// known under the lock; the mtime waits for the next fstat.
		next.fileState = fileState{size: sf.size + int64(len(lines)), mtime: unknownMtime, ino: sf.ino}
	} else if err := sf.stat(); err != nil {
		next.size = -1 // unknown: the next use reads it again
	} else {
		next.fileState = sf.fileState
	}
	now := time.Now()
	first := false
	ix.mu.Lock()
	ix.putCopyLocked(next)
	switch {
	case pend != nil:
		// Still the session's: ix.mine changes only under its lock.
		pend.last = now
	case nonce != "" && dirs == nil && !ix.dropped:
		// The first append of a burst: the record, and the mark that
		// says the next appends come without one.
		if ix.mine == nil {
			ix.mine = map[string]*pending{}
		}
		ix.mine[key.ID] = &pending{nonce: nonce, since: now, last: now}
		ix.pending.Add(1)
		ix.writeLocked(appendMark(appendRecord(nil, next, s.cfg.protector != nil), 'U', unsureBody(nonce, key.ID)))
		first = true
	default:
		ix.writeLocked(appendRecord(nil, next, s.cfg.protector != nil))
	}
	*due = ix.compactDueLocked()
	ix.mu.Unlock()
	if first {
		s.scheduleFlush()
	}
	return pos == 0, nil
}

// faultHook, set by tests only (export_test.go), runs after an append's
// write and before its sync, and may fail it as an I/O error would.
var faultHook func(path string) error

// writeLine writes line at the end of the file and syncs it. On failure it
// cuts the file back, so that no part of an entry that was not acknowledged
// stays (if the cut fails too, the next open sets the torn line aside).
func (s *Store) writeLine(sf *sfile, line []byte) error {
	_, err := sf.f.WriteAt(line, sf.size)
	if err == nil && faultHook != nil {
		err = faultHook(sf.path)
	}
	if err == nil {
		err = durable.SyncData(sf.f)
	}
	if err != nil {
		if sf.f.Truncate(sf.size) == nil {
			durable.SyncData(sf.f)
		}
		return err
	}
	return nil
}

// current returns the index record of the session held in sf, true to the
// file: if the file's size, mtime or inode is not the record's, it takes in the
// records other processes appended, and if that is not enough it reads the
// transcript. It returns nil for a file without entries (empty, or blank
// lines only). The caller holds the session's lock.
func (s *Store) current(ix *index, key store.Key, sf *sfile) (*rec, error) {
	var c rec
	known, _, err := s.currentInto(ix, key, sf, &c)
	if !known || err != nil {
		return nil, err
	}
	return &c, nil
}

// currentInto is current into dst, reporting whether the session has
// entries, and also, when it is one of the Store's deferred sessions
// (pending.go), its pending, in the same hold of ix.mu when the record is
// current.
func (s *Store) currentInto(ix *index, key store.Key, sf *sfile, dst *rec) (known bool, pend *pending, err error) {
	ix.mu.Lock()
	pend = ix.mine[key.ID]
	r := ix.recs[key.ID]
	if r != nil && r.sameAs(sf.fileState) {
		*dst = *r
		ix.mu.Unlock()
		return true, pend, nil
	}
	ix.mu.Unlock()
	c, err := s.currentSlow(ix, key, sf)
	if c == nil || err != nil {
		return false, pend, err
	}
	*dst = *c
	return true, pend, nil
}

func (s *Store) currentSlow(ix *index, key store.Key, sf *sfile) (*rec, error) {
	ix.mu.Lock()
	r := ix.recs[key.ID]
	if r == nil && sf.size == 0 {
		// A new transcript: no record can say it holds entries (records
		// follow appends), so there is nothing to take in.
		ix.mu.Unlock()
		return nil, nil
	}
	if r == nil || !r.sameAs(sf.fileState) {
		if err := ix.catchUpLocked(); err != nil {
			ix.mu.Unlock()
			return nil, err
		}
		r = ix.recs[key.ID]
	}
	if r != nil && r.sameAs(sf.fileState) {
		c := *r
		ix.mu.Unlock()
		return &c, nil
	}
	ix.mu.Unlock()
	var fresh *rec
	if sf.size > 0 {
		var err error
		if fresh, err = s.scan(key, sf); err != nil {
			return nil, err
		}
	}
	if fresh == nil {
		// Empty, or only blank lines: no entries, no session.
		if r != nil {
			ix.mu.Lock()
			ix.removeLocked(key.ID)
			ix.writeLocked(appendDelete(nil, key.ID))
			ix.mu.Unlock()
		}
		return nil, nil
	}
	c := *fresh
	ix.mu.Lock()
	ix.putLocked(fresh)
	ix.writeLocked(appendRecord(nil, fresh, s.cfg.protector != nil))
	ix.mu.Unlock()
	return &c, nil
}

// tailError returns the error of the session's last line, which does not
// decode: nothing can be appended after it.
func (s *Store) tailError(key store.Key, sf *sfile, pos int) error {
	start, err := lastLineStart(sf.f, sf.size-1)
	if err != nil {
		return err
	}
	line := make([]byte, sf.size-1-start)
	if _, err := sf.f.ReadAt(line, start); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	_, err = s.decodeLine(line, key, pos, func() string { return sf.path + ": last line" })
	if err == nil {
		// It decodes now (another program fixed it): read it again.
		return fmt.Errorf("filestore: session %s changed while it was read; try again", key)
	}
	return err
}

// Delete removes the session: its transcript, torn lines set aside, offsets
// and turn lock file. It waits for an append or read in progress, in any
// process, to finish. The same id then starts empty.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	_, err := s.deleteSession(ctx, key, nil)
	return err
}

// deleteSession deletes the session, and reports whether it did. With seen
// (a record retention decided on) it deletes the session only if, under
// its exclusive lock, the session is still as seen; one that changed or
// went meanwhile is left alone.
func (s *Store) deleteSession(ctx context.Context, key store.Key, seen *rec) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	ix, err := s.index(ctx, key.Namespace(), false)
	if err != nil || ix == nil {
		return false, err
	}
	if err := ix.checkCase(key.ID); err != nil {
		return false, err
	}
	if seen == nil {
		// Retention and Prune hold the mark already.
		unmark, _ := s.markWriter(ix)
		defer unmark()
	}
	ss, err := ix.lockSession(ctx, key.ID, nil)
	if err != nil {
		return false, err
	}
	defer ix.unlockSession(ss)
	// Not a kept file: the transcript goes, and its space with the last
	// descriptor.
	s.handles.drop(ss)
	sf, _, err := s.openSession(ctx, ix, key.ID, true, false, nil, nil)
	if err != nil {
		return false, err
	}
	if sf != nil {
		defer sf.close()
	}
	if seen != nil {
		if sf == nil {
			return false, nil
		}
		cur, err := s.current(ix, key, sf)
		if err != nil {
			return false, err
		}
		if !unchangedSince(cur, *seen) {
			return false, nil
		}
	}
	// The side files first: until the transcript goes, the session is
	// whole without them (set-aside lines stay unread, offsets are rebuilt).
	base := filepath.Join(ix.dir, key.ID)
	err = ix.changeDir(func() error {
		for _, ext := range []string{tornExt, offsetsExt} {
			if err := os.Remove(base + ext); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		if sf != nil {
			if err := os.Remove(sf.path); err != nil {
				return err
			}
		}
		removeLockFile(base + lockExt)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("filestore: deleting session %s: %w", key, err)
	}
	ix.mu.Lock()
	if ix.recs[key.ID] != nil || sf != nil {
		ix.removeLocked(key.ID)
		b := appendDelete(nil, key.ID)
		if p := ix.mine[key.ID]; p != nil {
			b = appendMark(b, 'V', unsureBody(p.nonce, key.ID))
			ix.forgetMineLocked(key.ID)
		}
		ix.writeLocked(b)
	}
	ix.mu.Unlock()
	// Without it a crash could bring the file back.
	if err := durable.SyncDir(ix.dir); err != nil {
		return false, fmt.Errorf("filestore: deleting session %s: %w", key, err)
	}
	return true, nil
}

// Prune deletes the sessions of namespace beyond r as of now, and returns how
// many it deleted. It decides on the index and deletes each session it
// chose only if, under the session's exclusive lock, the session is still
// as it was then: one appended to meanwhile is left alone.
func (s *Store) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	if err := checkNamespace(ns); err != nil {
		return 0, err
	}
	if r.Unlimited() {
		return 0, nil
	}
	if err := s.refuseIfMarked(); err != nil {
		return 0, err
	}
	ix, err := s.index(ctx, ns, false)
	if err != nil || ix == nil {
		return 0, err
	}
	if err := s.ready(ctx, ix); err != nil {
		return 0, err
	}
	unmark, _ := s.markWriter(ix)
	defer unmark()
	ix.mu.Lock()
	victims := ix.victimsLocked(r, now, "")
	ix.mu.Unlock()
	if retentionHook != nil {
		retentionHook(victims)
	}
	n := 0
	for _, v := range victims {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		deleted, err := s.deleteSession(ctx, ns.Key(v.info.ID), &v)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// lineTooLong is the error for entry e of session key, n bytes as stored:
// more than a line may hold, so no reader would take it back.
func lineTooLong(key store.Key, e transcript.Entry, n int) error {
	return fmt.Errorf("%w: session %s: entry %q is %d bytes stored, more than the %d a line may hold", store.ErrInvalidEntry, key, e.ID, n, transcript.MaxLineSize)
}
