package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spool-go/spool/store"
)

// AppendBulk drives the write connection below database/sql (Conn.Raw),
// with the driver's own statements, prepared once per connection. Through
// database/sql a transaction prepared its BEGIN and COMMIT anew, bound
// every statement to it anew, converted every argument, and watched its
// context with a goroutine of its own: together an eighth of the
// instructions of a turn's append. The transaction is the append's own
// to end: COMMIT, or ROLLBACK on any failure; a connection that cannot be
// rolled back is handed back as bad (driver.ErrBadConn), and database/sql
// closes it, which rolls it back.

// writeConn is the write connection and the statements prepared on it.
// Only the holder of the connection uses it.
type writeConn struct {
	dc    driver.Conn
	stmts map[string]driver.Stmt
	args  []driver.NamedValue // reused for each statement's arguments
}

// withWriteConn runs fn with the write connection, waiting for it while
// ctx allows (Store.w has one: writes queue there).
func (s *Store) withWriteConn(ctx context.Context, fn func(*writeConn) error) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c := s.wc // the connection's holder alone reads and sets it
		if c == nil || c.dc != dc {
			// A new connection (the first, or one database/sql opened
			// after closing a bad one, whose statements went with it).
			c = &writeConn{dc: dc.(driver.Conn), stmts: map[string]driver.Stmt{}}
			s.wc = c
		}
		err := fn(c)
		if errors.Is(err, driver.ErrBadConn) {
			c.close()
			s.wc = nil
		}
		return err
	})
}

// closeWriteConn closes the statements of the write connection; Close
// calls it before closing the connection.
func (s *Store) closeWriteConn() {
	s.withWriteConn(context.Background(), func(c *writeConn) error {
		c.close()
		s.wc = nil
		return nil
	})
}

// close closes c's statements.
func (c *writeConn) close() {
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// stmt returns the statement for query, prepared on first use.
func (c *writeConn) stmt(ctx context.Context, query string) (driver.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// named sets c.args to args, as the driver takes them.
func (c *writeConn) named(args []any) []driver.NamedValue {
	c.args = c.args[:0]
	for i, a := range args {
		if n, ok := a.(int); ok {
			a = int64(n)
		}
		c.args = append(c.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	return c.args
}

// exec runs query.
func (c *writeConn) exec(ctx context.Context, query string, args ...any) (driver.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtExecContext).ExecContext(ctx, c.named(args))
}

// queryRow runs query and scans its first row into dest (*int64, *int,
// *bool or *string each); sql.ErrNoRows when it has none.
func (c *writeConn) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, c.named(args))
	if err != nil {
		return err
	}
	defer rows.Close()
	rows.Columns() // before Next, as database/sql calls them (ncruces's driver needs it)
	vals := make([]driver.Value, len(dest))
	if err := rows.Next(vals); err == io.EOF {
		return sql.ErrNoRows
	} else if err != nil {
		return err
	}
	for i, v := range vals {
		ok := false
		switch d := dest[i].(type) {
		case *int64:
			*d, ok = v.(int64)
		case *int:
			var n int64
			n, ok = v.(int64)
			*d = int(n)
		case *bool:
			var n int64
			n, ok = v.(int64)
			*d = n != 0
		case *string:
			switch v := v.(type) {
			case string:
				*d, ok = v, true
			case []byte:
				*d, ok = string(v), true
			}
		}
		if !ok {
			return fmt.Errorf("column %d is %T, not what %T takes", i, v, dest[i])
		}
	}
	return nil
}

// begin starts a write transaction, waiting for the database's write lock
// while ctx allows, up to timeout (see busy.go).
func (c *writeConn) begin(ctx context.Context, timeout time.Duration) error {
	return waitBusy(ctx, timeout, func() error {
		_, err := c.exec(context.WithoutCancel(ctx), `BEGIN IMMEDIATE`)
		if err != nil && !isBusy(err) {
			return c.rollback(err) // should a failed BEGIN have left one open
		}
		return err
	})
}

// commit commits the transaction, or rolls it back if that fails.
func (c *writeConn) commit(ctx context.Context) error {
	if _, err := c.exec(context.WithoutCancel(ctx), `COMMIT`); err != nil {
		return c.rollback(err)
	}
	return nil
}

// rollback ends the transaction that failed with err (if one is open) and
// returns err, joined with driver.ErrBadConn if the connection cannot be
// rolled back: database/sql then closes it, which does.
func (c *writeConn) rollback(err error) error {
	_, rerr := c.exec(context.Background(), `ROLLBACK`)
	var coded interface{ Code() int }
	if rerr == nil || errors.As(rerr, &coded) && coded.Code() == 1 { // SQLITE_ERROR: no transaction open
		return err
	}
	return fmt.Errorf("%w (rolling back: %v: %w)", err, rerr, driver.ErrBadConn)
}

// txWrite is what one AppendBulk transaction keeps between its statements.
type txWrite struct {
	c      *writeConn
	logged int                      // entries logged for the search index
	rows   map[store.Key]sessionRow // the session rows written, for the cache once committed
}

func newTxWrite(c *writeConn) *txWrite {
	return &txWrite{c: c, rows: map[store.Key]sessionRow{}}
}
