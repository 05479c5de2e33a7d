package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// The reads take the session row and the entries in one statement, so
// that the count and the entries come from one snapshot, and bound the
// entries by the session's count through a subquery the planner evaluates
// once (an InitPlan), never by a joined column: the plan is then a scan
// of the entries' primary key between literal bounds whatever the table's
// statistics say, even on a table never analyzed (TestPlansWithoutStatistics).
// A page costs the page, whatever the transcript's length. $6 ($5 in
// tailSQL) is the TTL cutoff; a session it hides has no row in s, and
// then no entries either (COALESCE: LEAST ignores a NULL).
//
// Every row has two columns, an int4 and a bytea: the first row is the
// session's, its count as -1-entries (so that it sorts first and cannot
// be taken for a position) and its head; each other row is an entry's
// position and line. The session's columns are not joined onto every
// entry's row, and the UNION ALL of the two, ordered by the first column,
// is a merge of the session's row and the primary key's order: the
// server neither sorts the rows of a whole read nor sends the session's
// columns ten thousand times (readRows).

// readSQL reads the entries at positions [$4, min($5, entries)).
const readSQL = `WITH s AS MATERIALIZED (
	SELECT entries, head FROM {s}.sessions s
	WHERE agent = $1 AND owner = $2 AND id = $3 AND (last_ns >= $6 OR pending > 0)
)
SELECT -1 - entries, convert_to(head, 'UTF8') FROM s
UNION ALL
(SELECT seq, entry FROM {s}.entries
	WHERE agent = $1 AND owner = $2 AND session = $3
		AND seq >= $4::bigint AND seq < LEAST($5::bigint, COALESCE((SELECT entries FROM s), 0))
	ORDER BY seq)
ORDER BY 1`

// tailSQL reads the newest $4 entries, walking the primary key backwards
// from the end.
const tailSQL = `WITH s AS MATERIALIZED (
	SELECT entries, head FROM {s}.sessions s
	WHERE agent = $1 AND owner = $2 AND id = $3 AND (last_ns >= $5 OR pending > 0)
)
SELECT -1 - entries, convert_to(head, 'UTF8') FROM s
UNION ALL
(SELECT seq, entry FROM {s}.entries
	WHERE agent = $1 AND owner = $2 AND session = $3 AND seq < (SELECT entries FROM s)
	ORDER BY seq DESC LIMIT $4)
ORDER BY 1`

// Read returns every entry of the session in append order, exactly as
// appended, or none for a session the store does not have (or that TTL
// has hidden). A row that does not parse, or a gap or break in the chain
// of entries, fails the call with a *store.CorruptError.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	entries, _, err := s.read(ctx, key, 0, math.MaxInt32, math.MaxInt32)
	return entries, err
}

// ReadRange returns the entries at positions [start, end), clamped to the
// transcript, and the transcript's length, reading only those rows.
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	start, end = max(start, 0), min(max(end, 0), math.MaxInt32)
	return s.read(ctx, key, start, math.MaxInt32, end)
}

// ReadTail returns the newest n entries in append order and the
// transcript's length, reading only those rows.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	n = min(max(n, 0), math.MaxInt32)
	return s.read(ctx, key, 0, n, math.MaxInt32)
}

func (s *Store) read(ctx context.Context, key store.Key, start, last, end int) ([]transcript.Entry, int, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	out, total, err := s.readOnce(ctx, key, start, last, end)
	if s.connLost(ctx, err) {
		out, total, err = s.readOnce(ctx, key, start, last, end)
	}
	return out, total, err
}

