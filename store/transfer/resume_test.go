package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/store/transfer"
	"github.com/spool-go/spool/transcript"
)

var errInterrupted = errors.New("interrupted")

// interrupted is a store whose bulk appends stop after budget entries, as
// a killed process stops: in the middle of a bulk, with a prefix of one
// session's batch appended and the rest of the bulk not.
type interrupted struct {
	store.Store
	budget int
}

func (s *interrupted) AppendBulk(ctx context.Context, batches []store.Batch) error {
	for _, b := range batches {
		entries := b.Entries
		stop := len(entries) > s.budget
		if stop {
			entries = entries[:s.budget]
		}
		if err := store.AppendBatch(ctx, s.Store, b.Key, entries); err != nil {
			return err
		}
		s.budget -= len(entries)
		if stop {
			return errInterrupted
		}
	}
	return nil
}

// TestImportResumes interrupts an import into every store in the middle
// of a bulk, and in the middle of a long session, then runs it again: the
// second run appends exactly what the first did not, every session ends
// whole with its chain intact, and a third run appends nothing and says
// so in its Stats.
func TestImportResumes(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, to := range teststores.Names {
		for _, budget := range []int{3, 40, 100} { // in the first session, at a session's start, in the last
			t.Run(to, func(t *testing.T) {
				dst := all[to](t)
				lines, want := exported(t)
				st, err := transfer.Import(ctx, &interrupted{Store: dst, budget: budget}, strings.NewReader(lines), nil)
				if !errors.Is(err, errInterrupted) {
					t.Fatalf("interrupted import: %+v %v, want %v", st, err, errInterrupted)
				}
				landed := countAll(t, dst, want)
				if landed != budget {
					t.Fatalf("the interrupted import left %d entries, want %d", landed, budget)
				}
				st, err = transfer.Import(ctx, dst, strings.NewReader(lines), nil)
				if err != nil || st.Skipped != budget || st.Entries != 140-budget || st.Sessions != 4 {
					t.Fatalf("import after the interruption: %+v %v, want %d skipped and %d added", st, err, budget, 140-budget)
				}
				check(t, dst, want)
				checkChains(t, dst, want)
				st, err = transfer.Import(ctx, dst, strings.NewReader(lines), nil)
				if err != nil || st.Entries != 0 || st.Skipped != 140 {
					t.Fatalf("a third import: %+v %v, want nothing added and 140 already there", st, err)
				}
			})
		}
	}
}

