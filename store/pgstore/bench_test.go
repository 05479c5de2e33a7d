package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// The data set of the benchmarks, loaded once with COPY into a schema of
// its own, shared by the sub-benchmarks and dropped at the end.
//
//	go test -run '^$' -bench Postgres -benchtime 2s ./store/pgstore/
//
// Entries are about 300 bytes of JSON; message text is English words drawn
// with a Zipf distribution (see words_test.go).

const benchEntryBytes = 300

var benchBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchEntry builds an entry of about benchEntryBytes, alternating user and
// assistant messages, with text from z and extra words appended.
func benchEntry(z *rand.Zipf, n int, ts time.Time, parent string, extra string) transcript.Entry {
	typ, turn := transcript.TypeUserMessage, transcript.NewID(ts)
	probe := transcript.Entry{ID: turn, ParentID: parent, Timestamp: ts, Type: typ, TurnID: turn, Data: []byte(`{"text":""}`)}
	if parent == "" {
		probe.ParentID = turn // the first entry has none; size it like the rest
	}
	overhead, _ := transcript.AppendJSON(nil, probe)
	target := benchEntryBytes - len(overhead)
	text := extra
	for len(text) < target {
		w := englishWords[z.Uint64()]
		if len(text)+1+len(w) > target {
			break
		}
		if text != "" {
			text += " "
		}
		text += w
	}
	var data any = transcript.UserMessage{Text: text}
	if n%2 == 1 {
		typ = transcript.TypeAssistantMessage
		data = transcript.AssistantMessage{Text: text}
	}
	e, _ := transcript.New(ts, typ, turn, data)
	e.ID, e.ParentID = turn, parent
	return e
}

// loader writes sessions with COPY.
type loader struct {
	b     *testing.B
	s     *Store
	infos map[store.Key]*store.SessionInfo
	heads map[store.Key]string
}

// load copies rows entries, made by next (nil when done), into entries,
// and their sessions into sessions.
func (l *loader) load(next func() (store.Key, transcript.Entry, bool)) {
	l.infos, l.heads = map[store.Key]*store.SessionInfo{}, map[store.Key]string{}
	src := pgx.CopyFromFunc(func() ([]any, error) {
		key, e, ok := next()
		if !ok {
			return nil, nil
		}
		info := l.infos[key]
		if info == nil {
			info = &store.SessionInfo{}
			l.infos[key] = info
		}
		seq := info.Entries
		info.Apply(key, e)
		l.heads[key] = e.ID
		r, err := newRow(key, e)
		if err != nil {
			return nil, err
		}
		return []any{key.Agent, key.Owner, key.ID, seq, e.ID, r.tsNs, r.line, r.search}, nil
	})
	ctx := context.Background()
	if _, err := l.s.pool.CopyFrom(ctx, pgx.Identifier{l.s.schema, "entries"},
		[]string{"agent", "owner", "session", "seq", "entry_id", "ts_ns", "entry", "search"}, src); err != nil {
		l.b.Fatal(err)
	}
	var rows [][]any
	for key, i := range l.infos {
		rows = append(rows, []any{key.Agent, key.Owner, key.ID, nanos(i.Started), nanos(i.LastActivity), i.Title, i.MessageCount, i.PendingApprovals, i.Entries, l.heads[key]})
	}
	if _, err := l.s.pool.CopyFrom(ctx, pgx.Identifier{l.s.schema, "sessions"},
		[]string{"agent", "owner", "id", "started_ns", "last_ns", "title", "message_count", "pending", "entries", "head"}, pgx.CopyFromRows(rows)); err != nil {
		l.b.Fatal(err)
	}
}

// benchData builds each data set once, on first use.
type benchData struct {
	b                    *testing.B
	s                    *Store
	tail, list, search   sync.Once
	searchTime, loadTime time.Duration
}

func (d *benchData) tailSet() {
	d.tail.Do(func() {
		start := time.Now()
		z := rand.NewZipf(rand.New(rand.NewPCG(1, 1)), 1.1, 1, uint64(len(englishWords)-1))
		for _, n := range []int{100_000, 1_000} {
			key := store.Key{Agent: "tail", ID: fmt.Sprint("s", n)}
			i, head := 0, ""
			(&loader{b: d.b, s: d.s}).load(func() (store.Key, transcript.Entry, bool) {
				if i == n {
					return key, transcript.Entry{}, false
				}
				e := benchEntry(z, i, benchBase.Add(time.Duration(i)*time.Second), head, "")
				i, head = i+1, e.ID
				return key, e, true
			})
		}
		d.analyze()
		d.b.Logf("loaded the tail set (sessions of 100,000 and 1,000 entries) in %v", time.Since(start).Round(time.Millisecond))
	})
}

func (d *benchData) listSet() {
	d.list.Do(func() {
		start := time.Now()
		z := rand.NewZipf(rand.New(rand.NewPCG(2, 2)), 1.1, 1, uint64(len(englishWords)-1))
		const sessions, per = 10_000, 2
		i, heads := 0, make([]string, sessions)
		(&loader{b: d.b, s: d.s}).load(func() (store.Key, transcript.Entry, bool) {
			if i == sessions*per {
				return store.Key{}, transcript.Entry{}, false
			}
			sess, n := i%sessions, i/sessions
			key := store.Key{Agent: "list", ID: fmt.Sprint("s", sess)}
			e := benchEntry(z, n, benchBase.Add(time.Duration(i)*time.Second), heads[sess], "")
			heads[sess], i = e.ID, i+1
			return key, e, true
		})
		d.analyze()
		d.b.Logf("loaded the list set (10,000 sessions) in %v", time.Since(start).Round(time.Millisecond))
	})
}

// The search set: 10,000 sessions of 100 entries, written in turns so that
// the newest entries belong to every session; "zanzibar" is in every
// 10,000th entry.
const searchSessions, searchPer = 10_000, 100

func (d *benchData) searchSet() {
	d.search.Do(func() {
		start := time.Now()
		ctx := context.Background()
		var def string
		if err := d.s.pool.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'entries_search'`, d.s.schema).Scan(&def); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			d.b.Fatal(err)
		}
		// A bulk load builds the text index once at the end, as anyone
		// loading a big store would.
		if def != "" {
			if _, err := d.s.pool.Exec(ctx, d.s.sql(`DROP INDEX {s}.entries_search`)); err != nil {
				d.b.Fatal(err)
			}
		}
		z := rand.NewZipf(rand.New(rand.NewPCG(3, 3)), 1.1, 1, uint64(len(englishWords)-1))
		i, heads := 0, make([]string, searchSessions)
		(&loader{b: d.b, s: d.s}).load(func() (store.Key, transcript.Entry, bool) {
			if i == searchSessions*searchPer {
				return store.Key{}, transcript.Entry{}, false
			}
			sess, n := i%searchSessions, i/searchSessions
			key := store.Key{Agent: "search", ID: fmt.Sprint("s", sess)}
			extra := ""
			if i%10_000 == 5_000 {
				extra = "zanzibar"
			}
			e := benchEntry(z, n, benchBase.Add(time.Duration(i)*time.Second), heads[sess], extra)
			heads[sess], i = e.ID, i+1
			return key, e, true
		})
		d.loadTime = time.Since(start)
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
		d.analyze()
		d.b.Logf("loaded the search set (1,000,000 entries) in %v: COPY %v, index and analyze %v",
			time.Since(start).Round(time.Millisecond), d.loadTime.Round(time.Millisecond), (time.Since(start) - d.loadTime).Round(time.Millisecond))
	})
}

func (d *benchData) analyze() {
	if _, err := d.s.pool.Exec(context.Background(), d.s.sql(`VACUUM ANALYZE {s}.entries`)); err != nil {
		d.b.Fatal(err)
	}
	if _, err := d.s.pool.Exec(context.Background(), d.s.sql(`VACUUM ANALYZE {s}.sessions`)); err != nil {
		d.b.Fatal(err)
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
	d := &benchData{b: b, s: s}
	z := rand.NewZipf(rand.New(rand.NewPCG(4, 4)), 1.1, 1, uint64(len(englishWords)-1))

	b.Run("Append", func(b *testing.B) {
		// One writer, one session: the latency of a durable append.
		key := store.Key{Agent: "append", ID: transcript.NewID(time.Now())}
		head, n := "", 0
		for b.Loop() {
			e := benchEntry(z, n, benchBase.Add(time.Duration(n)*time.Millisecond), head, "")
			if err := s.Append(ctx, key, e); err != nil {
				b.Fatal(err)
			}
			head, n = e.ID, n+1
		}
	})
	b.Run("RawInsert", func(b *testing.B) {
		// The floor Append stands on: one autocommitted INSERT of the same
		// bytes, with the same durability.
		if _, err := s.pool.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {s}.raw (n bigserial PRIMARY KEY, b bytea NOT NULL)`)); err != nil {
			b.Fatal(err)
		}
		line, _ := transcript.AppendJSON(nil, benchEntry(z, 0, benchBase, "x", ""))
		for b.Loop() {
			if _, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {s}.raw (b) VALUES ($1)`), line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendParallel", func(b *testing.B) {
		// 8 writers (4 per CPU), each on a session of its own: throughput.
		b.SetParallelism(4)
		var ids atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			key := store.Key{Agent: "append", ID: fmt.Sprint("p", ids.Add(1), "-", transcript.NewID(time.Now()))}
			z := rand.NewZipf(rand.New(rand.NewPCG(uint64(ids.Load()), 5)), 1.1, 1, uint64(len(englishWords)-1))
			head, n := "", 0
			for pb.Next() {
				e := benchEntry(z, n, benchBase.Add(time.Duration(n)*time.Millisecond), head, "")
				if err := s.Append(ctx, key, e); err != nil {
					b.Error(err)
					return
				}
				head, n = e.ID, n+1
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	})
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("ReadTail50/entries=%d", n), func(b *testing.B) {
			d.tailSet()
			key := store.Key{Agent: "tail", ID: fmt.Sprint("s", n)}
			for b.Loop() {
				got, total, err := s.ReadTail(ctx, key, 50)
				if err != nil || len(got) != 50 || total != n {
					b.Fatalf("ReadTail: %d of %d, %v", len(got), total, err)
				}
			}
		})
	}
	b.Run("ListFirstPage/sessions=10000", func(b *testing.B) {
		d.listSet()
		for b.Loop() {
			page, err := s.List(ctx, store.Scope{Agent: "list"}, store.ListOptions{Limit: 50})
			if err != nil || len(page.Sessions) != 50 {
				b.Fatalf("List: %d, %v", len(page.Sessions), err)
			}
		}
	})
	for _, q := range []struct{ name, text, session string }{
		{"rare", "zanzibar", ""},
		{"common", "the", ""},
		{"two-words", "water river", ""},
		{"phrase-of-rare-words", "invoice refund", ""},
		{"no-match", "qwertyuiop", ""},
		{"one-session", "the", "s4242"},
	} {
		b.Run("Search/entries=1000000/"+q.name, func(b *testing.B) {
			d.searchSet()
			var hits int
			for b.Loop() {
				h, err := s.Search(ctx, store.Scope{Agent: "search"}, store.SearchQuery{Text: q.text, Session: q.session, Limit: 50})
				if err != nil {
					b.Fatal(err)
				}
				hits = len(h)
			}
			b.ReportMetric(float64(hits), "hits")
		})
	}
}
