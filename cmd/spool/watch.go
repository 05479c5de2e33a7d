package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// defaultWatchTail is how many of a session's turns sessions watch prints
// before it follows: enough to see where the conversation is.
const defaultWatchTail = 10

// sessionsWatch is spool sessions watch ID: the session's newest turns,
// then what happens to it as it happens (spool.Session.Watch with Follow),
// answers as they stream, until Ctrl-C (exit 0), or with --until-idle once
// no turn runs.
func sessionsWatch(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("watch", "spool sessions watch ID [--tail N] [--until-idle] [--json]", env)
	c.register(fs, env)
	tail := fs.Int("tail", defaultWatchTail, "print the newest N turns first (0: none)")
	untilIdle := fs.Bool("until-idle", false, "end once no turn runs: after the running turn's end, at once when none runs")
	asJSON := fs.Bool("json", false, `print JSON lines: {"entry":…} for what was stored, {"event":…} for each live event`)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *tail < 0 {
		return usagef("--tail must be 0 or more")
	}
	st, k, err := sessionArg(ctx, env, &c, pos, "watch")
	if err != nil {
		return err
	}
	defer store.Close(st)
	ctx, sess, err := sessionFor(ctx, k, st, echo.New())
	if err != nil {
		return err
	}
	// Ctrl-C ends the watch, and the command with status 0: it is how a
	// watch is meant to end.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := env.interrupts
	if sig == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		defer signal.Stop(ch)
		sig = ch
	}
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	w := &watcher{env: env, st: st, k: k, json: *asJSON}
	return w.run(ctx, sess, *tail, !*untilIdle)
}

// watcher prints one session as it grows. What is stored is printed from
// the transcript; what runs, from the live events. An event that repeats
// what the transcript already printed (a running turn's steps stored
// before the watch began, which the watch replays from the run's
// beginning) is skipped, so nothing shows twice.
type watcher struct {
	env     *environ
	st      store.Store
	k       store.Key
	json    bool
	printed int  // transcript entries accounted for
	midLine bool // an answer's text is being written

	// What to skip of the run being followed: its steps, tool results
	// and approval requests that were printed from the transcript.
	runPos                 int64
	steps, results, asking int
	inStored               bool // in a step the transcript printed
}

func (w *watcher) run(ctx context.Context, sess *spool.Session, tail int, follow bool) error {
	entries, err := w.st.Read(ctx, w.k)
	if err != nil {
		return err
	}
	for _, e := range entries[tailStart(entries, tail):] {
		w.entry(e)
	}
	w.printed = len(entries)
	w.runPos = -1
	for ev, err := range sess.Watch(ctx, spool.WatchOptions{Follow: follow}) {
		if err != nil {
			if ctx.Err() != nil {
				break // Ctrl-C: the watch's end, not a failure
			}
			return err
		}
		if w.skip(entries, ev) {
			continue
		}
		switch ev.Kind {
		case spool.EventTurnStart, spool.EventTurnEnd:
			// The prompt (and what else no event carries: decisions,
			// renames, branch markers) is in the transcript by now.
			if ev.Kind == spool.EventTurnEnd {
				w.event(ev)
			}
			if err := w.stored(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			if ev.Kind == spool.EventTurnStart {
				w.event(ev)
			}
		default:
			w.event(ev)
		}
	}
	w.endLine()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}

// skip reports whether ev repeats what the first entries printed: an
// event of a run that began before the watch, in a step (or a result, or
// an approval request) already stored. The run's stored entries are
// counted the first time one of its events comes.
func (w *watcher) skip(entries []transcript.Entry, ev spool.Event) bool {
	id, err := spool.ParseEventID(ev.ID)
	if err != nil || id.Pos >= int64(len(entries)) {
		return false
	}
	if id.Pos != w.runPos {
		w.runPos, w.steps, w.results, w.asking = id.Pos, 0, 0, 0
		for _, e := range entries[id.Pos:] {
			switch e.Type {
			case transcript.TypeAssistantMessage:
				w.steps++
			case transcript.TypeToolResult:
				w.results++
			case transcript.TypeApprovalRequest:
				w.asking++
			}
		}
	}
	switch ev.Kind {
	case spool.EventStepStart:
		if w.steps > 0 {
			w.steps--
			w.inStored = true
			return true
		}
		w.inStored = false
	case spool.EventText, spool.EventToolCall, spool.EventStepEnd:
		return w.inStored
	case spool.EventToolResult:
		if w.results > 0 {
			w.results--
			return true
		}
	case spool.EventApprovalRequest:
		if w.asking > 0 {
			w.asking--
			return true
		}
	case spool.EventTurnStart:
		return true // its prompt was printed from the transcript
	}
	return false
}

// stored prints what the transcript has beyond what was accounted for
// and no event shows (the prompt, decisions, renames, markers), and
// accounts for all of it.
func (w *watcher) stored(ctx context.Context) error {
	entries, total, err := store.ReadRange(ctx, w.st, w.k, w.printed, math.MaxInt)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.Type {
		case transcript.TypeAssistantMessage, transcript.TypeToolResult, transcript.TypeApprovalRequest,
			transcript.TypeTurnEnd, transcript.TypeGovernanceNotice:
			// The live events showed these.
		default:
			w.entry(e)
		}
	}
	w.printed = total
	return nil
}

