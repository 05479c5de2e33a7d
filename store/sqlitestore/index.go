package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// The search index lives in a database file of its own, <database>-search
// (with its own -wal and -shm), kept by an indexer that runs beside the
// Store's appends rather than inside them: indexing a turn's text (FTS5
// tokenizing it into trigrams, writing segments and merging them) cost
// more CPU than the rest of the turn, and in a file of its own it takes
// neither the database's write lock nor a place in its commits.
//
// What an append leaves for the index is a row in the database's fts_log
// (by trigger, in the append's own transaction): the log of every entry
// inserted that may have text to search, and of every such entry deleted,
// in commit order. The index database records the position of the log it
// has applied (state.mark) in the same transaction as the index rows it
// applied, so a crash of either side never loses or repeats a change, and
// appends delete the log rows behind a mark once it is on disk. Search
// reads the index's matches and, besides them, the entries the log holds
// past the mark (see searchSQL), so its results do not depend on how far
// the indexer has got.
//
// The index is derived data: a missing index file is created and built
// from the entries, in the background, and so is one that does not match
// the database (a log whose row at the mark is not the one the index
// recorded: a database restored from a backup, say). Until it is built,
// Search scans the entries instead.

// indexSchema is the index database's schema, version 1 (its PRAGMA
// user_version). entries_fts is keyed by entry row id (see rowid.go) and
// holds the text storekit.SearchText gives, lowered by Go's rules as
// Search's terms are: contentless (the text lives only in the entries),
// tokenized in trigrams, so that MATCH is a case-insensitive substring
// test as in storekit.MatchText. state is one row: the log position
// applied (mark) and the log row's eid there (mark_eid, which ties the
// index to this database's log), and, while the index is being built from
// the entries, the last entry row id it has read (cursor; NULL once
// built). broken holds the entries whose stored body did not parse when
// the indexer read it: Search takes every one of them as a candidate, so
// that it reports them as corrupt rather than never find them.
var indexSchema = []string{
	`CREATE VIRTUAL TABLE entries_fts USING fts5 (
		text, content='', contentless_delete=1, tokenize='trigram'
	)`,
	`CREATE TABLE state (
		one      INTEGER PRIMARY KEY CHECK (one = 1),
		mark     INTEGER NOT NULL,
		mark_eid INTEGER NOT NULL,
		cursor   INTEGER
	)`,
	`CREATE TABLE broken (eid INTEGER PRIMARY KEY)`,
	`INSERT INTO state (one, mark, mark_eid, cursor) VALUES (1, 0, 0, NULL)`,
}

const indexVersion = 1

// ErrIndexVersion: the search index file beside the database has a
// schema this program does not know.
var ErrIndexVersion = errors.New("sqlitestore: search index schema unknown to this program")

// indexBatch is how many log rows this Store's appends add before the
// indexer is due (a variable for tests); a Store also catches up when it
// opens and after a delete. FTS5 writes a segment per transaction and
// merges segments as they pile up, so an index transaction of hundreds of
// entries costs far less per entry than one of two; and each index commit
// syncs the index's log on the disk the appends sync on, where it delays
// the turns committing meanwhile: at 128 a turn (two entries) on an
// otherwise idle store was 8-10% slower than at 512 (BenchmarkTurnVsMastra,
// test binaries alternated). Search reads the entries still in the log one
// by one: with the indexer off, a search took 1.0 ms with 128 of them in
// the log and 1.6 ms with 512.
var indexBatch = 512

// indexIdle is how long a due indexer waits for this Store's appends to
// pause before it indexes (a variable for tests); it waits no longer once
// they have logged 4*indexBatch rows (indexing a burst of turns as it
// comes took a third of the CPU of each of them, and a tenth of their
// wall time on two cores: BenchmarkTurn, indexed against appends), nor
// after a delete, whose text must leave the index file soon.
var indexIdle = 10 * time.Millisecond

// passRows bounds the log rows (or, while building, the entries) one index
// transaction applies (a variable for tests).
var passRows = 2048

// indexByHand keeps the indexer from running by itself: tests that watch
// the index change step by step run its passes themselves.
var indexByHand = false

