package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/sqlitestore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/store/transfer"
	"github.com/spool-go/spool/transcript"
)

// fill writes a few sessions in several namespaces and returns their keys and
// transcripts.
func fill(t *testing.T, s store.Store) map[store.Key][]transcript.Entry {
	t.Helper()
	ctx := context.Background()
	agent := teststores.Name("agent")
	want := map[store.Key][]transcript.Entry{}
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	for i, k := range []store.Key{
		{Agent: agent, ID: "project-1"},
		{Agent: agent, ID: "project-2"},
		{Agent: agent, Owner: "alice", ID: "project-1"}, // same id, user scope
		{Agent: agent + "-other", Owner: "bob", ID: "b"},
	} {
		entries := storetest.Chain("", start.Add(time.Duration(i)*time.Minute), 5+i*20)
		for _, e := range entries {
			if err := s.Append(ctx, k, e); err != nil {
				t.Fatal(err)
			}
		}
		want[k] = entries
	}
	return want
}

// exported fills a memory store (fill) and exports every session of it:
// the export's lines, and what each session holds.
func exported(t *testing.T) (string, map[store.Key][]transcript.Entry) {
	t.Helper()
	src := teststores.All()["memory"](t)
	want := fill(t, src)
	var buf bytes.Buffer
	if _, err := transfer.Export(context.Background(), &buf, src, keys(want)); err != nil {
		t.Fatal(err)
	}
	return buf.String(), want
}

