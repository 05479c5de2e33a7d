package sqlitestore

import (
	"context"
	"database/sql"
)

// Statements are prepared once per Store (and by database/sql once per
// connection): preparing one costs about as much as running it. Reads
// prepare theirs on first use; Append's are the write connection's own
// (bulk.go).

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
	s.readStmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
}
