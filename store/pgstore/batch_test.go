package pgstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestBatchEffectMatchesOneByOne appends random transcripts (messages,
// approval requests and decisions, decisions with nothing pending,
// renames, compactions) to one session an entry at a time and to another
// in batches of random sizes, and checks that the two sessions' rows and
// transcripts are the same: one statement per batch (batchOf's composed
// effect) leaves the row as the entries' own statements do.
func TestBatchEffectMatchesOneByOne(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ns := store.Namespace{Agent: "a"}
	for round := range 20 {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		var entries []transcript.Entry
		for i := range 5 + r.IntN(40) {
			at = at.Add(time.Duration(r.IntN(3000)-500) * time.Millisecond) // not always forward
			var e transcript.Entry
			parent := storetest.Head(entries)
			switch r.IntN(7) {
			case 0, 1:
				e = storetest.NewEntry(parent, at, transcript.TypeUserMessage, transcript.UserMessage{Text: fmt.Sprint("question ", i)})
			case 2:
				e = storetest.NewEntry(parent, at, transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: fmt.Sprint("answer ", i)})
			case 3:
				e = storetest.NewEntry(parent, at, transcript.TypeApprovalRequest, transcript.ApprovalRequest{
					ApprovalID: fmt.Sprint("ap", i), CallID: fmt.Sprint("c", i), Tool: "t", Arguments: []byte(`{}`)})
			case 4:
				e = storetest.NewEntry(parent, at, transcript.TypeApprovalDecision, transcript.ApprovalDecision{
					ApprovalID: fmt.Sprint("ap", i), CallID: fmt.Sprint("c", i), Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce})
			case 5:
				e = storetest.NewEntry(parent, at, transcript.TypeSessionTitle, transcript.SessionTitle{Title: fmt.Sprint("renamed ", i)})
			case 6:
				e = storetest.NewEntry(parent, at, transcript.TypeCompaction, transcript.Compaction{Summary: "so far", FirstTurn: "t", LastTurn: "t", Turns: 1})
			}
			entries = append(entries, e)
		}
		one, batched := ns.Key(fmt.Sprint("one", round)), ns.Key(fmt.Sprint("batched", round))
		// Bulks of batches of random sizes, the rows compared after each
		// bulk (a difference in the pending count can heal later).
		for i := 0; i < len(entries); {
			var bulk []store.Batch
			for range 1 + r.IntN(3) {
				n := min(1+r.IntN(8), len(entries)-i)
				if n == 0 {
					break
				}
				bulk = append(bulk, store.Batch{Key: batched, Entries: entries[i : i+n]})
				for _, e := range entries[i : i+n] {
					if err := s.Append(ctx, one, e); err != nil {
						t.Fatal(err)
					}
				}
				i += n
			}
			if err := s.AppendBulk(ctx, bulk); err != nil {
				t.Fatal(err)
			}
			want, err := s.Stat(ctx, one)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Stat(ctx, batched)
			if err != nil {
				t.Fatal(err)
			}
			got.ID = want.ID
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, after %d entries: batched session %+v\none by one %+v", round, i, got, want)
			}
		}
		read, err := s.Read(ctx, batched)
		if err != nil || len(read) != len(entries) {
			t.Fatalf("round %d: Read of the batched session: %d entries, %v", round, len(read), err)
		}
		for i := range read {
			if !read[i].Equal(entries[i]) {
				t.Fatalf("round %d: entry %d differs", round, i)
			}
		}
	}
}

// TestReadRowsRaw: the rows of a read come with seq and entry in binary,
// so that Read takes them from the driver's bytes (rawRow) rather than
// scanning a copy of each; the first is the session's count and head.
func TestReadRowsRaw(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "raw"}
	entries := storetest.Chain("", time.Now(), 3)
	if err := s.AppendBatch(t.Context(), key, entries); err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(t.Context(), s.sql(readSQL), key.Agent, key.Owner, key.ID, 0, 3, s.cutoff())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := -1
	for rows.Next() {
		seq, line, ok := rawRow(rows)
		switch {
		case n == -1 && (!ok || seq != -1-3 || string(line) != entries[2].ID):
			t.Fatalf("session row: rawRow = %d, %q, %v; want %d, %q", seq, line, ok, -1-3, entries[2].ID)
		case n >= 0 && (!ok || seq != n || string(line) == ""):
			t.Fatalf("row %d: rawRow = %d, %q, %v", n, seq, line, ok)
		}
		n++
	}
	if err := rows.Err(); err != nil || n != 3 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// TestSplitBulk: a bulk large enough is cut into bulkParts parts of about
