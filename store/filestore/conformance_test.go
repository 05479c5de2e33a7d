package filestore

import (
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := New(t.TempDir(), WithRetention(store.Retention{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
