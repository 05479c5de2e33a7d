package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
)

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	schema := newSchema(t)
	const replicas = 8
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(bg, time.Minute)
			defer cancel()
			stores[i], errs[i] = Open(ctx, withParams(testURL(t), "pool_max_conns=2"), WithSchema(schema))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	rows, err := admin(t).Query(bg, "SELECT version FROM "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+" ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) || versions[len(versions)-1] != latestVersion {
		t.Fatalf("versions applied %v, want each of 1..%d once", versions, latestVersion)
	}
	// Every replica works on the one schema.
	c := newChain(t, stores[0], store.Key{Agent: "a", ID: "s"}, t0)
	c.user("hello")
	got, err := stores[replicas-1].Read(bg, store.Key{Agent: "a", ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, c.all)
}

func TestRefusesNewerSchema(t *testing.T) {
	schema := newSchema(t)
	openIn(t, schema)
	if _, err := admin(t).Exec(bg, "INSERT INTO "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+" (version, name) VALUES ($1, 'from the future')", latestVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(bg, testURL(t), WithSchema(schema))
	if !errors.Is(err, ErrSchemaVersion) || !strings.Contains(err.Error(), schema) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaVersion naming the schema", err)
	}
}

func TestSearchIndexIsTrigram(t *testing.T) {
	s := newStore(t)
	var def string
	err := admin(t).QueryRow(bg, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'entries_search'`, s.Schema()).Scan(&def)
	if errors.Is(err, pgx.ErrNoRows) {
		t.Skip("pg_trgm is not available here: search runs unindexed")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "gin_trgm_ops") {
		t.Fatalf("search index: %s", def)
	}
}

func TestOpenURL(t *testing.T) {
	schema := newSchema(t)
	u := testURL(t)
	st, err := store.Open(bg, withParams(strings.Replace(u, "postgres://", "postgresql://", 1), "schema="+schema+"&ttl=1h&lock_conns=2"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(st)
	s := st.(*Store)
	if s.Schema() != schema || s.TTL() != time.Hour || s.lockConns != 2 {
		t.Fatalf("URL parameters not applied: schema %q ttl %v lock_conns %d", s.Schema(), s.TTL(), s.lockConns)
	}
	if _, err := Open(bg, withParams(u, "ttl=soon")); err == nil || !strings.Contains(err.Error(), "ttl") {
		t.Fatalf("bad ttl: %v", err)
	}
	// One value each: which of two wins must not depend on the store.
	for _, q := range []string{"ttl=720h&ttl=1s", "schema=a&schema=b"} {
		if _, err := Open(bg, withParams(u, q)); err == nil || !strings.Contains(err.Error(), "given 2 times") {
			t.Fatalf("?%s: %v, want the parameter refused", q, err)
		}
	}
	_, err = Open(bg, "postgres://spool:hunter2@127.0.0.1:5432/test?pool_max_conns=many")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad URL: %v (must fail without quoting the password)", err)
	}
}

// downTo4 takes s's schema back to version 4: the listing index of before
// migration 5.
func downTo4(t *testing.T, s *Store) {
	t.Helper()
	_, err := admin(t).Exec(bg, s.sql(`DROP INDEX {s}.sessions_listing;
		CREATE INDEX sessions_activity ON {s}.sessions (agent, owner, last_ns DESC, id DESC);
		DELETE FROM {s}.schema_migrations WHERE version = 5`))
	if err != nil {
		t.Fatal(err)
	}
}

// TestMigrationListingIndex takes a schema with sessions back to version 4
// and checks that migration 5 replaces sessions_activity with the partial
// sessions_listing, and that listings still page through every session.
func TestMigrationListingIndex(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema)
	ns := store.Namespace{Agent: "a"}
	for i := range 5 {
		c := newChain(t, s, ns.Key(fmt.Sprint("s", i)), t0.Add(time.Duration(i)*time.Second))
		c.user("hello")
	}
	downTo4(t, s)
	s.Close()

	s = openIn(t, schema)
	rows, err := admin(t).Query(bg, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'sessions' ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sessions_listing", "sessions_pkey"}; !slices.Equal(names, want) {
		t.Fatalf("indexes of sessions after migrating: %v, want %v", names, want)
	}
	var ids []string
	for opt := (store.ListOptions{Limit: 2}); ; {
		page, err := s.List(bg, ns, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range page.Sessions {
			ids = append(ids, i.ID)
		}
		if page.NextCursor == "" {
			break
		}
		opt.Cursor = page.NextCursor
	}
	if want := []string{"s4", "s3", "s2", "s1", "s0"}; !slices.Equal(ids, want) {
		t.Fatalf("listing after migrating: %v, want %v", ids, want)
	}
}
