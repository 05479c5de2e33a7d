package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// List returns one page of the namespace's sessions, newest activity first,
// from the sessions_by_activity index: a page reads its own rows and no
// others, and no entries.
func (s *Store) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return store.SessionPage{}, err
	}
	limit := opt.PageSize()
	query := `SELECT ` + infoColumns + ` FROM sessions s
		WHERE s.agent = ? AND s.owner = ? AND ` + visible
	args := []any{ns.Agent, ns.Owner, s.cutoff()}
	if opt.Cursor != "" {
		pos, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		query += ` AND (s.last_activity, s.id) < (?, ?)`
		args = append(args, pos.LastActivity.UnixNano(), pos.ID)
	}
	query += ` ORDER BY s.last_activity DESC, s.id DESC LIMIT ?`
	args = append(args, limit+1) // one more tells whether another page follows

	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return store.SessionPage{}, fmt.Errorf("sqlitestore: %s: listing %s: %w", s.path, ns, err)
	}
	defer rows.Close()
	page := store.SessionPage{Sessions: make([]store.SessionInfo, 0, min(limit, 64))}
	more := false
	for rows.Next() {
		if len(page.Sessions) == limit {
			more = true
			break
		}
		info, err := s.scanInfo(ns, rows)
		if err != nil {
			return store.SessionPage{}, err
		}
		page.Sessions = append(page.Sessions, info)
	}
	if err := rows.Err(); err != nil {
		return store.SessionPage{}, fmt.Errorf("sqlitestore: %s: listing %s: %w", s.path, ns, err)
	}
	if more {
		last := page.Sessions[len(page.Sessions)-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page, nil
}

// Delete removes the session: its row, and with it (in the same statement)
// its entries (logged, so that the indexer takes their search index rows
// out too). The same id then starts empty.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if _, err := s.w.exec(ctx, `DELETE FROM sessions WHERE agent = ? AND owner = ? AND id = ?`,
		key.Agent, key.Owner, key.ID); err != nil {
		return s.fail("delete", key, err)
	}
	s.pokeIndex()
	return nil
}

// Prune deletes, in one transaction, the sessions of namespace that r does not
// keep as of now (and those the TTL has expired): the newest r.MaxSessions
// sessions not idle longer than r.MaxAge stay.
func (s *Store) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return 0, err
	}
	if r.Unlimited() && s.cfg.ttl <= 0 {
		return 0, nil
	}
	tx, err := s.w.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: %s: pruning %s: %w", s.path, ns, err)
	}
	defer tx.Rollback()
	deleted := 0
	del := func(query string, args ...any) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("sqlitestore: %s: pruning %s: %w", s.path, ns, err)
		}
		n, _ := res.RowsAffected()
		deleted += int(n)
		return nil
	}
	if s.cfg.ttl > 0 {
		if err := del(`DELETE FROM sessions WHERE agent = ? AND owner = ? AND last_activity < ? AND pending = 0`,
			ns.Agent, ns.Owner, s.cutoff()); err != nil {
			return 0, err
		}
	}
	if r.MaxAge > 0 {
		// storekit.Expired: idle strictly longer than MaxAge.
		if err := del(`DELETE FROM sessions WHERE agent = ? AND owner = ? AND last_activity < ?`,
			ns.Agent, ns.Owner, now.Add(-r.MaxAge).UnixNano()); err != nil {
			return 0, err
		}
	}
	if r.MaxSessions > 0 {
		if err := del(`DELETE FROM sessions WHERE sid IN (
				SELECT sid FROM sessions WHERE agent = ? AND owner = ?
				ORDER BY last_activity DESC, id DESC LIMIT -1 OFFSET ?)`,
			ns.Agent, ns.Owner, r.MaxSessions); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlitestore: %s: pruning %s: %w", s.path, ns, err)
	}
	if deleted > 0 {
		s.pokeIndex()
	}
	return deleted, nil
}

// Namespaces returns every namespace that has a session, ordered by agent, then
// owner.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT s.agent, s.owner FROM sessions s WHERE `+visible+`
		GROUP BY s.agent, s.owner ORDER BY s.agent, s.owner`, s.cutoff())
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: listing namespaces: %w", s.path, err)
	}
	defer rows.Close()
	var namespaces []store.Namespace
	for rows.Next() {
		var sc store.Namespace
		if err := rows.Scan(&sc.Agent, &sc.Owner); err != nil {
			return nil, fmt.Errorf("sqlitestore: %s: listing namespaces: %w", s.path, err)
		}
		namespaces = append(namespaces, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: listing namespaces: %w", s.path, err)
	}
	return namespaces, nil
}