// tailStart is the index of the first entry of the newest n turns (a
// turn begins where an entry's turn id differs from the one before it).
func tailStart(entries []transcript.Entry, n int) int {
	var starts []int
	for i, e := range entries {
		if e.TurnID != "" && (i == 0 || entries[i-1].TurnID != e.TurnID) {
			starts = append(starts, i)
		}
	}
	switch {
	case n == 0:
		return len(entries)
	case n >= len(starts):
		return 0
	}
	return starts[len(starts)-n]
}

// entry prints a stored entry.
func (w *watcher) entry(e transcript.Entry) {
	if w.json {
		w.line(map[string]any{"entry": e})
		return
	}
	w.endLine()
	out := w.env.stdout
	switch e.Type {
	case transcript.TypeUserMessage:
		var d transcript.UserMessage
		_ = e.DecodeData(&d)
		fmt.Fprintf(out, "\nuser: %s\n", printable(d.Text))
	case transcript.TypeAssistantMessage:
		var d transcript.AssistantMessage
		_ = e.DecodeData(&d)
		if d.Text != "" {
			fmt.Fprintf(out, "assistant: %s\n", printable(strings.TrimRight(d.Text, "\n")))
		}
		for _, c := range d.ToolCalls {
			fmt.Fprintln(out, printable(fmt.Sprintf("[calls %s %s]", c.Name, c.Arguments)))
		}
	case transcript.TypeTurnEnd:
		if e.Status != transcript.StatusOK {
			fmt.Fprintln(out, printable(fmt.Sprintf("[turn ended %s]", describe(e))))
		}
	default:
		fmt.Fprintln(out, printable(fmt.Sprintf("[%s: %s]", label(e), describe(e))))
	}
}

// event prints a live event: an answer's text as it comes.
func (w *watcher) event(ev spool.Event) {
	if w.json {
		w.line(map[string]any{"event": ev})
		return
	}
	out := w.env.stdout
	switch ev.Kind {
	case spool.EventText:
		if !w.midLine {
			fmt.Fprint(out, "assistant: ")
			w.midLine = true
		}
		fmt.Fprint(out, printable(ev.Text))
	case spool.EventStepEnd:
		w.endLine()
	case spool.EventToolCall:
		w.endLine()
		fmt.Fprintln(out, printable(fmt.Sprintf("[calls %s %s]", ev.ToolCall.Name, ev.ToolCall.Arguments)))
	case spool.EventApprovalRequest:
		w.endLine()
		fmt.Fprintln(out, printable(fmt.Sprintf("[approval?: %s %s waits for approval (%s)]", ev.Approval.Tool, ev.Approval.Arguments, ev.Approval.ID)))
	case spool.EventToolResult:
		w.endLine()
		s := fmt.Sprintf("[tool: %s → %s", ev.ToolResult.Tool, clip(strings.Join(strings.Fields(ev.ToolResult.Result), " "), 200))
		if ev.ToolResult.IsError {
			s += " (error)"
		}
		fmt.Fprintln(out, printable(s+"]"))
	case spool.EventTurnEnd:
		w.endLine()
		if r := ev.Result; r != nil && r.Status != transcript.StatusOK && r.Status != spool.StatusAwaitingApproval {
			s := "[turn ended " + string(r.Status)
			if r.Error != nil {
				s += ": " + r.Error.Message
			} else if r.Notice != "" {
				s += ": " + r.Notice
			}
			fmt.Fprintln(out, printable(s+"]"))
		} else if r != nil && r.Status == transcript.StatusOK && r.Notice != "" {
			fmt.Fprintln(out, printable("[answer incomplete: "+r.Notice+"]"))
		}
	}
}

func (w *watcher) endLine() {
	if w.midLine {
		fmt.Fprintln(w.env.stdout)
		w.midLine = false
	}
}

func (w *watcher) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	b = append(b, '\n')
	_, _ = w.env.stdout.Write(b)
}
