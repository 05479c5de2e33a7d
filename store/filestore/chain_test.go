package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// rewrite replaces the transcript of key with entries, as another program
// editing the file would.
func rewrite(t *testing.T, root string, key store.Key, entries ...transcript.Entry) {
	t.Helper()
	writeRaw(t, filepath.Join(root, key.Agent, key.ID+".jsonl"), lines(t, entries...), os.O_TRUNC)
}

// wantBroken checks that err is a *store.CorruptError at position pos
// naming the transcript.
func wantBroken(t *testing.T, what string, err error, pos int) {
	t.Helper()
	var ce *store.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("%s: %v, want a *store.CorruptError", what, err)
	}
	if ce.Position != pos || !strings.Contains(ce.Where, "s.jsonl") {
		t.Fatalf("%s: %v, want position %d in s.jsonl", what, err, pos)
	}
}

func TestReadChecksTheChain(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	all := seed(t, s, key, "", t0, 6)

	// The third line removed: the fourth entry names a parent that is not
	// the entry before it.
	gap := append(append([]transcript.Entry{}, all[:2]...), all[3:]...)
	rewrite(t, root, key, gap...)
	_, err := s.Read(t.Context(), key)
	wantBroken(t, "Read without the third line", err, 2)
	if !strings.HasSuffix(err.(*store.CorruptError).Where, "s.jsonl:3") {
		t.Fatalf("Read: %v, want the file's line 3", err)
	}
	_, _, err = s.ReadRange(t.Context(), key, 1, 4)
	wantBroken(t, "ReadRange across the gap", err, 2)
	_, _, err = s.ReadTail(t.Context(), key, 4)
	wantBroken(t, "ReadTail across the gap", err, 2)
	// A range or tail that starts after the gap does not know the entry
	// before it, and what it holds is one chain.
	got, total, err := s.ReadRange(t.Context(), key, 2, 5)
	if err != nil || total != 5 {
		t.Fatalf("ReadRange after the gap: %v, total %d", err, total)
	}
	sameEntries(t, got, all[3:])
	got, _, err = s.ReadTail(t.Context(), key, 3)
	if err != nil {
		t.Fatalf("ReadTail after the gap: %v", err)
	}
	sameEntries(t, got, all[3:])

	// Two lines swapped.
	swapped := append([]transcript.Entry{}, all...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	rewrite(t, root, key, swapped...)
	_, err = s.Read(t.Context(), key)
	wantBroken(t, "Read with lines swapped", err, 3)

	// The first line removed: the transcript starts with a parent.
	rewrite(t, root, key, all[1:]...)
	_, err = s.Read(t.Context(), key)
	wantBroken(t, "Read without the first line", err, 0)
	_, _, err = s.ReadTail(t.Context(), key, 10)
	wantBroken(t, "ReadTail of the whole transcript without its first line", err, 0)
	_, _, err = s.ReadRange(t.Context(), key, 0, 2)
	wantBroken(t, "ReadRange from 0 without the first line", err, 0)

	// Another program that leaves parentId out is not corrupt.
	loose := append([]transcript.Entry{}, all...)
	for i := range loose {
		loose[i].ParentID = ""
	}
	rewrite(t, root, key, loose...)
	sameEntries(t, read(t, s, key), loose)
	if got, _, err := s.ReadTail(t.Context(), key, 6); err != nil || len(got) != 6 {
		t.Fatalf("ReadTail of a transcript without parents: %d entries, %v", len(got), err)
	}

	// Whole again: it reads, and appends go on.
	rewrite(t, root, key, all...)
	sameEntries(t, read(t, s, key), all)
	more := seed(t, s, key, all[5].ID, t0.Add(1e9), 1)
	sameEntries(t, read(t, s, key), append(all, more...))
}
