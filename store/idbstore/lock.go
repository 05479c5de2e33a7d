//go:build js && wasm

package idbstore

import (
	"context"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/spool-go/spool/store"
)

// Lock blocks until the session's lock is held or ctx is done, and returns
// the function that releases it.
//
// The lock is a Web Lock (navigator.locks), named after the database and
// the session, so the pages and workers of the origin that share the
// database take turns, like processes sharing a file store. Where the Web
// Locks API is missing (a page served over plain HTTP from another host
// than localhost is not a secure context), the lock is a mutex within this
// page only; the conditional append keeps every session in order either
// way.
func (s *Store) Lock(ctx context.Context, key store.Key) (func(), error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	locks := js.Global().Get("navigator").Get("locks")
	if !s.cfg.webLocks || locks.IsUndefined() || locks.IsNull() {
		return s.locks.Lock(ctx, key)
	}
	return webLock(ctx, locks, "spool idbstore\x00"+s.cfg.name+"\x00"+key.Agent+"\x00"+key.Owner+"\x00"+key.ID)
}

var (
	promise         = js.Global().Get("Promise")
	abortController = js.Global().Get("AbortController")
)

// webLock requests the Web Lock name. The lock is held while the promise
// that the request's callback returns is pending; the release function
// resolves it.
func webLock(ctx context.Context, locks js.Value, name string) (func(), error) {
	granted := make(chan js.Value, 1) // the resolve function of the held promise
	failed := make(chan error, 1)
	var onGrant, onRelease, onFail js.Func
	var releaseFuncs sync.Once
	release := func() {
		releaseFuncs.Do(func() {
			onGrant.Release()
			onRelease.Release()
			onFail.Release()
		})
	}
	onGrant = js.FuncOf(func(this js.Value, args []js.Value) any {
		var resolve js.Value
		exec := js.FuncOf(func(this js.Value, args []js.Value) any {
			resolve = args[0]
			return nil
		})
		held := promise.New(exec) // calls exec before it returns
		exec.Release()
		granted <- resolve
		return held
	})
	// The request's promise settles when the lock is released (fulfilled)
	// or when the request is aborted before it was granted (rejected).
	onRelease = js.FuncOf(func(this js.Value, args []js.Value) any {
		release()
		return nil
	})
	onFail = js.FuncOf(func(this js.Value, args []js.Value) any {
		release()
		failed <- domError(args[0])
		return nil
	})
	abort := abortController.New()
	req, err := call(locks, "request", name, map[string]any{"signal": abort.Get("signal")}, onGrant)
	if err != nil {
		release()
		return nil, fmt.Errorf("idbstore: lock: %w", err)
	}
	req.Call("then", onRelease, onFail)

	unlock := func(resolve js.Value) func() {
		var once sync.Once
		return func() { once.Do(func() { resolve.Invoke() }) }
	}
	select {
	case resolve := <-granted:
		return unlock(resolve), nil
	case err := <-failed:
		return nil, fmt.Errorf("idbstore: lock: %w", err)
	case <-ctx.Done():
	}
	// Aborting removes a request still waiting; one already granted is not
	// affected, and is released at once.
	abort.Call("abort")
	select {
	case resolve := <-granted:
		resolve.Invoke()
	case <-failed:
	}
	return nil, ctx.Err()
}
