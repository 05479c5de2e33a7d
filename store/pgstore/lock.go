package pgstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
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
// Their connections turn off statement_timeout, lock_timeout and
// idle_session_timeout, set for the store's connections or on the server:
// a wait ends with ctx, and a lock lasts until unlock.
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
	conn *holdConn     // nil until needed, after it failed, and once retired
	// retired are earlier connections of h, each still holding locks
	// while one the server refused to release (see unlock) stays stuck
	// on it; close closes them.
	retired map[*holdConn]bool
}

// holdConn is one connection of a holder, and the count of the locks
// taken on it that their callers still hold. An unlock names the
// holdConn its lock was taken on: one closed since took the lock with it.
type holdConn struct {
	c  *pgx.Conn     // nil once closed
	pc *pgxpool.Conn // c's place in the lock pool; nil once retired
	// locks counts those taken on c and not unlocked since.
	locks int
	// retired is set when the server refused to release one of its
	// locks: it grants no new lock, and is closed with its last one. It
	// leaves the lock pool (pgxpool.Conn.Hijack), so that its holder
	// can take a new connection even when the pool is full (lock_conns
	// at 1 or 2, or every waiting connection busy): while retired
	// connections last, the locks use one connection more than
	// lock_conns for each (a refusal on a connection that still holds
	// other turns' locks retires it; at most one per turn running).
	retired bool
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
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, c); err != nil {
				return err
			}
		}
		_, err := c.Exec(ctx, untimed)
		return err
	}
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
		lk.holders[i] = &holder{sem: make(chan struct{}, 1), retired: map[*holdConn]bool{}}
	}
	lk.closing, lk.stop = context.WithCancel(context.Background())
	s.locks = lk
	return lk, nil
}

// untimed turns off, on a lock connection, the timeouts the caller may
// have set for the store's connections (in its URL, or for its role or
// database on the server), which are meant for queries: a wait in the
// server's queue lasts until the lock is granted or Lock's context ends
// (statement_timeout and lock_timeout would fail it sooner), and a holder
// sits idle holding locks for as long as turns last (idle_session_timeout
// would have the server close it, and give its locks to other processes).
// The statements on a holder are bounded by lockStatementTimeout instead.
// pg_settings lists only those the server has (idle_session_timeout is
// new in PostgreSQL 14).
const untimed = `SELECT set_config(name, '0', false) FROM pg_settings
	WHERE name IN ('statement_timeout', 'lock_timeout', 'idle_session_timeout')`

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
		hc, err := h.try(ctx, lk, id)
		if err != nil {
			return nil, err
		}
		if hc != nil {
			return func() { h.unlock(hc, id) }, nil
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
			// The server drops a closed session's locks; this connection
			// holds no other, so closing it, even for a release the
			// server refused, takes no lock from another session.
			closeConn(conn)
			return
		}
		conn.Release()
	}, nil
}

// try takes id on h if no other session of the server holds it. It
// returns the connection of h that holds it, nil if another session does.
func (h *holder) try(ctx context.Context, lk *locker, id int64) (hc *holdConn, err error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.sem }()
	for attempt := 0; ; attempt++ {
		if h.conn == nil {
			if lk.closed.Load() {
				return nil, errLockClosed
			}
			pc, err := lk.pool.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			h.conn = &holdConn{c: pc.Conn(), pc: pc}
		}
		// Not ctx: a statement cancelled halfway closes the connection,
		// and with it the locks of every other session it holds.
		sctx, cancel := context.WithTimeout(context.Background(), lockStatementTimeout)
		var ok bool
		err = h.conn.c.QueryRow(sctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&ok)
		cancel()
		if err == nil {
			if !ok {
				return nil, nil
			}
			h.conn.locks++
			return h.conn, nil
		}
		if refused(err, h.conn.c) {
			// The server refused the statement (out of shared memory for
			// locks, say), which took nothing; the connection and the
			// locks it holds stay.
			return nil, err
		}
		// The connection failed (a pooled one the server had dropped,
		// say); whether the lock was granted is unknown, and closing the
		// connection makes sure it is not held. A new one is tried once.
		h.drop(h.conn)
		if attempt == 1 || ctx.Err() != nil {
			return nil, err
		}
	}
}

// refused reports whether err, from a statement on pc, is the server
// refusing the statement on a connection that still works, rather than
// the connection failing.
func refused(err error, c *pgx.Conn) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && !c.IsClosed()
}

// unlock releases id, taken on hc, unless hc is closed and the lock gone
// with it.
//
// The server may refuse the release (a statement timeout, out of memory)
// on a connection that still works and holds the locks of other sessions,
// whose turns still run: closing it would hand those to other processes.
// So hc is retired instead: it grants no new lock (h takes a new
// connection for those), and is closed, which releases the refused lock,
// when the last of its other locks is unlocked, so the refused lock is
// held no longer than the longest turn already running on hc (or until
// Close). Meanwhile another process waits for it, as does a Lock of this
// process, which unclaims it at once: its next Lock finds it held by a
// session that is no longer h's connection, and waits in the server's
// queue like any other process. The release is not tried again: the
// server that refused it once may refuse it again, and closing is sure.
func (h *holder) unlock(hc *holdConn, id int64) {
	h.sem <- struct{}{}
	defer func() { <-h.sem }()
	if hc.c == nil {
		return
	}
	hc.locks--
	if hc.retired && hc.locks == 0 {
		h.drop(hc) // the server drops a closed session's locks, the refused one too
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockStatementTimeout)
	defer cancel()
	var released bool
	err := hc.c.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&released)
	switch {
	case err == nil:
	case !refused(err, hc.c):
		h.drop(hc) // the connection failed: its locks are gone anyway
	case hc.locks == 0:
		h.drop(hc) // no other lock to keep: closing releases the refused one
	case !hc.retired:
		hc.pc.Hijack()
		hc.pc, hc.retired = nil, true
		h.retired[hc] = true
		if h.conn == hc {
			h.conn = nil
		}
	}
}

// drop closes hc, a connection of h; the locks it held are released by
// the server, and their unlocks do nothing.
func (h *holder) drop(hc *holdConn) {
	if hc == nil || hc.c == nil {
		return
	}
	if hc.pc != nil {
		closeConn(hc.pc)
	} else {
		closeHijacked(hc.c)
	}
	hc.c, hc.pc = nil, nil
	if h.conn == hc {
		h.conn = nil
	}
	delete(h.retired, hc)
}

// close ends the locker: its locks are released by the server as their
// connections close.
func (lk *locker) close() {
	lk.closed.Store(true)
	lk.stop()
	for _, h := range lk.holders {
		h.sem <- struct{}{}
		h.drop(h.conn)
		for hc := range h.retired {
			h.drop(hc)
		}
		<-h.sem
	}
	lk.pool.Close()
}

// closeHijacked closes a connection taken out of its pool. A connection
// pgx has closed already, after a statement that timed out on a network
// that hangs, may still be draining its socket in the background for up
// to 15 s: its socket is closed too, which ends that.
func closeHijacked(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
	_ = c.PgConn().Conn().Close()
}

// closeConn closes a connection of the lock pool, whose locks the server
// then releases. It takes the connection out of the pool first: the pool
// would destroy a closed one in the background, keeping its place in
// the pool (which lock_conns bounds) and Close of the pool waiting until
// pgx's cleanup of a hung connection gives up, 15 s later.
func closeConn(conn *pgxpool.Conn) {
	closeHijacked(conn.Hijack())
}
