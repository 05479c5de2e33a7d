package memstore

// LockCount returns how many per-key locks s keeps, for tests that check
// that released locks are dropped.
func LockCount(s *Store) int {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	return len(s.locks.byKey)
}
