// Package teststores gives tests a fresh instance of every store in the
// repository, so a behaviour can be checked against all of them. Stores
// that need a server take its URL from SPOOL_TEST_POSTGRES and
// SPOOL_TEST_REDIS; without it their entries skip (fail under CI=true).
package teststores

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/sqlitestore"
)

// Maker returns a fresh, empty store, closed when the test ends.
type Maker func(t testing.TB) store.Store

// Names of the stores, in a stable order.
var Names = []string{"memory", "file", "sqlite", "postgres", "redis"}

// All returns a Maker for every store.
func All() map[string]Maker {
	return map[string]Maker{
		"memory":   func(t testing.TB) store.Store { return memstore.New() },
		"file":     File,
		"sqlite":   SQLite,
		"postgres": Postgres,
		"redis":    Redis,
	}
}

// File returns a file store in a temporary folder, with no retention.
func File(t testing.TB) store.Store {
	s, err := filestore.New(t.Context(), t.TempDir(), filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// SQLite returns a SQLite store in a temporary file.
func SQLite(t testing.TB) store.Store {
	s, err := sqlitestore.New(context.Background(), filepath.Join(t.TempDir(), "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Name returns a random name with prefix, valid as an id or a schema.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Env returns the variable's value, skipping the test without it (failing
// it under CI=true).
func Env(t testing.TB, name, example string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set (CI=true)", name)
		}
		t.Skipf("%s is not set (e.g. %s); skipping", name, example)
	}
	return v
}

// PostgresURL returns a URL of SPOOL_TEST_POSTGRES with a schema of the
// test's own, dropped when it ends.
func PostgresURL(t testing.TB) string {
	base := Env(t, "SPOOL_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	schema := Name("spool_test_")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	return u.String()
}

// Postgres returns a Postgres store in a schema of the test's own.
func Postgres(t testing.TB) store.Store {
	s, err := pgstore.Open(context.Background(), PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// RedisURL returns a URL of SPOOL_TEST_REDIS with a key prefix of the
// test's own, whose keys are deleted when it ends.
func RedisURL(t testing.TB) string {
	base := Env(t, "SPOOL_TEST_REDIS", "redis://127.0.0.1:6379/0")
	prefix := Name("spooltest")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("prefix", prefix)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		opt, err := redis.ParseURL(base)
		if err != nil {
			return
		}
		c := redis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Unlink(ctx, iter.Val())
		}
	})
	return u.String()
}

// Redis returns a Redis store with a key prefix of the test's own.
func Redis(t testing.TB) store.Store {
	s, err := redisstore.Open(context.Background(), RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