// as many entries, each session's batches in one part and in their order,
// also when a session's batches are not next to each other; a small bulk,
// or one of one session, is one part.
func TestSplitBulk(t *testing.T) {
	ns := store.Namespace{Agent: "a"}
	bulk := func(keys ...string) ([]store.Batch, int) {
		var batches []store.Batch
		n := 0
		for i, k := range keys {
			batches = append(batches, store.Batch{Key: ns.Key(k), Entries: make([]transcript.Entry, 20+i)})
			n += 20 + i
		}
		return batches, n
	}
	// Interleaved sessions: a, b, a, c, d, b, e, f, e, g.
	batches, n := bulk("a", "b", "a", "c", "d", "b", "e", "f", "e", "g")
	parts := splitBulk(batches, n)
	if len(parts) != bulkParts {
		t.Fatalf("%d parts of %d entries, want %d", len(parts), n, bulkParts)
	}
	in := map[store.Key]int{}
	var got []store.Batch
	for p, part := range parts {
		entries := 0
		for _, b := range part {
			if q, ok := in[b.Key]; ok && q != p {
				t.Fatalf("session %s in parts %d and %d", b.Key, q, p)
			}
			in[b.Key] = p
			entries += len(b.Entries)
		}
		if entries < n/bulkParts/2 {
			t.Errorf("part %d has %d of %d entries", p, entries, n)
		}
		got = append(got, part...)
	}
	// Each session's batches keep their order: the first batch of a and of
	// b is the shorter one.
	for i, b := range got {
		for _, later := range got[i+1:] {
			if later.Key == b.Key && len(later.Entries) < len(b.Entries) {
				t.Fatalf("session %s: its batches out of order", b.Key)
			}
		}
	}
	if len(got) != len(batches) {
		t.Fatalf("%d batches in the parts, want %d", len(got), len(batches))
	}
	for _, keys := range [][]string{{"a", "a", "a", "a", "a", "a", "a"}, {"a", "b"}} {
		batches, n := bulk(keys...)
		if parts := splitBulk(batches, n); len(parts) != 1 || len(parts[0]) != len(batches) {
			t.Errorf("%v (%d entries): %d parts, want one", keys, n, len(parts))
		}
	}
}

// TestBulkInParts appends a bulk that AppendBulk writes in parts, sessions
// interleaved, and reads every session back; then a bulk with a stale
// batch in one part fails with ErrConflict naming that session, appends
// nothing of it, and appends the others' batches.
func TestBulkInParts(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ns := store.Namespace{Agent: "parts"}
	want := map[store.Key][]transcript.Entry{}
	var batches []store.Batch
	at := time.Now()
	for pair := 0; pair < 8; pair += 2 {
		for j := range 4 { // s0, s1, s0, s1, s2, s3, s2, s3, ...
			key := ns.Key(fmt.Sprint("s", pair+j%2))
			entries := storetest.Chain(storetest.Head(want[key]), at.Add(time.Duration(pair*4+j)*time.Second), 10)
			batches = append(batches, store.Batch{Key: key, Entries: entries})
			want[key] = append(want[key], entries...)
		}
	}
	if parts := splitBulk(batches, 160); len(parts) < 2 {
		t.Fatalf("the bulk is %d part: the test needs more", len(parts))
	}
	if err := s.AppendBulk(ctx, batches); err != nil {
		t.Fatal(err)
	}
	for key, entries := range want {
		got, err := s.Read(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		equalEntries(t, got, entries)
	}

	stale := ns.Key("s7") // in the last part
	batches = batches[:0]
	for i := range 8 {
		key := ns.Key(fmt.Sprint("s", i))
		parent := storetest.Head(want[key])
		if key == stale {
			parent = want[key][0].ID
		}
		entries := storetest.Chain(parent, at.Add(time.Minute), 20)
		batches = append(batches, store.Batch{Key: key, Entries: entries})
		if key != stale {
			want[key] = append(want[key], entries...)
		}
	}
	err := s.AppendBulk(ctx, batches)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), stale.String()) {
		t.Fatalf("AppendBulk with a stale batch: %v, want ErrConflict naming %s", err, stale)
	}
	for key, entries := range want {
		got, err := s.Read(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		equalEntries(t, got, entries)
	}
}

// TestBulkStarts: the batches of a bulk that start sessions go in one
// statement; one whose session exists, or that starts a session a batch
// before it started, appends nothing and fails the bulk with ErrConflict
// naming its session, and the other sessions, their later batches too,
// are appended.
func TestBulkStarts(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ns := store.Namespace{Agent: "starts"}
	at := time.Now()
	there := ns.Key("there")
	before := storetest.Chain("", at, 2)
	if err := s.AppendBatch(ctx, there, before); err != nil {
		t.Fatal(err)
	}
	a, c, twice := ns.Key("a"), ns.Key("c"), ns.Key("twice")
	aFirst := storetest.Chain("", at, 3)
	aMore := storetest.Chain(storetest.Head(aFirst), at.Add(time.Second), 2)
	cFirst := storetest.Chain("", at, 4)
	twiceFirst := storetest.Chain("", at, 2)
	bulk := []store.Batch{
		{Key: a, Entries: aFirst},
		{Key: there, Entries: storetest.Chain("", at, 3)},
		{Key: a, Entries: aMore},
		{Key: twice, Entries: twiceFirst},
		{Key: c, Entries: cFirst},
		{Key: twice, Entries: storetest.Chain("", at, 2)},
	}
	err := s.AppendBulk(ctx, bulk)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), there.String()) {
		t.Fatalf("AppendBulk starting a session that exists: %v, want ErrConflict naming %s", err, there)
	}
	for key, want := range map[store.Key][]transcript.Entry{
		there: before, a: append(aFirst, aMore...), c: cFirst, twice: twiceFirst,
	} {
		got, err := s.Read(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		equalEntries(t, got, want)
		info, err := s.Stat(ctx, key)
		if err != nil || info.Entries != len(want) {
			t.Fatalf("%s: Stat %+v %v, want %d entries", key, info, err, len(want))
		}
	}
	// The second start of twice was refused without a statement of its
	// own (a duplicate key in the one statement would fail all of it);
	// alone in a bulk, a start of a session that exists names it.
	err = s.AppendBulk(ctx, []store.Batch{{Key: ns.Key("new"), Entries: storetest.Chain("", at, 2)}, {Key: twice, Entries: storetest.Chain("", at, 1)}})
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), twice.String()) {
		t.Fatalf("AppendBulk starting a session that exists: %v, want ErrConflict naming %s", err, twice)
	}
}
