package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// waitFor waits until out shows want.
func waitFor(t *testing.T, out *spooltest.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the watch never printed %q; it printed:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A watch in the process that runs the turns: the stored turns first,
// then a turn that was half done when the watch began (its stored step
// printed from the transcript, the rest live, nothing twice), then the
// next turn's answer as it streams.
func TestWatchFollowsTurns(t *testing.T) {
	ctx := context.Background()
	sess, st := watchedSession(t, spool.Config{Model: echo.New(echo.WithDelay(2 * time.Millisecond)), Tools: demoTools(), ToolMode: transcript.ToolModeAuto})
	if _, err := sess.Send(ctx, "the first question"); err != nil {
		t.Fatal(err)
	}
	var out *spooltest.Buffer
	var end func()
	// The turn calls a tool, then answers; the watch begins once the
	// call and its result are stored and the answer streams (the turn
	// waits while this test holds its event).
	seenResult := false
	for ev, err := range sess.Stream(ctx, "/call get_time {}") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == spool.EventToolResult {
			seenResult = true
		}
		if ev.Kind == spool.EventText && seenResult {
			seenResult = false
			out, end = startWatch(t, sess, st)
			waitFor(t, out, "[tool: get_time →")
		}
	}
	waitFor(t, out, "tool get_time returned:")
	// The next turn streams into the watch.
	for ev, err := range sess.Stream(ctx, "three little words") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == spool.EventText && strings.Contains(ev.Text, "little") {
			waitFor(t, out, "assistant: echo: three little")
			if strings.Contains(out.String(), "echo: three little words") {
				t.Fatalf("the watch printed the answer before it streamed:\n%s", out.String())
			}
		}
	}
	waitFor(t, out, "assistant: echo: three little words\n")
	end()
	got := out.String()
	for _, want := range []string{"user: the first question", "assistant: echo: the first question", "user: /call get_time {}",
		"[calls get_time {}]", "[tool: get_time →", "tool get_time returned:", "user: three little words"} {
		if n := strings.Count(got, want); n != 1 {
			t.Fatalf("%q printed %d times:\n%s", want, n, got)
		}
	}
	if strings.Index(got, "the first question") > strings.Index(got, "three little") {
		t.Fatalf("out of order:\n%s", got)
	}
}

// tailStart keeps the newest n turns.
func TestTailStart(t *testing.T) {
	var entries []transcript.Entry
	for _, id := range []string{"a", "a", "", "b", "b", "b", "c"} {
		entries = append(entries, transcript.Entry{TurnID: id})
	}
	for n, want := range map[int]int{0: 7, 1: 6, 2: 3, 3: 0, 10: 0} {
		if got := tailStart(entries, n); got != want {
			t.Errorf("tailStart(%d) = %d, want %d", n, got, want)
		}
	}
}

// The command itself: an unknown id names it; --until-idle ends at once
// when no turn runs; --json prints the stored entries as JSON lines,
// --tail keeps the newest turns.
func TestWatchCommand(t *testing.T) {
	url := "file:" + t.TempDir()
	c := newCLI(t, map[string]string{"SPOOL_STORE": url})
	chatSessions(t, c, url, chatScript{"s1", []string{"one", "two", "three"}})
	code, _, errs := c.run("", "sessions", "watch", "nope")
	if code != 1 || !strings.Contains(errs, `session "nope" not found`) {
		t.Fatalf("unknown id: exit %d, %s", code, errs)
	}
	if code, _, errs := c.run("", "sessions", "watch", "s1", "--tail", "-1"); code != 2 || !strings.Contains(errs, "--tail") {
		t.Fatalf("--tail -1: exit %d, %s", code, errs)
	}
	code, out, errs := c.run("", "sessions", "watch", "s1", "--until-idle", "--tail", "2")
	if code != 0 || strings.Contains(out, "user: one") || !strings.Contains(out, "user: two\nassistant: echo: two\n") || !strings.Contains(out, "user: three") {
		t.Fatalf("--until-idle --tail 2: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = c.run("", "sessions", "watch", "s1", "--until-idle", "--json", "--tail", "1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("--json: exit %d\n%s%s", code, out, errs)
	}
	var first struct{ Entry transcript.Entry }
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Entry.Type != transcript.TypeUserMessage {
		t.Fatalf("--json line %s: %v", lines[0], err)
	}
}

// A turn whose answer the provider stopped short is followed to its end,
// which the watch says is incomplete.
func TestWatchSaysAnAnswerIsIncomplete(t *testing.T) {
	cut := echo.New(echo.WithScript(func(*model.Request) []model.Event {
		return []model.Event{{Kind: model.EventText, Text: "once upon a"}, {Kind: model.EventStop, Stop: model.StopLength}}
	}))
	sess, st := watchedSession(t, spool.Config{Model: cut})
	out, end := startWatch(t, sess, st)
	time.Sleep(100 * time.Millisecond) // the watch follows the session
	if _, err := sess.Send(context.Background(), "tell me a story"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "[answer incomplete: the answer reached the model's output token limit")
	end()
}

// watchedSession returns session w1 of agent "default" made of cfg, on a
// memory store, and the store.
func watchedSession(t *testing.T, cfg spool.Config) (*spool.Session, *memstore.Store) {
	t.Helper()
	st := memstore.New()
	cfg.Name, cfg.Store = "default", st
	agent, err := spool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	sess, err := agent.Session(context.Background(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	return sess, st
}

// startWatch starts `spool sessions watch` of sess, following, and
// returns what it prints and the function that ends it.
func startWatch(t *testing.T, sess *spool.Session, st store.Store) (*spooltest.Buffer, func()) {
	out := &spooltest.Buffer{}
	env := &environ{stdout: out, stderr: io.Discard, getenv: func(string) string { return "" }}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		w := &watcher{env: env, st: st, k: store.Key{Agent: "default", ID: "w1"}}
		done <- w.run(ctx, sess, 10, true)
	}()
	var once sync.Once
	end := func() {
		once.Do(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("the watch ended with %v", err)
			}
		})
	}
	t.Cleanup(end)
	return out, end
}
