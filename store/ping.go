package store

import "context"

// Pinger checks that a store can be reached, for readiness probes: a
// store behind a network connection (Postgres, Redis) asks its server
// with the cheapest round trip it has.
type Pinger interface {
	// Ping returns nil when the store answers, or why it does not.
	Ping(ctx context.Context) error
}

// Ping checks that s answers: with its Ping when it is a Pinger, else
// with the cheapest call every store has, a List of one session of ns.
func Ping(ctx context.Context, s Store, ns Namespace) error {
	if p, ok := s.(Pinger); ok {
		return p.Ping(ctx)
	}
	_, err := s.List(ctx, ns, ListOptions{Limit: 1})
	return err
}
