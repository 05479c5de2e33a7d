// Package idbstore keeps session transcripts in the browser's IndexedDB,
// for Go compiled to WebAssembly (GOOS=js GOARCH=wasm): a chat that runs in
// a page or a worker keeps its conversations on the device, the way the
// reference SDKs' browser store does. On other platforms the package is
// empty; its code builds only for js/wasm.
//
//	sessions, err := idbstore.New(ctx, idbstore.DatabaseName) // "spool-sessions"
//	if err != nil { … }
//	agent, err := spool.New(spool.Config{Name: "support", Model: m, Store: sessions})
//
// Open takes a URL instead, "idb:" or "idb:NAME", with optional
// max_sessions and max_age parameters for the retention (0 for no limit);
// importing the package (in a js/wasm build) registers the scheme "idb"
// with store.Open.
//
// # Database
//
// One IndexedDB database per origin, named "spool-sessions" (the name
// given to New), at schema version 1, created and upgraded by the
// onupgradeneeded handler one version step at a time. It holds two object
// stores:
//
//   - entries, keyed by [agent, owner, session id, position]: each entry
//     as its wire-form JSON (transcript.AppendJSON), one record per
//     entry, so that a range or the newest entries are read alone.
//   - sessions, keyed by [agent, owner, session id]: the small list record
//     of each session (the SessionInfo fields, the last entry's id and the
//     entry count), with the index activity on [agent, owner, last
//     activity, id]. A listing walks that index backwards from the cursor
//     and reads the page's records, never a transcript.
//
// The project scope's owner is the empty string. Timestamps are kept as
// Unix seconds and nanoseconds, two numbers JavaScript holds exactly.
//
// # Guarantees
//
// Append is one readwrite transaction over both stores: read the
// session's record, refuse a stale parent with store.ErrConflict, write
// the entry and the record. IndexedDB runs such transactions one at a
// time across every page and worker of the origin, so two writers never
// interleave a session, even in two tabs. Append returns after the
// transaction's complete event, which is the durability point: by default
// transactions ask for strict durability, so the browser has flushed the
// entry to disk (WithRelaxedDurability trades that for speed). Delete and
// Prune commit the same way.
//
// Read returns entries exactly as appended. An entry that does not parse,
// a missing position, a parent link that does not hold, or a session
// record of the wrong shape fails the call with a *store.CorruptError that
// names the session and position; nothing is skipped. Keys are checked
// with store.ValidateKey before anything is touched.
//
// Close closes the database connection; the next call opens it again. When
// another page opens the database at a newer version, the store closes its
// connection at once so that the upgrade is not blocked, and the next call
// opens it again (and fails if this code is older than the database).
//
// # Retention
//
// The store keeps the newest 50 sessions of each agent and owner, and none
// idle for more than 90 days (store.DefaultRetention). Sessions beyond
// that are deleted when a new session is created, in the transaction that
// creates it; the new session counts as kept. WithRetention changes the
// limits; store.Retention{} keeps everything. Prune (store.Pruner) applies
// any policy on demand.
//
// # Contexts
//
// Every call checks its context before it starts and stops waiting when
// the context is done. A transaction cannot be left half done: a readonly
// one is abandoned (it commits by itself), and a readwrite one is aborted,
// which rolls it back entirely. The call then returns ctx.Err() with
// nothing written, except when the commit had already begun: then the
// write is stored and the call returns nil, so an error always means
// nothing changed. Opening the database (first use, after Close) cannot
// be aborted: a call that stops waiting for it leaves it to finish, and a
// later call uses the connection (Open, which returns no store then,
// closes it).
//
// # Capabilities
//
// Besides store.Store, a *Store implements store.RangeReader and
// store.TailReader (key ranges on the position), store.Stater (the
// record), store.Pruner, store.NamespaceLister, and store.Locker: a Web Lock
// per session, shared by the origin's pages and workers, or a lock within
// the page where the Web Locks API is missing. Search falls back to
// store.Search's scan.
//
// # What it protects
//
// IndexedDB belongs to one origin: other sites and extensions cannot read
// it, but every script running in the origin can, and so can anyone who
// reads the browser profile on disk. Clearing the site's data deletes the
// sessions.
//
// # Tests
//
// The package's tests run in a browser: go test on Linux compiles them to
// WebAssembly and runs them in headless Chromium (see browser_test.go and
// internal/browsertest), including the storetest conformance suite.
package idbstore
