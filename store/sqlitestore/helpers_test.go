package sqlitestore

import (
	"bytes"
	"crypto/sha256"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// openTest opens a new database in a folder of the test's own.
func openTest(t *testing.T, opts ...Option) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "spool.db"), opts...)
}

func openAt(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	s, err := New(t.Context(), path, opts...)
	if err != nil {
		t.Fatalf("New(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendAll(t *testing.T, s *Store, key store.Key, entries ...transcript.Entry) {
	t.Helper()
	for i, e := range entries {
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatalf("Append of entry %d to %s: %v", i, key, err)
		}
	}
}

// seed appends a new session of n chained entries, the first at start.
func seed(t *testing.T, s *Store, key store.Key, start time.Time, n int) []transcript.Entry {
	t.Helper()
	entries := storetest.Chain("", start, n)
	appendAll(t, s, key, entries...)
	return entries
}

func sameEntries(a, b []transcript.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// clock is a settable clock for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testProtector is a toy protector for tests only: a key byte, a MAC over
// the key, the associated data and the plaintext, and the plaintext XORed
// with the key, so that sealed text is neither readable nor movable.
type testProtector struct{ key byte }

var _ seal.Protector = testProtector{}

func (p testProtector) mac(ad, plain []byte) []byte {
	h := sha256.New()
	h.Write([]byte{p.key})
	h.Write(ad)
	h.Write(plain)
	return h.Sum(nil)[:8]
}

func (p testProtector) Seal(plain, ad []byte) ([]byte, error) {
	out := append([]byte{p.key}, p.mac(ad, plain)...)
	for _, c := range plain {
		out = append(out, c^p.key)
	}
	return out, nil
}

func (p testProtector) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) < 9 || sealed[0] != p.key {
		return nil, seal.ErrWrongKey
	}
	plain := make([]byte, 0, len(sealed)-9)
	for _, c := range sealed[9:] {
		plain = append(plain, c^p.key)
	}
	if !bytes.Equal(sealed[1:9], p.mac(ad, plain)) {
		return nil, seal.ErrTampered
	}
	return plain, nil
}
