package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/store"
)

// Lock takes the session's advisory lock (pg_advisory_lock on a 64-bit
// hash of the schema and the key) on a connection it keeps until unlock is
// called, and returns unlock, which releases the lock and the connection.
// It waits while another connection holds the lock, in any process using
// the database, until ctx is done.
//
// The runtime holds the lock for the length of a turn, so two replicas
// serving the same session take turns one after the other; the conditional
// append keeps the transcript a chain even without it. If the connection
// is lost while the lock is held the server releases the lock, and the
// holder learns of it only when its next append fails with
// store.ErrConflict because another writer moved on.
//
// Locks need a session-level connection to the server: behind a pooler in
// transaction mode (PgBouncer's pool_mode=transaction) they do not hold.
func (s *Store) Lock(ctx context.Context, key store.Key) (unlock func(), err error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	lp, err := s.locks(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := lp.Acquire(ctx)
	if err != nil {
		return nil, dbError("lock", key, err)
	}
	id := lockKey("session", s.schema, key.Agent, key.Owner, key.ID)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, id); err != nil {
		// A done ctx made pgx send the server a cancel request, which
		// takes the wait out of the lock's queue at once. Whether the lock
		// was granted just before is unknown: closing the connection makes
		// sure it is not held.
		closeConn(conn)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, dbError("lock", key, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var released bool
			err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&released)
			if err != nil || !released {
				closeConn(conn) // the server drops a closed session's locks
				return
			}
			conn.Release()
		})
	}, nil
}

func closeConn(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release() // a closed connection leaves the pool
}

// locks returns the pool that session locks hold connections of, made on
// first use from the main pool's configuration. It is a pool of its own so
// that locks held for turns never starve the appends those turns make.
func (s *Store) locks(ctx context.Context) (*pgxpool.Pool, error) {
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if s.closed {
		return nil, errors.New("pgstore: lock: the store is closed")
	}
	if s.lockPool != nil {
		return s.lockPool, nil
	}
	cfg := s.pool.Config()
	cfg.MaxConns, cfg.MinConns, cfg.MinIdleConns = s.lockConns, 0, 0
	lp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, dbError("lock", nil, err)
	}
	s.lockPool = lp
	return lp, nil
}
