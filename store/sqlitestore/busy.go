package sqlitestore

import (
	"context"
	"database/sql"
	"time"
)

// The write connection never waits for a lock inside SQLite (its
// busy_timeout is 0): a write that finds another connection or process
// holding the database's write lock fails at once with SQLITE_BUSY, and is
// tried again here, after pauses on SQLite's own schedule, up to the busy
// timeout (WithBusyTimeout) or until its context ends. A wait inside
// SQLite that ends with the context costs the driver a goroutine for every
// statement run under a cancellable context (it interrupts the connection
// when the context ends), and its wake-ups were a quarter of the CPU of an
// append that never waited; here the context is watched only while a
// write does wait. The read connections keep SQLite's own wait, which
// they need only while another connection recovers the log.

// busyPauses are SQLite's pauses between tries (sqliteDefaultBusyCallback);
// the last repeats.
var busyPauses = [...]time.Duration{1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100}

// waitBusy runs try until it succeeds, fails otherwise than with
// SQLITE_BUSY, ctx ends or the pauses between tries would pass timeout;
// it returns try's last error, or ctx's.
func waitBusy(ctx context.Context, timeout time.Duration, try func() error) error {
	var waited time.Duration
	for i := 0; ; i++ {
		err := try()
		if err == nil || !isBusy(err) {
			return err
		}
		pause := busyPauses[min(i, len(busyPauses)-1)] * time.Millisecond
		if pause = min(pause, timeout-waited); pause <= 0 {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		waited += pause
	}
}

// writeDB is the write connection's handle as the writes other than
// Append's use it: each transaction and each statement outside one waits
// for the write lock as waitBusy does.
type writeDB struct {
	*sql.DB
	timeout time.Duration
}

// begin begins a write transaction (BEGIN IMMEDIATE: see dataSource).
// The caller rolls it back itself (see beginTx).
func (db writeDB) begin(ctx context.Context) (*sql.Tx, error) {
	var tx *sql.Tx
	err := waitBusy(ctx, db.timeout, func() error {
		var err error
		tx, err = beginTx(ctx, db.DB)
		return err
	})
	return tx, err
}

// beginTx begins a transaction that ends only by the caller's Commit or
// Rollback, which every caller defers. database/sql would otherwise roll
// back a transaction whose context ends on a goroutine of its own, and
// hold the connection until it is done: a Close returning meanwhile left
// a connection open, whose close then wrote the database's files
// (TestCloseStopsIndexer). The statements in it still end with ctx.
func beginTx(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return db.BeginTx(context.WithoutCancel(ctx), nil)
}

// exec runs a write statement in a transaction of its own.
func (db writeDB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := waitBusy(ctx, db.timeout, func() error {
		var err error
		res, err = db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}
