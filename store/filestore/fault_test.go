package filestore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/transcript"
)

// faultCase is one way for the disk to fail under a turn: brk makes it
// fail (it may close the agent it is given and return a new one, for
// faults the OS only allows with no file open for writing), fix makes it
// work again.
type faultCase struct {
	brk  func(t *testing.T, a *spool.Agent) *spool.Agent
	fix  func(t *testing.T)
	want syscall.Errno
}

func newFaultAgent(t *testing.T, root string) *spool.Agent {
	t.Helper()
	st, err := filestore.New(t.Context(), root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := spool.New(spool.Config{Store: st, Model: echo.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		st.Close()
	})
	return a
}

// runFault runs three turns, breaks the disk, checks that the next turn
// fails naming the cause and that the transcript on disk is every earlier
// entry and only whole lines, fixes the disk, and checks that the next turn
// works and the transcript is one chain of whole turns.
func runFault(t *testing.T, root string, fc faultCase) {
	t.Helper()
	ctx := t.Context()
	a := newFaultAgent(t, root)
	s, err := a.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"one", "two", "three"} {
		if _, err := s.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "default", "s.jsonl")

	a = fc.brk(t, a)
	if s, err = a.Session(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Send(ctx, "a prompt the disk cannot take "+strings.Repeat("x", 8<<10))
	if err == nil {
		t.Fatal("Send on a broken disk succeeded")
	}
	if !errors.Is(err, fc.want) || !strings.Contains(err.Error(), fc.want.Error()) {
		t.Fatalf("Send on a broken disk: %v; want an error naming %q", err, fc.want.Error())
	}
	t.Logf("the turn failed with: %v", err)
	checkIntact(t, path, before)

	fc.fix(t)
	res, err := s.Send(ctx, "after the fault")
	if err != nil {
		t.Fatalf("Send once the disk works again: %v", err)
	}
	if res.Text != "echo: after the fault" {
		t.Fatalf("answer %q", res.Text)
	}
	after, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkTurns(t, "s", after)
	for i := range before {
		if !after[i].Equal(before[i]) {
			t.Fatalf("entry %d changed", i)
		}
	}
	checkIntact(t, path, before)
}

// checkIntact reads the transcript file as it is: whole lines only, each
// an entry, starting with want.
func checkIntact(t *testing.T, path string, want []transcript.Entry) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the transcript ends in half a line: %.60q", b[bytes.LastIndexByte(b, '\n')+1:])
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) < len(want) {
		t.Fatalf("%d lines, want at least the %d there were", len(lines), len(want))
	}
	for i, line := range lines {
		e, err := transcript.Parse(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if i < len(want) && !e.Equal(want[i]) {
			t.Fatalf("line %d is not the entry that was there", i+1)
		}
	}
}

// TestFaultIOError: an I/O error while an append syncs (the line written,
// the sync failing) fails the turn naming it, and the line is cut off
// again.
func TestFaultIOError(t *testing.T) {
	root := t.TempDir()
	var armed bool
	defer filestore.SetFaultHook(func(path string) error {
		if armed && strings.HasPrefix(path, root) {
			return &os.PathError{Op: "fdatasync", Path: path, Err: syscall.EIO}
		}
		return nil
	})()
	runFault(t, root, faultCase{
		brk:  func(t *testing.T, a *spool.Agent) *spool.Agent { armed = true; return a },
		fix:  func(t *testing.T) { armed = false },
		want: syscall.EIO,
	})
}
