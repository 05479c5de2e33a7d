package pgstore

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// plain hides a store's capabilities, so that store.Search scans it.
type plain struct{ store.Store }

// hostile is text full of what SQL, LIKE and tsquery give meaning to.
var hostile = []string{
	`it's "quoted" and O'Brien's`,
	`a back\slash and \\ two, C:\path\to`,
	`tsquery & | ! ( ) : * <-> operators`,
	`100% sure, under_score`,
	`'); DROP TABLE entries; --`,
	`ÉCOLE Straße İstanbul`,
	`nul` + "\x00" + `byte`,
	`plain words only`,
}

func TestSearchMatchesTheScan(t *testing.T) {
	s := newStore(t)
	ns := store.Namespace{Agent: "a", Owner: "o"}
	shared := newChain(t, s, ns.Key("s0"), t0)
	for i, text := range hostile {
		c := shared
		if i%3 != 0 {
			c = newChain(t, s, ns.Key(fmt.Sprint("x", i)), t0.Add(-1))
		}
		c.user(text)
		c.assistant("answer to " + text)
		c.add(transcript.TypeToolResult, transcript.ToolResult{Result: text}) // not searched
	}
	queries := []string{
		`it's`, `"quoted"`, `o'brien's`, `'`, `"`, `back\slash`, `\\`, `\`, `c:\path`,
		`&`, `|`, `!`, `(`, `)`, `:`, `*`, `<->`, `& |`, `!(`, `%`, `100%`, `_`, `under_score`, `%_%`,
		`'); drop`, `--`, `école`, `straße`, `STRASSE`, `answer`, `ANSWER plain`, `words only`,
		"nul\x00byte", "\x00", `nothing-matches-this`, `plain nothing`, `a`,
	}
	for _, q := range queries {
		for _, session := range []string{"", "s0"} {
			query := store.SearchQuery{Text: q, Session: session}
			got, err := s.Search(bg, ns, query)
			if err != nil {
				t.Fatalf("Search(%q): %v", q, err)
			}
			want, err := store.Search(bg, plain{s}, ns, query)
			if err != nil {
				t.Fatalf("scan for %q: %v", q, err)
			}
			if !reflect.DeepEqual(normal(got), normal(want)) {
				t.Errorf("Search(%q, session %q):\n got %+v\nwant %+v (the scan)", q, session, got, want)
			}
		}
	}
	// A pattern character is never a wildcard.
	if hits, _ := s.Search(bg, ns, store.SearchQuery{Text: "%"}); len(hits) != 2 {
		t.Errorf("search for %% found %d entries, want the 2 that hold it", len(hits))
	}
}

// normal makes empty and nil hit lists compare equal.
func normal(h []store.SearchHit) []store.SearchHit {
	if len(h) == 0 {
		return nil
	}
	return h
}

func TestSearchLimitAndOwners(t *testing.T) {
	s := newStore(t)
	alice := store.Namespace{Agent: "a", Owner: "alice"}
	c := newChain(t, s, alice.Key("s"), t0)
	for i := range 10 {
		c.user(fmt.Sprint("order ", i))
	}
	newChain(t, s, store.Key{Agent: "a", Owner: "bob", ID: "s"}, t0).user("order of bob")
	newChain(t, s, store.Key{Agent: "b", Owner: "alice", ID: "s"}, t0).user("order of another agent")
	hits, err := s.Search(bg, alice, store.SearchQuery{Text: "ORDER", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || hits[0].Snippet != "order 9" || hits[2].Snippet != "order 7" {
		t.Fatalf("hits %+v, want the newest 3", hits)
	}
	all, err := s.Search(bg, alice, store.SearchQuery{Text: "order"})
	if err != nil || len(all) != 10 {
		t.Fatalf("alice's search found %d hits (%v), want her 10 only", len(all), err)
	}
	if _, err := s.Search(bg, alice, store.SearchQuery{Text: "  "}); err == nil {
		t.Error("empty query accepted")
	}
	many := ""
	for i := range maxSearchTerms + 1 {
		many += fmt.Sprint("w", i, " ")
	}
	if _, err := s.Search(bg, alice, store.SearchQuery{Text: many}); err == nil {
		t.Error("query of too many words accepted")
	}
	if _, err := s.Search(bg, alice, store.SearchQuery{Text: "x", Session: "../y"}); err == nil {
		t.Error("invalid session id accepted")
	}
}

func TestSearchUsesTheIndex(t *testing.T) {
	s := newStore(t)
	var n int
	if err := admin(t).QueryRow(bg, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'entries_search'`, s.Schema()).Scan(&n); err != nil || n == 0 {
		t.Skip("no trigram index here")
	}
	ns := store.Namespace{Agent: "a"}
	_, err := admin(t).Exec(bg, s.sql(`INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
		SELECT 'a', '', 's' || (i / 100), i % 100, 'id' || i, i, '{}'::bytea, 'filler text number ' || i
		FROM generate_series(0, 19999) i`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t).Exec(bg, s.sql(`ANALYZE {s}.entries`)); err != nil {
		t.Fatal(err)
	}
	// Whether the planner prefers the index depends on the data (see the
	// benchmarks); here, that the query's shape can use it at all.
	plan := explain(t, s, "SET LOCAL enable_seqscan = off", `SELECT e.session FROM {s}.entries e WHERE e.agent = $1 AND e.owner = $2 AND e.search LIKE $3 ESCAPE '!'
		ORDER BY e.ts_ns DESC, e.entry_id DESC LIMIT 50`, ns.Agent, ns.Owner, "%zebra%")
	if !strings.Contains(plan, "entries_search") {
		t.Fatalf("search does not use the trigram index:\n%s", plan)
	}
}

// explain returns the plan of q, in a transaction that runs set first.
func explain(t *testing.T, s *Store, set, q string, args ...any) string {
	t.Helper()
	tx, err := s.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if set != "" {
		if _, err := tx.Exec(context.Background(), set); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(context.Background(), "EXPLAIN "+s.sql(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	plan := ""
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan += line + "\n"
	}
	return plan
}
