package filestore

import (
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := New(t.Context(), t.TempDir(), WithRetention(store.Retention{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// The same rules hold for an encrypted store, and on a file system that
// folds case (simulated: the store's own checks do the refusing).
func TestConformanceSealedFolding(t *testing.T) {
	if testing.Short() {
		t.Skip("the suite again")
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := New(t.Context(), t.TempDir(), WithRetention(store.Retention{}), WithProtector(newTestProtector(7)))
		if err != nil {
			t.Fatal(err)
		}
		s.fold = true
		t.Cleanup(func() { s.Close() })
		return s
	})
}
