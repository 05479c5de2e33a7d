package store

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/spool-go/spool/store/internal/rules"
)

// OpenFunc opens a store from a URL of its scheme.
type OpenFunc func(ctx context.Context, u *url.URL) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]OpenFunc{}
)

// Register makes a store available to Open under scheme, like a
// database/sql driver. Store packages call it from init: "file" (package
// filestore), "memory" (memstore), "sqlite", "postgres" and "postgresql",
// "redis" and "rediss". It panics if scheme is registered twice.
func Register(scheme string, open OpenFunc) {
	openersMu.Lock()
	defer openersMu.Unlock()
	scheme = strings.ToLower(scheme)
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	var s []string
	for k := range openers {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Open opens the store that rawURL names: "file:" (the default folder),
// "file:/path", "memory:", "sqlite:/path/spool.db", "postgres://…",
// "redis://…". The scheme's package must be imported (for its init) for
// Open to know it.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := rules.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: bad store URL: %w", err)
	}
	if u.Scheme == "" {
		// The URL is not repeated: it may hold a password.
		return nil, fmt.Errorf("store: the store URL has no scheme (file:PATH, memory:, sqlite:PATH, postgres://…, redis://…)")
	}
	openersMu.RLock()
	open, ok := openers[strings.ToLower(u.Scheme)]
	openersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("store: unknown scheme %q (known: %s; is the store's package imported?)", u.Scheme, strings.Join(Schemes(), ", "))
	}
	return open(ctx, u)
}

// Close closes s if it holds resources (implements io.Closer).
func Close(s Store) error {
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
