package sqlitestore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// The search index is kept a batch behind. Indexing an entry in its own
// append's transaction wrote two thirds of the pages a turn's commit
// wrote (FTS5 writes a segment per transaction and merges them as they
// pile up), so an append only queues its searchable entries' row ids in
// fts_pending, in the same transaction as the entries, and the append
// that finds indexBatch or more queued indexes them all, still inside its
// own transaction: the index and the queue change together, committed and
// synced with that append, so a crash leaves every searchable entry either
// indexed or queued, never neither. Search reads the queued entries
// besides the index's matches (see searchSQL), so its results are the
// same whether an entry is indexed yet or not.
const (
	queueTextSQL   = `INSERT INTO fts_pending (eid) VALUES (?)`
	countQueuedSQL = `SELECT count(*) FROM fts_pending`
	queuedSQL      = `SELECT p.eid, e.body FROM fts_pending p CROSS JOIN entries e ON e.eid = p.eid ORDER BY p.eid`
	unqueueSQL     = `DELETE FROM fts_pending WHERE eid = ?`
)

// indexBatch is how many queued entries an append lets accumulate before
// it indexes them (a variable for tests). One FTS5 segment for 128
// entries costs a few pages more than one for two.
var indexBatch = 128

// indexIfDue indexes the queued entries in tx when there are indexBatch
// or more; known holds the texts of those the transaction queued.
func (s *Store) indexIfDue(ctx context.Context, tx *sql.Tx, known map[int64]string) error {
	var n int
	if err := s.txStmt(ctx, tx, countQueuedSQL).QueryRowContext(ctx).Scan(&n); err != nil {
		return err
	}
	if n < indexBatch {
		return nil
	}
	return s.indexQueued(ctx, tx, known)
}

// indexQueued moves every queued entry into entries_fts, with its text as
// storekit.SearchText gives it, lowered as Search's terms are (by Go's
// rules: the tokenizer's own case folding then acts on query and text
// alike, so that a match for storekit.MatchText is always a match for the
// index too). The texts in known (by row id) are taken as they are; the
// other entries' are read from their bodies. An entry whose body does not
// parse stays queued: Search then reads it among the queued ones and
// reports it as corrupt, as it would have on finding it through the index.
func (s *Store) indexQueued(ctx context.Context, tx *sql.Tx, known map[int64]string) error {
	rows, err := s.txStmt(ctx, tx, queuedSQL).QueryContext(ctx)
	if err != nil {
		return err
	}
	type queued struct {
		eid  int64
		text string
	}
	var todo []queued
	for rows.Next() {
		var eid int64
		var body sql.RawBytes
		if err := rows.Scan(&eid, &body); err != nil {
			rows.Close()
			return err
		}
		if text, ok := known[eid]; ok {
			todo = append(todo, queued{eid, strings.ToLower(text)})
			continue
		}
		e, err := transcript.Parse(body)
		if err != nil {
			continue
		}
		text, ok := storekit.SearchText(e)
		if !ok {
			text = "" // nothing to find; unqueued all the same
		}
		todo = append(todo, queued{eid, strings.ToLower(text)})
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	rows.Close()
	ins, del := s.txStmt(ctx, tx, insertTextSQL), s.txStmt(ctx, tx, unqueueSQL)
	for _, q := range todo {
		if q.text != "" {
			if _, err := ins.ExecContext(ctx, q.eid, q.text); err != nil {
				return err
			}
		}
		if _, err := del.ExecContext(ctx, q.eid); err != nil {
			return err
		}
	}
	return nil
}
