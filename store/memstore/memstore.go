// Package memstore is a store.Store that keeps transcripts in memory: for
// tests, demos and short-lived programs. It has no limits (no retention, no
// TTL) and lives as long as the process; nothing is durable beyond it.
//
// Entries are copied in and out, so neither the caller of Append nor the
// caller of Read can change what is stored. Each session's SessionInfo is
// kept up to date on every append (store.SessionInfo.Apply), so List costs
// one pass over the sessions of the namespace and never touches entries.
//
// Besides the four required methods, a *Store implements store.RangeReader,
// store.TailReader, store.Stater, store.Pruner, store.NamespaceLister and
// store.Locker (a lock within this process). Importing the package
// registers the "memory" scheme: store.Open(ctx, "memory:") returns a new,
// empty store each time.
package memstore

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

func init() {
	store.Register("memory", func(ctx context.Context, u *url.URL) (store.Store, error) {
		if u.Opaque != "" || u.Host != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("memstore: a memory store takes no path or options: use \"memory:\"")
		}
		return New(), nil
	})
}

// Store keeps sessions in memory. It is safe for concurrent use. The zero
// value is not usable; call New.
type Store struct {
	mu         sync.RWMutex
	namespaces map[store.Namespace]map[string]*session
	locks      storekit.LocalLocks
	hub        store.Hub
}

type session struct {
	entries chunks
	info    store.SessionInfo
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.BatchAppender   = (*Store)(nil)
	_ store.RangeReader     = (*Store)(nil)
	_ store.TailReader      = (*Store)(nil)
	_ store.Stater          = (*Store)(nil)
	_ store.Pruner          = (*Store)(nil)
	_ store.NamespaceLister = (*Store)(nil)
	_ store.Locker          = (*Store)(nil)
	_ store.Notifier        = (*Store)(nil)
	_ store.FuncListener    = (*Store)(nil)
	_ store.ListenerCounter = (*Store)(nil)
)

// Notify implements store.Notifier: the store lives in one process, so
// its notifications are an in-process hub's (store.Hub).
func (s *Store) Notify(ctx context.Context, key store.Key, msg []byte) error {
	return s.hub.Notify(ctx, key, msg)
}

// Listen implements store.Notifier (see Notify).
func (s *Store) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	return s.hub.Listen(ctx, key)
}

// ListenFunc implements store.FuncListener (see Notify).
func (s *Store) ListenFunc(key store.Key, fn func(msg []byte)) (stop func(), err error) {
	return s.hub.ListenFunc(key, fn)
}

// Listeners implements store.ListenerCounter: every listener of the
// store is in this process (see Notify).
func (s *Store) Listeners(key store.Key) (int, bool) { return s.hub.Listeners(key) }

// New returns an empty store.
func New() *Store {
	return &Store{namespaces: map[store.Namespace]map[string]*session{}}
}

// begin validates key and checks ctx, in the order every method needs.
func begin(ctx context.Context, key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	return ctx.Err()
}

// clone returns a copy of e that shares no memory with it.
func clone(e transcript.Entry) transcript.Entry {
	e.Data = slices.Clone(e.Data)
	return e
}

// get returns key's session, or nil. The caller holds s.mu.
func (s *Store) get(key store.Key) *session {
	return s.namespaces[key.Namespace()][key.ID]
}

// Append adds e to the session if its ParentID is the session's last entry
// id, and fails with store.ErrConflict otherwise.
func (s *Store) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	return s.AppendBatch(ctx, key, []transcript.Entry{e})
}

// AppendBatch adds entries at the end of the session at once
// (store.BatchAppender): all of them, or, when the batch is refused,
// none.
func (s *Store) AppendBatch(ctx context.Context, key store.Key, entries []transcript.Entry) error {
	if err := begin(ctx, key); err != nil {
		return err
	}
	if err := storekit.ValidBatch(key, entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.get(key)
	head := ""
	if sess != nil {
		head = sess.entries.last().ID
	}
	if err := storekit.CheckParent(key, head, entries[0]); err != nil {
		return err
	}
	if sess == nil {
		sess = &session{}
		sessions := s.namespaces[key.Namespace()]
		if sessions == nil {
			sessions = map[string]*session{}
			s.namespaces[key.Namespace()] = sessions
		}
		sessions[key.ID] = sess
	}
	for _, e := range entries {
		sess.entries.add(clone(e))
		sess.info.Apply(key, e)
	}
	return nil
}

// Read returns a copy of every entry of the session, or none for a session
// the store does not have.
func (s *Store) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	entries, _, err := s.ReadRange(ctx, key, 0, int(^uint(0)>>1))
	return entries, err
}

