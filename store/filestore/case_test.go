package filestore

import (
	"errors"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// foldingStore returns a store that behaves as on a file system that folds
// case. This one does not, so the store's own checks are what refuses.
func foldingStore(t *testing.T, root string) *Store {
	s := open(t, root)
	s.fold = true
	return s
}

func TestCaseFoldingRefusesTwins(t *testing.T) {
	root := t.TempDir()
	s := foldingStore(t, root)
	seed(t, s, store.Key{Agent: "Support", Owner: "alice", ID: "abc"}, "", t0, 2)
	seed(t, s, store.Key{Agent: "Support", ID: "Proj"}, "", t0, 1)
	e := storetest.NewEntry("", t0, transcript.TypeUserMessage, nil)
	twins := []store.Key{
		{Agent: "Support", Owner: "alice", ID: "ABC"},
		{Agent: "Support", Owner: "Alice", ID: "abc"},
		{Agent: "support", Owner: "alice", ID: "abc"},
		{Agent: "Support", ID: "proj"},
	}
	for _, s := range []*Store{s, foldingStore(t, root)} { // warm and cold
		for _, k := range twins {
			if err := s.Append(t.Context(), k, e); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Append %s: %v, want ErrInvalidKey", k, err)
			}
			if _, err := s.Read(t.Context(), k); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Read %s: %v, want ErrInvalidKey", k, err)
			}
			if err := s.Delete(t.Context(), k); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Delete %s: %v, want ErrInvalidKey", k, err)
			}
		}
		// The exact names still work, and others are not affected.
		if got := read(t, s, store.Key{Agent: "Support", Owner: "alice", ID: "abc"}); len(got) != 2 {
			t.Fatalf("exact key reads %d entries", len(got))
		}
	}
	seed(t, s, store.Key{Agent: "Support", Owner: "alice", ID: "abd"}, "", t0, 1)

	// Once the first is deleted, the other spelling is free.
	if err := s.Delete(t.Context(), store.Key{Agent: "Support", ID: "Proj"}); err != nil {
		t.Fatal(err)
	}
	seed(t, s, store.Key{Agent: "Support", ID: "proj"}, "", t0, 1)
}

func TestCaseSensitiveTwinsAreSeparate(t *testing.T) {
	s := open(t, t.TempDir())
	if s.fold {
		t.Skip("this file system folds case")
	}
	a := seed(t, s, store.Key{Agent: "a", ID: "abc"}, "", t0, 2)
	b := seed(t, s, store.Key{Agent: "a", ID: "ABC"}, "", t0, 3)
	sameEntries(t, read(t, s, store.Key{Agent: "a", ID: "abc"}), a)
	sameEntries(t, read(t, s, store.Key{Agent: "a", ID: "ABC"}), b)
}
