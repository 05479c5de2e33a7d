package pgstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// row is what one append writes: the entry and its effect on the session's
// SessionInfo, worked out by store.SessionInfo.Apply so that every store
// counts the same way.
type row struct {
	line     []byte // the entry, as transcript.AppendJSON writes it
	tsNs     int64
	title    string // the title the entry gives a session that has none
	messages int    // 1 for a message, else 0
	pending  int    // +1 for an approval request, -1 for a decision, else 0
	search   *string
}

// newRow checks e (store.CheckEntry) and returns its row.
func newRow(key store.Key, e transcript.Entry) (row, error) {
	line, err := store.CheckEntry(key, e)
	if err != nil {
		return row{}, err
	}
	var d store.SessionInfo
	d.Apply(key, e)
	r := row{line: line, tsNs: nanos(e.Timestamp), title: d.Title, messages: d.MessageCount}
	switch e.Type {
	case transcript.TypeApprovalRequest:
		r.pending = 1
	case transcript.TypeApprovalDecision:
		r.pending = -1
	}
	if text, ok := store.SearchText(e); ok {
		t := searchForm(text)
		r.search = &t
	}
	return r, nil
}

// searchForm is the text the search column holds and queries match: lower
// case as store.MatchText sees it. Postgres text cannot hold NUL, so NUL
// becomes U+FFFD, in queries too (see Search).
func searchForm(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "\x00", "\uFFFD")
}

// Appending to a session that has entries: one statement moves the head
// from the entry's parent to the entry, only if the parent is the head and
// TTL has not hidden the session, and inserts the entry at the position
// the update counted. The row lock of the UPDATE orders concurrent writers;
// a writer that waited sees the new head and matches nothing. The primary
// key of entries is the last line of defence.
const appendNextSQL = `WITH s AS (
	UPDATE {s}.sessions SET
		head = $4,
		entries = entries + 1,
		last_ns = GREATEST(last_ns, $5),
		message_count = message_count + $6,
		title = CASE WHEN title = '' THEN $7 ELSE title END,
		pending = GREATEST(pending + $8, 0)
	WHERE agent = $1 AND owner = $2 AND id = $3 AND head = $9
		AND (last_ns >= $10 OR pending > 0)
	RETURNING entries - 1 AS seq
)
INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
SELECT $1, $2, $3, s.seq, $4, $5, $11, $12 FROM s`

// The first entry creates the session row; of two writers racing to
// create it, the unique key lets exactly one in.
const appendFirstSQL = `WITH s AS (
	INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, entries, head)
	VALUES ($1, $2, $3, $5, $5, $7, $6, GREATEST($8, 0), 1, $4)
	ON CONFLICT (agent, owner, id) DO NOTHING
	RETURNING 0 AS seq
)
INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
SELECT $1, $2, $3, s.seq, $4, $5, $9, $10 FROM s`

