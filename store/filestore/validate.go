package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ensureLoaded loads ix's index and compares it with the folder, the first
// time the process uses the namespace.
func (s *Store) ensureLoaded(ctx context.Context, ix *index) error {
	ix.mu.Lock()
	loaded := ix.loaded
	ix.mu.Unlock()
	if loaded {
		return nil
	}
	return s.validate(ctx, ix, true)
}

// ready brings ix up to date before it answers from the index: it applies
// the records other processes appended, and compares the index with the
// folder when the folder changed (a transcript added or removed by another
// program) or the index was lost or damaged. The cost when nothing changed
// is two stat calls.
func (s *Store) ready(ctx context.Context, ix *index) error {
	if err := s.ensureLoaded(ctx, ix); err != nil {
		return err
	}
	ix.mu.Lock()
	err := ix.catchUpLocked()
	need := ix.needValidate
	if !need {
		st, serr := os.Stat(ix.dir)
		need = serr != nil || !st.ModTime().Equal(ix.dirMod)
	}
	due := err == nil && !need && ix.compactDueLocked()
	ix.mu.Unlock()
	if err != nil {
		return err
	}
	if due {
		// Mostly superseded records: rewrite the index. A failure leaves
		// the old one, which is still right.
		ix.rewrite()
	}
	if need {
		if err := s.validate(ctx, ix, false); err != nil {
			return err
		}
	}
	return s.refreshUnsure(ctx, ix)
}

// validate compares the index with the folder: a transcript whose size or
// mtime is not what its record says is read again (a crash between the
// append and its record, a power loss that kept the line but not the
// record, another program's write), one without a record is read, and a
// record without a transcript is dropped. It costs one stat per session
// plus reading the transcripts that changed. With first, it does so only
// if no validation loaded the index yet (two callers racing to load it
// validate once). It takes ix.valMu; the caller holds no lock of ix and no
// session lock.
func (s *Store) validate(ctx context.Context, ix *index, first bool) error {
	ix.valMu.Lock()
	defer ix.valMu.Unlock()
	ix.mu.Lock()
	if first && ix.loaded {
		ix.mu.Unlock()
		return nil
	}
	if err := ix.catchUpLocked(); err != nil {
		ix.mu.Unlock()
		return err
	}
	indexOK := ix.j.id != nil && !ix.needValidate
	ix.needValidate = false
	ix.validating = true
	dirSt, derr := os.Stat(ix.dir)
	gen := ix.dirGen // this process's changes to the folder from now on record their own mtimes
	dead := ix.deadLocked()
	if derr == nil && indexOK && ix.provenLocked(dirSt.ModTime().UnixNano(), dead) {
		// Every writer that could have left the index behind is alive,
		// and nothing else changed the folder (marks.go).
		ix.validating = false
		ix.loaded = true
		ix.dirMod = dirSt.ModTime()
		ix.mu.Unlock()
		return nil
	}
	known := make(map[string]fileState, len(ix.recs))
	for id, r := range ix.recs {
		known[id] = r.fileState
	}
	ix.mu.Unlock()
	if compareHook != nil {
		compareHook(ix.dir)
	}

	done := false
	defer func() {
		ix.mu.Lock()
		ix.validating = false
		if !done {
			ix.needValidate = true // try again at the next chance
		}
		ix.mu.Unlock()
	}()
	if derr != nil {
		if !errors.Is(derr, fs.ErrNotExist) {
			return fmt.Errorf("filestore: %w", derr)
		}
		// The folder is gone, and every session with it.
		ix.mu.Lock()
		ix.replaceAllLocked(map[string]*rec{})
		ix.j.close()
		ix.j.id = nil
		ix.loaded = true
		ix.mu.Unlock()
		done = true
		return nil
	}
	d, err := os.Open(ix.dir)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	var ids, files []string
	for _, name := range names {
		if id, ok := sessionID(name); ok {
			ids, files = append(ids, id), append(files, name)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	present := make(map[string]bool, len(ids))
	var stale []string
	err = statEach(d, files, func(i int, st fileState, regular bool) {
		if !regular || st.size == 0 {
			return // not a transcript, or one never written
		}
		present[ids[i]] = true
		if k, ok := known[ids[i]]; !ok || !k.sameAs(st) {
			stale = append(stale, ids[i])
		}
	})
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	for _, id := range stale {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A transcript that cannot be read now keeps its old record (or
		// none); the next validation tries again.
		s.rescan(ctx, ix, id, true)
	}

	ix.mu.Lock()
	removed := 0
	for id := range known {
		if present[id] {
			continue
		}
		// Made by this process since the folder was read?
		if st, err := os.Stat(sessionPath(ix.dir, id)); err == nil && st.Size() > 0 {
			continue
		}
		if ix.recs[id] != nil {
			ix.removeLocked(id)
			ix.writeLocked(appendDelete(nil, id))
			removed++
		}
	}
	ix.loaded = true
	if ix.dirGen == gen {
		ix.dirMod = dirSt.ModTime()
	}
	done = true
	ix.closeDeadLocked(dead)
	ix.mu.Unlock()
	rewritten := false
	if !indexOK || len(stale) > 0 || removed > 0 {
		rewritten = ix.rewrite() == nil
	}
	ix.mu.Lock()
	if rewritten {
		// The new index holds what the folder does, whatever went wrong
		// with records meanwhile.
		ix.needValidate = false
	}
	if ix.dirGen == gen {
		// The folder as compared, for the next cold Store; not as it is
		// now: a transcript made since it was read would be hidden. (A
		// change of this process since, the rewrite's included, recorded
		// the mtime it left.)
		ix.recordDirLocked(dirSt.ModTime())
	}
	ix.mu.Unlock()
	return nil
}

// compareHook, set by tests only, runs when validate compares a folder
// with its index session by session.
var compareHook func(dir string)

// rescan reads one transcript again and records what it holds (in the
// index file too, with record). The session's lock is held from the read
// to the record, so the record cannot land after a newer one.
func (s *Store) rescan(ctx context.Context, ix *index, id string, record bool) error {
	sf, _, err := s.openSession(ctx, ix, id, false, false, nil, nil)
	if err != nil {
		return err
	}
	var r *rec
	if sf != nil {
		defer sf.close()
		if r, err = s.scan(ix.key.Key(id), sf); err != nil {
			return err
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if r == nil {
		if ix.recs[id] != nil {
			ix.removeLocked(id)
			if record {
				ix.writeLocked(appendDelete(nil, id))
			}
		}
		return nil
	}
	if old := ix.recs[id]; !record && r.head == "" && old != nil && old.ino == r.ino {
		// No line decodes (sealed under a key this Store lacks, or
		// damaged): another writer's record is still the best known,
		// and its title says which (openTitleLocked).
		return nil
	}
	ix.putLocked(r)
	if record {
		ix.writeLocked(appendRecord(nil, r, s.cfg.protector != nil))
	}
	return nil
}
