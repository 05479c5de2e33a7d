package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spool-go/spool/store"
)

// Search returns the newest entries of scope (or of q.Session) whose text
// contains every word of q.Text, ignoring case, newest first: the same hits
// and snippets as store.Search's scan, found through the full-text index.
//
// The query is never SQL and never FTS5 syntax: each word goes to FTS5 as
// one quoted string inside a bound parameter, so quotes, operators,
// parentheses and column filters in it are plain characters to look for.
// Words shorter than three characters cannot use the trigram index; they
// are checked on the candidates the other words find, and a query of only
// such words scans the scope's entries.
//
// With a protector the index is empty (it would hold plain text), and
// Search falls back to store.Search's scan, which opens every transcript of
// the scope.
func (s *Store) Search(ctx context.Context, scope store.Scope, q store.SearchQuery) ([]store.SearchHit, error) {
	if err := store.ValidateScope(scope); err != nil {
		return nil, err
	}
	if q.Session != "" {
		if err := store.ValidateKey(scope.Key(q.Session)); err != nil {
			return nil, err
		}
	}
	terms := store.SearchTerms(q.Text)
	if len(terms) == 0 {
		return nil, errors.New("sqlitestore: empty search query")
	}
	if s.cfg.protector != nil {
		return store.Search(ctx, scanOnly{s}, scope, q)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultListLimit
	}
	match := ftsMatch(terms)
	query, args := searchSQL(scope, q.Session, match, s.cutoff())
	batch := limit + 1
	if match == "" {
		batch = 4*limit + 64 // every batch scans the scope: take more per scan
	}

	var (
		hits     []store.SearchHit
		hitTimes []int64
		after    []any // keyset (ts, eid) of the last row seen
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q := query
		a := append([]any(nil), args...)
		if after != nil {
			q += ` AND (e.ts, e.eid) < (?, ?)`
			a = append(a, after...)
		}
		q += ` ORDER BY e.ts DESC, e.eid DESC LIMIT ?`
		a = append(a, batch)
		n, done, err := s.searchBatch(ctx, scope, terms, q, a, limit, &hits, &hitTimes, &after)
		if err != nil {
			return nil, err
		}
		if done || n < batch {
			break
		}
	}
	store.SortHits(hits)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// searchBatch reads one batch of candidates, newest first, and keeps those
// that match. It is done once it has limit hits and a candidate older than
// the limit-th: ties with it must be seen, as SortHits orders them by id.
func (s *Store) searchBatch(ctx context.Context, scope store.Scope, terms []string, query string, args []any, limit int,
	hits *[]store.SearchHit, hitTimes *[]int64, after *[]any) (n int, done bool, err error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, false, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, scope, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			eid, ts, sid int64
			seq          int
			id           string
			body         sql.RawBytes
		)
		if err := rows.Scan(&eid, &ts, &seq, &sid, &id, &body); err != nil {
			return n, false, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, scope, err)
		}
		n++
		*after = []any{ts, eid}
		if len(*hits) >= limit && ts < (*hitTimes)[limit-1] {
			return n, true, nil
		}
		e, err := s.decode(scope.Key(id), sid, seq, body)
		if err != nil {
			return n, false, err
		}
		text, ok := store.SearchText(e)
		if !ok {
			continue
		}
		if snip, ok := store.MatchText(text, terms); ok {
			*hits = append(*hits, store.SearchHit{SessionID: id, EntryID: e.ID, Snippet: snip, Time: e.Timestamp})
			*hitTimes = append(*hitTimes, ts)
		}
	}
	if err := rows.Err(); err != nil {
		return n, false, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, scope, err)
	}
	return n, false, nil
}

// searchSQL returns the candidate query without its ORDER BY and LIMIT.
// With a MATCH the index drives (CROSS JOIN fixes the order: index, then
// entry, then its session's scope); without, the scope's entries do.
func searchSQL(scope store.Scope, session, match string, cutoff int64) (string, []any) {
	var b strings.Builder
	var args []any
	b.WriteString(`SELECT e.eid, e.ts, e.seq, e.sid, s.id, e.body FROM `)
	if match != "" {
		b.WriteString(`entries_fts CROSS JOIN entries e ON e.eid = entries_fts.rowid CROSS JOIN sessions s ON s.sid = e.sid
			WHERE entries_fts MATCH ? AND `)
		args = append(args, match)
	} else {
		b.WriteString(`sessions s CROSS JOIN entries e ON e.sid = s.sid WHERE e.indexed AND `)
	}
	b.WriteString(`s.agent = ? AND s.owner = ? AND ` + visible)
	args = append(args, scope.Agent, scope.Owner, cutoff)
	if session != "" {
		b.WriteString(` AND s.id = ?`)
		args = append(args, session)
	}
	return b.String(), args
}

// ftsMatch returns the FTS5 query for terms: every term of three or more
// characters (the trigram tokenizer's least) as an FTS5 string, which is
// a quoted phrase with quotes doubled, so that no character of a term is
// FTS5 syntax; implicit AND between them. Empty when no term is long
// enough.
func ftsMatch(terms []string) string {
	var parts []string
	for _, t := range terms {
		if utf8.RuneCountInString(t) >= 3 {
			parts = append(parts, `"`+strings.ReplaceAll(t, `"`, `""`)+`"`)
		}
	}
	return strings.Join(parts, " ")
}

// scanOnly hides every method of a Store but the four of store.Store, so
// store.Search scans it instead of calling its Search.
type scanOnly struct{ store.Store }
