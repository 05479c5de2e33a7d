package spool_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/transcript"
)

// With SPOOL_TEST_CHILD_LIVE set to a store URL, this test binary is a
// replica that streams a slow turn on session "dead" and says
// "streaming" once the answer is under way, then goes on until killed.
func init() {
	u := os.Getenv("SPOOL_TEST_CHILD_LIVE")
	if u == "" {
		return
	}
	ctx := context.Background()
	st, err := store.Open(ctx, u)
	if err != nil {
		os.Exit(2)
	}
	a, err := spool.New(spool.Config{Store: st, Model: echo.New(echo.WithDelay(100 * time.Millisecond))})
	if err != nil {
		os.Exit(2)
	}
	sess, _ := a.Session(ctx, "dead")
	n := 0
	for ev, err := range sess.Stream(ctx, strings.Repeat("word ", 500)) {
		if err != nil {
			os.Exit(2)
		}
		if ev.Kind == spool.EventText {
			if n++; n == 3 {
				os.Stdout.WriteString("streaming\n")
			}
		}
	}
	os.Exit(0)
}

// A watcher on a surviving replica, when the replica running the turn is
// killed (SIGKILL) mid-stream, keeps waiting: it gets the turn's
// cancelled end once it is recorded (here by the watcher's own replica,
// as soon as the store's lock shows that no process holds the turn). A
// watcher that reconnects afterwards with the id of an event it had gets
// the stored steps and that end too.
func TestWatcherSurvivesKilledReplica(t *testing.T) {
	u := teststores.PostgresURL(t)
	ctx := context.Background()
	cmd, _ := spooltest.StartChild(t, "", "streaming", "SPOOL_TEST_CHILD_LIVE="+u)
	defer cmd.Wait()
	defer cmd.Process.Kill()
	st, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(st)
	a := newAgent(t, spool.Config{Store: st})
	sess := session(t, a, ctx, "dead")
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	evs := make(chan spool.Event, 1024)
	go func() {
		defer close(evs)
		for ev, err := range sess.Watch(wctx, spool.WatchOptions{}) {
			if err != nil {
				t.Error(err)
				return
			}
			evs <- ev
		}
	}()
	var got []spool.Event
	for len(got) < 3 {
		ev, ok := <-evs
		if !ok {
			t.Fatalf("the watch ended after %v", got)
		}
		got = append(got, ev)
	}
	cmd.Process.Kill() // kill -9, mid-stream
	for ev := range evs {
		got = append(got, ev)
	}
	end := got[len(got)-1]
	if end.Kind != spool.EventTurnEnd || end.Result.Status != transcript.StatusCancelled {
		t.Fatalf("the watch of a killed replica's turn ended with %s %+v", end.Kind, end.Result)
	}
	checkIncreasing(t, got)
	entries, err := sess.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
	if last := entries[len(entries)-1]; last.Type != transcript.TypeTurnEnd || last.Status != transcript.StatusCancelled {
		t.Fatalf("the transcript ends %s %s", last.Type, last.Status)
	}
	// Reconnecting later, from an event it had: the stored steps (here
	// the prompt) and the end.
	after, _ := spool.ParseEventID(got[1].ID)
	var again []spool.Event
	for ev, err := range sess.Watch(wctx, spool.WatchOptions{After: after}) {
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, ev)
	}
	if len(again) == 0 || again[len(again)-1].Kind != spool.EventTurnEnd || again[len(again)-1].Result.Status != transcript.StatusCancelled {
		t.Fatalf("reconnecting after the kill: %v", again)
	}
	checkIncreasing(t, append([]spool.Event{got[1]}, again...))
}
