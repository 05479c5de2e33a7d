package sqlitestore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// corruptCases damage a stored session with raw SQL, as a bad disk, a bad
// tool or a bad hand would; each read of the damage must fail naming the
// session and the position.
var corruptCases = []struct {
	name string
	sql  string // $SID is the session's sid
	pos  int
}{
	{"body not JSON", `UPDATE entries SET body = '{"id":' WHERE sid = $SID AND seq = 2`, 2},
	{"body not an entry", `UPDATE entries SET body = '{"id":"x","type":"user.message"}' WHERE sid = $SID AND seq = 3`, 3},
	{"body of another entry", `UPDATE entries SET body = (SELECT body FROM entries WHERE sid = $SID AND seq = 1) WHERE sid = $SID AND seq = 3`, 3},
	{"last body of another entry", `UPDATE entries SET body = (SELECT body FROM entries WHERE sid = $SID AND seq = 0) WHERE sid = $SID AND seq = 4`, 4},
	{"entry missing", `DELETE FROM entries WHERE sid = $SID AND seq = 2`, 2},
	{"count one short", `UPDATE sessions SET entries = 4 WHERE sid = $SID`, 3},
	{"entry beyond the count", `UPDATE sessions SET entries = 4,
		head = (SELECT json_extract(body, '$.id') FROM entries WHERE sid = $SID AND seq = 3) WHERE sid = $SID`, 4},
	{"last entry missing", `DELETE FROM entries WHERE sid = $SID AND seq = 4`, 4},
}

func TestCorruptRows(t *testing.T) {
	// Entries decoded one after another, and in parallel (two goroutines
	// on a 5-entry session).
	for _, min := range []int{1 << 20, 2} {
		t.Run(fmt.Sprint("parallel from ", min), func(t *testing.T) {
			saved := parallelMin
			t.Cleanup(func() { parallelMin = saved })
			parallelMin = min
			testCorruptRows(t)
		})
	}
	// With one read connection: the error's sid is looked up after the
	// read's rows are closed, not beside them.
	t.Run("one read connection", func(t *testing.T) { testCorruptRows(t, WithReadConns(1)) })
}

func testCorruptRows(t *testing.T, opts ...Option) {
	for _, tc := range corruptCases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, opts...)
			key := store.Key{Agent: "a", Owner: "o", ID: "victim"}
			other := store.Key{Agent: "a", Owner: "o", ID: "healthy"}
			seed(t, s, key, time.Now(), 5)
			want := seed(t, s, other, time.Now(), 5)
			var sid int64
			if err := s.w.QueryRow(`SELECT sid FROM sessions WHERE id = 'victim'`).Scan(&sid); err != nil {
				t.Fatal(err)
			}
			if _, err := s.w.Exec(strings.ReplaceAll(tc.sql, "$SID", strconv.FormatInt(sid, 10))); err != nil {
				t.Fatal(err)
			}

			check := func(op string, err error) {
				t.Helper()
				var ce *store.CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
					t.Fatalf("%s of a session with a damaged row: %v; want a *store.CorruptError", op, err)
				}
				if ce.Key != key || ce.Position != tc.pos || !strings.Contains(ce.Error(), key.String()) || !strings.Contains(ce.Where, s.Path()) {
					t.Fatalf("%s: %v (key %v, position %d, where %q); want session %s at entry %d in %s", op, err, ce.Key, ce.Position, ce.Where, key, tc.pos, s.Path())
				}
			}
			_, err := s.Read(t.Context(), key)
			check("Read", err)
			_, _, err = s.ReadRange(t.Context(), key, 1, 5)
			check("ReadRange", err)
			_, _, err = s.ReadTail(t.Context(), key, 5-tc.pos+1)
			check("ReadTail", err)

			// The damage stays in its session.
			got, err := s.Read(t.Context(), other)
			if err != nil || !sameEntries(got, want) {
				t.Fatalf("Read of another session: %d entries, %v", len(got), err)
			}
			if page, err := s.List(t.Context(), key.Namespace(), store.ListOptions{}); err != nil || len(page.Sessions) != 2 {
				t.Fatalf("List beside a damaged session: %d sessions, %v", len(page.Sessions), err)
			}
			// A range that does not reach the damage reads.
			if got, _, err := s.ReadRange(t.Context(), key, 0, 2); err != nil || len(got) != 2 {
				t.Fatalf("ReadRange before the damage: %d entries, %v", len(got), err)
			}
		})
	}
}

func TestCorruptRowFailsSearch(t *testing.T) {
	s := openTest(t)
	key := store.Key{Agent: "a", ID: "victim"}
	seed(t, s, key, time.Now(), 5) // "message 1", "answer 1", turn end, "message 2", "answer 2"
	if _, err := s.w.Exec(`UPDATE entries SET body = 'garbage' WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Search(t.Context(), key.Namespace(), store.SearchQuery{Text: "message"})
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Key != key || ce.Position != 3 {
		t.Fatalf("Search whose candidates include a damaged row: %v; want a *store.CorruptError at entry 3 of %s", err, key)
	}
}
