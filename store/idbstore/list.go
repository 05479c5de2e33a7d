//go:build js && wasm

package idbstore

import (
	"context"
	"fmt"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// List returns one page of the sessions of namespace, newest activity first,
// from the activity index and the page's records alone, never a
// transcript. It takes three requests whatever the page size: a key cursor
// walking backwards from the cursor's position finds the oldest record the
// page needs (one more than the page, to know whether another follows),
// and one getAll reads the records from there up.
func (s *Store) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateNamespace(ns); err != nil {
		return store.SessionPage{}, err
	}
	rng := namespaceRange(ns)
	if opt.Cursor != "" {
		p, err := storekit.DecodeListCursor(ns, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		rng = activityBefore(ns, p)
	}
	if err := ctx.Err(); err != nil {
		return store.SessionPage{}, err
	}
	x, err := s.begin(ctx, false, sessionsStore)
	if err != nil {
		return store.SessionPage{}, err
	}
	fail := func(err error) (store.SessionPage, error) {
		return store.SessionPage{}, requestErr(ctx, "list "+ns.String(), err)
	}
	index := x.store(sessionsStore).Call("index", activityIndex)
	limit := opt.PageSize()
	c, err := openCursor(index, "openKeyCursor", rng, "prev")
	if err != nil {
		return fail(err)
	}
	defer c.close()
	cur, err := c.next(ctx, x) // the newest
	if err != nil {
		return fail(err)
	}
	if cur.IsNull() {
		return store.SessionPage{Sessions: []store.SessionInfo{}}, nil
	}
	if err := move(cur, "advance", limit); err != nil {
		return fail(err)
	}
	if cur, err = c.next(ctx, x); err != nil { // the (limit+1)th newest, if any
		return fail(err)
	}
	if !cur.IsNull() {
		rng = keyRange.Call("bound", cur.Get("key"), rng.Get("upper"), false, rng.Get("upperOpen"))
	}
	c.close()
	vals, err := x.request(ctx, index, "getAll", rng, limit+1)
	if err != nil {
		return fail(err)
	}
	n := vals.Length()
	page := store.SessionPage{Sessions: make([]store.SessionInfo, 0, min(n, limit))}
	for i := n - 1; i >= 0 && len(page.Sessions) < limit; i-- { // newest first
		rec, err := decodeRecord(vals.Index(i), ns.Key(""))
		if err != nil {
			return store.SessionPage{}, err
		}
		page.Sessions = append(page.Sessions, rec.info)
	}
	if n > limit {
		last := page.Sessions[limit-1]
		page.NextCursor = storekit.EncodeListCursor(ns, storekit.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
	}
	return page, nil
}

// Delete removes the session's record and entries in one readwrite
// transaction, and returns once it has committed. Deleting a session the
// store does not have is not an error.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x, err := s.begin(ctx, true, entriesStore, sessionsStore)
	if err != nil {
		return err
	}
	if err := deleteSession(x.store(sessionsStore), x.store(entriesStore), sessionKey(key)); err != nil {
		x.abort()
		return fmt.Errorf("idbstore: delete %s: %w", key, err)
	}
	if err := x.commit(ctx); err != nil {
		return fmt.Errorf("idbstore: delete %s: %w", key, err)
	}
	return nil
}

// Prune deletes the sessions of namespace that r does not keep as of now, in
// one readwrite transaction: the same sessions storekit.Victims names, decided
// and deleted with no append in between.
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
	x, err := s.begin(ctx, true, entriesStore, sessionsStore)
	if err != nil {
		return 0, err
	}
	n, err := retain(ctx, x, ns, r, now, false)
	if err != nil {
		x.abort()
		return 0, requestErr(ctx, "prune "+ns.String(), err)
	}
	if err := x.commit(ctx); err != nil {
		return 0, fmt.Errorf("idbstore: prune %s: %w", ns, err)
	}
	return n, nil
}

// Namespaces returns every namespace that holds sessions, sorted by agent and then
// owner. It visits one key per namespace: after each, the cursor jumps past
// the rest of that namespace.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x, err := s.begin(ctx, false, sessionsStore)
	if err != nil {
		return nil, err
	}
	c, err := openCursor(x.store(sessionsStore), "openKeyCursor")
	if err != nil {
		return nil, fmt.Errorf("idbstore: namespaces: %w", err)
	}
	defer c.close()
	var namespaces []store.Namespace
	for {
		cur, err := c.next(ctx, x)
		if err != nil {
			return nil, requestErr(ctx, "namespaces", err)
		}
		if cur.IsNull() {
			return namespaces, nil
		}
		k := cur.Get("key")
		agent, owner := k.Index(0), k.Index(1)
		namespaces = append(namespaces, store.Namespace{Agent: agent.String(), Owner: owner.String()})
		if err := move(cur, "continue", []any{agent, owner, []any{}}); err != nil {
			return nil, fmt.Errorf("idbstore: namespaces: %w", err)
		}
	}
}
