package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// The statements of Append, prepared on the write connection once (see
// bulk.go).
const (
	sessionRowSQL = `SELECT sid, started, last_activity, title IS NOT NULL, messages, pending, compactions, entries, head
		FROM sessions WHERE agent = ? AND owner = ? AND id = ?`
	deleteSessionSQL = `DELETE FROM sessions WHERE sid = ?`
	// The row is updated only if it is still the one the append read or
	// cached (see rowCache): the same session, head and count.
	updateSessionSQL = `UPDATE sessions SET
		last_activity = ?, title = coalesce(?, title), messages = ?, pending = ?, compactions = ?, entries = ?, head = ?
		WHERE sid = ? AND agent = ? AND owner = ? AND id = ? AND head = ? AND entries = ?`
	insertSessionSQL = `INSERT INTO sessions
		(agent, owner, id, started, last_activity, title, messages, pending, compactions, entries, head)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sweepNamespaceSQL = `DELETE FROM sessions WHERE sid IN (
		SELECT sid FROM sessions WHERE agent = ? AND owner = ? AND last_activity < ? AND pending = 0 LIMIT ?)`
	// An entry's row id is the next free one of its millisecond (see
	// rowid.go), ?1 the millisecond's first and ?2 the next one's.
	insertEntrySQL = `INSERT INTO entries (eid, sid, seq, ts, indexed, body) VALUES (
		coalesce((SELECT eid FROM entries WHERE eid >= ?1 AND eid < ?2 ORDER BY eid DESC LIMIT 1) + 1, ?1),
		?3, ?4, ?5, ?6, ?7)`
	trimLogSQL = `DELETE FROM fts_log WHERE seq < ?`
)

// sweepBatch bounds the expired sessions that creating a session deletes in
// its namespace, so one Append never pays for a long-neglected sweep.
const sweepBatch = 16

// Append adds e at the end of the session in one transaction that checks
// the head, inserts the entry and updates the session's row. It returns
// once the transaction is committed and the write-ahead log synced to disk.
func (s *Store) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	return s.AppendBatch(ctx, key, []transcript.Entry{e})
}

// AppendBatch adds entries at the end of the session in one transaction,
// as Append adds one (store.BatchAppender): one commit and one sync of the
// log for all of them, and none of them stored when it fails.
func (s *Store) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	return s.AppendBulk(ctx, []store.Batch{{Key: key, Entries: entries}})
}

// AppendBulk appends every batch in one transaction (store.BulkAppender):
// one commit and one sync of the log for all of them, and nothing of any
// stored when one fails.
func (s *Store) AppendBulk(ctx context.Context, batches []store.Batch) error {
	// Validate and encode the entries before taking the write lock; each
	// batch's first parent is checked in the transaction.
	bodies := make([][][]byte, len(batches))
	n := 0
	for i, b := range batches {
		if err := store.ValidateKey(b.Key); err != nil {
			return err
		}
		var err error
		if bodies[i], err = storekit.CheckBatch(b.Key, b.Entries); err != nil {
			return err
		}
		n += len(b.Entries)
	}
	if n == 0 {
		return nil
	}
	var w *txWrite
	err := s.withWriteConn(ctx, func(c *writeConn) error {
		var err error
		w, err = s.bulkTx(ctx, c, batches, bodies)
		return err
	})
	if err != nil {
		if w != nil {
			s.rows.forget(w.rows)
		}
		return err
	}
	s.rows.keep(w.rows)
	if s.ix != nil {
		s.ix.noteLogged(w.logged)
	}
	return nil
}

// bulkTx appends the batches, encoded as bodies, in one transaction on c.
// The statements run under a context that is never cancelled: the driver
// watches a cancellable one with a goroutine per statement, which cost a
// bulk more than its inserts did. ctx is checked between batches and
// before the commit instead, and its end rolls the transaction back; a
// wait for another process's write lock (begin) ends with it.
func (s *Store) bulkTx(ctx context.Context, c *writeConn, batches []store.Batch, bodies [][][]byte) (w *txWrite, err error) {
	if err := c.begin(ctx, s.w.timeout); err != nil {
		return nil, s.fail("append to", batches[0].Key, err)
	}
	w = newTxWrite(c)
	defer func() {
		if err != nil {
			err = c.rollback(err)
		}
	}()
	stmtCtx := context.WithoutCancel(ctx)
	for i, b := range batches {
		if len(b.Entries) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return w, s.fail("append to", b.Key, err)
		}
		if err := s.appendTx(stmtCtx, w, b.Key, b.Entries, bodies[i]); err != nil {
			return w, err
		}
	}
	if err := s.trimLog(stmtCtx, w); err != nil {
		return w, s.fail("append to", batches[0].Key, err)
	}
	if err := ctx.Err(); err != nil {
		return w, s.fail("append to", batches[0].Key, err)
	}
	if err := c.commit(stmtCtx); err != nil {
		// commit rolled back; the deferred rollback finds nothing open
		return w, s.fail("append to", batches[0].Key, err)
	}
	return w, nil
}

// trimLog deletes, in w's transaction, the rows of fts_log that the
// search index has applied and synced, as far as this Store's indexer last
// saw (see index.go); the row at its mark stays.
func (s *Store) trimLog(ctx context.Context, w *txWrite) error {
	if s.ix == nil {
		return nil
	}
	to := s.ix.trimTo.Load()
	if to <= s.ix.trimmed.Load() {
		return nil
	}
	if _, err := w.c.exec(ctx, trimLogSQL, to); err != nil {
		return err
	}
	s.ix.trimmed.Store(to)
	return nil
}

// appendTx appends entries, encoded as bodies, to the session in tx:
// checks the head, updates or makes the session's row and inserts the
// entries. It starts from the row as this Store last wrote it, when it is
// cached, and reads it otherwise, or when the cached one proves stale.
func (s *Store) appendTx(ctx context.Context, w *txWrite, key store.Key, entries []transcript.Entry, bodies [][]byte) error {
	row, cached := w.rows[key]
	if !cached {
		row, cached = s.rows.get(key)
	}
	for {
		if !cached {
			var err error
			if row, err = s.sessionRow(ctx, w, key); err != nil {
				return s.fail("append to", key, err)
			}
		}
		done, err := s.appendRow(ctx, w, key, row, cached, entries, bodies)
		if err != nil || done {
			return err
		}
		cached = false
	}
}

// appendRow is appendTx from row, the session's row as read in the
// transaction or, when cached, as cached: it reports done false, having
// changed nothing, when a cached row is not the stored one (or might not
// be: a parent that is not its head, an expiry).
func (s *Store) appendRow(ctx context.Context, w *txWrite, key store.Key, row sessionRow, cached bool, entries []transcript.Entry, bodies [][]byte) (done bool, err error) {
	if row.found && row.expired(s.cutoff()) {
		if cached {
			return false, nil
		}
		// An expired session with no approval pending starts fresh under
		// the same id: nothing of the old one may come back.
		if _, err := w.c.exec(ctx, deleteSessionSQL, row.sid); err != nil {
			return false, s.fail("append to", key, err)
		}
		row = sessionRow{}
	}
	if err := storekit.CheckParent(key, row.head, entries[0]); err != nil {
		if cached {
			return false, nil
		}
		return false, err
	}

	info := row.info
	hadTitle := row.hasTitle
	if hadTitle {
		info.Title = "-" // Apply must not replace it; the stored one stays
	}
	retitled := false // a rename replaces the stored title
	for _, e := range entries {
		info.Apply(key, e)
		retitled = retitled || store.Retitles(e)
	}
	var title any // nil keeps the stored title
	if (!hadTitle || retitled) && info.Title != "" {
		if title, err = s.sealTitle(key, info.Title); err != nil {
			return false, fmt.Errorf("sqlitestore: session %s: sealing title: %w", key, err)
		}
	}
	last := entries[len(entries)-1].ID
	if row.found {
		var res driver.Result
		res, err = w.c.exec(ctx, updateSessionSQL,
			info.LastActivity.UnixNano(), title, info.MessageCount, info.PendingApprovals, info.Compactions, info.Entries, last,
			row.sid, key.Agent, key.Owner, key.ID, row.head, row.info.Entries)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil && n == 0 {
			if cached {
				return false, nil
			}
			err = errors.New("the session's row changed within its transaction")
		}
	} else {
		if err := s.sweepNamespace(ctx, w, key.Namespace()); err != nil {
			return false, s.fail("append to", key, err)
		}
		var res driver.Result
		res, err = w.c.exec(ctx, insertSessionSQL,
			key.Agent, key.Owner, key.ID, info.Started.UnixNano(), info.LastActivity.UnixNano(), title,
			info.MessageCount, info.PendingApprovals, info.Compactions, info.Entries, last)
		if err == nil {
			row.sid, err = res.LastInsertId()
		}
	}
	if err != nil {
		return false, s.fail("append to", key, err)
	}
	for i, e := range entries {
		if err := s.insertEntry(ctx, w, key, row.sid, row.info.Entries+i, e, bodies[i]); err != nil {
			return false, err
		}
	}
	info.Title = ""
	w.rows[key] = sessionRow{found: true, sid: row.sid, hasTitle: hadTitle || title != nil, head: last, info: info}
	return true, nil
}

// insertEntry inserts entry e, encoded as body, at position seq of the
// session whose row is sid. An entry of a type that can have text to
// search is marked indexed, which logs it for the search index (by
// trigger: see index.go); its text is the indexer's to read.
func (s *Store) insertEntry(ctx context.Context, w *txWrite, key store.Key, sid int64, seq int, e transcript.Entry, body []byte) error {
	ts := e.Timestamp.UnixNano() // CheckEntry keeps it within what nanoseconds hold
	searchable := storekit.SearchableType(e.Type) && s.cfg.protector == nil
	var err error
	if s.cfg.protector != nil {
		if body, err = s.cfg.protector.Seal(body, seal.AssociatedData(key.Agent, key.Owner, key.ID, seq)); err != nil {
			return fmt.Errorf("sqlitestore: session %s: sealing entry %d: %w", key, seq, err)
		}
	}
	lo := msOf(ts) << msShift
	res, err := w.c.exec(ctx, insertEntrySQL, lo, lo+1<<msShift, sid, seq, ts, searchable, body)
	var eid int64
	if err == nil {
		eid, err = res.LastInsertId()
	}
	if err == nil && bucketOf(eid) != msOf(ts) {
		err = fmt.Errorf("more than %d entries stored with timestamps in one millisecond", 1<<msShift)
	}
	if err != nil {
		return s.fail("append to", key, err)
	}
	if searchable {
		w.logged++
	}
	return nil
}

// sessionRow is a session's row as Append needs it: the zero value is a
// session that does not exist yet.
type sessionRow struct {
	found    bool
	sid      int64
	hasTitle bool
	head     string
	info     store.SessionInfo
}

func (r sessionRow) expired(cutoff int64) bool {
	return r.info.LastActivity.UnixNano() < cutoff && r.info.PendingApprovals == 0
}

func (s *Store) sessionRow(ctx context.Context, w *txWrite, key store.Key) (sessionRow, error) {
	var r sessionRow
	var started, last int64
	err := w.c.queryRow(ctx, sessionRowSQL, []any{key.Agent, key.Owner, key.ID},
		&r.sid, &started, &last, &r.hasTitle, &r.info.MessageCount, &r.info.PendingApprovals, &r.info.Compactions, &r.info.Entries, &r.head)
	if errors.Is(err, sql.ErrNoRows) {
		return sessionRow{}, nil
	}
	if err != nil {
		return sessionRow{}, err
	}
	r.found = true
	r.info.ID, r.info.Agent, r.info.Owner = key.ID, key.Agent, key.Owner
	r.info.Started = time.Unix(0, started).UTC()
	r.info.LastActivity = time.Unix(0, last).UTC()
	return r, nil
}

// sweepNamespace deletes up to sweepBatch expired sessions of namespace.
func (s *Store) sweepNamespace(ctx context.Context, w *txWrite, ns store.Namespace) error {
	if s.cfg.ttl <= 0 {
		return nil
	}
	_, err := w.c.exec(ctx, sweepNamespaceSQL, ns.Agent, ns.Owner, s.cutoff(), sweepBatch)
	return err
}

// fail wraps a database error of an operation on key.
func (s *Store) fail(op string, key store.Key, err error) error {
	return fmt.Errorf("sqlitestore: %s: %s session %s: %w", s.path, op, key, err)
}
