package filestore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func TestTornLastLineIsSetAside(t *testing.T) {
	root := t.TempDir()
	key := store.Key{Agent: "a", ID: "s"}
	want := seed(t, open(t, root), key, "", t0, 3)

	// A crash half way through writing the fourth line.
	path := filepath.Join(root, "a", "s.jsonl")
	fourth := storetest.Chain(want[2].ID, t0.Add(10*time.Second), 1)[0]
	line := lines(t, fourth)
	half := line[:len(line)/2]
	writeRaw(t, path, half, os.O_APPEND)

	s := open(t, root) // a new process
	sameEntries(t, read(t, s, key), want)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, lines(t, want...)) {
		t.Fatalf("transcript not cut back to its last complete line:\n%s", b)
	}
	torn, err := os.ReadFile(filepath.Join(root, "a", "s.jsonl.torn"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(torn, append(bytes.Clone(half), '\n')) {
		t.Fatalf("torn bytes set aside: %q, want %q", torn, half)
	}

	// The session continues from its last complete entry.
	more := seed(t, s, key, want[2].ID, t0.Add(10*time.Second), 2)
	sameEntries(t, read(t, s, key), append(want, more...))
	info, err := s.Stat(t.Context(), key)
	if err != nil || info.Entries != 5 {
		t.Fatalf("Stat: %+v, %v", info, err)
	}

	// A second crash: the side file keeps both fragments.
	writeRaw(t, path, []byte(`{"id":"second`), os.O_APPEND)
	sameEntries(t, read(t, open(t, root), key), append(want, more...))
	torn, _ = os.ReadFile(filepath.Join(root, "a", "s.jsonl.torn"))
	if got := strings.Split(strings.TrimSuffix(string(torn), "\n"), "\n"); len(got) != 2 || got[1] != `{"id":"second` {
		t.Fatalf("side file after two crashes: %q", torn)
	}
}

func TestTornLineFoundByAppend(t *testing.T) {
	root := t.TempDir()
	key := store.Key{Agent: "a", ID: "s"}
	s := open(t, root)
	want := seed(t, s, key, "", t0, 2)
	writeRaw(t, filepath.Join(root, "a", "s.jsonl"), []byte(`{"id":"x","par`), os.O_APPEND)
	// The same, warm store: its index says the file is shorter.
	more := seed(t, s, key, want[1].ID, t0.Add(10*time.Second), 1)
	sameEntries(t, read(t, s, key), append(want, more...))
}

func TestLastLineWithoutNewlineIsKept(t *testing.T) {
	// Another program's file whose last line lacks its newline.
	root := t.TempDir()
	entries := storetest.Chain("", t0, 3)
	b := lines(t, entries...)
	writeRaw(t, filepath.Join(root, "a", "s.jsonl"), b[:len(b)-1], 0)
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	sameEntries(t, read(t, s, key), entries)
	more := seed(t, s, key, entries[2].ID, t0.Add(10*time.Second), 1)
	sameEntries(t, read(t, s, key), append(entries, more...))
	if _, err := os.Stat(filepath.Join(root, "a", "s.jsonl.torn")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a whole entry was set aside: %v", err)
	}
}

func TestCorruptLineFailsRead(t *testing.T) {
	for name, bad := range map[string]string{
		"garbage":           "not json at all",
		"json, not entry":   `{"hello":"world"}`,
		"bad timestamp":     `{"id":"x","timestamp":"soon","type":"user.message","turnId":"t","data":{}}`,
		"data not object":   `{"id":"x","timestamp":"2026-11-29T10:00:00Z","type":"user.message","turnId":"t","data":[1]}`,
		"truncated, inside": `{"id":"x","timestamp":"2026-11-`,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			entries := storetest.Chain("", t0, 3)
			var b []byte
			b = append(b, lines(t, entries[0])...)
			b = append(b, "\n"...) // a blank line: no entry, but a line
			b = append(b, bad+"\n"...)
			b = append(b, lines(t, entries[1:]...)...)
			path := filepath.Join(root, "a", "bad.jsonl")
			writeRaw(t, path, b, 0)
			good := store.Key{Agent: "a", ID: "good"}
			s := open(t, root)
			want := seed(t, s, good, "", t0, 2)

			_, err := s.Read(t.Context(), store.Key{Agent: "a", ID: "bad"})
			var ce *store.CorruptError
			if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("Read: %v, want a *store.CorruptError", err)
			}
			if ce.Where != path+":3" || ce.Position != 1 || ce.Key.ID != "bad" {
				t.Fatalf("CorruptError %+v, want %s:3 at entry 1", ce, path)
			}
			// The rest of the store works.
			sameEntries(t, read(t, s, good), want)
			all := listAll(t, s, store.Namespace{Agent: "a"})
			if len(all) != 2 {
				t.Fatalf("List: %d sessions, want both", len(all))
			}
			// Appending after it is fine (its last line is whole); reading still fails.
			if err := s.Append(t.Context(), store.Key{Agent: "a", ID: "bad"}, storetest.Chain(entries[2].ID, t0.Add(10*time.Second), 1)[0]); err != nil {
				t.Fatalf("Append after a corrupt middle line: %v", err)
			}
			if _, err := s.Read(t.Context(), store.Key{Agent: "a", ID: "bad"}); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Read after append: %v", err)
			}
		})
	}
}

func TestCorruptLastLineStopsAppend(t *testing.T) {
	root := t.TempDir()
	entries := storetest.Chain("", t0, 2)
	b := append(lines(t, entries...), "garbage\n"...)
	writeRaw(t, filepath.Join(root, "a", "s.jsonl"), b, 0)
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	for _, parent := range []string{entries[1].ID, ""} {
		e := storetest.NewEntry(parent, t0.Add(10*time.Second), transcript.TypeUserMessage, nil)
		if err := s.Append(t.Context(), key, e); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Append(parent %q) after a corrupt last line: %v, want ErrCorrupt", parent, err)
		}
	}
	if _, _, err := s.ReadTail(t.Context(), key, 1); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("ReadTail: %v, want ErrCorrupt", err)
	}
}

func TestLineReaderSkipsLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	content := "short\n" + strings.Repeat("x", 300<<10) + "\nafter\n"
	writeRaw(t, path, []byte(content), 0)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := newLineReader(f, 0, int64(len(content)))
	lr.max = 200 << 10
	var got []string
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errLongLine) {
			got = append(got, "LONG")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	if strings.Join(got, ",") != "short,LONG,after" || lr.no != 3 {
		t.Fatalf("lines %v, line number %d", got, lr.no)
	}
}
