package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
)

// txWrite is what one AppendBulk transaction keeps between its
// statements. A bulk of an import runs a few statements per entry, each
// of which bound Append's prepared statement to the transaction anew
// (database/sql allocates and registers a Stmt every time) and looked up
// the last row id of the entry's millisecond in the table; both are kept
// here for the transaction instead. The transaction holds the only write
// connection, so no other writer takes a row id under it.
type txWrite struct {
	tx     *sql.Tx
	logged int                  // entries logged for the search index
	next   map[int64]int64      // by millisecond: the next free row id, once looked up
	stmts  map[string]*sql.Stmt // Append's statements bound to tx
}

func newTxWrite(tx *sql.Tx) *txWrite {
	return &txWrite{tx: tx, next: map[int64]int64{}, stmts: map[string]*sql.Stmt{}}
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

// rowID returns the row id for a new entry at ts (see newRowID), looking
// the table up once per millisecond per transaction.
func (w *txWrite) rowID(ctx context.Context, s *Store, ts int64) (int64, error) {
	ms := msOf(ts)
	eid, ok := w.next[ms]
	if !ok {
		var err error
		if eid, err = s.newRowID(ctx, w.tx, ts); err != nil {
			return 0, err
		}
	} else if bucketOf(eid) != ms {
		return 0, fmt.Errorf("more than %d entries stored with timestamps in one millisecond", 1<<msShift)
	}
	w.next[ms] = eid + 1
	return eid, nil
}
