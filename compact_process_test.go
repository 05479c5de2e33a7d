package spool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// childCompactHangs compacts session "crash" of the file store in dir with
// a summarizer that never answers, says so on stdout, and waits to be
// killed.
func childCompactHangs(dir string) int {
	ctx := context.Background()
	st, err := filestore.New(ctx, dir, filestore.WithRetention(store.Retention{}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a, err := spool.New(spool.Config{Store: st, Model: scripted()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := a.Session(ctx, "crash")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = s.Compact(ctx, spool.CompactOptions{KeepTurns: 1, Summarizer: func(context.Context, spool.SummaryInput) (spool.Summary, error) {
		fmt.Println("summarizing")
		select {}
	}})
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// TestCompactionKilledMidway: a process killed (kill -9) while its
// summarizer runs leaves the session a chain and usable at once: the next
// turn runs, and the next compaction covers the same turns.
func TestCompactionKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx := t.Context()
	dir := t.TempDir()
	st, err := filestore.New(ctx, dir, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, spool.Config{Store: st})
	s := session(t, a, ctx, "crash")
	sendAll(t, s, "one", "two", "three")
	before, _ := s.Transcript(ctx)

	killChildWhen(t, "SPOOL_TEST_CHILD_COMPACT="+dir, "summarizing") // kill -9, mid-compaction

	entries, err := s.Transcript(ctx)
	if err != nil || len(entries) != len(before) {
		t.Fatalf("after the kill: %d entries (%v), want the %d before", len(entries), err, len(before))
	}
	sendAll(t, s, "four")
	res, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1})
	if err != nil || res.Turns != 3 {
		t.Fatalf("Compact after the kill = %+v, %v; want the first three turns covered", res, err)
	}
	entries, _ = s.Transcript(ctx)
	checkWellFormed(t, entries)
}

// TestConcurrentCompactions: two writers (two agents, as two processes
// are) compacting one session at once never both append a compaction of
// the same range: on a store with a lock the second waits and finds
// nothing left to compact; on one without, its append loses the race
// (ErrBusy) and appends nothing.
func TestConcurrentCompactions(t *testing.T) {
	ctx := t.Context()
	for name, st := range map[string]store.Store{"filestore (lock)": newFileStore(t), "memstore (no lock)": memstore.New()} {
		t.Run(name, func(t *testing.T) {
			a := newAgent(t, spool.Config{Store: st})
			b := newAgent(t, spool.Config{Store: st})
			sendAll(t, session(t, a, ctx, "shared"), "one", "two", "three")
			started := make(chan struct{}, 2)
			release := make(chan struct{})
			sum := func(ctx context.Context, in spool.SummaryInput) (spool.Summary, error) {
				started <- struct{}{}
				<-release
				return spool.Summary{Text: "summary"}, nil
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, ag := range []*spool.Agent{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = session(t, ag, ctx, "shared").Compact(ctx, spool.CompactOptions{KeepTurns: 1, Summarizer: sum})
				}()
			}
			<-started
			close(release)
			wg.Wait()
			ok, lost := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, spool.ErrNothingToCompact), errors.Is(err, spool.ErrBusy):
					lost++
				default:
					t.Fatalf("Compact = %v", err)
				}
			}
			entries, _ := st.Read(ctx, session(t, a, ctx, "shared").Key())
			n := 0
			for _, e := range entries {
				if e.Type == transcript.TypeCompaction {
					n++
				}
			}
			if ok != 1 || lost != 1 || n != 1 {
				t.Fatalf("%d compactions appended (%d succeeded, %d lost: %v), want exactly one", n, ok, lost, errs)
			}
			checkWellFormed(t, entries)
		})
	}
}

func newFileStore(t *testing.T) store.Store {
	st, err := filestore.New(t.Context(), t.TempDir(), filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCompactionOnEveryStore: a compaction on every store, read back by a
// new agent (as another process would), which sends the summary in place
// of the covered turns and still shows every message: a compaction is an
// entry like any other, kept without a new capability.
func TestCompactionOnEveryStore(t *testing.T) {
	for name, open := range teststores.All() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st := open(t)
			a := newAgent(t, spool.Config{Store: st})
			s := session(t, a, ctx, "long")
			sendAll(t, s, "one", "two", "three")
			if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1}); err != nil {
				t.Fatal(err)
			}
			b := newAgent(t, spool.Config{Store: st})
			got, err := session(t, b, ctx, "long").History(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := append(history.SummaryMessages("- one\n- two"),
				model.Message{Role: model.RoleUser, Content: "three"}, model.Message{Role: model.RoleAssistant, Content: "echo: three"})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: history from a new agent\n%v\nwant\n%v", name, got, want)
			}
			if msgs, err := session(t, b, ctx, "long").Messages(ctx, 0); err != nil || len(msgs) != 6 {
				t.Fatalf("%s: %d messages (%v), want all 6", name, len(msgs), err)
			}
		})
	}
}
