//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// TestKeptTranscripts: appends keep the session's transcript open for the
// next append, which sees what others did meanwhile: another Store's
// delete (the kept file has no name left), another program's file renamed
// over it, and this Store's own delete, which closes the file. Idle files
// and Close close them all, and at most maxHandles stay open.
func TestKeptTranscripts(t *testing.T) {
	root := t.TempDir()
	a, b := open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	path := filepath.Join(root, "a", "s.jsonl")
	first := seed(t, a, key, "", t0, 3)
	if n := a.handles.len(); n != 1 {
		t.Fatalf("%d files kept after appends, want 1", n)
	}

	// Another Store deletes the session while a keeps its file: a's next
	// append must not land in the deleted file.
	if err := b.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(t.Context(), key, storetest.Chain(first[2].ID, t0.Add(time.Hour), 1)[0]); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("append after another Store's delete: %v, want ErrConflict", err)
	}
	again := seed(t, a, key, "", t0.Add(2*time.Hour), 2)
	sameEntries(t, read(t, b, key), again)

	// Another program renames a transcript of its own over the kept one.
	other := storetest.Chain("", t0.Add(3*time.Hour), 2)
	tmp := path + ".new"
	writeRaw(t, tmp, lines(t, other...), os.O_EXCL)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	more := seed(t, a, key, other[1].ID, t0.Add(4*time.Hour), 1)
	sameEntries(t, read(t, b, key), append(other, more...))

	// This Store's delete closes the kept file.
	if err := a.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if n := a.handles.len(); n != 0 {
		t.Fatalf("%d files kept after Delete, want 0", n)
	}

	// A bound, an idle limit, and Close.
	defer func(d time.Duration) { handleIdle = d }(handleIdle)
	handleIdle = 50 * time.Millisecond
	for i := range maxHandles + 5 {
		seed(t, a, store.Key{Agent: "a", ID: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26))}, "", t0, 1)
	}
	if n := a.handles.len(); n != maxHandles {
		t.Fatalf("%d files kept, want the bound %d", n, maxHandles)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.handles.len() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := a.handles.len(); n != 0 {
		t.Fatalf("%d files still kept after %v idle", n, handleIdle)
	}
	if n := liveSessions(a); n != 0 {
		t.Fatalf("%d sessions remembered after their files closed", n)
	}
	seed(t, a, store.Key{Agent: "a", ID: "last"}, "", t0, 1)
	a.Close()
	if n := a.handles.len(); n != 0 {
		t.Fatalf("%d files kept after Close", n)
	}
}

// liveSessions counts the sessions s remembers (sessions.go), over all
// its indexes.
func liveSessions(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ix := range s.indexes {
		ix.mu.Lock()
		n += len(ix.sessions)
		ix.mu.Unlock()
	}
	return n
}

// len reports how many files are kept. It lives here, beside the only
// code that calls it, so that it is unused on no platform.
func (h *handles) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.kept)
}