// ReadRange returns copies of the entries at positions [start, end),
// clamped to the transcript, and the number of entries in it.
func (s *Store) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	if err := begin(ctx, key); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess := s.get(key)
	if sess == nil {
		return nil, 0, nil
	}
	n := sess.entries.n
	start = min(max(start, 0), n)
	end = min(max(end, start), n)
	return sess.entries.clones(start, end), n, nil
}

// ReadTail returns copies of the newest n entries in append order and the
// number of entries in the transcript.
func (s *Store) ReadTail(ctx context.Context, key store.Key, n int) ([]transcript.Entry, int, error) {
	if err := begin(ctx, key); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess := s.get(key)
	if sess == nil {
		return nil, 0, nil
	}
	total := sess.entries.n
	n = min(max(n, 0), total)
	return sess.entries.clones(total-n, total), total, nil
}

// Stat returns the session's info, or store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key store.Key) (store.SessionInfo, error) {
	if err := begin(ctx, key); err != nil {
		return store.SessionInfo{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess := s.get(key)
	if sess == nil {
		return store.SessionInfo{}, fmt.Errorf("memstore: session %s: %w", key, store.ErrNotFound)
	}
	return sess.info, nil
}

// List returns one page of the sessions of namespace, newest activity first.
func (s *Store) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return store.SessionPage{}, err
	}
	var after *storekit.ListPosition
	if opt.Cursor != "" {
		p, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		after = &p
	}
	if err := ctx.Err(); err != nil {
		return store.SessionPage{}, err
	}
	s.mu.RLock()
	infos := make([]store.SessionInfo, 0, len(s.namespaces[ns]))
	for _, sess := range s.namespaces[ns] {
		if after == nil || after.Before(sess.info.LastActivity, sess.info.ID) {
			infos = append(infos, sess.info)
		}
	}
	s.mu.RUnlock()
	storekit.SortSessions(infos)
	var page store.SessionPage
	if limit := opt.PageSize(); len(infos) > limit {
		infos = infos[:limit]
		last := infos[limit-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	page.Sessions = infos
	return page, nil
}

// Delete removes the session. Deleting a session the store does not have
// is not an error.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := begin(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delete(key)
	return nil
}

// delete removes key's session and, with it, an emptied namespace. The caller
// holds s.mu.
func (s *Store) delete(key store.Key) {
	sessions := s.namespaces[key.Namespace()]
	delete(sessions, key.ID)
	if len(sessions) == 0 {
		delete(s.namespaces, key.Namespace())
	}
}

// Prune deletes the sessions of namespace that r does not keep as of now: the
// same sessions storekit.Victims names, decided and deleted under one lock so
// that no append slips in between.
func (s *Store) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if r.Unlimited() {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	infos := make([]store.SessionInfo, 0, len(s.namespaces[ns]))
	for _, sess := range s.namespaces[ns] {
		infos = append(infos, sess.info)
	}
	storekit.SortSessions(infos)
	kept, deleted := 0, 0
	for _, info := range infos {
		if storekit.Expired(info, r, now) || (r.MaxSessions > 0 && kept >= r.MaxSessions) {
			s.delete(info.Key())
			deleted++
			continue
		}
		kept++
	}
	return deleted, nil
}

// Namespaces returns every namespace that holds sessions, sorted by agent and then
// owner.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	namespaces := make([]store.Namespace, 0, len(s.namespaces))
	for ns := range s.namespaces {
		namespaces = append(namespaces, ns)
	}
	s.mu.RUnlock()
	slices.SortFunc(namespaces, func(a, b store.Namespace) int {
		if a.Agent != b.Agent {
			return cmpString(a.Agent, b.Agent)
		}
		return cmpString(a.Owner, b.Owner)
	})
	return namespaces, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Lock blocks until this process holds the session's lock or ctx is done.
// The lock is not shared with other processes (they cannot share a memory
// store anyway).
func (s *Store) Lock(ctx context.Context, key store.Key) (func(), error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	return s.locks.Lock(ctx, key)
}
