package filestore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// indexLines counts the lines of the namespace's index file by their first
// byte.
func indexLines(t *testing.T, root string, ns store.Namespace) map[byte]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join((&Store{root: root}).namespaceDir(ns), indexName))
	if err != nil {
		t.Fatal(err)
	}
	n := map[byte]int{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) > 0 {
			n[line[0]]++
		}
	}
	return n
}

// TestDeferredRecords: the appends after the first of a burst write no
// index record, and every other Store (another process) still lists,
// stats and appends to the session as it is; the flush writes its record.
func TestDeferredRecords(t *testing.T) {
	defer func(idle time.Duration) { flushIdle = idle }(flushIdle)
	flushIdle = time.Hour // flushed by hand below
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	a, b := open(t, root), open(t, root)
	want := map[string][]transcript.Entry{"s": seed(t, a, ns.Key("s"), "", t0, 5)}
	if n := indexLines(t, root, ns); n['S'] != 1 || n['U'] != 1 {
		t.Fatalf("after a burst of 5 appends the index has %d records and %d U marks, want 1 and 1", n['S'], n['U'])
	}
	checkListing(t, b, ns, want)
	if info, err := b.Stat(t.Context(), ns.Key("s")); err != nil || info.Entries != 5 {
		t.Fatalf("Stat from another Store: %+v, %v", info, err)
	}
	// The other Store appends after the deferred ones, and the first after it.
	want["s"] = append(want["s"], seed(t, b, ns.Key("s"), storetest.Head(want["s"]), t0.Add(time.Hour), 2)...)
	want["s"] = append(want["s"], seed(t, a, ns.Key("s"), storetest.Head(want["s"]), t0.Add(2*time.Hour), 2)...)
	checkListing(t, a, ns, want)
	checkListing(t, b, ns, want)

	// Flushed: the record is in the file and the mark closed, so a new
	// Store reads no transcript to list.
	Flush(a)
	Flush(b)
	if n := indexLines(t, root, ns); n['V'] != n['U'] {
		t.Fatalf("after the flush: %d U marks, %d V", n['U'], n['V'])
	}
	c := open(t, root)
	ix, err := c.index(t.Context(), ns, false)
	if err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	if _, err := ix.loadLocked(nil); err != nil {
		t.Fatal(err)
	}
	got, unsure := ix.recs["s"], len(ix.unsure)
	ix.mu.Unlock()
	if got == nil || got.info.Entries != len(want["s"]) || unsure != 0 {
		t.Fatalf("the index file after the flush: %+v, %d open marks", got, unsure)
	}
	checkListing(t, c, ns, want)
}

// TestDeferredRecordsCrash: a process killed between its appends and their
// index records (the state a burst leaves until its flush) leaves an index
// whose next Store still lists every acknowledged entry, and appends
// continue from the true head.
func TestDeferredRecordsCrash(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	w := open(t, root)
	want := fill(t, w, ns, 4)
	want["s03"] = append(want["s03"], seed(t, w, ns.Key("s03"), storetest.Head(want["s03"]), t0.Add(time.Hour), 3)...)
	Die(w)
	s := open(t, root)
	checkListing(t, s, ns, want)
	want["s03"] = append(want["s03"], seed(t, s, ns.Key("s03"), storetest.Head(want["s03"]), t0.Add(2*time.Hour), 1)...)
	s.Close()
	checkListing(t, open(t, root), ns, want)
}

// TestDeferredRecordsClose: Close writes every deferred record, and the
// next Store proves the index current without comparing the folder.
func TestDeferredRecordsClose(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	w := open(t, root)
	want := fill(t, w, ns, 6)
	w.Close()
	compared := 0
	defer SetCompareHook(func(string) { compared++ })()
	checkListing(t, open(t, root), ns, want)
	if compared != 0 {
		t.Fatalf("compared the folder %d times after a clean close", compared)
	}
	if n := indexLines(t, root, ns); n['U'] != n['V'] {
		t.Fatalf("%d U marks, %d V", n['U'], n['V'])
	}
}

// TestDeferredRecordsRewrite: a rewrite of the index, by another Store,
// keeps a live writer's open marks, so its later deferred appends are
// still seen.
func TestDeferredRecordsRewrite(t *testing.T) {
	defer func(idle time.Duration) { flushIdle = idle }(flushIdle)
	flushIdle = time.Hour
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	a, b := open(t, root), open(t, root)
	want := map[string][]transcript.Entry{"s": seed(t, a, ns.Key("s"), "", t0, 2)}
	checkListing(t, b, ns, want)
	bix, err := b.index(t.Context(), ns, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := bix.rewrite(); err != nil {
		t.Fatal(err)
	}
	want["s"] = append(want["s"], seed(t, a, ns.Key("s"), storetest.Head(want["s"]), t0.Add(time.Hour), 3)...)
	checkListing(t, b, ns, want)
	checkListing(t, open(t, root), ns, want)
}

// TestUnsureMarkIDStaysInFolder: a U mark's id is checked as a record's
// is: one naming a path outside the namespace's folder (an index written
// by hand) is not listed, and the file it names is not read or repaired.
func TestUnsureMarkIDStaysInFolder(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	s := open(t, root)
	seed(t, s, ns.Key("s"), "", t0, 1)
	s.Close()

	outside := filepath.Join(root, "outside.jsonl") // <root>/a/../outside.jsonl
	data := append(lines(t, storetest.Chain("", t0, 1)...), "precious, no newline"...)
	writeRaw(t, outside, data, 0)
	writeRaw(t, filepath.Join(root, "a", indexName), appendMark(nil, 'U', unsureBody("feedface", "../outside")), os.O_APPEND)

	for _, info := range listAll(t, open(t, root), ns) {
		if !store.ValidID(info.ID) {
			t.Errorf("List shows a session with id %q", info.ID)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != string(data) {
		t.Errorf("a file outside the namespace's folder was changed:\n%q\nnow\n%q", data, got)
	}
}
