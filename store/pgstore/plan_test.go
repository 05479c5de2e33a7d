package pgstore

import (
	"math"
	"strings"
	"testing"
)

// TestPlans checks, with EXPLAIN on a table of 10,000 sessions, that a
// listing page is an index scan in listing order (no sort, no entries) and
// that a tail read walks the entries' primary key.
func TestPlans(t *testing.T) {
	s := newStore(t)
	_, err := admin(t).Exec(bg, s.sql(`INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, entries, head)
		SELECT 'agent' || (i % 10), '', 's' || i, i, i, '', 0, 0, 1, 'h'
		FROM generate_series(1, 10000) i`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin(t).Exec(bg, s.sql(`INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry)
		SELECT 'agent0', '', 'big', i, 'e' || i, i, '{}'::bytea FROM generate_series(0, 49999) i;
		INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, entries, head)
		VALUES ('agent0', '', 'big', 0, 0, '', 0, 0, 50000, 'e49999')`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t).Exec(bg, s.sql(`ANALYZE {s}.sessions; ANALYZE {s}.entries`)); err != nil {
		t.Fatal(err)
	}
	list := `SELECT ` + infoColumns + ` FROM {s}.sessions s WHERE agent = $1 AND owner = $2 AND ` + visible("s", 3)
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"first page": {list + ` ORDER BY last_ns DESC, id DESC LIMIT $4`, []any{"agent3", "", int64(math.MinInt64), 51}},
		"next page":  {list + ` AND (last_ns, id) < ($5, $6) ORDER BY last_ns DESC, id DESC LIMIT $4`, []any{"agent3", "", int64(math.MinInt64), 51, int64(5000), "s5000"}},
	} {
		plan := explain(t, s, "", q.sql, q.args...)
		if !strings.Contains(plan, "Index Scan using sessions_activity") || strings.Contains(plan, "Sort") || strings.Contains(plan, "entries") {
			t.Errorf("%s: want an index scan of sessions_activity, no sort, no entries:\n%s", name, plan)
		}
		if name == "next page" && !strings.Contains(plan, "AND (ROW(last_ns, id) < ROW(") {
			t.Errorf("next page: the cursor must bound the index scan:\n%s", plan)
		}
	}
	plan := explain(t, s, "", readSQL, "agent0", "", "big", 0, 50, math.MaxInt32, int64(math.MinInt64))
	// An index scan or a bitmap scan of the key, bounded by seq either way.
	if !strings.Contains(plan, "Scan using entries_pkey") && !strings.Contains(plan, "Index Scan on entries_pkey") ||
		!strings.Contains(plan, "(seq >= GREATEST(") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("tail read: want a range scan of entries_pkey bounded by seq:\n%s", plan)
	}
}
