package pgstore

import (
	"context"
	"errors"
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
	_, err = Open(bg, "postgres://spool:hunter2@127.0.0.1:5432/test?pool_max_conns=many")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad URL: %v (must fail without quoting the password)", err)
	}
}
