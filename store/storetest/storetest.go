// Package storetest is the conformance suite for store.Store
// implementations: every rule of the store contract (see package store),
// checked through a store's methods alone. Every store in spool runs it, and
// a store written outside spool should too. In your own package:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return mystore.New() })
//	}
//
// Each rule is a subtest with a name that says what it checks (for example
// "Append/Conflict/StaleParent" or "List/Paging/WhileAppending"), and every
// failure message names the rule the store broke, so `go test -run
// 'TestMyStore/List'` narrows a failure down.
//
// The optional capabilities (store.BatchAppender, BulkAppender, RangeReader,
// TailReader, Stater, Pruner, NamespaceLister, Searcher, Locker, Notifier) are checked when the store implements them
// and skipped, with a message, when it does not.
//
// # What the suite expects of newStore
//
// newStore is called once per subtest. It should return an empty store, and
// close it with t.Cleanup if it holds resources (files, connections). The
// suite never relies on the store being empty, though: every subtest uses
// agent names of its own, chosen at random, so a store that shares state
// underneath (one Postgres schema, one Redis database) works as long as it
// keeps nothing that those names could meet.
//
// The store must keep every session it is given for the length of a
// subtest: no retention limits and no TTL. Retention is checked through
// store.Pruner with explicit policies and an explicit now. Timestamps are
// within ten days before the present, and a namespace holds at most about 200
// sessions, so a store whose retention cannot be switched off still passes
// when its limits are above those.
//
// # Decisions the suite makes where the contract leaves room
//
//   - Listing walks may miss a session that gets new activity while the walk
//     is under way (it moves ahead of the cursor), but must never show a
//     session twice, and must show every session that was not written to
//     during the walk exactly once.
//   - A call made with a context that is already cancelled may fail or may
//     succeed, but must return (the suite allows it ten seconds), and an
//     Append must either report success and have stored the entry or report
//     an error and have stored nothing. A Locker waiting for a held lock
//     must give up when its context is cancelled.
//   - Two ids that differ only in case may be two separate sessions, or the
//     store may refuse the second with store.ErrInvalidKey (a file store on a
//     case-insensitive file system must); they may never share data.
//   - A listing's last page has an empty NextCursor; a store may also hand
//     out a cursor on a full last page, if the page after it is empty and has
//     none.
package storetest

import (
	"testing"

	"github.com/spool-go/spool/store"
)

// check is one rule (or group of rules) of the suite.
type check struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// Run checks the store that newStore returns against every rule of the store
// contract, each in a subtest of t with a fresh store from newStore. See the
// package documentation for what newStore must provide.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	groups := [][]check{
		appendChecks,
		listChecks,
		infoChecks,
		deleteChecks,
		keyChecks,
		isolationChecks,
		contextChecks,
		capabilityChecks,
		notifierChecks,
	}
	for _, g := range groups {
		for _, c := range g {
			t.Run(c.name, func(t *testing.T) {
				s := newStore(t)
				if s == nil {
					t.Fatal("newStore returned nil")
				}
				c.run(t, s)
			})
		}
	}
}
