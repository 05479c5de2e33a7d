package spool

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// An append's context keeps the caller's values, not its cancellation,
// and ends at its deadline whether a store asks Err or waits on Done.
func TestAppendContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	c := newAppendContext(parent)
	defer c.stop()
	cancel()
	if err := c.Err(); err != nil {
		t.Fatalf("Err after the caller's cancel: %v, want nil", err)
	}
	if c.Value(ctxKey{}) != "v" {
		t.Fatal("the caller's value is lost")
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) <= 0 || time.Until(d) > appendTimeout {
		t.Fatalf("deadline %v, %v", d, ok)
	}
	select {
	case <-c.Done():
		t.Fatal("done before its deadline")
	default:
	}
	if cause := context.Cause(c); cause != nil {
		t.Fatalf("cause %v before the deadline", cause)
	}

	// Past the deadline: Err says so, and Done is closed, in either order.
	past := &appendContext{Context: context.Background(), deadline: time.Now().Add(-time.Second)}
	if err := past.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline: %v", err)
	}
	<-past.Done()
	past2 := &appendContext{Context: context.Background(), deadline: time.Now().Add(-time.Second)}
	<-past2.Done()
	if err := past2.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err once Done closed: %v", err)
	}

	// A child sees the deadline come through Done.
	soon := &appendContext{Context: context.Background(), deadline: time.Now().Add(10 * time.Millisecond)}
	child, stop := context.WithCancel(soon)
	defer stop()
	<-child.Done()
	if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("child: %v", err)
	}
	soon.stop()
}