// indexPath returns the index database's file.
func indexPath(path string) string { return path + "-search" }

// indexer keeps the search index of one Store.
type indexer struct {
	s    *Store
	db   *sql.DB // the index database, one connection
	path string

	wake   chan struct{} // a buffered signal: there is work
	opened chan struct{} // closed once the catch-up at opening ended (tests wait for it)
	cancel context.CancelFunc
	done   chan struct{}

	logged  atomic.Int64 // log rows this Store's appends added since the indexer last looked
	busy    atomic.Int64 // when this Store's newest append that logged rows returned (unix ns)
	urgent  atomic.Bool  // a delete asked for a catch-up: no waiting for a pause
	trimTo  atomic.Int64 // the log rows below this position are indexed, on disk
	trimmed atomic.Int64 // the position appends last trimmed the log to

	mu      sync.Mutex
	lastErr error // of the last catch-up; nil when it succeeded
}

// openIndex opens the search index of s, creating it when missing (to be
// built by the indexer, which start starts).
func (s *Store) openIndex(ctx context.Context, drv sqlDriver) error {
	path := indexPath(s.path)
	if _, err := prepareFile(path); err != nil {
		return err
	}
	db, err := drv.open(dataSource(path, s.cfg.busyTimeout, false), "")
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	ix := &indexer{s: s, db: db, path: path, wake: make(chan struct{}, 1), opened: make(chan struct{}), done: make(chan struct{})}
	if err := ix.init(ctx); err != nil {
		db.Close()
		return err
	}
	s.ix = ix
	return nil
}

