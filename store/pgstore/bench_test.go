package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Benchmarks over the data set of internal/benchdata, the one every
// store's benchmarks use (its package doc describes the shapes), so that
// BENCHMARKS.md compares like with like. Each set is loaded with COPY, the
// rows Append writes (TestCopyLoadMatchesAppend checks), in the order
// appends would have arrived, into a schema of the benchmark's own that is
// dropped at the end: every run loads what it uses again.
//
//	go test -run '^$' -bench Postgres -benchtime 2s ./store/pgstore/
//
// cpu-ns/op is this process's CPU time, the client's; the server's work is
// not in it.

// copyLoad writes the sessions keys with COPY; all yields their entries,
// each with the index of its session in keys, in the order Append would
// have received them, which is the order of the rows in the table.
func copyLoad(ctx context.Context, s *Store, keys []store.Key, all iter.Seq2[int, transcript.Entry]) error {
	infos := make([]store.SessionInfo, len(keys))
	heads := make([]string, len(keys))
	next, stop := iter.Pull2(all)
	defer stop()
	src := pgx.CopyFromFunc(func() ([]any, error) {
		j, e, ok := next()
		if !ok {
			return nil, nil
		}
		key := keys[j]
		seq := infos[j].Entries
		infos[j].Apply(key, e)
		heads[j] = e.ID
		r, err := newRow(key, e)
		if err != nil {
			return nil, err
		}
		return []any{key.Agent, key.Owner, key.ID, seq, e.ID, r.tsNs, r.line, r.search}, nil
	})
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{s.schema, "entries"},
		[]string{"agent", "owner", "session", "seq", "entry_id", "ts_ns", "entry", "search"}, src); err != nil {
		return err
	}
	rows := make([][]any, 0, len(keys))
	for j, key := range keys {
		i := infos[j]
		rows = append(rows, []any{key.Agent, key.Owner, key.ID, nanos(i.Started), nanos(i.LastActivity), i.Title, i.MessageCount, i.PendingApprovals, i.Entries, heads[j]})
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{s.schema, "sessions"},
		[]string{"agent", "owner", "id", "started_ns", "last_ns", "title", "message_count", "pending", "entries", "head"}, pgx.CopyFromRows(rows))
	return err
}

