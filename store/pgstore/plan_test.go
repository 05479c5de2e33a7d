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
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"first page": {listFirstSQL, []any{"agent3", "", int64(math.MinInt64), 51}},
		"next page":  {listNextSQL, []any{"agent3", "", int64(math.MinInt64), 51, int64(5000), "s5000"}},
	} {
		plan := explain(t, s, "", q.sql, q.args...)
		if !strings.Contains(plan, "Index Scan using sessions_listing") || strings.Contains(plan, "Sort") || strings.Contains(plan, "entries") {
			t.Errorf("%s: want an index scan of sessions_listing, no sort, no entries:\n%s", name, plan)
		}
		if name == "next page" && !strings.Contains(plan, "AND (ROW(last_ns, id) < ROW(") {
			t.Errorf("next page: the cursor must bound the index scan:\n%s", plan)
		}
	}
	checkReadPlans(t, s, "")
}

// TestPlansWithoutStatistics: on tables never analyzed (a new deployment,
// or autovacuum not yet round), the newest 50 entries of a 100,000-entry
// session and a page of its range are still read by walking the entries'
// primary key, in custom and in generic plans, never by a sequential scan,
// and the session's row, for a read, an append or a Stat, is found through
// the sessions' primary key, not by scanning the namespace's 10,001
// sessions in the listing index.
func TestPlansWithoutStatistics(t *testing.T) {
	s := newStore(t)
	_, err := admin(t).Exec(bg, s.sql(`ALTER TABLE {s}.entries SET (autovacuum_enabled = false);
		ALTER TABLE {s}.sessions SET (autovacuum_enabled = false);
		INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry)
		SELECT 'agent0', '', 'big', i, 'e' || i, i, '{}'::bytea FROM generate_series(0, 99999) i;
		INSERT INTO {s}.entries (agent, owner, session, seq, entry_id, ts_ns, entry)
		SELECT 'agent0', '', 's' || (i / 10), i % 10, 'f' || i, i, '{}'::bytea FROM generate_series(0, 99999) i;
		INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, entries, head)
		SELECT 'agent0', '', 's' || i, i, i, '', 0, 0, 10, 'h' FROM generate_series(0, 9999) i;
		INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, entries, head)
		VALUES ('agent0', '', 'big', 0, 0, '', 0, 0, 100000, 'e99999')`))
	if err != nil {
		t.Fatal(err)
	}
	var analyzed int
	if err := admin(t).QueryRow(bg, s.sql(`SELECT count(*) FROM pg_stat_user_tables
		WHERE schemaname = $1 AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)`), s.schema).Scan(&analyzed); err != nil {
		t.Fatal(err)
	}
	if analyzed != 0 {
		t.Fatalf("%d tables were analyzed; the test needs them never analyzed", analyzed)
	}
	checkReadPlans(t, s, "")
	checkReadPlans(t, s, "SET LOCAL plan_cache_mode = force_generic_plan")
}

// checkKeyPlans checks that the statements that find a session by its key
// take the sessions' primary key.
func checkKeyPlans(t *testing.T, s *Store, set string) {
	t.Helper()
	cutoff := int64(math.MinInt64)
	for name, plan := range map[string]string{
		"stat": explain(t, s, set, `SELECT `+infoColumns+` FROM {s}.sessions s
			WHERE agent = $1 AND owner = $2 AND id = $3 AND `+visible("s", 4), "agent0", "", "s5", cutoff),
		"append": explain(t, s, set, appendNextSQL, "agent0", "", "s5", "e", int64(1), 0, "", 0, "h", cutoff, []byte("{}"), nil, false, 0),
		"append a batch": explain(t, s, set, appendBatchSQL, "agent0", "", "s5", "e", int64(1), 0, "", nil, 0, 0, 0, 1, "h", cutoff,
			[]string{"e"}, []int64{1}, [][]byte{[]byte("{}")}, []*string{nil}),
		"delete": explain(t, s, set, `DELETE FROM {s}.sessions WHERE agent = $1 AND owner = $2 AND id = $3`, "agent0", "", "s5"),
	} {
		if !strings.Contains(plan, "sessions_pkey") || strings.Contains(plan, "sessions_listing") || strings.Contains(plan, "Seq Scan on sessions") {
			t.Errorf("%s (%s): want the session found through sessions_pkey:\n%s", name, set, plan)
		}
	}
}

// checkReadPlans checks the plans of a tail read, of a range read and of
// a read to the end of session agent0/big, and those of checkKeyPlans.
func checkReadPlans(t *testing.T, s *Store, set string) {
	t.Helper()
	checkKeyPlans(t, s, set)
	for name, plan := range map[string]string{
		"tail":  explain(t, s, set, tailSQL, "agent0", "", "big", 50, int64(math.MinInt64)),
		"range": explain(t, s, set, readSQL, "agent0", "", "big", 1000, 1050, int64(math.MinInt64)),
		// A turn's catch-up: from the newest entry its process has to
		// the end (Session.sync).
		"rest": explain(t, s, set, readSQL, "agent0", "", "big", 99_999, int64(math.MaxInt32), int64(math.MinInt64)),
	} {
		if !strings.Contains(plan, "Index Scan") || !strings.Contains(plan, "entries_pkey") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s read (%s): want a scan of entries_pkey bounded by seq, no sequential scan:\n%s", name, set, plan)
		}
		if !strings.Contains(plan, "sessions_pkey") {
			t.Errorf("%s read (%s): want the session's row found through sessions_pkey:\n%s", name, set, plan)
		}
		if name == "tail" && !strings.Contains(plan, "Backward") {
			t.Errorf("tail read (%s): want the primary key walked backwards from the end:\n%s", set, plan)
		}
	}
}
