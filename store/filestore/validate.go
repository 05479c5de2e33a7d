package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ensureLoaded loads sc's index and compares it with the folder, the first
// time the process uses the scope.
func (s *Store) ensureLoaded(ctx context.Context, sc *scope) error {
	sc.mu.Lock()
	loaded := sc.loaded
	sc.mu.Unlock()
	if loaded {
		return nil
	}
	sc.valMu.Lock()
	defer sc.valMu.Unlock()
	sc.mu.Lock()
	loaded = sc.loaded
	sc.mu.Unlock()
	if loaded {
		return nil
	}
	return s.validate(ctx, sc)
}

// ready brings sc up to date before it answers from the index: it applies
// the records other processes appended, and compares the index with the
// folder when the folder changed (a transcript added or removed by another
// program) or the index was lost or damaged. The cost when nothing changed
// is two stat calls.
func (s *Store) ready(ctx context.Context, sc *scope) error {
	if err := s.ensureLoaded(ctx, sc); err != nil {
		return err
	}
	sc.mu.Lock()
	err := sc.catchUp()
	need := sc.needValidate
	if !need {
		st, serr := os.Stat(sc.dir)
		need = serr != nil || !st.ModTime().Equal(sc.dirMod)
	}
	if err == nil && !need && sc.compactDue() {
		// Mostly superseded records: rewrite the index. A failure leaves
		// the old one, which is still right.
		sc.rewrite()
	}
	sc.mu.Unlock()
	if err != nil {
		return err
	}
	if need {
		sc.valMu.Lock()
		defer sc.valMu.Unlock()
		return s.validate(ctx, sc)
	}
	return nil
}

// validate compares the index with the folder: a transcript whose size or
// mtime is not what its record says is read again (a crash between the
// append and its record, a power loss that kept the line but not the
// record, another program's write), one without a record is read, and a
// record without a transcript is dropped. It costs one stat per session
// plus reading the transcripts that changed. The caller holds sc.valMu and
// no session lock.
func (s *Store) validate(ctx context.Context, sc *scope) error {
	sc.mu.Lock()
	if err := sc.catchUp(); err != nil {
		sc.mu.Unlock()
		return err
	}
	indexOK := sc.j.id != nil && !sc.needValidate
	sc.needValidate = false
	sc.validating = true
	known := make(map[string]fileState, len(sc.recs))
	for id, r := range sc.recs {
		known[id] = r.fileState
	}
	dirSt, derr := os.Stat(sc.dir)
	sc.mu.Unlock()

	done := false
	defer func() {
		sc.mu.Lock()
		sc.validating = false
		if !done {
			sc.needValidate = true // try again at the next chance
		}
		sc.mu.Unlock()
	}()
	if derr != nil {
		if !errors.Is(derr, fs.ErrNotExist) {
			return fmt.Errorf("filestore: %w", derr)
		}
		// The folder is gone, and every session with it.
		sc.mu.Lock()
		sc.replaceAll(map[string]*rec{})
		sc.j.close()
		sc.j.id = nil
		sc.loaded = true
		sc.mu.Unlock()
		done = true
		return nil
	}
	d, err := os.Open(sc.dir)
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
		if k, ok := known[ids[i]]; !ok || k != st {
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
		s.rescan(ctx, sc, id)
	}

	sc.mu.Lock()
	defer sc.mu.Unlock()
	removed := 0
	for id := range known {
		if present[id] {
			continue
		}
		// Made by this process since the folder was read?
		if st, err := os.Stat(sessionPath(sc.dir, id)); err == nil && st.Size() > 0 {
			continue
		}
		if sc.recs[id] != nil {
			sc.remove(id)
			sc.write(appendDelete(nil, id))
			removed++
		}
	}
	sc.loaded = true
	sc.dirMod = dirSt.ModTime()
	done = true
	if !indexOK || len(stale) > 0 || removed > 0 {
		if sc.rewrite() == nil {
			// The new index holds what the folder does, whatever went
			// wrong with records meanwhile.
			sc.needValidate = false
		}
	}
	return nil
}

// rescan reads one transcript again and records what it holds. The
// session's lock is held from the read to the record, so the record cannot
// land after a newer one.
func (s *Store) rescan(ctx context.Context, sc *scope, id string) error {
	sf, err := s.openSession(ctx, sc, id, false, false)
	if err != nil {
		return err
	}
	var r *rec
	if sf != nil {
		defer sf.close()
		if r, err = s.scan(sc.key.Key(id), sf); err != nil {
			return err
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if r == nil {
		if sc.recs[id] != nil {
			sc.remove(id)
			sc.write(appendDelete(nil, id))
		}
		return nil
	}
	sc.put(r)
	sc.write(appendRecord(nil, r, s.cfg.protector != nil))
	return nil
}
