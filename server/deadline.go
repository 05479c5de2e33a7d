package server

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// bodyDeadline returns r's body with a read deadline of d from now on the
// connection (Options.ReadTimeout), lifted as soon as the body has been
// read to its end: the deadline bounds the body, never the response after
// it. A body that fails (the deadline passed, or it is too large) keeps
// it: net/http would otherwise wait for the rest of the body, to keep the
// connection, before it sends the answer. A request without a body gets none, so that a long
// GET (an event stream) is never cut. Where the connection cannot take a
// deadline (a test's ResponseRecorder), the body is left as it is.
func bodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) io.ReadCloser {
	if d <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r.Body
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
		return r.Body
	}
	return &deadlineBody{ReadCloser: r.Body, rc: rc}
}

// deadlineBody lifts the connection's read deadline once the body is
// done.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.lifted.CompareAndSwap(false, true) {
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
