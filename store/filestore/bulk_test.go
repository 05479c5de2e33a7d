package filestore

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestBulkProvesTheIndex: a bulk that makes many transcripts records the
// folder's mtime once, after the last; a cold Store then proves the index
// current without comparing the folder (the writer still open), and lists
// every session.
func TestBulkProvesTheIndex(t *testing.T) {
	root := t.TempDir()
	ns := store.Namespace{Agent: "a"}
	w := open(t, root)
	want := map[string][]transcript.Entry{}
	var batches []store.Batch
	for i := range 40 {
		id := fmt.Sprintf("b%02d", i)
		want[id] = storetest.Chain("", t0.Add(time.Duration(i)*time.Second), 1+i%4)
		batches = append(batches, store.Batch{Key: ns.Key(id), Entries: want[id]})
	}
	if err := w.AppendBulk(t.Context(), batches); err != nil {
		t.Fatal(err)
	}
	// The writer is alive: its marks stand, so the folder's mtime must be
	// the one its index records.
	compared := 0
	defer SetCompareHook(func(string) { compared++ })()
	s := open(t, root)
	checkListing(t, s, ns, want)
	if compared != 0 {
		t.Fatalf("after a bulk: the folder was compared %d times, want 0", compared)
	}
}