// TestCopyLoadMatchesAppend checks the benchmarks' loader: what COPY
// writes reads, lists and searches exactly as the same entries appended.
func TestCopyLoadMatchesAppend(t *testing.T) {
	loaded, appended := newStore(t), newStore(t)
	ns := store.Namespace{Agent: "bulk", Owner: "u"}
	keys := []store.Key{ns.Key("a"), ns.Key("b"), ns.Key("c")}
	type item struct {
		j int
		e transcript.Entry
	}
	var items []item
	gens := []*benchdata.Gen{benchdata.NewGen(0), benchdata.NewGen(1), benchdata.NewGen(2)}
	for i := range 40 {
		for j, g := range gens {
			items = append(items, item{j, g.Next(benchdata.Base.Add(time.Duration(i*len(keys)+j)*time.Millisecond), (i+j)%7 == 0)})
		}
	}
	err := copyLoad(t.Context(), loaded, keys, func(yield func(int, transcript.Entry) bool) {
		for _, it := range items {
			if !yield(it.j, it.e) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := appended.Append(t.Context(), keys[it.j], it.e); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys {
		a, errA := loaded.Read(t.Context(), key)
		b, errB := appended.Read(t.Context(), key)
		if errA != nil || errB != nil || len(a) != 40 || !reflect.DeepEqual(a, b) {
			t.Fatalf("Read(%s): loaded %d (%v), appended %d (%v)", key, len(a), errA, len(b), errB)
		}
		a, totalA, errA := loaded.ReadTail(t.Context(), key, 5)
		b, totalB, errB := appended.ReadTail(t.Context(), key, 5)
		if errA != nil || errB != nil || totalA != totalB || !reflect.DeepEqual(a, b) {
			t.Fatalf("ReadTail(%s): loaded %d of %d (%v), appended %d of %d (%v)", key, len(a), totalA, errA, len(b), totalB, errB)
		}
	}
	pa, errA := loaded.List(t.Context(), ns, store.ListOptions{})
	pb, errB := appended.List(t.Context(), ns, store.ListOptions{})
	if errA != nil || errB != nil || !reflect.DeepEqual(pa, pb) {
		t.Fatalf("List: loaded %+v (%v)\nappended %+v (%v)", pa, errA, pb, errB)
	}
	for _, text := range []string{benchdata.Marker, "order", "you order", "ok"} {
		q := store.SearchQuery{Text: text, Limit: 7}
		a, errA := loaded.Search(t.Context(), ns, q)
		b, errB := appended.Search(t.Context(), ns, q)
		if errA != nil || errB != nil || len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Fatalf("Search(%q): loaded %v (%v), appended %v (%v)", text, a, errA, b, errB)
		}
	}
}

// benchSchema loads each set once, on first use, into the benchmark's
// schema.
type benchSchema struct {
	b      *testing.B
	s      *Store
	mu     sync.Mutex
	loaded map[string]bool
}

// load loads the sets not yet loaded. A bulk load builds the text index
// once at the end, as anyone loading a big store would.
func (d *benchSchema) load(sets ...benchdata.Set) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx := context.Background()
	for _, set := range sets {
		if d.loaded[set.Name] {
			continue
		}
		start := time.Now()
		var def string
		if err := d.s.pool.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'entries_search'`, d.s.schema).Scan(&def); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			d.b.Fatal(err)
		}
		if def != "" {
			if _, err := d.s.pool.Exec(ctx, d.s.sql(`DROP INDEX {s}.entries_search`)); err != nil {
				d.b.Fatal(err)
			}
		}
		if err := copyLoad(ctx, d.s, set.Keys(), set.All()); err != nil {
			d.b.Fatal(err)
		}
		copied := time.Since(start)
		if def != "" {
			err := d.s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
				if _, err := c.Exec(ctx, `SET maintenance_work_mem = '512MB'`); err != nil {
					return err
				}
				_, err := c.Exec(ctx, def)
				return err
			})
			if err != nil {
				d.b.Fatal(err)
			}
		}
		for _, table := range []string{"entries", "sessions"} {
			if _, err := d.s.pool.Exec(ctx, d.s.sql(`VACUUM ANALYZE {s}.`+table)); err != nil {
				d.b.Fatal(err)
			}
		}
		if d.loaded == nil {
			d.loaded = map[string]bool{}
		}
		d.loaded[set.Name] = true
		d.b.Logf("loaded %s (%d entries) in %v: COPY %v, index and analyze %v", set.Name, set.Total(),
			time.Since(start).Round(time.Millisecond), copied.Round(time.Millisecond), (time.Since(start) - copied).Round(time.Millisecond))
	}
}

func BenchmarkPostgres(b *testing.B) {
	schema := newSchema(b)
	ctx := context.Background()
	s, err := Open(ctx, withParams(testURL(b), "pool_max_conns=16"), WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	d := &benchSchema{b: b, s: s}
	var sessions atomic.Uint64 // a session of its own for each run of an append benchmark

	b.Run("Append", func(b *testing.B) {
		// One writer, one session: the latency of a durable append.
		key := store.Key{Agent: "append", ID: fmt.Sprint("a", sessions.Add(1))}
		g := benchdata.NewGen(2)
		i := 0
		done := benchdata.CPUMetric(b)
		for b.Loop() {
			if err := s.Append(ctx, key, g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		done()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	})
	b.Run("RawInsert", func(b *testing.B) {
		// The floor Append stands on: one autocommitted INSERT of the same
		// bytes, with the same durability.
		if _, err := s.pool.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {s}.raw (n bigserial PRIMARY KEY, b bytea NOT NULL)`)); err != nil {
			b.Fatal(err)
		}
		line, _ := transcript.AppendJSON(nil, benchdata.NewGen(1).Next(benchdata.Base, false))
		done := benchdata.CPUMetric(b)
		for b.Loop() {
			if _, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {s}.raw (b) VALUES ($1)`), line); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("AppendParallel", func(b *testing.B) {
		benchdata.AppendParallel(b, s, "append")
	})
	for _, set := range []benchdata.Set{benchdata.TailLong, benchdata.TailShort} {
		b.Run(fmt.Sprintf("ReadTail/entries=%d", set.PerSession), func(b *testing.B) {
			d.load(benchdata.TailLong, benchdata.TailShort)
			key := set.Key(0)
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				got, total, err := s.ReadTail(ctx, key, benchdata.TailN)
				if err != nil || len(got) != benchdata.TailN || total != set.PerSession {
					b.Fatalf("ReadTail: %d of %d, %v", len(got), total, err)
				}
			}
			done()
		})
	}
	b.Run("List", func(b *testing.B) {
		d.load(benchdata.List)
		done := benchdata.CPUMetric(b)
		for b.Loop() {
			page, err := s.List(ctx, benchdata.List.Namespace, store.ListOptions{Limit: benchdata.PageSize})
			if err != nil || len(page.Sessions) != benchdata.PageSize || page.NextCursor == "" {
				b.Fatalf("List: %d, %v", len(page.Sessions), err)
			}
		}
		done()
	})
	for _, q := range benchdata.Queries {
		b.Run("Search/"+q.Name, func(b *testing.B) {
			d.load(benchdata.Search)
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				hits, err := s.Search(ctx, benchdata.Search.Namespace, q.SearchQuery())
				if err != nil || len(hits) != q.Hits {
					b.Fatalf("Search(%q): %d hits, want %d; %v", q.Text, len(hits), q.Hits, err)
				}
			}
			done()
		})
	}
	// A common word and a short one in each namespace, from the one with the
	// newest entries (list) to the one with the oldest (tail): whether a
	// search pays for other namespaces' newer matches.
	for _, set := range []benchdata.Set{benchdata.List, benchdata.Search, benchdata.TailLong} {
		for _, text := range []string{"order", "ok"} {
			b.Run("SearchScopes/"+set.Namespace.Agent+"/"+text, func(b *testing.B) {
				d.load(benchdata.TailLong, benchdata.TailShort, benchdata.List, benchdata.Search)
				q := store.SearchQuery{Text: text, Limit: benchdata.Limit}
				done := benchdata.CPUMetric(b)
				for b.Loop() {
					hits, err := s.Search(ctx, set.Namespace, q)
					if err != nil || len(hits) != benchdata.Limit {
						b.Fatalf("Search(%q) in %s: %d hits, %v", text, set.Namespace, len(hits), err)
					}
				}
				done()
			})
		}
	}
}

// BenchmarkTailUnanalyzed reads the newest 50 entries of a 100,000-entry
// session loaded with COPY into tables that were never analyzed (and that
// autovacuum is kept off), as on a new deployment, and reports the median
// of 21 reads in milliseconds (issue 12's eleventh row). Run it with
// -benchtime 1x.
func BenchmarkTailUnanalyzed(b *testing.B) {
	ctx := b.Context()
	s := newStore(b)
	if _, err := admin(b).Exec(ctx, s.sql(`ALTER TABLE {s}.entries SET (autovacuum_enabled = false);
		ALTER TABLE {s}.sessions SET (autovacuum_enabled = false)`)); err != nil {
		b.Fatal(err)
	}
	set := benchdata.TailLong
	if err := copyLoad(ctx, s, set.Keys(), set.All()); err != nil {
		b.Fatal(err)
	}
	key := set.Key(0)
	var reads []benchdata.Phase
	for b.Loop() {
		for range 21 {
			reads = append(reads, benchdata.Measure(func() int {
				entries, total, err := s.ReadTail(ctx, key, benchdata.TailN)
				if err != nil || len(entries) != benchdata.TailN || total != set.PerSession {
					b.Fatalf("ReadTail: %d of %d, %v", len(entries), total, err)
				}
				return 1
			}))
		}
	}
	b.ReportMetric(benchdata.Medians(reads, func(p benchdata.Phase) float64 { return float64(p.Wall.Microseconds()) / 1e3 }), "tail-ms")
}
