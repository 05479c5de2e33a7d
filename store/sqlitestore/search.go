package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// Search returns the newest entries of namespace (or of q.Session) whose text
// contains every word of q.Text, ignoring case, newest first: the same hits
// and snippets as store.Search's scan, found through the full-text index.
//
// The query is never SQL and never FTS5 syntax: each word goes to FTS5 as
// one quoted string inside a bound parameter, so quotes, operators,
// parentheses and column filters in it are plain characters to look for.
// Words shorter than three characters cannot use the trigram index; they
// are checked on the candidates the other words find, and a query of only
// such words walks the stored entries, newest first, until it has its
// hits. A search within one session of at most 2,000 entries reads that
// session's entries instead of the index.
//
// With a protector the index is empty (it would hold plain text), and
// Search falls back to store.Search's scan, which opens every transcript of
// the namespace.
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
		return nil, errors.New("sqlitestore: empty search query")
	}
	if s.cfg.protector != nil {
		return store.Search(ctx, scanOnly{s}, ns, q)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultListLimit
	}
	match := ftsMatch(terms)
	if q.Session != "" && match != "" {
		// In a short session, reading its own entries beats walking every
		// match of the index for the few that are in it.
		var n int
		err := s.r.QueryRowContext(ctx, `SELECT s.entries FROM sessions s
			WHERE s.agent = ? AND s.owner = ? AND s.id = ? AND `+visible,
			ns.Agent, ns.Owner, q.Session, s.cutoff()).Scan(&n)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, ns.Key(q.Session), err)
		case n <= sessionScanMax:
			match = ""
		}
	}
	query, args := searchSQL(ns, q.Session, match, s.cutoff())
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, ns, err)
	}
	defer rows.Close()

	// Candidates come newest first to the millisecond (see rowid.go).
	// Once limit hits are in, a candidate of an older millisecond than the
	// limit-th hit's can no longer be among the newest; those of the same
	// millisecond still can, and SortHits puts them in exact order.
	var hits []store.SearchHit
	var bound int64
	prev := int64(math.MinInt64)
	for n := 0; rows.Next(); n++ {
		if n%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var (
			eid, ts, sid int64
			seq          int
			id           string
			body         sql.RawBytes
		)
		if err := rows.Scan(&eid, &ts, &seq, &sid, &id, &body); err != nil {
			return nil, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, ns, err)
		}
		if len(hits) >= limit && bucketOf(eid) < bound {
			break
		}
		if eid == prev {
			continue // indexed and still logged: the same entry again
		}
		prev = eid
		e, err := s.decode(ns.Key(id), sid, seq, body)
		if err != nil {
			return nil, err
		}
		text, ok := storekit.SearchText(e)
		if !ok {
			continue
		}
		if snip, ok := storekit.MatchText(text, terms); ok {
			hits = append(hits, store.SearchHit{SessionID: id, EntryID: e.ID, Snippet: snip, Time: e.Timestamp})
			if len(hits) == limit {
				bound = bucketOf(eid)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: searching %s: %w", s.path, ns, err)
	}
	storekit.SortHits(hits)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// searchSQL returns the query for the candidates of a search, newest
// first. With a MATCH, the index drives (CROSS JOIN fixes the join order:
// index, entry, session) and yields its matches by descending row id with
// no sort. Besides them, the entries the index does not have yet are
// candidates too: those logged past the index's mark (fts_log, a batch or
// so), those the indexer could not read (broken), and, while the index is
// being built, those past the entry it has reached (cursor; none once it
// is built: the bound is then the largest row id). SQLite merges the
// streams, each in row id order, as it goes (a compound SELECT's ORDER BY
// on the row ids each part yields in order: MERGE (UNION ALL), no sort of
// the matches); an entry may come twice (indexed and logged again since),
// which Search skips.
//
// That is every entry of the database's snapshot: one the build read is
// indexed, and one stored or stored again since it started is logged past
// the mark, which the build started from. The statement reads the database
// before the index: SQLite starts a statement's read transaction on each
// database it uses in the order they were attached, main first. So the
// index's state is at least as new as any the log was trimmed to in the
// database's snapshot, and what the index lacks of that snapshot is still
// in its log.
//
// Without a MATCH, the entries table does the same; for one session, its
// own entries, sorted.
func searchSQL(ns store.Namespace, session, match string, cutoff int64) (string, []any) {
	var b strings.Builder
	var args []any
	where := func() {
		b.WriteString(`s.agent = ? AND s.owner = ? AND ` + visible)
		args = append(args, ns.Agent, ns.Owner, cutoff)
		if session != "" {
			b.WriteString(` AND s.id = ?`)
			args = append(args, session)
		}
	}
	const fromEntries = ` FROM entries e CROSS JOIN sessions s ON s.sid = e.sid WHERE `
	switch {
	case match != "":
		b.WriteString(`SELECT entries_fts.rowid, e.ts, e.seq, e.sid, s.id, e.body
			FROM idx.entries_fts CROSS JOIN entries e ON e.eid = entries_fts.rowid CROSS JOIN sessions s ON s.sid = e.sid
			WHERE entries_fts MATCH ? AND `)
		args = append(args, match)
		where()
		b.WriteString(` UNION ALL SELECT e.eid, e.ts, e.seq, e.sid, s.id, e.body` + fromEntries + `e.eid IN (
				SELECT l.eid FROM fts_log l WHERE l.seq > (SELECT mark FROM idx.state) AND NOT l.del
				UNION ALL SELECT eid FROM idx.broken) AND `)
		where()
		b.WriteString(` UNION ALL SELECT e.eid, e.ts, e.seq, e.sid, s.id, e.body` + fromEntries + `e.eid > coalesce(
				(SELECT cursor FROM idx.state), 9223372036854775807) AND e.indexed AND `)
		where()
		b.WriteString(` ORDER BY 1 DESC`)
	case session != "":
		b.WriteString(`SELECT e.eid, e.ts, e.seq, e.sid, s.id, e.body FROM sessions s CROSS JOIN entries e ON e.sid = s.sid WHERE e.indexed AND `)
		where()
		b.WriteString(` ORDER BY e.eid DESC`)
	default:
		b.WriteString(`SELECT e.eid, e.ts, e.seq, e.sid, s.id, e.body` + fromEntries + `e.indexed AND `)
		where()
		b.WriteString(` ORDER BY e.eid DESC`)
	}
	return b.String(), args
}

// ftsMatch returns the FTS5 query for terms: every term as an FTS5
// string, which is a quoted phrase with its quotes doubled, so that no
// character of a term is FTS5 syntax; implicit AND between them. FTS5
// reads a query up to its first NUL, so a term is split there, and the
// trigram tokenizer needs three characters, so shorter pieces are left to
// the check on the candidates. Empty when nothing is left.
func ftsMatch(terms []string) string {
	var parts []string
	for _, t := range terms {
		for piece := range strings.SplitSeq(t, "\x00") {
			if utf8.RuneCountInString(piece) >= 3 {
				parts = append(parts, `"`+strings.ReplaceAll(piece, `"`, `""`)+`"`)
			}
		}
	}
	return strings.Join(parts, " ")
}

// sessionScanMax is the longest session that a search restricted to it
// reads entry by entry rather than through the index (a variable for
// tests).
var sessionScanMax = 2000

// scanOnly hides every method of a Store but the four of store.Store, so
// store.Search scans it instead of calling its Search.
type scanOnly struct{ store.Store }