// Append adds e at the end of the session, in one statement that commits
// before Append returns (durable as the server's commit is; see the package
// doc). It fails with store.ErrConflict when e.ParentID is not the
// session's last entry.
func (s *Store) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	// The parent is checked against the database below; here only the
	// entry itself.
	r, err := newRow(key, e)
	if err != nil {
		return err
	}
	if e.ParentID == "" {
		return s.appendFirst(ctx, key, e, r)
	}
	var tag pgconn.CommandTag
	err = retry(ctx, func() (err error) {
		tag, err = s.pool.Exec(ctx, s.sql(appendNextSQL),
			key.Agent, key.Owner, key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending,
			e.ParentID, s.cutoff(), r.line, r.search)
		return err
	})
	if err != nil {
		return s.appendError(ctx, key, e, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.conflict(ctx, key, e)
}

func (s *Store) appendFirst(ctx context.Context, key store.Key, e transcript.Entry, r row) error {
	if s.ttl > 0 {
		// A new session is the moment to clear the expired ones of its
		// namespace, a batch at a time, so they do not pile up unseen.
		if _, err := s.sweep(ctx, key.Namespace(), sweepBatch); err != nil {
			return err
		}
	}
	for attempt := 0; attempt < 2; attempt++ {
		var tag pgconn.CommandTag
		err := retry(ctx, func() (err error) {
			tag, err = s.pool.Exec(ctx, s.sql(appendFirstSQL),
				key.Agent, key.Owner, key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending,
				r.line, r.search)
			return err
		})
		if err != nil {
			return s.appendError(ctx, key, e, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		// The session exists. If TTL hid it, it ends here and the same id
		// starts afresh; otherwise the entry conflicts.
		if s.ttl <= 0 {
			break
		}
		gone, err := s.deleteIfExpired(ctx, key)
		if err != nil {
			return err
		}
		if !gone {
			break
		}
	}
	return s.conflict(ctx, key, e)
}

// appendError turns a failed append into the error callers test for.
func (s *Store) appendError(ctx context.Context, key store.Key, e transcript.Entry, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation on (key, seq)
		return s.conflict(ctx, key, e)
	}
	return dbError("append to", key, err)
}

// conflict reports an append whose parent was not the head, naming the
// head as it is now.
func (s *Store) conflict(ctx context.Context, key store.Key, e transcript.Entry) error {
	var head string
	err := s.pool.QueryRow(ctx, s.sql(`SELECT head FROM {s}.sessions s
		WHERE agent = $1 AND owner = $2 AND id = $3 AND `+visible("s", 4)),
		key.Agent, key.Owner, key.ID, s.cutoff()).Scan(&head)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return dbError("append to", key, err)
	}
	return store.ConflictError(key, e.ParentID, head)
}

// AppendBatch adds entries at the end of the session in one transaction
// (store.BatchAppender): its statements are sent together, one round trip
// for the batch, and one commit makes them durable. A batch whose first
// parent is not the head appends nothing and fails with store.ErrConflict.
func (s *Store) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if _, err := store.CheckBatch(key, entries); err != nil || len(entries) == 0 {
		return err
	}
	if len(entries) == 1 {
		return s.Append(ctx, key, entries[0])
	}
	rows := make([]row, len(entries))
	for i, e := range entries {
		var err error
		if rows[i], err = newRow(key, e); err != nil {
			return err
		}
	}
	first := entries[0].ParentID == ""
	if first && s.ttl > 0 {
		if _, err := s.sweep(ctx, key.Namespace(), sweepBatch); err != nil {
			return err
		}
	}
	var landed bool
	err := retry(ctx, func() error {
		var err error
		landed, err = s.appendBatchTx(ctx, key, entries, rows)
		return err
	})
	if err != nil {
		return s.appendError(ctx, key, entries[0], err)
	}
	if landed {
		return nil
	}
	if first && s.ttl > 0 {
		// The session exists: if TTL hid it, Append ends it and starts
		// it afresh, and the rest follow.
		if err := s.Append(ctx, key, entries[0]); err != nil {
			return err
		}
		return s.AppendBatch(ctx, key, entries[1:])
	}
	return s.conflict(ctx, key, entries[0])
}

// appendBatchTx runs the batch's statements in one transaction, and
// reports false, having committed nothing, when the first one found the
// session's head elsewhere.
func (s *Store) appendBatchTx(ctx context.Context, key store.Key, entries []transcript.Entry, rows []row) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	var b pgx.Batch
	for i, e := range entries {
		r := rows[i]
		if i == 0 && e.ParentID == "" {
			b.Queue(s.sql(appendFirstSQL), key.Agent, key.Owner, key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending, r.line, r.search)
			continue
		}
		b.Queue(s.sql(appendNextSQL), key.Agent, key.Owner, key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending,
			e.ParentID, s.cutoff(), r.line, r.search)
	}
	res := tx.SendBatch(ctx, &b)
	for range entries {
		tag, err := res.Exec()
		if err != nil {
			res.Close()
			return false, err
		}
		if tag.RowsAffected() != 1 {
			res.Close()
			return false, nil
		}
	}
	if err := res.Close(); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}
