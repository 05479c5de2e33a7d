package filestore_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/storetest"
)

// TestBatchFailsWhole: a batch whose write fails before its sync leaves
// the transcript as it was, byte for byte (nothing of it acknowledged, no
// part of a line left), and the next batch appends after the old head.
func TestBatchFailsWhole(t *testing.T) {
	root := t.TempDir()
	s, err := filestore.New(t.Context(), root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := store.Key{Agent: "a", ID: "s"}
	base := time.Now().UTC().Truncate(time.Millisecond)
	first := storetest.Chain("", base, 3)
	if err := s.AppendBatch(t.Context(), key, first); err != nil {
		t.Fatal(err)
	}
	path := root + "/a/s.jsonl"
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	disk := errors.New("the disk is gone")
	restore := filestore.SetFaultHook(func(string) error { return disk })
	batch := storetest.Chain(storetest.Head(first), base.Add(time.Second), 5)
	err = s.AppendBatch(t.Context(), key, batch)
	restore()
	if !errors.Is(err, disk) {
		t.Fatalf("AppendBatch with a failing disk: %v", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) {
		t.Fatalf("the failed batch left %d bytes where there were %d (%v)", len(after), len(before), err)
	}
	if err := s.AppendBatch(t.Context(), key, batch); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(t.Context(), key)
	if err != nil || len(got) != 8 || got[7].ID != batch[4].ID {
		t.Fatalf("after the retry: %d entries, %v", len(got), err)
	}
}
