//go:build !race

package spool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// TestPromptOverLineLimit: a prompt larger than a transcript line may be
// (transcript.MaxLineSize, 64 MiB) is a clear error, stores nothing, and
// the session carries on. (Not under the race detector, which makes
// copying 64 MiB several times take half a minute.)
func TestPromptOverLineLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MiB")
	}
	root, _, project, _ := hostileWorld(t)
	ctx := t.Context()
	s := session(t, project, ctx, "one")
	before := spooltest.FileTree(t, root)
	_, err := s.Send(ctx, strings.Repeat("x", transcript.MaxLineSize))
	if !errors.Is(err, store.ErrInvalidEntry) || !strings.Contains(err.Error(), "a line may hold") {
		t.Fatalf("a prompt over the line limit: %v; want store.ErrInvalidEntry saying why", err)
	}
	unchanged(t, "a prompt over the line limit", root, before)
	if _, err := s.Send(ctx, "and on"); err != nil {
		t.Fatal(err)
	}
}
