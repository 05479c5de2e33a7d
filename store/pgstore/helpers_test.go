package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore/pgtest"
	"github.com/spool-go/spool/transcript"
)

// testURL returns SPOOL_TEST_POSTGRES, skipping the test without it
// (failing it under CI=true).
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.DatabaseURL(t)
}

var (
	adminOnce sync.Once
	adminPool *pgxpool.Pool
	adminErr  error
)

// admin returns a small pool for test set-up and raw SQL, shared by the
// package's tests.
func admin(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := testURL(t)
	adminOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			adminErr = err
			return
		}
		cfg.MaxConns = 2
		adminPool, adminErr = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if adminErr != nil {
		t.Fatalf("connecting to SPOOL_TEST_POSTGRES: %v", adminErr)
	}
	return adminPool
}

// newSchema returns the name of a schema of the test's own, dropped when
// the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	pool := admin(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "spool_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// openIn opens a store on schema with a pool of its own, closed when the
// test ends (before the schema is dropped).
func openIn(t testing.TB, schema string, opts ...Option) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, testURL(t), append([]Option{WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newStore opens a store on a fresh schema.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openIn(t, newSchema(t), opts...)
}

// clock is an injectable clock for TTL tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// chain appends entries to a session, linking each to the one before.
type chain struct {
	t    testing.TB
	s    store.Store
	key  store.Key
	head string
	now  time.Time
	all  []transcript.Entry
}

func newChain(t testing.TB, s store.Store, key store.Key, now time.Time) *chain {
	return &chain{t: t, s: s, key: key, now: now}
}

// entry builds the next entry without appending it.
func (c *chain) entry(typ transcript.Type, data any) transcript.Entry {
	c.t.Helper()
	c.now = c.now.Add(time.Millisecond)
	e, err := transcript.New(c.now, typ, "turn", data)
	if err != nil {
		c.t.Fatal(err)
	}
	e.ParentID = c.head
	return e
}

// add appends an entry of typ with data and returns it.
func (c *chain) add(typ transcript.Type, data any) transcript.Entry {
	c.t.Helper()
	return c.put(c.entry(typ, data))
}

func (c *chain) put(e transcript.Entry) transcript.Entry {
	c.t.Helper()
	if err := c.s.Append(context.Background(), c.key, e); err != nil {
		c.t.Fatalf("append %s to %s: %v", e.Type, c.key, err)
	}
	c.head = e.ID
	c.all = append(c.all, e)
	return e
}

func (c *chain) user(text string) transcript.Entry {
	return c.add(transcript.TypeUserMessage, transcript.UserMessage{Text: text})
}

func (c *chain) assistant(text string) transcript.Entry {
	return c.add(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: text})
}

func equalEntries(t testing.TB, got, want []transcript.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

var bg = context.Background()

// withParams adds query parameters to a URL.
func withParams(u, params string) string {
	if strings.Contains(u, "?") {
		return u + "&" + params
	}
	return u + "?" + params
}

// openPool opens a Store on a pool made from cfg (a dialer or a connect
// hook of the test's own), in schema, with opts; both close when the test
// ends.
func openPool(t *testing.T, cfg *pgxpool.Config, schema string, opts ...Option) *Store {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(t.Context(), pool, append([]Option{WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
