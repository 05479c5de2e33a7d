package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// panickyStore is a memory store whose List panics: with a value that
// quotes what it was asked, or, once index is set, with a runtime error.
type panickyStore struct {
	*memstore.Store
	index atomic.Bool
}

const panicSecret = "hunter2-PANIC-4417"

func (s *panickyStore) List(ctx context.Context, ns store.Namespace, opt store.ListOptions) (store.SessionPage, error) {
	if s.index.Load() {
		var x []int
		_ = x[len(panicSecret)]
	}
	panic("store saw " + panicSecret)
}

// A handler's panic is logged without its value, which is whatever the
// code that panicked put there (here a store quoting what it was asked;
// a guard's, a model's or an observer's panic the runtime contains): its
// type and where it happened say what to fix. A runtime error (a nil
// dereference, an index out of range) says nothing of the request, and
// is logged as it is.
func TestPanicValueNotLogged(t *testing.T) {
	st := &panickyStore{Store: memstore.New()}
	e := newEnv(t, spool.Config{Store: st}, server.Options{})
	if r := e.get("/v1/sessions"); r.status != 500 {
		t.Fatalf("panic: %d %s", r.status, r.body)
	}
	st.index.Store(true)
	if r := e.get("/v1/sessions"); r.status != 500 {
		t.Fatalf("panic: %d %s", r.status, r.body)
	}
	logs := e.logs.String()
	if strings.Contains(logs, panicSecret) {
		t.Fatalf("the panic's value is in the log:\n%s", logs)
	}
	if !strings.Contains(logs, "handler panicked") || !strings.Contains(logs, "string") || !strings.Contains(logs, "index out of range") || !strings.Contains(logs, "panic_test.go") {
		t.Fatalf("the panics are not logged with their type, runtime error and stack:\n%s", logs)
	}
}
