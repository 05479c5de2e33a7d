package spool_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/sqlitestore"
	"github.com/spool-go/spool/transcript"
)

// TestMain lets the test binary act as a second process: with
// SPOOL_TEST_CHILD set it runs turns on a shared store and exits.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SPOOL_TEST_CHILD_DIR"); dir != "" {
		os.Exit(child(dir, os.Getenv("SPOOL_TEST_CHILD_NAME")))
	}
	if path := os.Getenv("SPOOL_TEST_CHILD_SQLITE"); path != "" {
		os.Exit(childHangs(path))
	}
	if dir := os.Getenv("SPOOL_TEST_CHILD_COMPACT"); dir != "" {
		os.Exit(childCompactHangs(dir))
	}
	os.Exit(m.Run())
}

func child(dir, name string) int {
	ctx := context.Background()
	st, err := filestore.New(ctx, dir, filestore.WithRetention(store.Retention{}))
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
	s, err := a.Session(ctx, "shared")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := range 25 {
		if _, err := s.Send(ctx, name+" turn "+strconv.Itoa(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// childHangs starts a turn on an SQLite store whose model never answers,
// says so on stdout, and waits to be killed.
func childHangs(path string) int {
	ctx := context.Background()
	st, err := sqlitestore.New(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a, err := spool.New(spool.Config{Store: st, Model: echoScript(func(*model.Request) []model.Event {
		fmt.Println("asking the model")
		select {}
	})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := a.Session(ctx, "crashed")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.Send(ctx, "a question the process dies on")
	return 1
}

// TestSQLiteTurnKilledMidway: a process killed in the middle of a turn on
// an SQLite store (its question recorded, its answer never) leaves the
// session usable at once: the store's turn lock died with the process, so
// the next turn, holding it, knows the open turn is dead and closes it as
// cancelled, instead of waiting out the stale-turn limit and answering
// ErrBusy.
func TestSQLiteTurnKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	killChildWhen(t, "SPOOL_TEST_CHILD_SQLITE="+path, "asking the model") // kill -9, mid-turn

	ctx := t.Context()
	st, err := sqlitestore.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := newAgent(t, spool.Config{Store: st})
	s := session(t, a, ctx, "crashed")
	start := time.Now()
	res, err := s.Send(ctx, "are you there?")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("the next turn = %+v, %v; want ok", res, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the next turn took %v, want under 2s", d)
	}
	entries, _ := s.Transcript(ctx)
	if e := entries[1]; e.Type != transcript.TypeTurnEnd || e.Status != transcript.StatusCancelled {
		t.Fatalf("the dead turn's next entry is %+v, want its end, cancelled", e)
	}
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
			t.Fatalf("a child process failed: %v, want each to finish its turns", err)
		}
	}
	st, err := filestore.New(t.Context(), dir, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.Read(t.Context(), store.Key{Agent: "default", ID: "shared"})
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

// BenchmarkSQLiteKilledMidTurn measures how long after a process is
// killed mid-turn on an SQLite store its session takes another turn (issue
// 12's twelfth row): the median of 3 kills, in seconds. Run it with
// -benchtime 1x.
func BenchmarkSQLiteKilledMidTurn(b *testing.B) {
	var waits []float64
	for b.Loop() {
		for range 3 {
			path := filepath.Join(b.TempDir(), "spool.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
			cmd.Env = append(os.Environ(), "SPOOL_TEST_CHILD_SQLITE="+path)
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				b.Fatal(err)
			}
			cmd.Process.Kill()
			cmd.Wait()
			start := time.Now()
			ctx := context.Background()
			st, err := sqlitestore.New(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			a, _ := spool.New(spool.Config{Store: st, Model: echo.New()})
			s, _ := a.Session(ctx, "crashed")
			if _, err := s.Send(ctx, "are you there?"); err != nil {
				b.Fatal(err)
			}
			waits = append(waits, time.Since(start).Seconds())
			st.Close()
		}
	}
	b.ReportMetric(benchdata.Median(waits), "usable-after-s")
}

// killChildWhen runs this test binary as a child process with env added,
// waits for the child to print want on a line of its own, and kills it
// (SIGKILL, as a crash would) at that point.
func killChildWhen(t *testing.T, env, want string) {
	t.Helper()
	cmd, _ := spooltest.StartChild(t, "", want, env)
	cmd.Process.Kill()
	cmd.Wait()
}
