//go:build js && wasm

package idbstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall/js"
)

// schemaVersion is the IndexedDB version of the database this code writes.
// Each version's changes are a step in upgrade, applied in order by
// onupgradeneeded, so a database of any older version is brought forward
// in one versionchange transaction.
const schemaVersion = 1

// Object stores and indexes.
const (
	entriesStore  = "entries"  // key [agent, owner, id, seq] → the entry's wire JSON
	sessionsStore = "sessions" // keyPath [agent, owner, id] → the list record
	activityIndex = "activity" // on sessions: [agent, owner, actS, actN, id]
)

// upgrade brings database db from version old to schemaVersion inside the
// versionchange transaction.
func upgrade(db js.Value, old int) error {
	return try(func() {
		if old < 1 {
			db.Call("createObjectStore", entriesStore)
			sessions := db.Call("createObjectStore", sessionsStore, map[string]any{
				"keyPath": []any{"agent", "owner", "id"},
			})
			sessions.Call("createIndex", activityIndex, []any{"agent", "owner", "actS", "actN", "id"})
		}
		// A version 2 adds its step here: if old < 2 { … }, reaching existing
		// stores through the versionchange transaction.
	})
}

// conn is one open connection to the database, or one being opened.
type conn struct {
	ready   chan struct{} // closed when the open request has settled
	db      js.Value      // set before ready closes, when err is nil
	err     error         // set before ready closes
	dropped atomic.Bool   // closed by Close, or by the browser (versionchange, close)
	funcs   []js.Func     // the database's event handlers
}

// failed reports whether c settled with an error.
func (c *conn) failed() bool {
	select {
	case <-c.ready:
		return c.err != nil
	default:
		return false
	}
}

// connect returns the open connection, opening the database when there is
// none (first use, after Close, after the browser closed it). Waiting for
// the open request ends when ctx is done; the request carries on, and a
// later call uses its connection.
func (s *Store) connect(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	c := s.cur
	if c == nil || c.failed() {
		c = s.open()
		s.cur = c
	}
	s.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c, c.err
}

// open starts opening the database.
func (s *Store) open() *conn {
	c := &conn{ready: make(chan struct{})}
	settle := func(err error) {
		c.err = err
		close(c.ready)
	}
	idb := js.Global().Get("indexedDB")
	if idb.IsUndefined() || idb.IsNull() {
		settle(errors.New("idbstore: IndexedDB is not available in this JavaScript environment"))
		return c
	}
	req, err := call(idb, "open", s.cfg.name, schemaVersion)
	if err != nil {
		settle(fmt.Errorf("idbstore: open database %q: %w", s.cfg.name, err))
		return c
	}
	var upgradeErr error
	var fn js.Func
	fn = js.FuncOf(func(this js.Value, args []js.Value) any {
		ev := args[0]
		switch ev.Get("type").String() {
		case "upgradeneeded":
			if upgradeErr = upgrade(req.Get("result"), ev.Get("oldVersion").Int()); upgradeErr != nil {
				_ = try(func() { req.Get("transaction").Call("abort") })
			}
			return nil
		case "blocked":
			// Another connection (another tab) holds an older version open
			// and has not closed it on versionchange; the open goes on once
			// it does. The caller's context bounds the wait.
			return nil
		}
		for _, h := range []string{"onupgradeneeded", "onblocked", "onsuccess", "onerror"} {
			req.Set(h, js.Null())
		}
		fn.Release()
		if ev.Get("type").String() != "success" {
			err := domError(req.Get("error"))
			var de *DOMError
			switch {
			case upgradeErr != nil:
				err = fmt.Errorf("idbstore: upgrade database %q to version %d: %w", s.cfg.name, schemaVersion, upgradeErr)
			case errors.As(err, &de) && de.Name == "VersionError":
				err = fmt.Errorf("idbstore: database %q has a newer schema than this idbstore writes (version %d); use a newer spool: %w", s.cfg.name, schemaVersion, err)
			default:
				err = fmt.Errorf("idbstore: open database %q: %w", s.cfg.name, err)
			}
			settle(err)
			return nil
		}
		db := req.Get("result")
		names := db.Get("objectStoreNames")
		if !names.Call("contains", entriesStore).Bool() || !names.Call("contains", sessionsStore).Bool() {
			db.Call("close")
			settle(fmt.Errorf("idbstore: database %q was not made by idbstore (it has no %q and %q object stores)", s.cfg.name, entriesStore, sessionsStore))
			return nil
		}
		c.db = db
		s.watchDB(c)
		settle(nil)
		s.mu.Lock()
		closed := s.cur != c
		s.mu.Unlock()
		if closed { // Close came while the database was opening
			s.drop(c)
		}
		return nil
	})
	for _, h := range []string{"onupgradeneeded", "onblocked", "onsuccess", "onerror"} {
		req.Set(h, fn)
	}
	return c
}

// watchDB closes c when another connection asks to upgrade the database
// (versionchange), so that this page never blocks a newer version, and
// forgets it when the browser closes it (the site's data was cleared, the
// disk failed). The next call opens the database again.
func (s *Store) watchDB(c *conn) {
	onVersionChange := js.FuncOf(func(this js.Value, args []js.Value) any {
		s.drop(c)
		return nil
	})
	onClose := js.FuncOf(func(this js.Value, args []js.Value) any {
		s.drop(c)
		return nil
	})
	c.db.Set("onversionchange", onVersionChange)
	c.db.Set("onclose", onClose)
	c.funcs = []js.Func{onVersionChange, onClose}
}

// drop closes c's database and makes the next call open a new connection.
// IndexedDB lets the transactions already started on c finish; starting a
// new one on it fails, and begin then retries on a new connection.
func (s *Store) drop(c *conn) {
	s.mu.Lock()
	if s.cur == c {
		s.cur = nil
	}
	s.mu.Unlock()
	if c.dropped.Swap(true) {
		return
	}
	c.db.Set("onversionchange", js.Null())
	c.db.Set("onclose", js.Null())
	for _, f := range c.funcs {
		f.Release()
	}
	_ = try(func() { c.db.Call("close") })
}

// begin starts a transaction over the named object stores, readwrite when
// write is set, opening the database when needed.
func (s *Store) begin(ctx context.Context, write bool, names ...string) (*tx, error) {
	stores := make([]any, len(names))
	for i, n := range names {
		stores[i] = n
	}
	mode, opts := "readonly", map[string]any{}
	if write {
		mode = "readwrite"
		opts["durability"] = s.cfg.durability
	}
	for {
		c, err := s.connect(ctx)
		if err != nil {
			return nil, err
		}
		t, err := call(c.db, "transaction", stores, mode, opts)
		if err == nil {
			return newTx(t, write), nil
		}
		// The connection was closed under us (Close, versionchange): the
		// next attempt opens a new one. Only another Close can make that
		// one fail the same way.
		if !c.dropped.Load() {
			return nil, fmt.Errorf("idbstore: start a transaction: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}
