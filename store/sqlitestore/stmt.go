package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
)

// Statements are prepared once per Store (and by database/sql once per
// connection): preparing one costs about as much as running it. Those of
// Append are prepared when the Store opens, because inside Append the
// transaction holds the only write connection; reads prepare theirs on
// first use.

func (s *Store) prepareWrites(ctx context.Context) error {
	s.writeStmts = make(map[string]*sql.Stmt, len(appendSQL))
	for _, q := range appendSQL {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlitestore: %s: preparing %q: %w", s.path, q, err)
		}
		s.writeStmts[q] = st
	}
	return nil
}

// txStmt returns Append's prepared statement for query, bound to tx.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	st, ok := s.writeStmts[query]
	if !ok {
		panic("sqlitestore: statement not among appendSQL: " + query)
	}
	return tx.StmtContext(ctx, st)
}

// readStmt returns the prepared read statement for query.
func (s *Store) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.readStmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// query runs a read statement, prepared.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// closeStmts closes every prepared statement.
func (s *Store) closeStmts() {
	for _, st := range s.writeStmts {
		st.Close()
	}
	s.readStmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
}
