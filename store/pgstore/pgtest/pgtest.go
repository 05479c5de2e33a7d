// Package pgtest gives a test a PostgreSQL schema of its own for pgstore,
// so that tests (and the processes they start, such as several `spool
// serve` replicas sharing one store) never meet another test's sessions.
//
// The database comes from SPOOL_TEST_POSTGRES, for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. Without it the
// test is skipped, unless CI=true, where it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env is the variable that names the test database.
const Env = "SPOOL_TEST_POSTGRES"

// DatabaseURL returns the test database's URL, skipping t when Env is not
// set (failing it when CI=true).
func DatabaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set (CI=true): PostgreSQL tests cannot run", Env)
		}
		t.Skipf("%s is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable); skipping PostgreSQL tests", Env)
	}
	return u
}

// URL returns a store URL for pgstore (store.Open, `--store`) on a fresh
// schema named spool_test_<random>, which the store creates on first open
// and which is dropped, with everything in it, when t ends. Every process
// given the URL shares that one schema.
func URL(t testing.TB) string {
	t.Helper()
	raw := DatabaseURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", Env, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "spool_test_" + hex.EncodeToString(b)
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	t.Cleanup(func() { drop(t, raw, schema) })
	return u.String()
}

func drop(t testing.TB, raw, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Errorf("pgtest: dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: dropping schema %s: %v", schema, err)
	}
}