func check(t *testing.T, dst store.Store, want map[store.Key][]transcript.Entry) {
	t.Helper()
	for k, entries := range want {
		got, err := dst.Read(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(entries) {
			t.Fatalf("%s: %d entries, want %d", k, len(got), len(entries))
		}
		for i := range got {
			if !got[i].Equal(entries[i]) {
				t.Fatalf("%s: entry %d differs", k, i)
			}
		}
	}
}

func keys(m map[store.Key][]transcript.Entry) []store.Key {
	var out []store.Key
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRoundTripBetweenEveryPairOfStores exports from each store and imports
// into each other (and copies directly), twice, to show the copy is exact
// and a re-run appends nothing.
func TestRoundTripBetweenEveryPairOfStores(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, from := range teststores.Names {
		for _, to := range teststores.Names {
			t.Run(from+"→"+to, func(t *testing.T) {
				src, dst := all[from](t), all[to](t)
				want := fill(t, src)
				var buf bytes.Buffer
				st, err := transfer.Export(ctx, &buf, src, keys(want))
				if err != nil {
					t.Fatal(err)
				}
				if st.Sessions != 4 || st.Entries != 5+25+45+65 {
					t.Fatalf("export stats %+v", st)
				}
				exported := buf.String()
				for range 2 {
					st, err := transfer.Import(ctx, dst, strings.NewReader(exported), nil)
					if err != nil {
						t.Fatal(err)
					}
					if st.Entries+st.Skipped != 140 {
						t.Fatalf("import stats %+v", st)
					}
				}
				check(t, dst, want)
				// A direct copy into a third, fresh store of the target kind.
				dst2 := all[to](t)
				if _, err := transfer.Copy(ctx, dst2, src, keys(want), nil); err != nil {
					t.Fatal(err)
				}
				st, err = transfer.Copy(ctx, dst2, src, keys(want), nil)
				if err != nil || st.Entries != 0 || st.Skipped != 140 {
					t.Fatalf("second copy %+v %v", st, err)
				}
				check(t, dst2, want)
			})
		}
	}
}

func TestCopyEverything(t *testing.T) {
	ctx := context.Background()
	src := teststores.SQLite(t)
	want := fill(t, src)
	dst := teststores.File(t)
	var calls int
	st, err := transfer.Copy(ctx, dst, src, nil, func(sessions, entries int) { calls++ })
	if err != nil || st.Sessions != 4 || calls != 4 {
		t.Fatalf("%+v %v (progress calls %d)", st, err, calls)
	}
	check(t, dst, want)
}

// TestImportRefusesADivergentTarget: a target holding another session
// under a key of the import (an export of another store, whose sessions
// have the same ids) fails the import by name, in every store, saying so
// (not that the session "has moved on", which it has not), and the
// target's session is left as it was.
func TestImportRefusesADivergentTarget(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, to := range teststores.Names {
		t.Run(to, func(t *testing.T) {
			dst := all[to](t)
			lines, want := exported(t)
			// The target already holds a different session under one of the keys.
			var k store.Key
			for key := range want {
				k = key
				break
			}
			other := storetest.Chain("", time.Now().UTC().Truncate(time.Millisecond), 3)
			for _, e := range other {
				if err := dst.Append(ctx, k, e); err != nil {
					t.Fatal(err)
				}
			}
			_, err := transfer.Import(ctx, dst, strings.NewReader(lines), nil)
			if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "session "+k.String()+": the target holds another session under this key") ||
				!strings.Contains(err.Error(), other[0].ID) || strings.Contains(err.Error(), "moved on") {
				t.Fatalf("%v, want ErrConflict naming %s and saying the target holds another session", err, k)
			}
			check(t, dst, map[store.Key][]transcript.Entry{k: other})
		})
	}
}

func TestImportRejectsGarbage(t *testing.T) {
	dst := teststores.All()["memory"](t)
	for _, in := range []string{"not json\n", `{"agent":"../x","session":"s","entry":{}}` + "\n",
		fmt.Sprintf(`{"agent":"a","session":"s","entry":{"id":"x","timestamp":"%s","type":"user.message","turnId":"t","data":[]}}`+"\n", time.Now().Format(time.RFC3339))} {
		if _, err := transfer.Import(context.Background(), dst, strings.NewReader(in), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// TestImportRefusesTheSameIDsWithOtherContent: a target session holding
// the same ids as the import with other content (an edited export, a
// session rewritten elsewhere) is refused by name, in every store, and
// left as it was; it is not counted as already there.
func TestImportRefusesTheSameIDsWithOtherContent(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, to := range teststores.Names {
		t.Run(to, func(t *testing.T) {
			dst := all[to](t)
			k := store.Key{Agent: teststores.Name("agent"), Owner: "alice", ID: "s"}
			entries := storetest.Chain("", time.Now().UTC().Truncate(time.Millisecond), 20)
			for _, e := range entries {
				if err := dst.Append(ctx, k, e); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for i, e := range entries {
				if i == 12 { // past the first chunk of the target read
					e.Data = json.RawMessage(`{"text":"edited"}`)
				}
				if err := enc.Encode(transfer.Record{Agent: k.Agent, Owner: k.Owner, Session: k.ID, Entry: e}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := transfer.Import(ctx, dst, &buf, nil)
			if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), k.String()) || !strings.Contains(err.Error(), "line 13") {
				t.Fatalf("%v, want ErrConflict naming %s and line 13", err, k)
			}
			got, err := dst.Read(ctx, k)
			if err != nil || len(got) != len(entries) || !got[12].Equal(entries[12]) {
				t.Fatalf("the target session was changed: %d entries, %v", len(got), err)
			}
		})
	}
}

// TestImportNamesTheLineTheStoreRefuses: an entry that parses but that a
// store refuses (a parent that is not the entry before it, a time no store
// keeps) fails the import with its line number, as a line that does not
// parse does, though the store sees it only in a bulk of many lines; the
// sessions before it are imported whole.
func TestImportNamesTheLineTheStoreRefuses(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, tc := range []struct {
		name  string
		spoil func(*transcript.Entry)
		want  error
	}{
		{"a broken chain", func(e *transcript.Entry) { e.ParentID = "01JNOTTHEPARENT" }, store.ErrConflict},
		{"a time no store keeps", func(e *transcript.Entry) { e.Timestamp = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, store.ErrInvalidEntry},
	} {
		for _, to := range teststores.Names {
			t.Run(tc.name+"/"+to, func(t *testing.T) {
				dst := all[to](t)
				agent := teststores.Name("agent")
				start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				line := 0
				for i, id := range []string{"s1", "s2", "s3"} {
					for j, e := range storetest.Chain("", start.Add(time.Duration(i)*time.Minute), 10) {
						line++
						if i == 1 && j == 4 {
							tc.spoil(&e)
						}
						if err := enc.Encode(transfer.Record{Agent: agent, Session: id, Entry: e}); err != nil {
							t.Fatal(err)
						}
					}
				}
				_, err := transfer.Import(ctx, dst, &buf, nil)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "line 15:") || !strings.Contains(err.Error(), agent+"/s2") {
					t.Fatalf("%v, want %v naming line 15 and the session", err, tc.want)
				}
				got, err := dst.Read(ctx, store.Key{Agent: agent, ID: "s1"})
				if err != nil || len(got) != 10 {
					t.Fatalf("the session before: %d entries, %v", len(got), err)
				}
			})
		}
	}
}

// TestExportOfTheLongestEntryImports: an entry as long as the file store
// keeps (its line up to transcript.MaxLineSize) is exported on a line its
// key makes longer still, and that line imports; it failed as a line too
// long, so such a session could be exported but never imported.
func TestExportOfTheLongestEntryImports(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB")
	}
	ctx := context.Background()
	src, dst := teststores.File(t), teststores.All()["memory"](t)
	k := store.Key{Agent: teststores.Name("agent"), Owner: strings.Repeat("o", 128), ID: strings.Repeat("s", 128)}
	at := time.Now().UTC().Truncate(time.Millisecond)
	e := storetest.NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: ""})
	line, err := transcript.AppendJSON(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	// The text that makes the entry's line transcript.MaxLineSize long.
	e = storetest.NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: strings.Repeat("x", transcript.MaxLineSize-len(line)-1)})
	if err := src.Append(ctx, k, e); err != nil {
		t.Fatalf("the file store refuses the entry: %v", err)
	}
	var buf bytes.Buffer
	if _, err := transfer.Export(ctx, &buf, src, []store.Key{k}); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Import(ctx, dst, &buf, nil); err != nil {
		t.Fatal(err)
	}
	check(t, dst, map[store.Key][]transcript.Entry{k: {e}})

	// A line longer still is refused by its number, in words.
	long := append([]byte("\n"), bytes.Repeat([]byte("x"), transcript.MaxLineSize+8<<10)...)
	_, err = transfer.Import(ctx, dst, bytes.NewReader(long), nil)
	if err == nil || !strings.Contains(err.Error(), "line 2: ") || strings.Contains(err.Error(), "bufio") {
		t.Fatalf("a line too long: %v, want its number and no Go package", err)
	}
}

// TestImportRefusesALineWithoutItsOwner: a line that does not say whose
// session it is in the export's words (a "user" where the export writes
// "owner", or no owner at all) is refused by its number; it was read as
// a project's session, so a user's transcript landed where every user of
// the agent sees it.
func TestImportRefusesALineWithoutItsOwner(t *testing.T) {
	entry := fmt.Sprintf(`{"id":"01JF00000000000000000000AA","timestamp":"%s","type":"user.message","turnId":"t","data":{"text":"mine"}}`, time.Now().UTC().Format(time.RFC3339))
	for _, in := range []string{
		`{"agent":"a","user":"bob","session":"s","entry":` + entry + `}`,
		`{"agent":"a","session":"s","entry":` + entry + `}`,
		`{"agent":"a","session":"s","entry":` + entry + `,"owner":"","scope":"user"}`,
	} {
		dst := teststores.All()["memory"](t)
		_, err := transfer.Import(context.Background(), dst, strings.NewReader("\n"+in+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "line 2: ") {
			t.Errorf("%s: %v, want it refused by its line", in, err)
		}
		if got, _ := dst.Read(context.Background(), store.Key{Agent: "a", ID: "s"}); len(got) != 0 {
			t.Errorf("%s: imported as a project's session", in)
		}
	}
	// The export's own words, in another order and spacing, still import.
	dst := teststores.All()["memory"](t)
	in := `{ "session":"s", "OWNER":"bob", "entry":` + entry + `, "agent":"a" }`
	if _, err := transfer.Import(context.Background(), dst, strings.NewReader(in), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := dst.Read(context.Background(), store.Key{Agent: "a", Owner: "bob", ID: "s"}); len(got) != 1 {
		t.Fatalf("bob's session: %d entries", len(got))
	}
}

// TestSessionsMeetsASessionAppendedToWhileListing: a session appended to
// while a namespace of several pages is listed (export --all, migrate)
// moves ahead of the listing's cursor; the walk still meets it, and
// meets every session once. It was never met: an export or a migration
// of a store in use left out a session it held all along.
func TestSessionsMeetsASessionAppendedToWhileListing(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	for _, name := range teststores.Names {
		t.Run(name, func(t *testing.T) {
			s := all[name](t)
			ns := store.Namespace{Agent: teststores.Name("agent"), Owner: "alice"}
			start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
			var batches []store.Batch
			for i := range 2*store.MaxListLimit + 100 { // three pages
				batches = append(batches, store.Batch{Key: ns.Key(fmt.Sprint("s", i)), Entries: storetest.Chain("", start.Add(time.Duration(i)*time.Second), 1)})
			}
			if err := store.AppendBulk(ctx, s, batches); err != nil {
				t.Fatal(err)
			}
			oldest := batches[0] // on the last page, until it is appended to
			met := map[store.Key]int{}
			err := transfer.Sessions(ctx, s, []store.Namespace{ns}, func(k store.Key) error {
				if len(met) == 0 {
					if err := s.Append(ctx, oldest.Key, storetest.Chain(oldest.Entries[0].ID, time.Now().UTC(), 1)[0]); err != nil {
						return err
					}
				}
				met[k]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(met) != len(batches) || met[oldest.Key] != 1 {
				t.Fatalf("met %d sessions of %d, the one appended to %d times", len(met), len(batches), met[oldest.Key])
			}
			for k, n := range met {
				if n != 1 {
					t.Fatalf("%s met %d times", k, n)
				}
			}
		})
	}
}

// TestTransferFillsAParentLeftOut: a transcript whose entries leave
// their parent out (another program wrote it, or continued one spool
// began, in the same file format; the file store reads each entry after
// the one before it) is exported, imported into every store (twice: the
// second run finds it all there) and copied, each entry's parent said.
// Every store refused the second entry of one that left out every parent,
// so such a session could not be moved, and a migration stopped at it;
// one whose later entries left theirs out, the import took for two
// sessions under one key, and failed, and so did a copy.
func TestTransferFillsAParentLeftOut(t *testing.T) {
	for name, written := range map[string]string{
		"every parent left out": `{"id":"01JF00000000000000000000A1","timestamp":"2026-11-29T10:00:00.000Z","type":"user.message","turnId":"t1","data":{"text":"hi"}}
{"id":"01JF00000000000000000000A2","timestamp":"2026-11-29T10:00:01.000Z","type":"assistant.message","turnId":"t1","data":{"text":"hello"}}
{"id":"01JF00000000000000000000A3","timestamp":"2026-11-29T10:00:02.000Z","type":"assistant.turn_end","turnId":"t1","status":"ok","data":{}}
`,
		"later parents left out": `{"id":"01JF00000000000000000000B1","timestamp":"2026-11-29T10:00:00.000Z","type":"user.message","turnId":"t1","data":{"text":"hi"}}
{"id":"01JF00000000000000000000B2","parentId":"01JF00000000000000000000B1","timestamp":"2026-11-29T10:00:01.000Z","type":"assistant.turn_end","turnId":"t1","status":"ok","data":{}}
{"id":"01JF00000000000000000000B3","timestamp":"2026-11-29T10:01:00.000Z","type":"user.message","turnId":"t2","data":{"text":"and now?"}}
{"id":"01JF00000000000000000000B4","timestamp":"2026-11-29T10:01:01.000Z","type":"assistant.turn_end","turnId":"t2","status":"ok","data":{}}
`,
	} {
		t.Run(name, func(t *testing.T) { transfersWhole(t, written) })
	}
}

// transfersWhole writes a file store's transcript as given and checks
// that it exports, imports (twice) and copies into every store whole,
// each parent said.
func transfersWhole(t *testing.T, written string) {
	ctx := context.Background()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "support"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "support", "s1.jsonl"), []byte(written), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := filestore.New(ctx, root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Agent: "support", ID: "s1"}
	n := strings.Count(written, "\n")
	entries, err := src.Read(ctx, k)
	if err != nil || len(entries) != n {
		t.Fatalf("the file store reads %d entries, %v; want %d", len(entries), err, n)
	}
	want := slices.Clone(entries)
	for i := 1; i < len(want); i++ {
		want[i].ParentID = want[i-1].ID
	}
	var buf bytes.Buffer
	if _, err := transfer.Export(ctx, &buf, src, []store.Key{k}); err != nil {
		t.Fatal(err)
	}
	exported := buf.String()
	all := teststores.All()
	for _, to := range teststores.Names {
		t.Run(to, func(t *testing.T) {
			dst := all[to](t)
			if _, err := transfer.Import(ctx, dst, strings.NewReader(exported), nil); err != nil {
				t.Fatalf("import: %v", err)
			}
			st, err := transfer.Import(ctx, dst, strings.NewReader(exported), nil)
			if err != nil || st.Skipped != n || st.Entries != 0 {
				t.Fatalf("a second import: %+v %v, want all %d there", st, err, n)
			}
			check(t, dst, map[store.Key][]transcript.Entry{k: want})
			copied := all[to](t)
			if _, err := transfer.Copy(ctx, copied, src, nil, nil); err != nil {
				t.Fatalf("copy: %v", err)
			}
			check(t, copied, map[store.Key][]transcript.Entry{k: want})
		})
	}
}

// An import into a store with a TTL of sessions that are old: one idle
// longer than the TTL, and one that began longer ago than the TTL and was
// used an hour ago. SQLite and Postgres measure idleness from the newest
// entry's timestamp, so a session written a chunk at a time was expired
// after its first chunk, and the next chunk conflicted. Each session goes
// in one write; the import counts the one that arrives expired, and a
// re-run finds the other whole.
func TestImportIntoAStoreWithATTL(t *testing.T) {
	ctx := context.Background()
	for name, open := range map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlitestore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "spool.db")+"?ttl=720h")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) store.Store {
			s, err := pgstore.Open(ctx, teststores.PostgresURL(t)+"&ttl=720h")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"redis": func(t *testing.T) store.Store {
			s, err := redisstore.Open(ctx, teststores.RedisURL(t)+"&ttl=720h")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := teststores.All()["memory"](t)
			agent := teststores.Name("agent")
			long := time.Now().UTC().Truncate(time.Millisecond).Add(-60 * 24 * time.Hour)
			old, used := store.Key{Agent: agent, ID: "old"}, store.Key{Agent: agent, ID: "used"}
			oldEntries := storetest.Chain("", long, 20)
			usedEntries := storetest.Chain("", long, 15)
			usedEntries = append(usedEntries, storetest.Chain(storetest.Head(usedEntries), time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour), 6)...)
			for k, entries := range map[store.Key][]transcript.Entry{old: oldEntries, used: usedEntries} {
				for _, e := range entries {
					if err := src.Append(ctx, k, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			var buf bytes.Buffer
			if _, err := transfer.Export(ctx, &buf, src, []store.Key{old, used}); err != nil {
				t.Fatal(err)
			}
			dst := open(t)
			st, err := transfer.Import(ctx, dst, bytes.NewReader(buf.Bytes()), nil)
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if st.Sessions != 2 || st.Entries != 41 || st.Expired != 1 {
				t.Fatalf("import: %+v; want 2 sessions, 41 entries, 1 expired", st)
			}
			check(t, dst, map[store.Key][]transcript.Entry{used: usedEntries})
			st, err = transfer.Import(ctx, dst, bytes.NewReader(buf.Bytes()), nil)
			if err != nil {
				t.Fatalf("import again: %v", err)
			}
			if st.Skipped < len(usedEntries) {
				t.Fatalf("import again: %+v; want the %d entries of %s skipped", st, len(usedEntries), used)
			}
			check(t, dst, map[store.Key][]transcript.Entry{used: usedEntries})
			// The export twice in one input: the expired session's second
			// copy is written afresh, as a run again writes it.
			twice := open(t)
			if st, err = transfer.Import(ctx, twice, strings.NewReader(buf.String()+buf.String()), nil); err != nil {
				t.Fatalf("import of the export twice: %+v %v", st, err)
			}
			check(t, twice, map[store.Key][]transcript.Entry{used: usedEntries})
		})
	}
}

// TestImportOfASessionsLaterPartIsNotAnotherSession: an input whose lines
// of a session begin after its start (the second half of a split export,
// imported alone or before the first) fails with ErrConflict, the target
// left as it was, but does not say that the target holds another session
// under the key, nor that deleting it is a way out: the target holds this
// very session's beginning.
func TestImportOfASessionsLaterPartIsNotAnotherSession(t *testing.T) {
	ctx := context.Background()
	all := teststores.All()
	k := store.Key{Agent: teststores.Name("agent"), ID: "s"}
	x := storetest.Chain("", time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour), 6)
	lines := func(entries []transcript.Entry) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, e := range entries {
			if err := enc.Encode(transfer.Record{Agent: k.Agent, Owner: k.Owner, Session: k.ID, Entry: e}); err != nil {
				t.Fatal(err)
			}
		}
		return buf.String()
	}
	for _, to := range teststores.Names {
		t.Run(to, func(t *testing.T) {
			dst := all[to](t)
			if _, err := transfer.Import(ctx, dst, strings.NewReader(lines(x[:3])), nil); err != nil {
				t.Fatal(err)
			}
			for _, input := range []string{lines(x[3:]), lines(x[3:]) + lines(x[:3])} {
				_, err := transfer.Import(ctx, dst, strings.NewReader(input), nil)
				if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "line 1: session "+k.String()) {
					t.Fatalf("%v, want ErrConflict at line 1 naming %s", err, k)
				}
				if strings.Contains(err.Error(), "another session") || strings.Contains(err.Error(), "delete") {
					t.Fatalf("%v: the target holds this session's beginning, not another session", err)
				}
				check(t, dst, map[store.Key][]transcript.Entry{k: x[:3]})
			}
		})
	}
}
