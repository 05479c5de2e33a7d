package pgstore

import "context"

// Ping implements store.Pinger: a round trip to the database on one of
// the pool's connections (a new one when none is idle).
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }
