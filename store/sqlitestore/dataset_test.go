package sqlitestore

// The benchmark data set that bench_test.go describes: its entries, and
// the database loaded with it, built once and cached.

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

var rebuildBench = flag.Bool("rebuild-bench", false, "rebuild the cached benchmark database")

const entrySize = 300

// vocabulary is ordered by how often the Zipf draw picks a word: the first
// is the most common.
var vocabulary = strings.Fields(`
the to and a of you i is it for your that in this can be order with on have
please we my will not are what as if at me from do help thanks so but all
refund there an account how would just get was out up they check need ok
about here which when time one could like know invoice more has any see
some let number payment did should them make shipping now our delivery back
also email sure product sorry issue new date update into only then
been after his service other these want address return than two card first
its way may well use day customer because over order's phone
days still week price support best cancel package tracking item items
received sent change information today open question call store working
problem tomorrow available right hours team request details status receipt
charge charged billing subscription plan upgrade downgrade password login
reset error message screen app website browser download install version
device settings notification profile shipped arrived damaged missing
replacement exchange warranty policy credit debit bank transfer confirmed
pending approved declined processing estimate weekend morning evening
manager colleague feedback survey rating review complaint escalate urgent
quickly sincerely regards hello goodbye welcome appreciate understand
explain confirm verify apologize inconvenience resolve solution options
`)

// entryGen makes the data set's entries, deterministically from its seed.
type entryGen struct {
	rng  *rand.Rand
	zipf *rand.Zipf
}

func newEntryGen(seed uint64) *entryGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &entryGen{rng: rng, zipf: rand.NewZipf(rng, 1.1, 4, uint64(len(vocabulary)-1))}
}

// entry returns a 300-byte entry at position i of a session, child of
// parent, at time at; marked entries also carry "zanzibar".
func (g *entryGen) entry(parent string, i int, at time.Time, marked bool) transcript.Entry {
	typ := transcript.TypeUserMessage
	if i%2 == 1 {
		typ = transcript.TypeAssistantMessage
	}
	at = at.UTC().Truncate(time.Millisecond)
	e := transcript.Entry{ID: transcript.NewID(at), ParentID: parent, Timestamp: at, Type: typ, TurnID: transcript.NewID(at)}
	e.Data = []byte(`{"text":""}`)
	empty, _ := transcript.AppendJSON(nil, e)
	n := entrySize - len(empty)
	var b strings.Builder
	if marked {
		b.WriteString("zanzibar ")
	}
	for b.Len() < n {
		b.WriteString(vocabulary[g.zipf.Uint64()])
		b.WriteByte(' ')
	}
	text := strings.TrimRight(b.String()[:n], " ")
	text += strings.Repeat(".", n-len(text))
	e.Data = fmt.Appendf(nil, `{"text":%q}`, text)
	return e
}

// benchScopes of the cached database.
var (
	searchScope = store.Scope{Agent: "search"}
	tailScope   = store.Scope{Agent: "tail"}
	listScope   = store.Scope{Agent: "list"}
)

const (
	searchSessions   = 1000
	searchPerSession = 1000
	markEvery        = 10007
	tailLong         = 100_000
	tailShort        = 1000
	listSessions     = 10_000
)

var (
	benchDBOnce sync.Once
	benchDBPath string
	benchDBErr  error
)

// benchDB returns the path of the loaded benchmark database, building it
// on first use (a few minutes) and reusing it afterwards.
func benchDB(b *testing.B) string {
	benchDBOnce.Do(func() {
		benchDBPath = filepath.Join(os.TempDir(), "spool-sqlitestore-bench-v2.db")
		if _, err := os.Stat(benchDBPath); err == nil && !*rebuildBench {
			return
		}
		start := time.Now()
		benchDBErr = buildBenchDB(context.Background(), benchDBPath)
		b.Logf("built benchmark database %s in %v", benchDBPath, time.Since(start).Round(time.Second))
	})
	if benchDBErr != nil {
		b.Fatal(benchDBErr)
	}
	return benchDBPath
}

