package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/spool-go/spool/transcript"
)

// countCompactions sets sessions.compactions of a sealed database that
// schema version 2 found with entries, which SQL cannot read: it opens
// every entry once, in one transaction, and then drops the settings row
// 'compactions' that asked for it. A database without the row costs one
// query. Other processes wait on the write lock, so none appends to a
// session before its count is in.
func (s *Store) countCompactions(ctx context.Context) error {
	tx, err := s.w.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var v string
	err = tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'compactions'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	refs, err := sessionRefs(ctx, tx)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: counting compactions: %w", s.path, err)
	}
	for _, r := range refs {
		n, err := s.countSessionCompactions(ctx, tx, r)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET compactions = ? WHERE sid = ?`, n, r.sid); err != nil {
			return fmt.Errorf("sqlitestore: %s: counting compactions: %w", s.path, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE name = 'compactions'`); err != nil {
		return fmt.Errorf("sqlitestore: %s: counting compactions: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: %s: counting compactions: %w", s.path, err)
	}
	return nil
}

func (s *Store) countSessionCompactions(ctx context.Context, tx *sql.Tx, r sessionRef) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, body FROM entries WHERE sid = ? ORDER BY seq`, r.sid)
	if err != nil {
		return 0, s.fail("count compactions of", r.key, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var seq int
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return 0, s.fail("count compactions of", r.key, err)
		}
		e, err := s.decode(r.key, r.sid, seq, body)
		if err != nil {
			return 0, err
		}
		if e.Type == transcript.TypeCompaction {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, s.fail("count compactions of", r.key, err)
	}
	return n, nil
}

func sessionRefs(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) ([]sessionRef, error) {
	rows, err := q.QueryContext(ctx, `SELECT sid, agent, owner, id FROM sessions ORDER BY sid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sessionRef
	for rows.Next() {
		var r sessionRef
		if err := rows.Scan(&r.sid, &r.key.Agent, &r.key.Owner, &r.key.ID); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
