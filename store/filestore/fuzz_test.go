package filestore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

var fuzzKey = store.Key{Agent: "a", ID: "s"}

// fuzzLines is three valid lines of a session.
func fuzzLines(t testing.TB) ([]transcript.Entry, []byte) {
	entries := storetest.Chain("", t0, 3)
	return entries, lines(t, entries...)
}

// readAll runs every read a session file can meet and reports the error of
// Read; none may panic, and an error must be one a caller can test.
func readAll(t *testing.T, root string) ([]transcript.Entry, error) {
	s, err := New(t.Context(), root, WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entries, err := s.Read(t.Context(), fuzzKey)
	if err != nil && !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, ErrEncrypted) {
		t.Fatalf("Read: %v is neither corruption nor ErrEncrypted", err)
	}
	s.ReadTail(t.Context(), fuzzKey, 2)
	s.ReadRange(t.Context(), fuzzKey, 1, 3)
	s.Stat(t.Context(), fuzzKey)
	s.List(t.Context(), fuzzKey.Namespace(), store.ListOptions{})
	return entries, err
}

// sameRead checks that Read of the session gives the same result read
// whole (readWhole, what a short transcript gets) and streamed line by
// line: the same entries, or the same first failure.
func sameRead(t *testing.T, root string) {
	t.Helper()
	s, err := New(t.Context(), root, WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	whole, errW := s.Read(t.Context(), fuzzKey)
	defer func(w int64) { wholeRead = w }(wholeRead)
	wholeRead = -1
	streamed, errS := s.Read(t.Context(), fuzzKey)
	var cw, cs *store.CorruptError
	switch {
	case errW == nil && errS == nil:
		sameEntries(t, whole, streamed)
	case errors.As(errW, &cw) && errors.As(errS, &cs):
		if cw.Position != cs.Position || cw.Where != cs.Where {
			t.Fatalf("read whole: %v; streamed: %v", errW, errS)
		}
	case errors.Is(errW, ErrEncrypted) && errors.Is(errS, ErrEncrypted):
	default:
		t.Fatalf("read whole: %v; streamed: %v", errW, errS)
	}
}

// FuzzReadFile reads a transcript file of arbitrary bytes: no read panics,
// each returns entries or an error matching store.ErrCorrupt (or
// ErrEncrypted for what looks sealed), and a file that read cleanly keeps
// reading the same.
func FuzzReadFile(f *testing.F) {
	_, valid := fuzzLines(f)
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add(append(bytes.Clone(valid), "garbage\n"...))
	f.Add([]byte("\n\n  \n"))
	f.Add([]byte("!AAAA\n"))
	f.Add([]byte("{\"id\":\"x\"}\n\x00\xff\n"))
	f.Add(append([]byte("{}\n"), valid...))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		writeRaw(t, filepath.Join(root, "a", "s.jsonl"), data, os.O_TRUNC)
		first, err := readAll(t, root)
		sameRead(t, root) // the first read set any torn tail aside
		if err != nil {
			return
		}
		again, err := readAll(t, root)
		if err != nil {
			t.Fatalf("a file that read cleanly fails the second time: %v", err)
		}
		sameEntries(t, again, first)
	})
}

// FuzzReadTornTail appends an arbitrary tail without a newline (a write
// cut short) to n complete lines: every complete line is read back, the
// tail is set aside or, when it is a whole entry, kept, and the session
// continues.
func FuzzReadTornTail(f *testing.F) {
	_, valid := fuzzLines(f)
	f.Add(uint8(3), []byte(`{"id":"01J`))
	f.Add(uint8(2), valid[bytes.IndexByte(valid, '\n')+1:len(valid)-1])
	f.Add(uint8(1), []byte("\xff\x00garbage"))
	f.Add(uint8(0), []byte("!AAAA"))
	f.Add(uint8(3), []byte("   "))
	f.Fuzz(func(t *testing.T, n uint8, tail []byte) {
		entries, _ := fuzzLines(t)
		want := entries[:int(n)%(len(entries)+1)]
		tail = bytes.ReplaceAll(tail, []byte("\n"), nil)
		if len(tail) == 0 {
			return
		}
		root := t.TempDir()
		path := filepath.Join(root, "a", "s.jsonl")
		writeRaw(t, path, append(lines(t, want...), tail...), os.O_TRUNC)
		got, err := readAll(t, root)
		whole, perr := transcript.Parse(bytes.TrimRight(tail, " \t\r"))
		switch {
		case err == nil:
		case perr == nil:
			// The tail got its newline and is read as what it is: another
			// program's entry, corrupt or not.
			return
		default:
			t.Fatalf("complete lines before a torn tail do not read: %v", err)
		}
		if len(got) < len(want) {
			t.Fatalf("%d entries read, want the %d complete lines", len(got), len(want))
		}
		sameEntries(t, got[:len(want)], want)
		switch extra := len(got) - len(want); {
		case extra == 1 && perr == nil && got[len(want)].Equal(whole):
		case extra != 0:
			t.Fatalf("%d entries beyond the complete lines", extra)
		default:
			if blank(tail) {
				return
			}
			torn, err := os.ReadFile(filepath.Join(root, "a", "s.jsonl.torn"))
			if err != nil || !bytes.Contains(torn, tail) {
				t.Fatalf("the torn tail was not set aside: %v", err)
			}
		}
		// The session continues after its complete lines.
		s := open(t, root)
		seed(t, s, fuzzKey, storetest.Head(got), t0.Add(1e9), 1)
	})
}
