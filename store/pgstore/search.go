package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// maxSearchTerms bounds the words of one query, and so the size of the
// statement it becomes.
const maxSearchTerms = 64

// Search returns the newest entries of namespace (or of the session
// q.Session) whose text contains every word of q.Text, ignoring case: the
// same matches, order and snippets as store.Search's scan, found by the
// database. Each word becomes a LIKE '%word%' pattern, passed as a
// parameter with % and _ escaped, so quotes, backslashes and operators
// in a query are plain characters. The trigram index (when pg_trgm is
// available) serves these patterns for rare words; for common words the
// database walks the namespace's messages newest first (entries_recent) and
// stops at the limit.
func (s *Store) Search(ctx context.Context, ns store.Namespace, q store.SearchQuery) ([]store.SearchHit, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return nil, err
	}
	if q.Session != "" {
		if err := store.ValidateKey(ns.Key(q.Session)); err != nil {
			return nil, err
		}
	}
	terms := storekit.SearchTerms(q.Text)
	if len(terms) == 0 {
		return nil, errors.New("pgstore: empty search query")
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(terms)))
	if len(distinct) > maxSearchTerms {
		return nil, fmt.Errorf("pgstore: search query of %d words; at most %d", len(distinct), maxSearchTerms)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultListLimit
	}

	var b strings.Builder
	b.WriteString(`SELECT e.session, e.seq, e.entry FROM {s}.entries e`)
	args := []any{ns.Agent, ns.Owner}
	if s.ttl > 0 {
		b.WriteString(` JOIN {s}.sessions s ON s.agent = e.agent AND s.owner = e.owner AND s.id = e.session AND ` + visible("s", 3))
		args = append(args, s.cutoff())
	}
	b.WriteString(` WHERE e.agent = $1 AND e.owner = $2`)
	if q.Session != "" {
		args = append(args, q.Session)
		fmt.Fprintf(&b, ` AND e.session = $%d`, len(args))
	}
	for _, t := range distinct {
		args = append(args, "%"+likeEscape(searchForm(t))+"%")
		fmt.Fprintf(&b, ` AND e.search LIKE $%d ESCAPE '!'`, len(args))
	}
	args = append(args, limit)
	fmt.Fprintf(&b, ` ORDER BY e.ts_ns DESC, e.entry_id DESC LIMIT $%d`, len(args))

	// An unnamed statement is planned for its parameters each time: whether
	// the trigram index (rare words) or the newest-first walk of
	// entries_recent (common words) is cheaper depends on the words, which
	// a cached generic plan cannot see.
	rows, err := s.pool.Query(ctx, s.sql(b.String()), append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, dbError("search", ns, err)
	}
	defer rows.Close()
	var hits []store.SearchHit
	for rows.Next() {
		var (
			id   string
			seq  int
			line []byte
		)
		if err := rows.Scan(&id, &seq, &line); err != nil {
			return nil, dbError("search", ns, err)
		}
		e, err := transcript.Parse(line)
		if err != nil {
			return nil, s.corrupt(ns.Key(id), seq, err)
		}
		text, _ := storekit.SearchText(e)
		// The database found the row; the snippet, and the final word on
		// a match, come from the same function as the scan's.
		snip, ok := storekit.MatchText(text, terms)
		if !ok {
			continue // only when NUL and U+FFFD met in searchForm
		}
		hits = append(hits, store.SearchHit{SessionID: id, EntryID: e.ID, Snippet: snip, Time: e.Timestamp})
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("search", ns, err)
	}
	// The database ordered by the clamped ts_ns; the entries' exact
	// timestamps decide, as in the scan.
	storekit.SortHits(hits)
	return hits, nil
}

// likeEscaper makes a string match itself in a LIKE pattern whose escape
// character is '!' (not '\', whose meaning in a string literal depends on
// standard_conforming_strings).
var likeEscaper = strings.NewReplacer(`!`, `!!`, `%`, `!%`, `_`, `!_`)

func likeEscape(s string) string { return likeEscaper.Replace(s) }