// start runs the indexer until stop.
func (ix *indexer) start() {
	if indexByHand {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ix.cancel = cancel
	go ix.run(ctx)
}

// init brings the index database to its schema. A new one starts empty,
// to be built from the entries.
func (ix *indexer) init(ctx context.Context) error {
	mode, err := walMode(ctx, ix.db, ix.s.cfg.busyTimeout)
	if err != nil {
		return ix.fail(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return ix.fail(fmt.Errorf("cannot use write-ahead logging (journal mode %q)", mode))
	}
	tx, err := beginTx(ctx, ix.db) // BEGIN IMMEDIATE: one process creates it
	if err != nil {
		return ix.fail(err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return ix.fail(err)
	}
	switch version {
	case indexVersion:
		// An index that does not follow this database's log (a database
		// restored from a backup beside a newer index, say) is built
		// again now, not at the indexer's first pass: until then Search
		// would trust its matches and its mark.
		var st indexState
		if err := tx.QueryRowContext(ctx, `SELECT mark, mark_eid, cursor FROM state`).Scan(&st.mark, &st.markEID, &st.cursor); err != nil {
			return ix.fail(err)
		}
		ok, err := ix.follows(ctx, st)
		if err == nil && !ok {
			if st, err = ix.restart(ctx, tx, ix.s.w.DB); err == nil {
				err = writeState(ctx, tx, st)
			}
			if err == nil {
				err = tx.Commit()
			}
		}
		if err != nil {
			return ix.fail(err)
		}
		return nil
	case 0:
	default:
		return fmt.Errorf("%w: %s has version %d, this program knows %d", ErrIndexVersion, ix.path, version, indexVersion)
	}
	for _, stmt := range indexSchema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return ix.fail(err)
		}
	}
	// The read connections attach the index once it has its schema
	// (see Store.init), so the log is read on the write connection here.
	st, err := ix.restart(ctx, tx, ix.s.w.DB)
	if err == nil {
		err = writeState(ctx, tx, st)
	}
	if err != nil {
		return ix.fail(err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, indexVersion)); err != nil {
		return ix.fail(err)
	}
	if err := tx.Commit(); err != nil {
		return ix.fail(err)
	}
	return nil
}

// stop ends the indexer, rolling back the transaction it is in, and closes
// the index database.
func (ix *indexer) stop() error {
	if ix.cancel != nil {
		ix.cancel()
		<-ix.done
	}
	return ix.db.Close()
}

// noteLogged tells the indexer that an append logged n rows, and wakes it
// once indexBatch have piled up (it then waits for a pause: waitIdle).
func (ix *indexer) noteLogged(n int) {
	if n <= 0 {
		return
	}
	ix.busy.Store(time.Now().UnixNano())
	if ix.logged.Add(int64(n)) >= int64(indexBatch) {
		ix.poke()
	}
}

// poke wakes the indexer.
func (ix *indexer) poke() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// run catches up when the Store opens and whenever woken, until ctx ends.
// A failed catch-up (a full disk, say) is tried again after a pause that
// doubles up to a minute, or at the next wake; Search is exact meanwhile,
// reading whatever the index lacks from the log.
func (ix *indexer) run(ctx context.Context) {
	defer close(ix.done)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	pause := time.Duration(0)
	for opening := true; ; opening = false {
		if err := ix.catchUp(ctx); err != nil {
			pause = min(max(2*pause, time.Second), time.Minute)
			retry.Reset(pause)
		} else {
			pause = 0
			retry.Stop()
		}
		if opening {
			close(ix.opened)
		}
		select {
		case <-ctx.Done():
			return
		case <-ix.wake:
			if !ix.waitIdle(ctx) {
				return
			}
		case <-retry.C:
		}
	}
}

// waitIdle waits until this Store's appends have paused for indexIdle,
// or have logged 4*indexBatch rows, or a delete asked for a catch-up; it
// reports false when ctx ended.
func (ix *indexer) waitIdle(ctx context.Context) bool {
	t := time.NewTimer(indexIdle)
	defer t.Stop()
	for {
		quiet := time.Since(time.Unix(0, ix.busy.Load()))
		if quiet >= indexIdle || ix.urgent.Load() || ix.logged.Load() >= 4*int64(indexBatch) {
			return true
		}
		t.Reset(indexIdle - quiet)
		select {
		case <-ctx.Done():
			return false
		case <-ix.wake: // a delete, or more logged
		case <-t.C:
		}
	}
}

// catchUp applies everything the index lacks, a pass at a time.
func (ix *indexer) catchUp(ctx context.Context) error {
	ix.logged.Store(0)
	ix.urgent.Store(false)
	var err error
	for more := true; more && err == nil; {
		more, err = ix.pass(ctx)
	}
	ix.mu.Lock()
	ix.lastErr = err
	ix.mu.Unlock()
	return err
}

// indexState is the index database's state row.
type indexState struct {
	mark, markEID int64
	cursor        sql.NullInt64
}

// pass applies up to passRows of what the index lacks in one transaction
// of the index database, which also holds the index's write lock, so that
// of several Stores on the file (in one process or several) one indexes at
// a time, each from where the last left off. It reports whether there is
// more to do.
func (ix *indexer) pass(ctx context.Context) (more bool, err error) {
	tx, err := beginTx(ctx, ix.db) // BEGIN IMMEDIATE: see dataSource
	if err != nil {
		return false, ix.fail(err)
	}
	defer tx.Rollback()
	var st indexState
	if err := tx.QueryRowContext(ctx, `SELECT mark, mark_eid, cursor FROM state`).Scan(&st.mark, &st.markEID, &st.cursor); err != nil {
		return false, ix.fail(err)
	}
	if st.cursor.Valid {
		more, err = ix.build(ctx, tx, &st)
	} else {
		more, err = ix.follow(ctx, tx, &st)
	}
	if err == nil {
		err = writeState(ctx, tx, st)
	}
	if err != nil {
		return false, ix.fail(err)
	}
	if err := tx.Commit(); err != nil {
		return false, ix.fail(err)
	}
	// Committed with the index's log synced: the log rows below the mark
	// will never be needed again (the row at the mark stays, to be
	// checked by the next pass).
	ix.trimTo.Store(st.mark)
	return more, nil
}

// follow applies the log rows past the mark. The first row it reads is the
// one at the mark, which must be the one the index recorded (or, for an
// index that has applied nothing yet, the log's first ever): otherwise the
// log is not the one the index followed, or rows it needed were trimmed,
// and the index is built again.
func (ix *indexer) follow(ctx context.Context, tx *sql.Tx, st *indexState) (more bool, err error) {
	rows, err := ix.s.r.QueryContext(ctx, `SELECT l.seq, l.eid, l.del, e.body
		FROM fts_log l LEFT JOIN entries e ON e.eid = l.eid AND NOT l.del
		WHERE l.seq >= ? ORDER BY l.seq LIMIT ?`, st.mark, passRows+1)
	changes, err := collect(rows, err, func(c *indexChange, body *sql.RawBytes) []any { return []any{&c.seq, &c.eid, &c.del, body} })
	if err != nil {
		return false, err
	}
	switch {
	case st.mark == 0 && len(changes) > 0 && changes[0].seq != 1,
		st.mark > 0 && (len(changes) == 0 || changes[0].seq != st.mark || changes[0].eid != st.markEID):
		*st, err = ix.restart(ctx, tx, ix.s.r)
		return true, err
	case st.mark > 0:
		changes = changes[1:] // the row at the mark, applied before
	}
	changes = changes[:min(len(changes), passRows)]
	if n := len(changes); n > 0 {
		st.mark, st.markEID = changes[n-1].seq, changes[n-1].eid
	}
	return len(changes) == passRows, applyChanges(ctx, tx, changes)
}

// build indexes the entries after the cursor, in row id order, from one
// snapshot of the database per pass. What changes meanwhile is in the log
// past the mark, which follow applies once the build is done: an entry
// indexed by both is indexed once (INSERT OR REPLACE), and one deleted
// after a pass read it is deleted by the log.
func (ix *indexer) build(ctx context.Context, tx *sql.Tx, st *indexState) (more bool, err error) {
	rows, err := ix.s.r.QueryContext(ctx, `SELECT eid, body FROM entries
		WHERE indexed AND eid > ? ORDER BY eid LIMIT ?`, st.cursor.Int64, passRows)
	changes, err := collect(rows, err, func(c *indexChange, body *sql.RawBytes) []any { return []any{&c.eid, body} })
	if err != nil {
		return false, err
	}
	if len(changes) < passRows {
		st.cursor = sql.NullInt64{}
	} else {
		st.cursor.Int64 = changes[len(changes)-1].eid
	}
	return true, applyChanges(ctx, tx, changes)
}

// collect reads the rows of a query that failed with err or not, each into
// an indexChange through the columns dest gives, and the text to index of
// those with a body.
func collect(rows *sql.Rows, err error, dest func(*indexChange, *sql.RawBytes) []any) ([]indexChange, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var changes []indexChange
	for rows.Next() {
		var c indexChange
		var body sql.RawBytes
		if err := rows.Scan(dest(&c, &body)...); err != nil {
			return nil, err
		}
		if !c.del && body != nil {
			c.text, c.broken = indexText(body)
		}
		changes = append(changes, c)
	}
	return changes, rows.Err()
}

// follows reports whether the index whose state is st follows this
// database's log: the log's row at the mark is the one the index recorded
// there, or, for an index that has applied nothing, the log has its first
// row still (or none). A build under way (a cursor) reads the entries,
// and its mark is checked when it is done.
func (ix *indexer) follows(ctx context.Context, st indexState) (bool, error) {
	if st.cursor.Valid {
		return true, nil
	}
	var seq, eid int64
	err := ix.s.w.DB.QueryRowContext(ctx, `SELECT seq, eid FROM fts_log WHERE seq >= ? ORDER BY seq LIMIT 1`, st.mark).Scan(&seq, &eid)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st.mark == 0, nil
	case err != nil:
		return false, err
	case st.mark == 0:
		return seq == 1, nil
	}
	return seq == st.mark && eid == st.markEID, nil
}

