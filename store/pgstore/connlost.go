package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// connLost reports whether err, from a statement on a pooled connection,
// is the connection failing (not the server refusing the statement, nor
// ctx or a deadline of the statement's own ending) while ctx still allows
// another try. Such a failure seldom comes alone: a restarted or
// failed-over server, or a network that was cut, leaves every idle
// connection of the pool dead, and the pool checks only those idle for
// more than a second before handing them out. So the
// pool is reset (its idle connections closed, those in use closed when
// released), and the caller's next statement dials afresh.
func (s *Store) connLost(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return false
	}
	// A statement past a deadline of its own (appendPart's appendTimeout)
	// is slow, not on a failed connection, and may still be running:
	// context.DeadlineExceeded is a net.Error too.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) &&
		!errors.Is(err, syscall.EPIPE) && !errors.Is(err, net.ErrClosed) && !errors.As(err, &ne) {
		return false
	}
	s.pool.Reset()
	return true
}
