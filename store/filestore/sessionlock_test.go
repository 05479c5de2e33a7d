package filestore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// TestSessionLocksAreTheirOwn: while one session's in-process lock is
// held, every other session's is free, the same session's waits until its
// context ends, and a lock nobody holds or waits for is not kept.
func TestSessionLocksAreTheirOwn(t *testing.T) {
	s, err := New(t.Context(), t.TempDir(), WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := store.Key{Agent: "a", ID: "held"}
	release, err := s.sessions.Lock(t.Context(), held)
	if err != nil {
		t.Fatal(err)
	}
	// Not a bound on time: a lock shared with the held one never comes.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 200 {
		other := store.Key{Agent: "a", ID: fmt.Sprint("s", i)}
		r, err := s.sessions.Lock(ctx, other)
		if err != nil {
			t.Fatalf("session %s waited for %s: %v", other, held, err)
		}
		r()
	}
	gone, stop := context.WithCancel(t.Context())
	stop()
	if _, err := s.sessions.Lock(gone, held); !errors.Is(err, context.Canceled) {
		t.Fatalf("the held session's lock again: %v, want context.Canceled", err)
	}
	release()
	r, err := s.sessions.Lock(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	r()
	if n := s.sessions.Len(); n != 0 {
		t.Fatalf("%d session locks kept with none held", n)
	}
}
