package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := New(t.Context(), filepath.Join(t.TempDir(), "spool.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
