//go:build js && wasm

package idbstore

import (
	"context"
	"fmt"
	"syscall/js"
)

// This file turns IndexedDB's callbacks into Go channels.
//
// A transaction stays active only while the browser dispatches an event of
// one of its requests; a request made at any other time fails with
// TransactionInactiveError, and a transaction with no request pending
// commits. A Go callback (js.FuncOf) runs on a goroutine of its own, and the
// Go runtime returns to JavaScript only once every goroutine is blocked. So
// when a callback hands a request's result to a waiting goroutine over a
// channel, that goroutine runs, and may make the transaction's next request,
// before the event dispatch ends. The code that drives a transaction must
// therefore block on nothing but that transaction's own requests between
// them (no locks, no other I/O); then a conditional append (read the head,
// write the entry) runs in one transaction, as IndexedDB means it to.

// DOMError is an error the browser reported: a DOMException of IndexedDB or
// of the Web Locks API, for example QuotaExceededError when the origin's
// storage is full, or VersionError for a database that a newer idbstore has
// upgraded.
type DOMError struct {
	Name    string // the exception's name, such as "QuotaExceededError"
	Message string // the browser's message
}

func (e *DOMError) Error() string {
	if e.Message == "" {
		return e.Name
	}
	return e.Name + ": " + e.Message
}

// domError converts a thrown or reported JavaScript error into a *DOMError.
func domError(v js.Value) error {
	if v.IsNull() || v.IsUndefined() {
		return &DOMError{Name: "UnknownError", Message: "the browser gave no error"}
	}
	if v.Type() != js.TypeObject {
		return &DOMError{Name: "Error", Message: v.String()}
	}
	name, msg := v.Get("name"), v.Get("message")
	e := &DOMError{Name: "Error"}
	if name.Type() == js.TypeString {
		e.Name = name.String()
	}
	if msg.Type() == js.TypeString {
		e.Message = msg.String()
	}
	return e
}

// try runs f and returns, as an error, the JavaScript exception that a
// syscall/js call in it threw (syscall/js panics with a js.Error for those).
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			jsErr, ok := r.(js.Error)
			if !ok {
				panic(r)
			}
			err = domError(jsErr.Value)
		}
	}()
	f()
	return nil
}

// call calls method of v, returning a thrown exception as an error.
func call(v js.Value, method string, args ...any) (js.Value, error) {
	var out js.Value
	err := try(func() { out = v.Call(method, args...) })
	return out, err
}

// result is how a request ended: its result, or its error.
type result struct {
	v   js.Value
	err error
}

// watch returns a channel that receives how request req ends. The handler
// releases itself when the request settles, so the caller may stop
// listening (its context is done) without leaking it.
func watch(req js.Value) <-chan result {
	ch := make(chan result, 1)
	var fn js.Func
	fn = js.FuncOf(func(this js.Value, args []js.Value) any {
		req.Set("onsuccess", js.Null())
		req.Set("onerror", js.Null())
		fn.Release()
		if args[0].Get("type").String() == "success" {
			ch <- result{v: req.Get("result")}
		} else {
			ch <- result{err: domError(req.Get("error"))}
		}
		return nil
	})
	req.Set("onsuccess", fn)
	req.Set("onerror", fn)
	return ch
}

// tx is a transaction and the channel its end arrives on.
type tx struct {
	t     js.Value
	write bool
	done  chan error // nil when it committed, else why it aborted
}

// newTx wraps transaction t.
func newTx(t js.Value, write bool) *tx {
	x := &tx{t: t, write: write, done: make(chan error, 1)}
	var fn js.Func
	fn = js.FuncOf(func(this js.Value, args []js.Value) any {
		t.Set("oncomplete", js.Null())
		t.Set("onabort", js.Null())
		fn.Release()
		if args[0].Get("type").String() == "complete" {
			x.done <- nil
		} else {
			err := domError(t.Get("error"))
			if t.Get("error").IsNull() {
				err = &DOMError{Name: "AbortError", Message: "the transaction was aborted"}
			}
			x.done <- err
		}
		return nil
	})
	t.Set("oncomplete", fn)
	t.Set("onabort", fn)
	return x
}

