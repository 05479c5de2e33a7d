package pgstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/store"
)

// Lock takes the session's advisory lock (a session-level advisory lock on
// a 64-bit hash of the schema and the key) and returns unlock, which
// releases it. It waits while another process using the database holds
// the lock, and while another caller in this process does, until ctx is
// done.
//
// The runtime holds the lock for the length of a turn, so two replicas
// serving the same session take turns one after the other; the conditional
// append keeps the transcript a chain even without it. If the connection
// holding the lock is lost, the server releases the lock, and the holder
// learns of it only when its next append fails with store.ErrConflict
// because another writer moved on.
//
// A lock nobody else holds costs one statement on one of two connections
// that hold the locks of every session of the store (so any number of
// turns in flight take two connections, not one each). A lock another
// process holds is waited for in the server's queue, first come first
// served, on a connection of its own that then holds it, one of the
// lock_conns (WithLockConns) beyond the two shared ones; while all of
// those wait (or with lock_conns at 2 or less, which leaves none), Lock
// asks again every 100 ms at most.
//
// Locks need a session-level connection to the server: behind a pooler in
// transaction mode (PgBouncer's pool_mode=transaction) they do not hold.
func (s *Store) Lock(ctx context.Context, key store.Key) (unlock func(), err error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	lk, err := s.lockState(ctx)
	if err != nil {
		return nil, err
	}
	id := lockKey("session", s.schema, key.Agent, key.Owner, key.ID)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(lk.closing, cancel)()
	closedErr := func(err error) error {
		if lk.closing.Err() != nil {
			return errLockClosed
		}
		return err
	}
	if err := lk.claim(ctx, id); err != nil {
		return nil, dbError("lock", key, closedErr(err))
	}
	release, err := lk.lock(ctx, id)
	if err != nil {
		lk.unclaim(id)
		return nil, dbError("lock", key, closedErr(err))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			release()
			lk.unclaim(id)
		})
	}, nil
}

// errLockClosed fails a Lock whose store was closed before it could take
// its lock; dbError names the Lock.
var errLockClosed = errors.New("the store is closed")

// lockHolders is how many connections hold the locks nobody else held
// when they were taken.
const lockHolders = 2

// lockStatementTimeout bounds a statement on a holder. A try or a release
// answers at once; one that does not is on a connection that hangs, which
// is closed (its locks go with it) rather than left to hold every other
// Lock and unlock of the store.
var lockStatementTimeout = 10 * time.Second

// lockPollMax is the longest Lock waits between two tries of a lock
// another process holds, when no connection is free to wait in the
// server's queue.
const lockPollMax = 100 * time.Millisecond

// locker holds a store's session locks.
type locker struct {
	pool    *pgxpool.Pool
	holders []*holder
	// waiters has a token for each connection that may wait in the
	// server's queue for a lock held elsewhere, and hold it once granted.
	waiters chan struct{}

	mu   sync.Mutex
	held map[int64]chan struct{} // locks this process holds or is taking; closed when released

	// closed is set by close before it drops the holders: a holder it
	// dropped opens no connection again, which nothing would release.
	closed atomic.Bool
	// closing ends when close begins, and with it every Lock still
	// waiting (for a holder, a poll, or in the server's queue on a
	// connection that Close would otherwise wait for).
	closing context.Context
	stop    context.CancelFunc
}

// holder is a connection holding any number of locks. Advisory locks are
// reentrant on one connection, so locker.claim keeps two callers of this
// process from taking the same one through it.
type holder struct {
	sem  chan struct{} // a mutex that a waiting Lock can give up on
	conn *pgxpool.Conn // nil until needed, and after it failed
	gen  uint64        // counts connections: a lock taken on an earlier one went with it
}

// lockState returns the store's locker, made on first use with a pool of
// its own, from the main pool's configuration, so that locks held for
// turns never starve the appends those turns make.
func (s *Store) lockState(ctx context.Context) (*locker, error) {
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if s.closed {
		return nil, errors.New("pgstore: lock: the store is closed")
	}
	if s.locks != nil {
		return s.locks, nil
	}
	cfg := s.pool.Config()
	cfg.MaxConns, cfg.MinConns, cfg.MinIdleConns = s.lockConns, 0, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, dbError("lock", nil, err)
	}
	n := min(lockHolders, int(s.lockConns))
	lk := &locker{
		pool:    pool,
		holders: make([]*holder, n),
		waiters: make(chan struct{}, int(s.lockConns)-n),
		held:    map[int64]chan struct{}{},
	}
	for i := range lk.holders {
		lk.holders[i] = &holder{sem: make(chan struct{}, 1)}
	}
	lk.closing, lk.stop = context.WithCancel(context.Background())
	s.locks = lk
	return lk, nil
}

