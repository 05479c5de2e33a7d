package storetest_test

import (
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// TestCustomStoreExample proves that the store of Example_customStore
// (example_custom_test.go) keeps the contract. The test cannot live in that
// file: go doc shows a file as a whole-file example only when it holds no
// tests.
func TestCustomStoreExample(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newMapStore() })
}