// restart empties the index to build it again from the entries, and
// returns the state to build from: the log's newest row (read through db)
// as the mark (none: 0), and every entry to be read again.
func (ix *indexer) restart(ctx context.Context, tx *sql.Tx, db *sql.DB) (indexState, error) {
	var mark, eid int64
	err := db.QueryRowContext(ctx, `SELECT seq, eid FROM fts_log ORDER BY seq DESC LIMIT 1`).Scan(&mark, &eid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return indexState{}, err
	}
	for _, stmt := range []string{`INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')`, `DELETE FROM broken`} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return indexState{}, err
		}
	}
	return indexState{mark: mark, markEID: eid, cursor: sql.NullInt64{Int64: math.MinInt64, Valid: true}}, nil
}

func writeState(ctx context.Context, tx *sql.Tx, st indexState) error {
	_, err := tx.ExecContext(ctx, `UPDATE state SET mark = ?, mark_eid = ?, cursor = ?`, st.mark, st.markEID, st.cursor)
	return err
}

// indexChange is one log row (or, while building, one entry) to apply.
type indexChange struct {
	seq, eid int64
	del      bool
	text     string // lowered; empty when there is nothing to index
	broken   bool   // the body did not parse
}

// indexText returns the text to index of an entry stored as body, lowered
// by Go's rules as Search's terms are (the tokenizer's own case folding
// then acts on query and text alike, so that a match for
// storekit.MatchText is always a match for the index too), or broken when
// the body does not parse.
func indexText(body []byte) (text string, broken bool) {
	e, err := transcript.Parse(body)
	if err != nil {
		return "", true
	}
	text, _ = storekit.SearchText(e)
	return strings.ToLower(text), false
}

