//go:build unix

package filestore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// midCompare has a new Store list ns while its validation compares the
// folder: another program appends to y's transcript (so the comparison
// reads y again) and adds a file that is not a transcript (so the index is
// not proved current), and holds y's lock, so that the comparison stops at
// y after it has read the folder and looked at every other transcript.
// Once it is there, during runs; then the comparison goes on, and the
// Store closes. want gets the entries appended to y.
func midCompare(t *testing.T, root string, ns store.Namespace, want map[string][]transcript.Entry, during func()) {
	t.Helper()
	dir := filepath.Join(root, ns.Agent)
	more := storetest.Chain(storetest.Head(want["y"]), t0.Add(2*time.Minute), 1)
	writeRaw(t, filepath.Join(dir, "y.jsonl"), lines(t, more...), os.O_APPEND)
	want["y"] = append(want["y"], more...)
	writeRaw(t, filepath.Join(dir, "notes.txt"), []byte("x"), 0)
	yf, err := os.Open(filepath.Join(dir, "y.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer yf.Close()
	if err := syscall.Flock(int(yf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	compared := make(chan struct{}, 1)
	defer SetCompareHook(func(string) {
		select {
		case compared <- struct{}{}:
		default:
		}
	})()
	b := open(t, root)
	done := make(chan error, 1)
	go func() {
		_, err := b.List(t.Context(), ns, store.ListOptions{})
		done <- err
	}()
	<-compared
	time.Sleep(300 * time.Millisecond) // the folder read and every other transcript looked at
	during()
	syscall.Flock(int(yf.Fd()), syscall.LOCK_UN)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b.Close()
}

// TestFolderMarkIsTheCompared: a validation records as the folder's mtime
// (F) the one it compared, not the folder's mtime once it is done, so a
// transcript another program adds after the folder was read is seen by
// the next cold Store.
func TestFolderMarkIsTheCompared(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	p := open(t, root)
	want := map[string][]transcript.Entry{"y": seed(t, p, ns.Key("y"), "", t0, 1)}
	p.Close()
	midCompare(t, root, ns, want, func() {
		z := storetest.Chain("", t0.Add(3*time.Minute), 2)
		writeRaw(t, filepath.Join(root, ns.Agent, "z.jsonl"), lines(t, z...), 0)
		want["z"] = z
	})
	checkListing(t, open(t, root), ns, want)
}

// TestWriterDeadDuringCompare: a writer alive when a validation began
// compares and dies before it ends, after appending (a record and a
// deferred append). Only writers found dead before the comparison have
// their marks closed by it, so the next Store still sees this one's open
// marks, compares, and lists what its appends left.
func TestWriterDeadDuringCompare(t *testing.T) {
	defer func(idle time.Duration) { flushIdle = idle }(flushIdle)
	flushIdle = time.Hour
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	p := open(t, root)
	want := map[string][]transcript.Entry{"y": seed(t, p, ns.Key("y"), "", t0, 1)}
	p.Close()
	a := open(t, root)
	want["x"] = seed(t, a, ns.Key("x"), "", t0.Add(time.Minute), 2)
	Flush(a) // x's record is current: the comparison does not read x again
	midCompare(t, root, ns, want, func() {
		want["x"] = append(want["x"], seed(t, a, ns.Key("x"), storetest.Head(want["x"]), t0.Add(3*time.Minute), 2)...)
		Die(a)
	})
	info, err := open(t, root).Stat(t.Context(), ns.Key("x"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Entries != len(want["x"]) {
		t.Errorf("cold Stat of x after its writer died: %d entries, want %d (the file has them)", info.Entries, len(want["x"]))
	}
	checkListing(t, open(t, root), ns, want)
}
