package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// row is what one append writes: the entry and its effect on the session's
// SessionInfo, worked out by store.SessionInfo.Apply so that every store
// counts the same way.
type row struct {
	line     []byte // the entry, as transcript.AppendJSON writes it
	tsNs     int64
	title    string // the title the entry gives a session that has none
	retitle  bool   // the entry renames the session: title replaces its title
	messages int    // 1 for a message, else 0
	pending  int    // +1 for an approval request, -1 for a decision, else 0
	compacts int    // 1 for a compaction, else 0
	search   *string
}

// newRow checks e (storekit.CheckEntry) and returns its row.
func newRow(key store.Key, e transcript.Entry) (row, error) {
	line, err := storekit.CheckEntry(key, e)
	if err != nil {
		return row{}, err
	}
	var d store.SessionInfo
	d.Apply(key, e)
	r := row{line: line, tsNs: nanos(e.Timestamp), title: d.Title, retitle: store.Retitles(e),
		messages: d.MessageCount, compacts: d.Compactions}
	switch e.Type {
	case transcript.TypeApprovalRequest:
		r.pending = 1
	case transcript.TypeApprovalDecision:
		r.pending = -1
	}
	if text, ok := storekit.SearchText(e); ok {
		t := searchForm(text)
		r.search = &t
	}
	return r, nil
}

// searchForm is the text the search column holds and queries match: lower
// case as storekit.MatchText sees it. Postgres text cannot hold NUL, so NUL
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
		title = CASE WHEN title = '' OR $13 THEN $7 ELSE title END,
		pending = GREATEST(pending + $8, 0),
		compactions = compactions + $14
	WHERE agent = $1 AND owner = $2 AND id = $3 AND head = $9
		AND (last_ns >= $10 OR pending > 0)
	RETURNING entries - 1 AS seq
)
INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry, search)
SELECT $1, $2, $3, s.seq, $4, $5, $11, $12 FROM s`

// The first entry creates the session row; of two writers racing to
// create it, the unique key lets exactly one in.
const appendFirstSQL = `WITH s AS (
	INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, compactions, entries, head)
	VALUES ($1, $2, $3, $5, $5, $7, $6, GREATEST($8, 0), $11, 1, $4)
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
	exec := func() error {
		return retry(ctx, func() (err error) {
			tag, err = s.pool.Exec(ctx, s.sql(appendNextSQL),
				key.Agent, key.Owner, key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending,
				e.ParentID, s.cutoff(), r.line, r.search, r.retitle, r.compacts)
			return err
		})
	}
	err = exec()
	again := s.connLost(ctx, err)
	if again {
		err = resent(err, exec()) // see againOnLostConn
	}
	if err != nil {
		return s.appendError(ctx, key, e, e.ID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.conflict(ctx, key, e, ours(again, e.ID))
}

// againOnLostConn: an append whose connection failed (connLost) is sent
// once more, on a new connection. That cannot store it twice: the first
// try either never committed, and the second appends it, or committed
// (perhaps only now), and the second finds its parent no longer the head
// and changes nothing; its conflict then shows the entry as the head, and
// the append succeeded. ours names that entry for conflict.
func ours(again bool, last string) string {
	if again {
		return last
	}
	return ""
}

// resent is the failure of an append sent again (againOnLostConn) whose
// first try failed with first and second with second: a second try the
// server refused, or that was never sent, says nothing of the first,
// which may have committed, so first is the failure to report.
func resent(first, second error) error {
	if second != nil && notApplied(second) {
		return first
	}
	return second
}

// notApplied reports whether err, from a statement, says the statement
// changed nothing: the server refused it (rolled back), or it was never
// sent.
func notApplied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || neverSent(err)
}

// neverSent reports whether err, from a statement, came before the
// statement could be sent. pgconn.SafeToRetry says so of most such
// failures, but not of a connection that could not be made (a refused
// dial, a handshake that failed: *pgconn.ConnectError), on which nothing
// of the statement was ever written.
func neverSent(err error) bool {
	var ce *pgconn.ConnectError
	return pgconn.SafeToRetry(err) || errors.As(err, &ce)
}