// store returns the transaction's object store name.
func (x *tx) store(name string) js.Value { return x.t.Call("objectStore", name) }

// request makes a request with method of src (an object store or index) and
// waits for its result. On a done ctx it aborts the transaction and returns
// ctx.Err(); nothing the transaction wrote stays.
func (x *tx) request(ctx context.Context, src js.Value, method string, args ...any) (js.Value, error) {
	req, err := call(src, method, args...)
	if err != nil {
		return js.Value{}, err
	}
	select {
	case r := <-watch(req):
		return r.v, r.err
	case <-ctx.Done():
		x.abort()
		return js.Value{}, ctx.Err()
	}
}

// abort aborts the transaction, and for a readwrite one waits until the
// browser confirms that nothing of it was written. A transaction aborted
// while one of its requests is pending always rolls back.
func (x *tx) abort() {
	if try(func() { x.t.Call("abort") }) != nil {
		return // it had finished already
	}
	if x.write {
		<-x.done
	}
}

// commit waits for the transaction to commit: for a readwrite transaction
// the point where its writes are durable. The transaction commits by itself
// once no request is pending. On a done ctx it aborts it; when the commit
// won that race, the writes are stored and commit returns nil, so that the
// caller reports success exactly when the data is there.
func (x *tx) commit(ctx context.Context) error {
	select {
	case err := <-x.done:
		return err
	case <-ctx.Done():
	}
	_ = try(func() { x.t.Call("abort") }) // throws when it is committing already
	if err := <-x.done; err != nil {
		return ctx.Err()
	}
	return nil
}

// cursor walks the records an openCursor or openKeyCursor request visits.
// The same request fires a success event for each record.
type cursor struct {
	req js.Value
	fn  js.Func
	ch  chan result
}

// openCursor opens a cursor with method ("openCursor" or "openKeyCursor")
// of src.
func openCursor(src js.Value, method string, args ...any) (*cursor, error) {
	req, err := call(src, method, args...)
	if err != nil {
		return nil, err
	}
	c := &cursor{req: req, ch: make(chan result, 1)}
	c.fn = js.FuncOf(func(this js.Value, args []js.Value) any {
		r := result{v: req.Get("result")}
		if args[0].Get("type").String() != "success" {
			r = result{err: domError(req.Get("error"))}
		}
		select {
		case c.ch <- r:
		default: // never: one event per continue, and each is received first
		}
		return nil
	})
	req.Set("onsuccess", c.fn)
	req.Set("onerror", c.fn)
	return c, nil
}

// next waits for the cursor's next position: an IDBCursor, or null past the
// last record. The caller moves the cursor (continue, advance) before
// calling next again, and calls close when it stops early. On a done ctx
// next aborts the transaction.
func (c *cursor) next(ctx context.Context, x *tx) (js.Value, error) {
	select {
	case r := <-c.ch:
		if r.err != nil || r.v.IsNull() {
			c.close()
		}
		return r.v, r.err
	case <-ctx.Done():
		c.close()
		x.abort()
		return js.Value{}, ctx.Err()
	}
}

// close detaches and releases the handler. Events that still arrive find
// no handler, which is harmless.
func (c *cursor) close() {
	if c.fn.IsUndefined() {
		return
	}
	c.req.Set("onsuccess", js.Null())
	c.req.Set("onerror", js.Null())
	c.fn.Release()
	c.fn = js.Func{}
}

// move calls method ("continue", "advance") of the IDBCursor cur.
func move(cur js.Value, method string, args ...any) error {
	if _, err := call(cur, method, args...); err != nil {
		return fmt.Errorf("cursor %s: %w", method, err)
	}
	return nil
}
