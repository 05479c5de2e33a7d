package redisstore

import "context"

// Ping implements store.Pinger: Redis's PING (on a cluster, to the node
// the client picks).
func (s *Store) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }
