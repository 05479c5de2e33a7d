package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// checkListing fails unless namespace lists exactly the sessions of want, each
// with the info storekit.Info computes from its transcript.
func checkListing(t *testing.T, s *Store, ns store.Namespace, want map[string][]transcript.Entry) {
	t.Helper()
	got := listAll(t, s, ns)
	if len(got) != len(want) {
		t.Fatalf("List: %d sessions, want %d", len(got), len(want))
	}
	for i, info := range got {
		if i > 0 && storekit.Less(info, got[i-1]) {
			t.Fatalf("List out of order at %d", i)
		}
		entries, ok := want[info.ID]
		if !ok {
			t.Fatalf("List shows unknown session %s", info.ID)
		}
		if w := storekit.Info(ns.Key(info.ID), entries); info != w {
			t.Fatalf("List info of %s:\n got %+v\nwant %+v", info.ID, info, w)
		}
	}
}

func fill(t *testing.T, s *Store, ns store.Namespace, n int) map[string][]transcript.Entry {
	want := map[string][]transcript.Entry{}
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		want[id] = seed(t, s, ns.Key(id), "", t0.Add(time.Duration(i)*time.Minute), 1+i%5)
	}
	return want
}

func TestIndexRebuiltWhenDeleted(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	s := open(t, root)
	want := fill(t, s, ns, 12)
	if err := os.Remove(filepath.Join(root, "a", indexName)); err != nil {
		t.Fatal(err)
	}
	checkListing(t, open(t, root), ns, want) // a new process
	checkListing(t, s, ns, want)             // the one that had it in memory
	if _, err := os.Stat(filepath.Join(root, "a", indexName)); err != nil {
		t.Fatalf("index not written again: %v", err)
	}
	// And a damaged one.
	writeRaw(t, filepath.Join(root, "a", indexName), []byte("spool-index\t2\tplain\nS\tdeadbeef\tgarbage\n"), os.O_TRUNC)
	checkListing(t, open(t, root), ns, want)
}

func TestTranscriptAddedByHand(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	s := open(t, root)
	want := fill(t, s, ns, 3)
	checkListing(t, s, ns, want)
	time.Sleep(10 * time.Millisecond) // let the folder's mtime move on coarse clocks

	// Another program writes a transcript.
	hand := storetest.Chain("", t0.Add(time.Hour), 4)
	writeRaw(t, filepath.Join(root, "a", "byhand.jsonl"), lines(t, hand...), 0)
	want["byhand"] = hand
	checkListing(t, s, ns, want)
	checkListing(t, open(t, root), ns, want)
	sameEntries(t, read(t, s, ns.Key("byhand")), hand)

	// And removes one.
	time.Sleep(10 * time.Millisecond)
	os.Remove(filepath.Join(root, "a", "s00.jsonl"))
	delete(want, "s00")
	checkListing(t, s, ns, want)
	checkListing(t, open(t, root), ns, want)

	// Writes another, and then, before anyone lists, the Store makes a
	// transcript itself: the Store records the folder's mtime after its
	// own change only when its change was the only one, so it compares
	// the folder instead, and so does a cold Store after it closed.
	time.Sleep(10 * time.Millisecond)
	more := storetest.Chain("", t0.Add(2*time.Hour), 2)
	writeRaw(t, filepath.Join(root, "a", "more.jsonl"), lines(t, more...), 0)
	want["more"] = more
	time.Sleep(10 * time.Millisecond)
	want["new"] = seed(t, s, ns.Key("new"), "", t0.Add(3*time.Hour), 1)
	checkListing(t, s, ns, want)
	s.Close()
	checkListing(t, open(t, root), ns, want)
}

func TestStaleIndexAfterCrash(t *testing.T) {
	// An append whose index record never made it (killed between the two,
	// or power lost before the record reached the disk).
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	first := open(t, root)
	want := fill(t, first, ns, 4)
	Die(first) // killed: its lock goes, nothing more is written
	more := storetest.Chain(storetest.Head(want["s01"]), t0.Add(time.Hour), 3)
	writeRaw(t, filepath.Join(root, "a", "s01.jsonl"), lines(t, more...), os.O_APPEND)
	want["s01"] = append(want["s01"], more...)
	s := open(t, root)
	checkListing(t, s, ns, want)
	// Appends continue from the true head.
	seed(t, s, ns.Key("s01"), storetest.Head(want["s01"]), t0.Add(2*time.Hour), 1)
}

func TestListReadsNoTranscript(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	w := open(t, root)
	want := fill(t, w, ns, 5)
	w.Close() // its deferred records written (a live writer's are read)
	// Garble every transcript but keep its size and mtime: a listing that
	// read them would show garbage or fail.
	files, _ := filepath.Glob(filepath.Join(root, "a", "*.jsonl"))
	for _, f := range files {
		st, _ := os.Stat(f)
		writeRaw(t, f, bytes.Repeat([]byte("#"), int(st.Size())), 0)
		os.Chtimes(f, st.ModTime(), st.ModTime())
	}
	checkListing(t, open(t, root), ns, want)
}

func TestOtherProcessSeen(t *testing.T) {
	// Two Stores on one root know nothing of each other but the files, as
	// two processes would.
	root := t.TempDir()
	ns := store.Namespace{Agent: "a", Owner: "u"}
	a, b := open(t, root), open(t, root)
	want := fill(t, a, ns, 3)
	checkListing(t, b, ns, want)
	more := seed(t, b, ns.Key("s01"), storetest.Head(want["s01"]), t0.Add(time.Hour), 2)
	want["s01"] = append(want["s01"], more...)
	checkListing(t, a, ns, want)
	if err := a.Delete(t.Context(), ns.Key("s02")); err != nil {
		t.Fatal(err)
	}
	delete(want, "s02")
	checkListing(t, b, ns, want)
	info, err := b.Stat(t.Context(), ns.Key("s01"))
	if err != nil || info.Entries != len(want["s01"]) {
		t.Fatalf("Stat: %+v %v", info, err)
	}
}

// TestAppendAfterOtherStores: a Store whose appends to a session are a
// burst (its transcript kept open, its record without a record on disk)
// sees another Store's appends to the session before its next one, and
// checks the parent against them.
func TestAppendAfterOtherStores(t *testing.T) {
	root := t.TempDir()
	key := store.Key{Agent: "a", ID: "s"}
	a, b := open(t, root), open(t, root)
	mine := seed(t, a, key, "", t0, 3)
	theirs := seed(t, b, key, mine[2].ID, t0.Add(time.Hour), 2)
	stale := storetest.Chain(mine[2].ID, t0.Add(2*time.Hour), 1)[0]
	if err := a.Append(t.Context(), key, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("append after the other Store's, on the old head: %v, want ErrConflict", err)
	}
	more := seed(t, a, key, theirs[1].ID, t0.Add(3*time.Hour), 2)
	want := append(append(mine, theirs...), more...)
	sameEntries(t, read(t, b, key), want)
	info, err := a.Stat(t.Context(), key)
	if err != nil || info.Entries != len(want) || !info.LastActivity.Equal(want[len(want)-1].Timestamp) {
		t.Fatalf("Stat: %+v %v", info, err)
	}
}

func TestIndexCompaction(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	a, b := open(t, root), open(t, root)
	want := fill(t, a, ns, 2)
	checkListing(t, b, ns, want)
	// Enough appends to make the index rewrite itself more than once.
	for i := range 3000 {
		id := []string{"s00", "s01"}[i%2]
		e := storetest.Chain(storetest.Head(want[id]), t0.Add(time.Hour+time.Duration(i)*time.Millisecond), 1)
		s := []*Store{a, b}[i/500%2]
		if err := s.Append(t.Context(), ns.Key(id), e[0]); err != nil {
			t.Fatal(err)
		}
		want[id] = append(want[id], e...)
		if i%100 == 0 {
			checkListing(t, s, ns, want)
		}
	}
	checkListing(t, a, ns, want)
	checkListing(t, b, ns, want)
	checkListing(t, open(t, root), ns, want)
	st, err := os.Stat(filepath.Join(root, "a", indexName))
	if err != nil || st.Size() > 300_000 {
		t.Fatalf("index not compacted: %v, %d bytes", err, st.Size())
	}
}

func TestReplacedFileSameSizeAndMtime(t *testing.T) {
	// Another program replaces a transcript with one of the same size and
	// gives it the old mtime (or the clock is too coarse to tell): the
	// store still notices, by the file's identity.
	root := t.TempDir()
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	seed(t, s, key, "", t0, 2)
	path := filepath.Join(root, "a", "s.jsonl")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fileID(st) == 0 {
		t.Skip("no file ids on this platform")
	}
	replacement := storetest.Chain("", t0, 2)
	b := lines(t, replacement...)
	if int64(len(b)) != st.Size() {
		t.Fatalf("replacement is %d bytes, want %d", len(b), st.Size())
	}
	writeRaw(t, path+".new", b, 0)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	next := storetest.Chain(storetest.Head(replacement), t0.Add(time.Hour), 1)
	if err := s.Append(t.Context(), key, next[0]); err != nil {
		t.Fatalf("Append after the head of the replaced file: %v", err)
	}
	sameEntries(t, read(t, s, key), append(replacement, next...))
}

func TestManyNamespaces(t *testing.T) {
	// More user namespaces than a Store keeps in memory: evicted ones come
	// back from disk, and file descriptors stay bounded.
	root := t.TempDir()
	s := open(t, root)
	n := maxIndexes + 64
	for i := range n {
		seed(t, s, store.Key{Agent: "a", Owner: fmt.Sprintf("u%03d", i), ID: "s"}, "", t0, 1)
	}
	if len(s.indexes) > maxIndexes {
		t.Fatalf("%d namespaces in memory, at most %d", len(s.indexes), maxIndexes)
	}
	// A namespace with deferred records is kept until they are written
	// (pending.go), which a loaded machine can put off; write them now so
	// that the bound below is the Store's, not the scheduler's.
	Flush(s)
	for i := range n {
		ns := store.Namespace{Agent: "a", Owner: fmt.Sprintf("u%03d", i)}
		if got := listAll(t, s, ns); len(got) != 1 || got[0].Entries != 1 {
			t.Fatalf("namespace %s lists %+v", ns, got)
		}
		// The namespace just used stays and the least recently used goes
		// (the one being loaded was evicted, so every namespace past the
		// bound was read from disk again at each use).
		s.mu.Lock()
		_, kept := s.indexes[ns]
		count := len(s.indexes)
		s.mu.Unlock()
		if !kept || count > maxIndexes {
			t.Fatalf("after listing %s: in memory %v, %d namespaces (at most %d)", ns, kept, count, maxIndexes)
		}
	}
	// The Store's files only: the process also holds the test runner's, and
	// those of the stores that earlier tests left open.
	if fds, err := openUnder(root); err == nil {
		// An index file per namespace kept, a transcript per kept handle,
		// the writer mark, and a few in passing (an evicted index, a
		// background flush); one per namespace would be 64 more.
		if limit := maxIndexes + maxHandles + 8; fds > limit {
			t.Fatalf("%d open file descriptors under the root, at most %d", fds, limit)
		}
	}
}

// openUnder counts the file descriptors of this process open on files
// under root (Linux; an error elsewhere).
func openUnder(root string) (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, root+string(os.PathSeparator)) {
			n++
		}
	}
	return n, nil
}

// TestColdListProvesTheIndex: a Store opening a namespace compares its
// folder with the index session by session only when the index cannot be
// proved current: after a writer closed cleanly, or while one is alive,
// it does not; after a writer died, it does (and finds its lost record),
// once, and closes the dead writer's mark.
func TestColdListProvesTheIndex(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	compared := 0
	defer SetCompareHook(func(string) { compared++ })()
	coldList := func(want map[string][]transcript.Entry) int {
		t.Helper()
		before := compared
		s, err := New(t.Context(), root, WithRetention(store.Retention{}))
		if err != nil {
			t.Fatal(err)
		}
		checkListing(t, s, ns, want)
		s.Close()
		return compared - before
	}

	w := open(t, root)
	want := fill(t, w, ns, 5)
	if n := coldList(want); n != 0 {
		t.Errorf("a live writer's index: compared %d times, want 0", n)
	}
	w.Close()
	if n := coldList(want); n != 0 {
		t.Errorf("after a clean close: compared %d times, want 0", n)
	}

	w = open(t, root)
	want["s02"] = append(want["s02"], seed(t, w, ns.Key("s02"), storetest.Head(want["s02"]), t0.Add(time.Hour), 1)...)
	Die(w)
	// Killed between an append and its record: the line is there, the
	// record is not.
	more := storetest.Chain(storetest.Head(want["s02"]), t0.Add(2*time.Hour), 2)
	writeRaw(t, filepath.Join(root, "a", "s02.jsonl"), lines(t, more...), os.O_APPEND)
	want["s02"] = append(want["s02"], more...)
	if n := coldList(want); n != 1 {
		t.Errorf("after a writer died: compared %d times, want 1", n)
	}
	if n := coldList(want); n != 0 {
		t.Errorf("once the dead writer's changes were found: compared %d times, want 0", n)
	}
	if marks, _ := filepath.Glob(filepath.Join(root, writerPrefix+"*")); len(marks) != 0 {
		t.Errorf("writer lock files left: %v", marks)
	}

	// Another program adds a transcript: the folder changed without a
	// mark saying so.
	time.Sleep(10 * time.Millisecond)
	hand := storetest.Chain("", t0.Add(3*time.Hour), 2)
	writeRaw(t, filepath.Join(root, "a", "byhand.jsonl"), lines(t, hand...), 0)
	want["byhand"] = hand
	if n := coldList(want); n != 1 {
		t.Errorf("after a transcript was added by hand: compared %d times, want 1", n)
	}
}

// TestRewriteOutsideTheLock: while a rewrite writes and syncs the new
// index file, List and Stat answer and appends go on, and what was
// appended meanwhile is in the new file, for another process to read.
func TestRewriteOutsideTheLock(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	s := open(t, root)
	want := fill(t, s, ns, 3)
	ix, err := s.index(t.Context(), ns, false)
	if err != nil || ix == nil {
		t.Fatalf("index: %v %v", ix, err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	rewriteHook = func() { close(inside); <-release }
	defer func() { rewriteHook = nil }()
	done := make(chan error, 1)
	go func() { done <- ix.rewrite() }()
	<-inside

	// The rewrite is between its snapshot and its rename: the store still
	// answers, and takes appends.
	answered := make(chan error, 1)
	go func() {
		if _, err := s.Stat(t.Context(), ns.Key("s00")); err != nil {
			answered <- err
			return
		}
		want["new"] = seed(t, s, ns.Key("new"), "", t0.Add(time.Hour), 2)
		e := storetest.Chain(storetest.Head(want["s01"]), t0.Add(2*time.Hour), 1)
		if err := s.Append(t.Context(), ns.Key("s01"), e[0]); err != nil {
			answered <- err
			return
		}
		want["s01"] = append(want["s01"], e...)
		_, err := s.List(t.Context(), ns, store.ListOptions{})
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("during the rewrite: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stat, Append and List waited for the rewrite")
	}
	checkListing(t, s, ns, want)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	checkListing(t, s, ns, want)
	// A new process reads the new file alone: the appends made during the
	// rewrite are in it, so no validation is needed to see them (once the
	// writer's deferred records are written, pending.go).
	Flush(s)
	b := open(t, root)
	bix, err := b.index(t.Context(), ns, false)
	if err != nil || bix == nil {
		t.Fatalf("index: %v %v", bix, err)
	}
	bix.mu.Lock()
	ok, err := bix.loadLocked(nil)
	got := map[string]int{}
	for id, r := range bix.recs {
		got[id] = r.info.Entries
	}
	bix.mu.Unlock()
	if !ok || err != nil {
		t.Fatalf("the new index does not load: %v %v", ok, err)
	}
	for id, entries := range want {
		if got[id] != len(entries) {
			t.Errorf("the rewritten index has %s with %d entries, want %d", id, got[id], len(entries))
		}
	}
	checkListing(t, b, ns, want)
}

// TestWriterMarkWithoutIndex: a Store whose first write to a namespace
// finds no index file cannot write its W mark, and does not take the
// namespace as marked: once another Store builds the index, the writer's
// next change writes its mark there, and its death is seen.
func TestWriterMarkWithoutIndex(t *testing.T) {
	defer func(idle time.Duration) { flushIdle = idle }(flushIdle)
	flushIdle = time.Hour
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	// A transcript another program wrote: a folder without an index.
	first := storetest.Chain("", t0, 1)
	writeRaw(t, filepath.Join(root, "a", "s.jsonl"), lines(t, first...), 0)
	want := map[string][]transcript.Entry{"s": first}

	a := open(t, root)
	want["s"] = append(want["s"], seed(t, a, ns.Key("s"), storetest.Head(want["s"]), t0.Add(time.Minute), 1)...)
	b := open(t, root)
	checkListing(t, b, ns, want) // builds the index: no W for a
	b.Close()
	want["s"] = append(want["s"], seed(t, a, ns.Key("s"), storetest.Head(want["s"]), t0.Add(2*time.Minute), 2)...)
	Die(a)

	checkListing(t, open(t, root), ns, want)
}
