package sqlitestore

// The benchmark database: the data set of internal/benchdata loaded with
// the rows Append writes, built once and cached.

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var rebuildBench = flag.Bool("rebuild-bench", false, "rebuild the cached benchmark database")

// benchSets are the sets the database holds, each in a namespace of its own.
var benchSets = []benchdata.Set{benchdata.Search, benchdata.TailLong, benchdata.TailShort, benchdata.List}

var (
	benchDBOnce sync.Once
	benchDBPath string
	benchDBErr  error
)

// benchDB returns the path of the loaded benchmark database, building it
// on first use (a few minutes) and reusing it afterwards. Its name holds
// the version of the loader (bump it when the schema or the loader
// changes) and of the data (benchdata.Version).
func benchDB(b *testing.B) string {
	benchDBOnce.Do(func() {
		benchDBPath = filepath.Join(os.TempDir(), fmt.Sprintf("spool-sqlitestore-bench-v4-data%d.db", benchdata.Version))
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

// buildBenchDB loads the data set into a new file and renames it (and
// its search index) into place only when complete, so that an interrupted
// build is never reused.
func buildBenchDB(ctx context.Context, path string) error {
	tmp := path + ".building"
	for _, name := range []string{tmp, indexPath(tmp)} {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(name + suffix)
		}
	}
	s, err := New(ctx, tmp)
	if err != nil {
		return err
	}
	l := &bulkLoader{s: s, rowIDs: map[int64]int64{}}
	for _, set := range benchSets {
		if err = l.load(ctx, set.Keys(), set.All()); err != nil {
			break
		}
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
	if err := os.Rename(indexPath(tmp), indexPath(path)); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// bulkLoader writes sessions straight into a new database, with the rows
// Append would write, many entries per transaction, and then has the
// store's indexer index them (as it would a backlog of appends), and trims
// the log behind it (as the next append would).
type bulkLoader struct {
	s      *Store
	rowIDs map[int64]int64 // the next entry row id of each millisecond
}

// load writes the sessions keys; all yields their entries, each with the
// index of its session in keys, in the order Append would have received
// them, which is the order their row ids are given in.
func (l *bulkLoader) load(ctx context.Context, keys []store.Key, all iter.Seq2[int, transcript.Entry]) error {
	const perTx = 200_000 // entries
	infos := make([]store.SessionInfo, len(keys))
	heads := make([]string, len(keys))
	sids := make([]int64, len(keys))
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
	var insEntry *sql.Stmt
	prepare := func() error {
		var err error
		insEntry, err = tx.PrepareContext(ctx, `INSERT INTO entries (eid, sid, seq, ts, indexed, body) VALUES (?, ?, ?, ?, ?, ?)`)
		return err
	}
	if err := prepare(); err != nil {
		return err
	}
	written := 0
	var body []byte
	for j, e := range all {
		seq := infos[j].Entries
		heads[j] = e.ID
		infos[j].Apply(keys[j], e)
		body, err = transcript.AppendJSON(body[:0], e)
		if err != nil {
			return err
		}
		searchable := storekit.SearchableType(e.Type)
		ms := msOf(e.Timestamp.UnixNano())
		eid := ms<<msShift + l.rowIDs[ms]
		l.rowIDs[ms]++
		if _, err := insEntry.ExecContext(ctx, eid, sids[j], seq, e.Timestamp.UnixNano(), searchable, body); err != nil {
			return err
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
	for j, info := range infos {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET started = ?, last_activity = ?, title = ?,
				messages = ?, pending = ?, entries = ?, head = ? WHERE sid = ?`,
			info.Started.UnixNano(), info.LastActivity.UnixNano(), nullIfEmpty(info.Title),
			info.MessageCount, info.PendingApprovals, info.Entries, heads[j], sids[j]); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if err := l.s.ix.catchUp(ctx); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, trimLogSQL, l.s.ix.trimTo.Load())
	return err
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// entryGen makes entries of the benchmark data set one after another, for
// tests that append them (crash_test.go, open_test.go).
type entryGen struct{ g *benchdata.Gen }

func newEntryGen(seed uint64) *entryGen { return &entryGen{benchdata.NewGen(seed)} }

// entry returns the next entry, at time at; parent must be the entry made
// before (empty for the first), the parent it is chained to. i is the
// entry's position, which the generator counts itself.
func (g *entryGen) entry(parent string, _ int, at time.Time, marked bool) transcript.Entry {
	e := g.g.Next(at, marked)
	if e.ParentID != parent {
		panic("entryGen: entries must be made in order, each after the one before")
	}
	return e
}
