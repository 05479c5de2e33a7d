package pgstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// corruptRow runs raw SQL on the row at seq of key ($1-$4).
func corruptRow(t *testing.T, s *Store, key store.Key, seq int, set string, args ...any) {
	t.Helper()
	tag, err := admin(t).Exec(bg, s.sql(set+` WHERE agent = $1 AND owner = $2 AND session = $3 AND seq = $4`),
		append([]any{key.Agent, key.Owner, key.ID, seq}, args...)...)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("corrupting row %d: %v (%d rows)", seq, err, tag.RowsAffected())
	}
}

// wantCorrupt checks that err is a *store.CorruptError for key at pos.
func wantCorrupt(t *testing.T, what string, err error, key store.Key, pos int) {
	t.Helper()
	var ce *store.CorruptError
	if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("%s: %v, want a *store.CorruptError", what, err)
	}
	if ce.Key != key || ce.Position != pos || !strings.Contains(err.Error(), key.String()) {
		t.Fatalf("%s: %v names %s at %d, want %s at %d", what, err, ce.Key, ce.Position, key, pos)
	}
}

func TestCorruptRows(t *testing.T) {
	s := newStore(t)
	ns := store.Namespace{Agent: "a", Owner: "o"}
	sessions := map[string]*chain{}
	for _, id := range []string{"garbage", "gap", "relinked", "truncated", "healthy"} {
		c := newChain(t, s, ns.Key(id), t0)
		for i := range 5 {
			c.user(fmt.Sprint("findme ", id, " ", i))
		}
		sessions[id] = c
	}

	garbage := ns.Key("garbage")
	corruptRow(t, s, garbage, 2, `UPDATE {s}.entries SET entry = 'not an entry'::bytea`)
	_, err := s.Read(bg, garbage)
	wantCorrupt(t, "Read of a row that does not parse", err, garbage, 2)
	_, _, err = s.ReadRange(bg, garbage, 1, 3)
	wantCorrupt(t, "ReadRange over it", err, garbage, 2)
	if got, _, err := s.ReadTail(bg, garbage, 2); err != nil || len(got) != 2 {
		t.Fatalf("ReadTail past the bad row: %d entries, %v", len(got), err)
	}
	_, err = s.Search(bg, ns, store.SearchQuery{Text: "findme garbage 2"})
	wantCorrupt(t, "Search finding it", err, garbage, 2)

	gap := ns.Key("gap")
	corruptRow(t, s, gap, 3, `DELETE FROM {s}.entries`)
	_, err = s.Read(bg, gap)
	wantCorrupt(t, "Read with a row missing", err, gap, 3)
	_, _, err = s.ReadTail(bg, gap, 1)
	if err != nil {
		t.Fatalf("ReadTail after the gap: %v", err)
	}
	_, _, err = s.ReadTail(bg, gap, 2)
	wantCorrupt(t, "ReadTail over the gap", err, gap, 3)

	relinked := ns.Key("relinked")
	e := sessions["relinked"].all[1]
	e.ParentID = "someone-else"
	line, _ := transcript.AppendJSON(nil, e)
	corruptRow(t, s, relinked, 1, `UPDATE {s}.entries SET entry = $5`, line)
	_, err = s.Read(bg, relinked)
	wantCorrupt(t, "Read of a broken chain", err, relinked, 1)

	truncated := ns.Key("truncated")
	corruptRow(t, s, truncated, 4, `DELETE FROM {s}.entries`)
	_, err = s.Read(bg, truncated)
	wantCorrupt(t, "Read with the last row missing", err, truncated, 4)

	// Nothing else is touched: the other session reads, and all list.
	got, err := s.Read(bg, ns.Key("healthy"))
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, sessions["healthy"].all)
	page, err := s.List(bg, ns, store.ListOptions{})
	if err != nil || len(page.Sessions) != 5 {
		t.Fatalf("List with corrupt sessions: %d, %v", len(page.Sessions), err)
	}
}