// buildBenchDB loads the data set into a new file and renames it into
// place only when complete, so that an interrupted build is never reused.
func buildBenchDB(ctx context.Context, path string) error {
	tmp := path + ".building"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	s, err := Open(ctx, tmp)
	if err != nil {
		return err
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newEntryGen(1)
	l := &bulkLoader{s: s, rowIDs: map[int64]int64{}}
	// Search: sessions interleave in time, entry i of session j at
	// base + (i*sessions + j) ms.
	err = l.load(ctx, searchScope, searchSessions, searchPerSession, func(j, i int, parent string) transcript.Entry {
		global := i*searchSessions + j
		return g.entry(parent, i, base.Add(time.Duration(global)*time.Millisecond), global%markEvery == 0)
	})
	if err == nil {
		err = l.loadOne(ctx, tailScope.Key("long"), tailLong, g, base)
	}
	if err == nil {
		err = l.loadOne(ctx, tailScope.Key("short"), tailShort, g, base)
	}
	if err == nil {
		err = l.load(ctx, listScope, listSessions, 2, func(j, i int, parent string) transcript.Entry {
			return g.entry(parent, i, base.Add(time.Duration(j)*time.Second+time.Duration(i)*time.Millisecond), false)
		})
	}
	if err == nil {
		_, err = s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// bulkLoader writes sessions straight into a new database, with the rows
// Append would write, many entries per transaction.
type bulkLoader struct {
	s      *Store
	rowIDs map[int64]int64 // the next entry row id of each millisecond
}

func (l *bulkLoader) loadOne(ctx context.Context, key store.Key, n int, g *entryGen, base time.Time) error {
	return l.loadKeys(ctx, []store.Key{key}, n, func(_, i int, parent string) transcript.Entry {
		return g.entry(parent, i, base.Add(time.Duration(i)*time.Millisecond), false)
	})
}

// load writes sessions s0, s1, … of perSession entries each into scope;
// see loadKeys.
func (l *bulkLoader) load(ctx context.Context, scope store.Scope, sessions, perSession int,
	gen func(session, i int, parent string) transcript.Entry) error {
	keys := make([]store.Key, sessions)
	for j := range keys {
		keys[j] = scope.Key(fmt.Sprintf("s%d", j))
	}
	return l.loadKeys(ctx, keys, perSession, gen)
}

// loadKeys writes the sessions keys of perSession entries each; gen(j, i,
// parent) makes entry i of session j. Entries are generated position by
// position across all sessions, so that their timestamps may interleave.
func (l *bulkLoader) loadKeys(ctx context.Context, keys []store.Key, perSession int,
	gen func(session, i int, parent string) transcript.Entry) error {
	const perTx = 200_000 // entries
	sessions := len(keys)
	infos := make([]store.SessionInfo, sessions)
	sids := make([]int64, sessions)
	conn, err := l.s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { tx.Rollback() }()
	for j, k := range keys {
		res, err := tx.ExecContext(ctx, `INSERT INTO sessions (agent, owner, id, started, last_activity, messages, pending, entries, head)
			VALUES (?, ?, ?, 0, 0, 0, 0, 0, '')`, k.Agent, k.Owner, k.ID)
		if err != nil {
			return err
		}
		if sids[j], err = res.LastInsertId(); err != nil {
			return err
		}
	}
	var insEntry, insText *sql.Stmt
	prepare := func() error {
		var err error
		if insEntry, err = tx.PrepareContext(ctx, `INSERT INTO entries (eid, sid, seq, ts, indexed, body) VALUES (?, ?, ?, ?, ?, ?)`); err != nil {
			return err
		}
		insText, err = tx.PrepareContext(ctx, `INSERT INTO entries_fts (rowid, text) VALUES (?, ?)`)
		return err
	}
	if err := prepare(); err != nil {
		return err
	}
	heads := make([]string, sessions)
	written := 0
	var body []byte
	for i := range perSession {
		for j := range keys {
			e := gen(j, i, heads[j])
			heads[j] = e.ID
			infos[j].Apply(keys[j], e)
			body, err = transcript.AppendJSON(body[:0], e)
			if err != nil {
				return err
			}
			text, searchable := store.SearchText(e)
			ms := msOf(e.Timestamp.UnixNano())
			eid := ms<<msShift + l.rowIDs[ms]
			l.rowIDs[ms]++
			if _, err := insEntry.ExecContext(ctx, eid, sids[j], i, e.Timestamp.UnixNano(), searchable, body); err != nil {
				return err
			}
			if searchable {
				if _, err := insText.ExecContext(ctx, eid, strings.ToLower(text)); err != nil {
					return err
				}
			}
			if written++; written%perTx == 0 {
				if err := tx.Commit(); err != nil {
					return err
				}
				if tx, err = conn.BeginTx(ctx, nil); err != nil {
					return err
				}
				if err := prepare(); err != nil {
					return err
				}
			}
		}
	}
	for j, info := range infos {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET started = ?, last_activity = ?, title = ?,
				messages = ?, pending = ?, entries = ?, head = ? WHERE sid = ?`,
			info.Started.UnixNano(), info.LastActivity.UnixNano(), nullIfEmpty(info.Title),
			info.MessageCount, info.PendingApprovals, info.Entries, heads[j], sids[j]); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