// applyChanges writes changes into the index in tx, in row id order (it
// sorts them): FTS5 writes out the rows it holds in memory as a segment of
// its own whenever it is given a row id below the one before, so that a
// log in commit order (an import's, a session after another, each
// spanning the same hours) made a segment of almost every row, and merging
// them was most of the indexer's work. Changes to different entries
// commute, and those to the same one keep their order.
func applyChanges(ctx context.Context, tx *sql.Tx, changes []indexChange) error {
	if len(changes) == 0 {
		return nil
	}
	slices.SortStableFunc(changes, func(a, b indexChange) int { return cmp.Compare(a.eid, b.eid) })
	// The statements run under a context that is never cancelled (the
	// driver would watch a cancellable one with a goroutine per
	// statement); ctx is checked between them, and cancelling it rolls
	// the transaction back all the same.
	sctx := context.WithoutCancel(ctx)
	stmts := make([]*sql.Stmt, 0, 4)
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	prepare := func(q string) (*sql.Stmt, error) {
		st, err := tx.PrepareContext(sctx, q)
		if err == nil {
			stmts = append(stmts, st)
		}
		return st, err
	}
	var put, unput, mark, unmark *sql.Stmt
	var err error
	if put, err = prepare(`INSERT OR REPLACE INTO entries_fts (rowid, text) VALUES (?, ?)`); err != nil {
		return err
	}
	if unput, err = prepare(`DELETE FROM entries_fts WHERE rowid = ?`); err != nil {
		return err
	}
	if mark, err = prepare(`INSERT OR IGNORE INTO broken (eid) VALUES (?)`); err != nil {
		return err
	}
	if unmark, err = prepare(`DELETE FROM broken WHERE eid = ?`); err != nil {
		return err
	}
	for i, c := range changes {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case c.del:
			if _, err = unput.ExecContext(sctx, c.eid); err == nil {
				_, err = unmark.ExecContext(sctx, c.eid)
			}
		case c.broken:
			_, err = mark.ExecContext(sctx, c.eid)
		case c.text != "":
			_, err = put.ExecContext(sctx, c.eid, c.text)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fail wraps an error of the index database.
func (ix *indexer) fail(err error) error {
	return fmt.Errorf("sqlitestore: %s (the search index; deleting it while no Store is open has it built again): %w", ix.path, err)
}

// err returns the error of the indexer's last catch-up, nil when it
// succeeded (for tests).
func (ix *indexer) err() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.lastErr
}

// pokeIndex wakes the indexer after a delete, so that the deleted
// entries' text leaves the index file soon rather than at the next batch.
func (s *Store) pokeIndex() {
	if s.ix != nil {
		s.ix.urgent.Store(true)
		s.ix.poke()
	}
}
