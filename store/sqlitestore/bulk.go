package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/spool-go/spool/store"
)

// txWrite is what one AppendBulk transaction keeps between its
// statements. A bulk of an import runs a few statements per entry, each
// of which bound Append's prepared statement to the transaction anew
// (database/sql allocates and registers a Stmt every time); they are bound
// once per transaction here instead.
type txWrite struct {
	tx     *sql.Tx
	logged int                      // entries logged for the search index
	stmts  map[string]*sql.Stmt     // Append's statements bound to tx
	rows   map[store.Key]sessionRow // the session rows written, for the cache once committed
}

func newTxWrite(tx *sql.Tx) *txWrite {
	return &txWrite{tx: tx, stmts: map[string]*sql.Stmt{}, rows: map[store.Key]sessionRow{}}
}

// stmt returns Append's prepared statement for query, bound to the
// transaction once.
func (w *txWrite) stmt(ctx context.Context, s *Store, query string) *sql.Stmt {
	st, ok := w.stmts[query]
	if !ok {
		st = s.txStmt(ctx, w.tx, query)
		w.stmts[query] = st
	}
	return st
}
