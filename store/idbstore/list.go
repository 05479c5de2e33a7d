//go:build js && wasm

package idbstore

import (
	"context"
	"fmt"
	"time"

	"github.com/spool-go/spool/store"
)

// List returns one page of the sessions of scope, newest activity first,
// from the activity index and the page's records alone, never a
// transcript. It takes three requests whatever the page size: a key cursor
// walking backwards from the cursor's position finds the oldest record the
// page needs (one more than the page, to know whether another follows),
// and one getAll reads the records from there up.
func (s *Store) List(ctx context.Context, scope store.Scope, opt store.ListOptions) (store.SessionPage, error) {
	if err := store.ValidateScope(scope); err != nil {
		return store.SessionPage{}, err
	}
	rng := scopeRange(scope)
	if opt.Cursor != "" {
		p, err := store.DecodeListCursor(scope, opt.Cursor)
		if err != nil {
			return store.SessionPage{}, err
		}
		rng = activityBefore(scope, p)
	}
	if err := ctx.Err(); err != nil {
		return store.SessionPage{}, err
	}
	x, err := s.begin(ctx, false, sessionsStore)
	if err != nil {
		return store.SessionPage{}, err
	}
	fail := func(err error) (store.SessionPage, error) {
		return store.SessionPage{}, requestErr(ctx, "list "+scope.String(), err)
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
		rec, err := decodeRecord(vals.Index(i), scope.Key(""))
		if err != nil {
			return store.SessionPage{}, err
		}
		page.Sessions = append(page.Sessions, rec.info)
	}
	if n > limit {
		last := page.Sessions[limit-1]
		page.NextCursor = store.EncodeListCursor(scope, store.ListPosition{LastActivity: last.LastActivity, ID: last.ID})
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

// Prune deletes the sessions of scope that r does not keep as of now, in
// one readwrite transaction: the same sessions store.Victims names, decided
// and deleted with no append in between.
func (s *Store) Prune(ctx context.Context, scope store.Scope, r store.Retention, now time.Time) (int, error) {
	if err := store.ValidateScope(scope); err != nil {
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
	n, err := retain(ctx, x, scope, r, now, false)
	if err != nil {
		x.abort()
		return 0, requestErr(ctx, "prune "+scope.String(), err)
	}
	if err := x.commit(ctx); err != nil {
		return 0, fmt.Errorf("idbstore: prune %s: %w", scope, err)
	}
	return n, nil
}

// Scopes returns every scope that holds sessions, sorted by agent and then
// owner. It visits one key per scope: after each, the cursor jumps past
// the rest of that scope.
func (s *Store) Scopes(ctx context.Context) ([]store.Scope, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x, err := s.begin(ctx, false, sessionsStore)
	if err != nil {
		return nil, err
	}
	c, err := openCursor(x.store(sessionsStore), "openKeyCursor")
	if err != nil {
		return nil, fmt.Errorf("idbstore: scopes: %w", err)
	}
	defer c.close()
	var scopes []store.Scope
	for {
		cur, err := c.next(ctx, x)
		if err != nil {
			return nil, requestErr(ctx, "scopes", err)
		}
		if cur.IsNull() {
			return scopes, nil
		}
		k := cur.Get("key")
		agent, owner := k.Index(0), k.Index(1)
		scopes = append(scopes, store.Scope{Agent: agent.String(), Owner: owner.String()})
		if err := move(cur, "continue", []any{agent, owner, []any{}}); err != nil {
			return nil, fmt.Errorf("idbstore: scopes: %w", err)
		}
	}
}
