package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// A handler's panic is logged without its value, which is whatever the
// code that panicked put there (here a guard quoting the prompt): its
// type and where it happened say what to fix. A runtime error (a nil
// dereference, an index out of range) says nothing of the request, and
// is logged as it is.
func TestPanicValueNotLogged(t *testing.T) {
	const secret = "hunter2-PANIC-4417"
	e := newEnv(t, spool.Config{PromptGuards: []spool.PromptGuard{func(ctx context.Context, p string) error {
		if strings.HasPrefix(p, "index") {
			var s []int
			_ = s[len(p)]
		}
		panic("guard saw " + p)
	}}}, server.Options{})
	if r := e.post("/invoke", map[string]any{"prompt": "the password is " + secret, "sessionId": "s"}); r.status != 500 {
		t.Fatalf("panic: %d %s", r.status, r.body)
	}
	if r := e.post("/invoke", map[string]any{"prompt": "index " + secret, "sessionId": "s"}); r.status != 500 {
		t.Fatalf("panic: %d %s", r.status, r.body)
	}
	logs := e.logs.String()
	if strings.Contains(logs, secret) {
		t.Fatalf("the panic's value is in the log:\n%s", logs)
	}
	if !strings.Contains(logs, "handler panicked") || !strings.Contains(logs, "string") || !strings.Contains(logs, "index out of range") || !strings.Contains(logs, "panic_test.go") {
		t.Fatalf("the panics are not logged with their type, runtime error and stack:\n%s", logs)
	}
}