// TestImportCancelled cancels an import between sessions (as Ctrl-C
// does) and runs it again to its end.
func TestImportCancelled(t *testing.T) {
	all := teststores.All()
	for _, to := range teststores.Names {
		t.Run(to, func(t *testing.T) {
			dst := all[to](t)
			lines, want := exported(t)
			ctx, cancel := context.WithCancel(context.Background())
			_, err := transfer.Import(ctx, dst, strings.NewReader(lines), func(sessions, _ int) {
				if sessions == 2 {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled import: %v, want context.Canceled", err)
			}
			landed := countAll(t, dst, want)
			st, err := transfer.Import(context.Background(), dst, strings.NewReader(lines), nil)
			if err != nil || st.Skipped != landed || st.Entries+st.Skipped != 140 {
				t.Fatalf("import after cancelling: %+v %v, want %d skipped", st, err, landed)
			}
			check(t, dst, want)
			checkChains(t, dst, want)
		})
	}
}

// countAll counts the entries dst holds of the sessions of want, each a
// prefix of its session.
func countAll(t *testing.T, dst store.Store, want map[store.Key][]transcript.Entry) int {
	t.Helper()
	n := 0
	for k, entries := range want {
		got, err := dst.Read(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > len(entries) {
			t.Fatalf("%s: %d entries, more than the %d exported", k, len(got), len(entries))
		}
		for i := range got {
			if !got[i].Equal(entries[i]) {
				t.Fatalf("%s: entry %d is not the exported one", k, i)
			}
		}
		n += len(got)
	}
	return n
}

// checkChains checks that each session's entries chain, first to last,
// and that its SessionInfo counts them.
func checkChains(t *testing.T, dst store.Store, want map[store.Key][]transcript.Entry) {
	t.Helper()
	for k := range want {
		got, err := dst.Read(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		parent := ""
		for i, e := range got {
			if e.ParentID != parent {
				t.Fatalf("%s: entry %d's parent is %q, want %q", k, i, e.ParentID, parent)
			}
			parent = e.ID
		}
		info, err := store.Stat(context.Background(), dst, k)
		if err != nil || info.Entries != len(got) {
			t.Fatalf("%s: Stat %+v %v, want %d entries", k, info, err, len(got))
		}
	}
}

// reads counts the reads of a store's transcripts, by session.
type reads struct {
	store.Store
	n map[store.Key]int
}

func (s *reads) Read(ctx context.Context, k store.Key) ([]transcript.Entry, error) {
	s.n[k]++
	return s.Store.Read(ctx, k)
}

// TestImportReadsOnlyWhatItMayFind: an import into namespaces that held no
// session reads no transcript of the target; into namespaces that hold
// sessions, it reads the sessions of those, and skips what is there.
func TestImportReadsOnlyWhatItMayFind(t *testing.T) {
	ctx := context.Background()
	lines, want := exported(t)
	dst := &reads{Store: teststores.All()["memory"](t), n: map[store.Key]int{}}
	st, err := transfer.Import(ctx, dst, strings.NewReader(lines), nil)
	if err != nil || st.Entries != 140 || len(dst.n) != 0 {
		t.Fatalf("import into an empty store: %+v %v, reads %v, want 140 entries and no read", st, err, dst.n)
	}
	check(t, dst, want)

	// One namespace of the four emptied: its session is not read.
	var gone store.Key
	for k := range want {
		if k.Owner == "bob" {
			gone = k
		}
	}
	if err := dst.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	clear(dst.n)
	st, err = transfer.Import(ctx, dst, strings.NewReader(lines), nil)
	if err != nil || st.Entries != len(want[gone]) || st.Skipped != 140-len(want[gone]) {
		t.Fatalf("import again: %+v %v, want %d entries and the rest skipped", st, err, len(want[gone]))
	}
	for k := range want {
		if (dst.n[k] == 0) != (k == gone) {
			t.Errorf("import again: %s read %d times", k, dst.n[k])
		}
	}
	check(t, dst, want)
}

// failing is a store whose AppendBulk fails from its nth call on, as a
// disk that fills or a server that goes away does.
type failing struct {
	store.Store
	n int
}

var errFull = errors.New("no space left on device")

func (s *failing) AppendBulk(ctx context.Context, batches []store.Batch) error {
	if s.n--; s.n <= 0 {
		return errFull
	}
	return store.AppendBulk(ctx, s.Store, batches)
}

// TestImportNamesTheLinesOfAFailedBulk: a store failing half-way fails
// the import with the lines it was writing, not with the line being read
// when the failure came back (a chunk or two further on, which holds
// nothing wrong), and the run again completes the import.
func TestImportNamesTheLinesOfAFailedBulk(t *testing.T) {
	ctx := context.Background()
	dst := teststores.All()["memory"](t)
	lines, want := exported(t)
	// chunk is 7: the first bulk is lines 1-7, the second 8-14.
	_, err := transfer.Import(ctx, &failing{Store: dst, n: 2}, strings.NewReader(lines), nil)
	if !errors.Is(err, errFull) || !strings.Contains(err.Error(), "lines 8-14:") || strings.Contains(err.Error(), "line 2") {
		t.Fatalf("%v, want %v naming lines 8-14 alone", err, errFull)
	}
	if _, err := transfer.Import(ctx, dst, strings.NewReader(lines), nil); err != nil {
		t.Fatal(err)
	}
	check(t, dst, want)
	checkChains(t, dst, want)
}

// TestImportOfASessionTwice imports two exports of the same sessions, one
// taken after the other and the sessions grown since, in one input (cat
// monday.jsonl tuesday.jsonl): each session's second copy is found there
// and only what it adds is appended. Its first entry, which has no
// parent, was taken for an entry whose parent was left out, and appended
// after the first copy: every store ended with each entry twice.
func TestImportOfASessionTwice(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, to := range teststores.Names {
		t.Run(to, func(t *testing.T) {
			src, dst := all["memory"](t), all[to](t)
			want := fill(t, src)
			var monday, tuesday bytes.Buffer
			if _, err := transfer.Export(ctx, &monday, src, keys(want)); err != nil {
				t.Fatal(err)
			}
			for k, entries := range want {
				more := storetest.Chain(storetest.Head(entries), entries[len(entries)-1].Timestamp.Add(time.Second), 3)
				for _, e := range more {
					if err := src.Append(ctx, k, e); err != nil {
						t.Fatal(err)
					}
				}
				want[k] = append(entries, more...)
			}
			if _, err := transfer.Export(ctx, &tuesday, src, keys(want)); err != nil {
				t.Fatal(err)
			}
			both := monday.String() + tuesday.String()
			st, err := transfer.Import(ctx, dst, strings.NewReader(both), nil)
			if err != nil || st.Entries != 152 || st.Skipped != 140 {
				t.Fatalf("import of both exports: %+v %v, want 152 added and 140 already there", st, err)
			}
			check(t, dst, want)
			checkChains(t, dst, want)
			st, err = transfer.Import(ctx, dst, strings.NewReader(both), nil)
			if err != nil || st.Entries != 0 || st.Skipped != 292 {
				t.Fatalf("import again: %+v %v, want nothing added", st, err)
			}
			check(t, dst, want)
		})
	}
}

// TestImportOfTwoSessionsUnderOneKey: an input holding two different
// sessions under one key (two stores' exports of the same id, cat a.jsonl
// b.jsonl) fails at the line where the second begins, naming the session
// and the lines of both; the sessions before that line are imported whole,
// the key holds the first session alone, and a run again does the same
// and adds nothing. The second's first entry, which has no parent, was
// taken for an entry whose parent was left out: the two were merged into
// one session. The same holds for two copies of one session that differ
// part-way (an edited export): the error says the input's copies differ,
// not that the target does.
func TestImportOfTwoSessionsUnderOneKey(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	agent := teststores.Name("agent")
	k := store.Key{Agent: agent, Owner: "alice", ID: "s"}
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	x := storetest.Chain("", start, 10)
	y := storetest.Chain("", start.Add(time.Minute), 4)
	edited := slices.Clone(x)
	edited[6].Data = json.RawMessage(`{"text":"edited"}`)
	for _, tc := range []struct {
		name  string
		lines []store.Batch // in the input's order
		at    string        // the line of the error
		says  []string
	}{
		// A session of one entry: nothing says its parent, but its lines
		// begin again after another session's.
		{"one entry, apart", []store.Batch{{Key: store.Key{Agent: agent, ID: "a"}, Entries: storetest.Chain("", start, 8)},
			{Key: k, Entries: x[:1]}, {Key: store.Key{Agent: agent, ID: "b"}, Entries: storetest.Chain("", start, 3)},
			{Key: k, Entries: y}, {Key: store.Key{Agent: agent, ID: "c"}, Entries: storetest.Chain("", start, 3)}},
			"line 13:", []string{"two different sessions", "at line 9", y[0].ID, x[0].ID}},
		{"apart", []store.Batch{{Key: store.Key{Agent: agent, ID: "a"}, Entries: storetest.Chain("", start, 8)},
			{Key: k, Entries: x}, {Key: store.Key{Agent: agent, ID: "b"}, Entries: storetest.Chain("", start, 3)},
			{Key: k, Entries: y}, {Key: store.Key{Agent: agent, ID: "c"}, Entries: storetest.Chain("", start, 3)}},
			"line 22:", []string{"two different sessions", "at line 9", y[0].ID, x[0].ID}},
		{"together", []store.Batch{{Key: store.Key{Agent: agent, ID: "a"}, Entries: storetest.Chain("", start, 8)},
			{Key: k, Entries: x}, {Key: k, Entries: y}, {Key: store.Key{Agent: agent, ID: "c"}, Entries: storetest.Chain("", start, 3)}},
			"line 19:", []string{"two different sessions", "at line 9", y[0].ID, x[0].ID}},
		{"copies that differ", []store.Batch{{Key: store.Key{Agent: agent, ID: "a"}, Entries: storetest.Chain("", start, 8)},
			{Key: k, Entries: x}, {Key: k, Entries: edited}, {Key: store.Key{Agent: agent, ID: "c"}, Entries: storetest.Chain("", start, 3)}},
			"line 25:", []string{"copies differ", "at line 9", "position 6"}},
	} {
		for _, to := range teststores.Names {
			t.Run(tc.name+"/"+to, func(t *testing.T) {
				dst := all[to](t)
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				for _, b := range tc.lines {
					for _, e := range b.Entries {
						if err := enc.Encode(transfer.Record{Agent: b.Key.Agent, Owner: b.Key.Owner, Session: b.Key.ID, Entry: e}); err != nil {
							t.Fatal(err)
						}
					}
				}
				input := buf.String()
				whole := map[store.Key][]transcript.Entry{}
				for _, b := range tc.lines {
					if _, seen := whole[b.Key]; !seen && b.Key.ID != "c" {
						whole[b.Key] = b.Entries // the first session under k
					}
				}
				for run := 1; run <= 2; run++ {
					st, err := transfer.Import(ctx, dst, strings.NewReader(input), nil)
					if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), tc.at+" session "+k.String()+": ") {
						t.Fatalf("run %d: %v, want ErrConflict at %s naming %s", run, err, tc.at, k)
					}
					for _, s := range tc.says {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("run %d: %v, want it to say %q", run, err, s)
						}
					}
					if run == 2 && st.Entries != 0 {
						t.Errorf("run again: %+v, want nothing added", st)
					}
					check(t, dst, whole)
					checkChains(t, dst, whole)
					if got, err := dst.Read(ctx, store.Key{Agent: agent, ID: "c"}); err != nil || len(got) != 0 {
						t.Fatalf("run %d: the session after the error has %d entries, %v", run, len(got), err)
					}
				}
			})
		}
	}
}
