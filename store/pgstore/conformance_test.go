package pgstore

import (
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// TestConformance runs the store contract's suite against the real
// PostgreSQL, each subtest on a schema of its own.
func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}
