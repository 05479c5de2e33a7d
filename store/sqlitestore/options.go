package sqlitestore

import (
	"time"

	"github.com/spool-go/spool/seal"
)

// An Option configures a Store. New and Open fail with the error of the
// first option that refuses its argument.
type Option func(*config) error

type config struct {
	ttl         time.Duration
	now         func() time.Time
	protector   seal.Protector
	busyTimeout time.Duration
	readConns   int
}

func defaults() config {
	return config{now: time.Now, busyTimeout: 10 * time.Second, readConns: 4}
}

// WithTTL expires sessions idle longer than d: they are hidden from every
// read and listing and deleted by the sweep (see the package doc, "Expiry"),
// unless an approval is pending. Zero or less keeps sessions until deleted,
// which is the default.
func WithTTL(d time.Duration) Option {
	return func(c *config) error {
		c.ttl = max(d, 0)
		return nil
	}
}

// WithClock sets the clock that TTL expiry is measured against (time.Now by
// default). Tests use it to move time.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now != nil {
			c.now = now
		}
		return nil
	}
}

// WithProtector seals every stored entry and title with p (see the package
// doc, "Encryption at rest"). A database is written either with a protector
// or without one for its whole life; New and Open refuse the other.
func WithProtector(p seal.Protector) Option {
	return func(c *config) error {
		c.protector = p
		return nil
	}
}

// WithBusyTimeout sets how long a write waits for another connection or
// process holding the database's write lock (10 seconds by default) before
// failing with SQLITE_BUSY.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d > 0 {
			c.busyTimeout = d
		}
		return nil
	}
}

// WithReadConns sets how many connections serve reads (4 by default).
// Writes always go through one connection per Store; SQLite admits one
// writer at a time anyway.
func WithReadConns(n int) Option {
	return func(c *config) error {
		if n > 0 {
			c.readConns = n
		}
		return nil
	}
}

// TTL returns the store's idle TTL (WithTTL), zero when it keeps sessions
// until they are deleted. It implements store.Expiring.
func (s *Store) TTL() time.Duration { return s.cfg.ttl }
