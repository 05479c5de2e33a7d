package memstore

// LockCount returns how many per-key locks s keeps, for tests that check
// that released locks are dropped.
func LockCount(s *Store) int {
	return s.locks.Len()
}