func (s *Store) appendFirst(ctx context.Context, key store.Key, e transcript.Entry, r row) error {
	return s.startSession(ctx, key, func() error {
		var tag pgconn.CommandTag
		exec := func() error {
			return retry(ctx, func() (err error) {
				tag, err = s.pool.Exec(ctx, s.sql(appendFirstSQL),
					key.Agent, key.Owner, key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending,
					r.line, r.search, r.compacts)
				return err
			})
		}
		err := exec()
		again := s.connLost(ctx, err)
		if again {
			err = resent(err, exec()) // see againOnLostConn
		}
		if err != nil {
			return s.appendError(ctx, key, e, e.ID, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		return s.conflict(ctx, key, e, ours(again, e.ID))
	})
}

// startSession runs start, which appends the first entries of session
// key. With a TTL, a new session is the moment to clear the expired ones
// of its namespace, a batch at a time, so they do not pile up unseen;
// and when start conflicts because the session exists, a session TTL
// hid ends there and start runs once more, so the same id starts afresh.
// Otherwise the conflict stands.
func (s *Store) startSession(ctx context.Context, key store.Key, start func() error) error {
	if s.ttl <= 0 {
		return start()
	}
	if _, err := s.sweep(ctx, key.Namespace(), sweepBatch); err != nil {
		return err
	}
	err := start()
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	if gone, derr := s.deleteIfExpired(ctx, key); derr != nil || !gone {
		return cmp.Or(derr, err)
	}
	return start()
}

// ErrOutcomeUnknown is returned by Append and AppendBatch when the
// connection failed after the statement may have reached the server (cut,
// reset, timed out) and the session's head, read afterwards, does not show
// the entries: the server may still commit them. Re-read the session
// (after the connection is back) to find out. The error also wraps the
// failure itself.
var ErrOutcomeUnknown = errors.New("pgstore: append outcome unknown: the entries may or may not have been appended")

// settleTimeout bounds the read of the head that finds out whether an
// append whose reply was lost committed.
const settleTimeout = 5 * time.Second

// appendError turns a failed append into the error callers test for. last
// is the id of the entry the append would leave as the session's head, ""
// when no single head tells (a bulk of several sessions).
func (s *Store) appendError(ctx context.Context, key store.Key, e transcript.Entry, last string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if pe.Code == "23505" { // unique_violation on (key, seq)
			return s.conflict(ctx, key, e, "")
		}
		return dbError("append to", key, err) // refused by the server: rolled back
	}
	if neverSent(err) {
		return dbError("append to", key, err) // never sent
	}
	// The connection failed with the statement sent: the server may have
	// committed it with the reply lost on the way back. The head tells
	// when it did; when it does not, the statement may still be running
	// (a server notices a dead client only when it writes to it), so
	// "not appended" cannot be said.
	if last != "" {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		var head string
		herr := s.pool.QueryRow(sctx, s.sql(`SELECT head FROM {s}.sessions WHERE agent = $1 AND owner = $2 AND id = $3`),
			key.Agent, key.Owner, key.ID).Scan(&head)
		if herr == nil && head == last {
			return nil
		}
	}
	return fmt.Errorf("pgstore: append to %s: %w: %w", key, ErrOutcomeUnknown, err)
}

// conflict reports an append whose parent was not the head, naming the
// head as it is now; nil when the session holds ours, the last entry of
// an append sent again (againOnLostConn), whose first try committed (it
// is the head, or another writer appended after it since).
func (s *Store) conflict(ctx context.Context, key store.Key, e transcript.Entry, ours string) error {
	var head string
	err := s.pool.QueryRow(ctx, s.sql(`SELECT head FROM {s}.sessions s
		WHERE agent = $1 AND owner = $2 AND id = $3 AND `+visible("s", 4)),
		key.Agent, key.Owner, key.ID, s.cutoff()).Scan(&head)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return dbError("append to", key, err)
	}
	if ours != "" && head == ours {
		return nil
	}
	if ours != "" && err == nil {
		// Another writer may have appended after it already.
		var stored bool
		err := s.pool.QueryRow(ctx, s.sql(`SELECT EXISTS (SELECT 1 FROM {s}.entries
			WHERE agent = $1 AND owner = $2 AND session = $3 AND entry_id = $4)`),
			key.Agent, key.Owner, key.ID, ours).Scan(&stored)
		if err != nil {
			return dbError("append to", key, err)
		}
		if stored {
			return nil
		}
	}
	return storekit.ConflictError(key, e.ParentID, head)
}
