package filestore

// SetFaultHook makes every append call f, with the transcript's path,
// after writing its line and before syncing it; an error from f fails the
// append as an I/O error would. It returns the func that removes f. Tests
// using it must not run in parallel with others.
func SetFaultHook(f func(path string) error) (restore func()) {
	faultHook = f
	return func() { faultHook = nil }
}

// SetCompareHook makes every comparison of a folder with its index, session
// by session, call f with the folder. It returns the func that removes f.
func SetCompareHook(f func(dir string)) (restore func()) {
	compareHook = f
	return func() { compareHook = nil }
}

// Flush writes s's deferred records now (pending.go).
func Flush(s *Store) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	var all []*index
	for _, ix := range s.indexes {
		all = append(all, ix)
	}
	s.mu.Unlock()
	s.flush(all, true)
}

// Die makes s act as if its process had been killed: its writer lock goes
// and its files close, as the kernel closes a killed process's files, with
// nothing more written (no deferred record either). s must not be used
// after.
func Die(s *Store) {
	s.mu.Lock()
	s.closed = true
	s.hot.Store(nil)
	if s.flushTimer != nil {
		s.flushTimer.Stop()
		s.flushTimer = nil
	}
	if s.writer != nil {
		unlockAndClose(s.writer.lock)
		s.writer = nil
	}
	indexes := s.indexes
	s.mu.Unlock()
	s.handles.close()
	for _, ix := range indexes {
		ix.mu.Lock()
		ix.dropped = true
		ix.j.close()
		ix.mu.Unlock()
	}
}