func (s *Store) readOnce(ctx context.Context, key store.Key, start, last, end int) ([]transcript.Entry, int, error) {
	var rows pgx.Rows
	var err error
	if last < math.MaxInt32 {
		rows, err = s.pool.Query(ctx, s.sql(tailSQL), key.Agent, key.Owner, key.ID, last, s.cutoff())
	} else {
		rows, err = s.pool.Query(ctx, s.sql(readSQL), key.Agent, key.Owner, key.ID, start, end, s.cutoff())
	}
	if err != nil {
		return nil, 0, dbError("read", key, err)
	}
	defer rows.Close()
	var (
		out   []transcript.Entry
		total int
		head  string
		lo    int // the first position of the range, known with total
		found bool
		p     transcript.Parser
	)
	for rows.Next() {
		// Each row's columns are read from the driver's bytes as they
		// came (the Parser copies what it keeps), with no allocation of
		// their own; a row in another format is scanned.
		seq, line, ok := rawRow(rows)
		if !ok {
			var seqp *int
			if err := rows.Scan(&seqp, &line); err != nil || seqp == nil {
				return nil, 0, dbError("read", key, fmt.Errorf("a row without a position: %v", err))
			}
			seq = *seqp
		}
		if !found {
			if seq >= 0 {
				return nil, 0, dbError("read", key, fmt.Errorf("an entry's row (at %d) came before the session's", seq))
			}
			found = true
			total, head = -1-seq, string(line)
			lo = max(start, total-last)
			if n := min(end, total) - lo; n > 0 {
				out = make([]transcript.Entry, 0, n)
			}
			continue
		}
		if seq != lo+len(out) {
			return nil, 0, s.corrupt(key, lo+len(out), fmt.Errorf("entry missing: the next row is at %d", seq))
		}
		e, err := p.Parse(line)
		if err != nil {
			return nil, 0, s.corrupt(key, seq, err)
		}
		if err := checkLink(out, seq, e); err != nil {
			return nil, 0, s.corrupt(key, seq, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, dbError("read", key, err)
	}
	if !found {
		return nil, 0, nil
	}
	// Rows missing at the end of the range, or a last entry that is not
	// the head the session row names, mean rows were lost or edited.
	if want := max(min(end, total)-lo, 0); len(out) != want {
		return nil, 0, s.corrupt(key, lo+len(out), fmt.Errorf("entry missing: the session counts %d entries", total))
	}
	if len(out) > 0 && lo+len(out) == total && out[len(out)-1].ID != head {
		return nil, 0, s.corrupt(key, total-1, fmt.Errorf("last entry %q is not the session's head %q", out[len(out)-1].ID, head))
	}
	return out, total, nil
}

// rawRow returns the two columns of a read's row as the server sent them,
// when they came in binary (int4, bytea): pgx's usual formats for them. ok
// is false otherwise, and the row is to be scanned.
func rawRow(rows pgx.Rows) (seq int, line []byte, ok bool) {
	fd, raw := rows.FieldDescriptions(), rows.RawValues()
	if len(fd) != 2 || len(raw) != 2 || fd[0].Format != pgx.BinaryFormatCode || fd[1].Format != pgx.BinaryFormatCode ||
		fd[0].DataTypeOID != pgtype.Int4OID || fd[1].DataTypeOID != pgtype.ByteaOID || len(raw[0]) != 4 || raw[1] == nil {
		return 0, nil, false
	}
	return int(int32(binary.BigEndian.Uint32(raw[0]))), raw[1], true
}

// checkLink checks that e, at position seq, links to the entry read
// before it.
func checkLink(before []transcript.Entry, seq int, e transcript.Entry) error {
	switch {
	case seq == 0 && e.ParentID != "":
		return fmt.Errorf("first entry %q has parent %q", e.ID, e.ParentID)
	case len(before) > 0 && e.ParentID != before[len(before)-1].ID:
		return fmt.Errorf("entry %q has parent %q, not the entry before it, %q", e.ID, e.ParentID, before[len(before)-1].ID)
	}
	return nil
}

func (s *Store) corrupt(key store.Key, seq int, err error) error {
	return &store.CorruptError{
		Key:      key,
		Position: seq,
		Where:    fmt.Sprintf("row seq=%d of %s.entries", seq, s.schemaQ),
		Err:      err,
	}
}

const infoColumns = `id, started_ns, last_ns, title, message_count, pending, compactions, entries`

func scanInfo(row pgx.Row, ns store.Namespace) (store.SessionInfo, error) {
	var (
		i             store.SessionInfo
		started, last int64
	)
	err := row.Scan(&i.ID, &started, &last, &i.Title, &i.MessageCount, &i.PendingApprovals, &i.Compactions, &i.Entries)
	i.Agent, i.Owner = ns.Agent, ns.Owner
	i.Started, i.LastActivity = fromNanos(started), fromNanos(last)
	return i, err
}

// Stat returns the session's info from its row, or store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.SessionInfo{}, err
	}
	i, err := scanInfo(s.pool.QueryRow(ctx, s.sql(`SELECT `+infoColumns+` FROM {s}.sessions s
		WHERE agent = $1 AND owner = $2 AND id = $3 AND `+visible("s", 4)),
		key.Agent, key.Owner, key.ID, s.cutoff()), key.Namespace())
	if errors.Is(err, pgx.ErrNoRows) {
		return store.SessionInfo{}, fmt.Errorf("pgstore: session %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.SessionInfo{}, dbError("stat", key, err)
	}
	return i, nil
}

// listFirstSQL lists the first $4 sessions of a namespace, newest
// activity first; listNextSQL those after the cursor ($5, $6).
const (
	listSQL      = `SELECT ` + infoColumns + ` FROM {s}.sessions s WHERE agent = $1 AND owner = $2 AND ` + listed + ` AND (last_ns >= $3 OR pending > 0)`
	listFirstSQL = listSQL + ` ORDER BY last_ns DESC, id DESC LIMIT $4`
	listNextSQL  = listSQL + ` AND (last_ns, id) < ($5, $6) ORDER BY last_ns DESC, id DESC LIMIT $4`
)

// List returns a page of the namespace's sessions, newest activity first, from
// the sessions table alone: an index scan of sessions_listing that starts
// at the cursor and reads the page (and one row more, to know whether
// another page follows).
func (s *Store) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return store.SessionPage{}, err
	}
	limit := opt.PageSize()
	q := listFirstSQL
	args := []any{ns.Agent, ns.Owner, s.cutoff(), limit + 1}
	if opt.Cursor != "" {
		p, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		q = listNextSQL
		args = append(args, nanos(p.LastActivity), p.ID)
	}
	rows, err := s.pool.Query(ctx, s.sql(q), args...)
	if err != nil {
		return store.SessionPage{}, dbError("list", ns, err)
	}
	defer rows.Close()
	var page store.SessionPage
	for rows.Next() {
		i, err := scanInfo(rows, ns)
		if err != nil {
			return store.SessionPage{}, dbError("list", ns, err)
		}
		page.Sessions = append(page.Sessions, i)
	}
	if err := rows.Err(); err != nil {
		return store.SessionPage{}, dbError("list", ns, err)
	}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		last := page.Sessions[limit-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page, nil
}

// Namespaces returns every agent and owner that has sessions, in order.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT DISTINCT agent, owner FROM {s}.sessions ORDER BY agent, owner`))
	if err != nil {
		return nil, dbError("list namespaces", nil, err)
	}
	namespaces, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Namespace, error) {
		var sc store.Namespace
		err := r.Scan(&sc.Agent, &sc.Owner)
		return sc, err
	})
	if err != nil {
		return nil, dbError("list namespaces", nil, err)
	}
	return namespaces, nil
}