// claim marks id as taken by this process, after waiting for a caller of
// this process that has it.
func (lk *locker) claim(ctx context.Context, id int64) error {
	for {
		lk.mu.Lock()
		released, taken := lk.held[id]
		if !taken {
			lk.held[id] = make(chan struct{})
			lk.mu.Unlock()
			return nil
		}
		lk.mu.Unlock()
		select {
		case <-released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (lk *locker) unclaim(id int64) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	close(lk.held[id])
	delete(lk.held, id)
}

// lock takes id in the database, for a caller that has claimed it.
func (lk *locker) lock(ctx context.Context, id int64) (unlock func(), err error) {
	h := lk.holders[uint64(id)%uint64(len(lk.holders))]
	wait := time.Millisecond
	for {
		gen, ok, err := h.try(ctx, lk, id)
		if err != nil {
			return nil, err
		}
		if ok {
			return func() { h.unlock(gen, id) }, nil
		}
		// Another process holds it: wait in the server's queue when a
		// connection is free for that, else ask again a little later.
		select {
		case lk.waiters <- struct{}{}:
			unlock, err := lk.wait(ctx, id)
			if err != nil {
				<-lk.waiters
				return nil, err
			}
			return func() { unlock(); <-lk.waiters }, nil
		default:
		}
		wait = min(2*wait, lockPollMax)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// wait takes id on a connection of its own, waiting in the server's queue
// for the process that holds it, and keeps that connection until unlock.
func (lk *locker) wait(ctx context.Context, id int64) (unlock func(), err error) {
	conn, err := lk.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, id); err != nil {
		// A done ctx made pgx send the server a cancel request, which
		// takes the wait out of the lock's queue at once. Whether the lock
		// was granted just before is unknown: closing the connection makes
		// sure it is not held.
		closeConn(conn)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), lockStatementTimeout)
		defer cancel()
		var released bool
		err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&released)
		if err != nil || !released {
			closeConn(conn) // the server drops a closed session's locks
			return
		}
		conn.Release()
	}, nil
}

// try takes id on h if no other session of the server holds it. It
// returns the generation of h's connection that holds it.
func (h *holder) try(ctx context.Context, lk *locker, id int64) (gen uint64, ok bool, err error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	defer func() { <-h.sem }()
	for attempt := 0; ; attempt++ {
		if h.conn == nil {
			if lk.closed.Load() {
				return 0, false, errLockClosed
			}
			if h.conn, err = lk.pool.Acquire(ctx); err != nil {
				return 0, false, err
			}
			h.gen++
		}
		// Not ctx: a statement cancelled halfway closes the connection,
		// and with it the locks of every other session it holds.
		sctx, cancel := context.WithTimeout(context.Background(), lockStatementTimeout)
		err = h.conn.QueryRow(sctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&ok)
		cancel()
		if err == nil {
			return h.gen, ok, nil
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && !h.conn.Conn().IsClosed() {
			// The server refused the statement (out of shared memory for
			// locks, say), which took nothing; the connection and the
			// locks it holds stay.
			return 0, false, err
		}
		// The connection failed (a pooled one the server had dropped,
		// say); whether the lock was granted is unknown, and closing the
		// connection makes sure it is not held. A new one is tried once.
		h.drop()
		if attempt == 1 || ctx.Err() != nil {
			return 0, false, err
		}
	}
}

// unlock releases id, taken on h's connection of generation gen, unless
// that connection is gone and the lock with it.
func (h *holder) unlock(gen uint64, id int64) {
	h.sem <- struct{}{}
	defer func() { <-h.sem }()
	if h.conn == nil || h.gen != gen {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockStatementTimeout)
	defer cancel()
	var released bool
	if err := h.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&released); err != nil {
		h.drop() // the server drops a closed session's locks
	}
}

// drop closes h's connection; the locks it held are released by the
// server, and their unlocks do nothing.
func (h *holder) drop() {
	if h.conn != nil {
		closeConn(h.conn)
		h.conn = nil
	}
}

// close ends the locker: its locks are released by the server as their
// connections close.
func (lk *locker) close() {
	lk.closed.Store(true)
	lk.stop()
	for _, h := range lk.holders {
		h.sem <- struct{}{}
		h.drop()
		<-h.sem
	}
	lk.pool.Close()
}

func closeConn(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release() // a closed connection leaves the pool
}
