package store_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

func TestErrors(t *testing.T) {
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	corrupt := fmt.Errorf("read: %w", &store.CorruptError{Key: key, Position: 3, Where: "s.jsonl line 4", Err: io.ErrUnexpectedEOF})
	if !errors.Is(corrupt, store.ErrCorrupt) || !errors.Is(corrupt, io.ErrUnexpectedEOF) {
		t.Errorf("a wrapped CorruptError must match ErrCorrupt and its cause: %v", corrupt)
	}
	for _, part := range []string{"a/o/s", "entry 3", "s.jsonl line 4", "unexpected EOF"} {
		if !strings.Contains(corrupt.Error(), part) {
			t.Errorf("CorruptError %q does not mention %q", corrupt, part)
		}
	}
	if msg := (&store.CorruptError{Key: key, Position: -1}).Error(); strings.Contains(msg, "entry") {
		t.Errorf("a CorruptError without a position mentions one: %q", msg)
	}
	expired := fmt.Errorf("turn: %w", &store.ExpiredError{Key: key})
	if !errors.Is(expired, store.ErrSessionExpired) || !strings.Contains(expired.Error(), "a/o/s") {
		t.Errorf("ExpiredError must match ErrSessionExpired and name the session: %v", expired)
	}
	conflict := storekit.ConflictError(key, "p", "h")
	if !errors.Is(conflict, store.ErrConflict) || !strings.Contains(conflict.Error(), `"p"`) || !strings.Contains(conflict.Error(), `"h"`) {
		t.Errorf("ConflictError must match ErrConflict and name both ids: %v", conflict)
	}
	sentinels := []error{store.ErrNotFound, store.ErrConflict, store.ErrCorrupt, store.ErrInvalidKey, store.ErrInvalidEntry, store.ErrInvalidCursor, store.ErrSessionExpired}
	for i, a := range sentinels {
		for j, b := range sentinels {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}

func TestPageSizeAndRetention(t *testing.T) {
	for limit, want := range map[int]int{-5: store.DefaultListLimit, 0: store.DefaultListLimit, 1: 1, 999: 999, store.MaxListLimit: store.MaxListLimit, store.MaxListLimit + 1: store.MaxListLimit} {
		if got := (store.ListOptions{Limit: limit}).PageSize(); got != want {
			t.Errorf("PageSize with Limit %d = %d, want %d", limit, got, want)
		}
	}
	if !(store.Retention{}).Unlimited() || store.DefaultRetention.Unlimited() || (store.Retention{MaxAge: 1}).Unlimited() {
		t.Error("Unlimited: only a Retention without limits keeps everything")
	}
}
