package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
)

// sweepBatch is the most sessions one sweep deletes in a transaction.
const sweepBatch = 100

// Deleting a session takes its row first and its entries second, in one
// transaction: the row's lock waits out an append in flight, and the
// entries statement, with a snapshot taken after that, sees what the append
// wrote, so no entry of a deleted session survives to reappear under a new
// session with the same id.

// Delete removes the session and its entries. Deleting a session the store
// does not have is not an error.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	_, err := s.deleteSessions(ctx, key.Namespace(), `id = $3`, key.ID)
	return dbError("delete", key, err)
}

// deleteIfExpired deletes the session if TTL has expired it with no
// approval pending, and reports whether it did.
func (s *Store) deleteIfExpired(ctx context.Context, key store.Key) (bool, error) {
	n, err := s.deleteSessions(ctx, key.Namespace(), `id = $3 AND last_ns < $4 AND pending = 0`, key.ID, s.cutoff())
	return n > 0, dbError("expire", key, err)
}

// deleteSessions deletes the sessions of namespace that cond (a condition on
// the sessions row, with the namespace in $1 and $2 and args from $3) selects,
// and their entries, and returns how many.
func (s *Store) deleteSessions(ctx context.Context, ns store.Namespace, cond string, args ...any) (int, error) {
	var n int
	err := retry(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, s.sql(`DELETE FROM {s}.sessions WHERE agent = $1 AND owner = $2 AND `+cond+` RETURNING id`),
				append([]any{ns.Agent, ns.Owner}, args...)...)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(ids) == 0 {
				n = 0
				return err
			}
			_, err = tx.Exec(ctx, s.sql(`DELETE FROM {s}.entries WHERE agent = $1 AND owner = $2 AND session = ANY($3)`),
				ns.Agent, ns.Owner, ids)
			n = len(ids)
			return err
		})
	})
	return n, err
}

// sweep deletes up to limit sessions of namespace that TTL has expired with no
// approval pending, oldest first.
func (s *Store) sweep(ctx context.Context, ns store.Namespace, limit int) (int, error) {
	n, err := s.deleteSessions(ctx, ns, `id IN (
		SELECT id FROM {s}.sessions WHERE agent = $1 AND owner = $2 AND `+listed+` AND last_ns < $3 AND pending = 0
		ORDER BY last_ns, id LIMIT $4) AND last_ns < $3 AND pending = 0`, s.cutoff(), limit)
	return n, dbError("sweep expired sessions of", ns, err)
}

// Sweep deletes every session, in every namespace, that TTL has expired with no
// approval pending, and returns how many it deleted. Such sessions are
// already hidden from every read; sweeping reclaims their space. The store
// sweeps a namespace by itself when a session is created in it; run Sweep
// periodically (say hourly) to reclaim namespaces that see no new sessions.
// With no TTL it does nothing. It reads the whole sessions table to find
// the namespaces.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if s.ttl <= 0 {
		return 0, nil
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT DISTINCT agent, owner FROM {s}.sessions WHERE last_ns < $1 AND pending = 0`), s.cutoff())
	if err != nil {
		return 0, dbError("sweep", nil, err)
	}
	namespaces, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Namespace, error) {
		var sc store.Namespace
		err := r.Scan(&sc.Agent, &sc.Owner)
		return sc, err
	})
	if err != nil {
		return 0, dbError("sweep", nil, err)
	}
	total := 0
	for _, sc := range namespaces {
		for {
			n, err := s.sweep(ctx, sc, sweepBatch)
			total += n
			if err != nil {
				return total, err
			}
			if n < sweepBatch {
				break
			}
		}
	}
	return total, nil
}

// Prune deletes the sessions of namespace that r does not keep as of now,
// exactly those storekit.Victims would list: the ones idle longer than
// r.MaxAge, and those beyond the newest r.MaxSessions of the rest. It also
// sweeps the sessions that TTL expired (which listings no longer show), and
// counts them in what it returns. A session that an append in flight makes
// newer than what it keeps is not deleted: each deletion is decided on the
// session's row as the append left it.
func (s *Store) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return 0, err
	}
	total := 0
	for s.ttl > 0 {
		n, err := s.sweep(ctx, ns, 1000)
		total += n
		if err != nil {
			return total, err
		}
		if n < 1000 {
			break
		}
	}
	if r.MaxAge > 0 {
		n, err := s.deleteSessions(ctx, ns, listed+` AND last_ns < $3`, nanos(now.Add(-r.MaxAge)))
		total += n
		if err != nil {
			return total, dbError("prune", ns, err)
		}
	}
	if r.MaxSessions > 0 {
		// The sessions that sort after the last one kept. The subquery
		// finds that one in the statement's snapshot; a row an append
		// holds is deleted only once the append commits, and only if the
		// committed row still meets the conditions on its own columns,
		// which PostgreSQL checks again. So the condition that decides is
		// on the row's own (last_ns, id): an append that made the session
		// newer meanwhile saves it. (A condition on id alone, such as id
		// IN the victims of the snapshot, would delete it anyway.)
		n, err := s.deleteSessions(ctx, ns, fmt.Sprintf(`%[3]s AND %[1]s AND (last_ns, id) < (
			SELECT last_ns, id FROM {s}.sessions s WHERE agent = $1 AND owner = $2 AND %[3]s AND %[2]s
			ORDER BY last_ns DESC, id DESC OFFSET $4 LIMIT 1)`, visible("sessions", 3), visible("s", 3), listed), s.cutoff(), r.MaxSessions-1)
		total += n
		if err != nil {
			return total, dbError("prune", ns, err)
		}
	}
	return total, nil
}
