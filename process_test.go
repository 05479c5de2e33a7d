package spool_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/transcript"
)

// TestMain lets the test binary act as a second process: with
// SPOOL_TEST_CHILD set it runs turns on a shared store and exits.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SPOOL_TEST_CHILD_DIR"); dir != "" {
		os.Exit(child(dir, os.Getenv("SPOOL_TEST_CHILD_NAME")))
	}
	os.Exit(m.Run())
}

func child(dir, name string) int {
	ctx := context.Background()
	st, err := filestore.New(dir, filestore.WithRetention(store.Retention{}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	a, err := spool.New(spool.Config{Store: st, Model: echo.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, _ := a.Session(ctx, "shared")
	for i := range 25 {
		if _, err := s.Send(ctx, name+" turn "+strconv.Itoa(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// TestTwoProcessesOnOneFileStore runs turns on one session from two
// processes at once: the store's lock and conditional append keep the
// transcript one chain of whole turns, every turn present.
func TestTwoProcessesOnOneFileStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for _, name := range []string{"A", "B"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SPOOL_TEST_CHILD_DIR="+dir, "SPOOL_TEST_CHILD_NAME="+name)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	st, err := filestore.New(dir, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.Read(context.Background(), store.Key{Agent: "default", ID: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
	ok := 0
	for _, e := range entries {
		if e.Type == transcript.TypeTurnEnd && e.Status == transcript.StatusOK {
			ok++
		}
	}
	if ok != 50 {
		t.Fatalf("%d turns ended ok, want 50", ok)
	}
}
