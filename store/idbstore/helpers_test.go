//go:build js && wasm

package idbstore

import (
	"crypto/rand"
	"encoding/hex"
	"syscall/js"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// dbName returns a database name no other test uses.
func dbName() string {
	var b [8]byte
	rand.Read(b[:])
	return "spool-test-" + hex.EncodeToString(b[:])
}

// openTest opens a store on a fresh database that the test's cleanup
// closes and deletes.
func openTest(t *testing.T, opts ...Option) *Store {
	t.Helper()
	name := dbName()
	s, err := New(t.Context(), name, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		deleteDatabase(t, name)
	})
	return s
}

// deleteDatabase deletes the database name, failing t if the browser
// refuses or takes over ten seconds. Connections closed but still
// finishing their transactions make it wait (the blocked event), which is
// fine; a connection left open would make it time out.
func deleteDatabase(t *testing.T, name string) {
	t.Helper()
	select {
	case r := <-rawDelete(name):
		if r.err != nil {
			t.Errorf("deleteDatabase %s: %v", name, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("deleteDatabase %s has not finished after 10s: a connection to it is still open", name)
	}
}

// rawDelete starts deleting database name.
func rawDelete(name string) <-chan result {
	return watch(js.Global().Get("indexedDB").Call("deleteDatabase", name))
}

// rawOpen opens database name at version (0: the current one) with
// IndexedDB directly, running onUpgrade (if set) in onupgradeneeded, and
// returns the connection.
func rawOpen(t *testing.T, name string, version int, onUpgrade func(db js.Value)) js.Value {
	t.Helper()
	args := []any{name}
	if version > 0 {
		args = append(args, version)
	}
	req := js.Global().Get("indexedDB").Call("open", args...)
	up := js.FuncOf(func(js.Value, []js.Value) any {
		if onUpgrade != nil {
			onUpgrade(req.Get("result"))
		}
		return nil
	})
	defer up.Release()
	req.Set("onupgradeneeded", up)
	select {
	case r := <-watch(req):
		if r.err != nil {
			t.Fatalf("open %s version %d: %v", name, version, r.err)
		}
		return r.v
	case <-time.After(10 * time.Second):
		t.Fatalf("open %s version %d has not finished after 10s (blocked by an open connection?)", name, version)
	}
	return js.Value{}
}

// rawWrite runs f in a readwrite transaction over the named object store of
// s's database, bypassing the store's logic, and waits for the commit.
func rawWrite(t *testing.T, s *Store, name string, f func(os js.Value)) {
	t.Helper()
	x, err := s.begin(t.Context(), true, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := try(func() { f(x.store(name)) }); err != nil {
		x.abort()
		t.Fatalf("raw write to %s: %v", name, err)
	}
	if err := x.commit(t.Context()); err != nil {
		t.Fatalf("raw write to %s: %v", name, err)
	}
}

// newSession appends n chained entries starting at start to a new session
// key and returns them.
func newSession(t *testing.T, s store.Store, key store.Key, start time.Time, n int) []transcript.Entry {
	t.Helper()
	entries := storetest.Chain("", start, n)
	for i, e := range entries {
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatalf("Append entry %d to %s: %v", i, key, err)
		}
	}
	return entries
}

// ids lists the session ids of a namespace's full listing.
func ids(t *testing.T, s store.Store, ns store.Namespace) []string {
	t.Helper()
	var out []string
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		page, err := s.List(t.Context(), ns, opt)
		if err != nil {
			t.Fatalf("List %s: %v", ns, err)
		}
		for _, info := range page.Sessions {
			out = append(out, info.ID)
		}
		if page.NextCursor == "" {
			return out
		}
		opt.Cursor = page.NextCursor
	}
}
