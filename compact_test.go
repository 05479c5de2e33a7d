package spool_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/transcript"
)

// sendAll sends each prompt in order, failing the test on an error.
func sendAll(t *testing.T, s *spool.Session, prompts ...string) {
	t.Helper()
	for _, p := range prompts {
		if _, err := s.Send(t.Context(), p); err != nil {
			t.Fatalf("Send(%q) = %v", p, err)
		}
	}
}

// TestCompact: six turns, compacted keeping two, send the model the echo
// model's summary of the first four in their place, and Messages still
// shows all twelve messages; a second compaction has nothing to do; two
// turns later a rolling compaction extends the first.
func TestCompact(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	var requests []*model.Request
	m := echoScript(func(req *model.Request) []model.Event {
		mu.Lock()
		requests = append(requests, req)
		mu.Unlock()
		return echo.Reply(req)
	})
	a := newAgent(t, spool.Config{Model: m, Instructions: "Be brief."})
	s := session(t, a, ctx, "long")
	sendAll(t, s, "My name is Ana.", "I live in Porto.", "My order is 1042.", "It was a lamp that arrived broken and I want a refund for it, please.", "When?", "Thanks.")
	res, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	wantSummary := "- My name is Ana.\n- I live in Porto.\n- My order is 1042.\n- It was a lamp that arrived broken and I want a refund for i…"
	if res.Summary != wantSummary || res.Turns != 4 || res.NewTurns != 4 || res.Previous != "" || res.Model != "echo" {
		t.Fatalf("result %+v", res)
	}
	if res.Before.Messages != 13 || res.After.Messages != 7 || res.After.Tokens >= res.Before.Tokens {
		t.Errorf("sizes before %+v after %+v, want 13 messages then 7, fewer tokens", res.Before, res.After)
	}
	got, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Message{{Role: model.RoleSystem, Content: "Be brief."}}
	want = append(want, history.SummaryMessages(wantSummary)...)
	want = append(want,
		model.Message{Role: model.RoleUser, Content: "When?"}, model.Message{Role: model.RoleAssistant, Content: "echo: When?"},
		model.Message{Role: model.RoleUser, Content: "Thanks."}, model.Message{Role: model.RoleAssistant, Content: "echo: Thanks."})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("history\n%v\nwant\n%v", got, want)
	}
	msgs, err := s.Messages(ctx, 0)
	if err != nil || len(msgs) != 12 {
		t.Fatalf("Messages = %d messages, %v; want all 12", len(msgs), err)
	}
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 2}); !errors.Is(err, spool.ErrNothingToCompact) {
		t.Fatalf("second Compact = %v, want ErrNothingToCompact", err)
	}
	// The next request carries the summary: the runtime's history has it.
	sendAll(t, s, "Is it refunded?")
	if last := requests[len(requests)-1]; !reflect.DeepEqual(last.Messages[1:3], history.SummaryMessages(wantSummary)) {
		t.Fatalf("the next request does not carry the summary: %v", last.Messages)
	}
	sendAll(t, s, "Good.")
	res2, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Previous != res.EntryID || res2.FirstTurn != res.FirstTurn || res2.NewTurns != 2 || res2.Turns != 6 ||
		res2.Summary != wantSummary+"\n- When?\n- Thanks." {
		t.Fatalf("rolling compaction %+v", res2)
	}
	entries, _ := s.Transcript(ctx)
	n := 0
	for _, e := range entries {
		if e.Type == transcript.TypeCompaction {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d compaction entries, want 2", n)
	}
	if got, _ := s.History(ctx); !reflect.DeepEqual(got, history.Build(entries, history.Options{Instructions: "Be brief.", MaxMessages: 200})) {
		t.Errorf("History is not Build of the transcript")
	}
	// A summary of the covered turns, and the newest turns' whole.
	for _, m := range requests {
		if _, _, ok := model.ReadSummaryRequest(m); ok && strings.Contains(m.Messages[1].Content, "Good.") {
			t.Errorf("a summary request holds a kept turn: %s", m.Messages[1].Content)
		}
	}
}

// TestCompactSummarizerFails: a summarizer that errors, one that runs past
// the timeout, and one that writes nothing fail Compact with ErrSummarizer
// and append nothing.
func TestCompactSummarizerFails(t *testing.T) {
	ctx := t.Context()
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		fn   spool.Summarizer
		is   error
	}{
		{"error", func(context.Context, spool.SummaryInput) (spool.Summary, error) { return spool.Summary{}, boom }, boom},
		{"timeout", func(ctx context.Context, _ spool.SummaryInput) (spool.Summary, error) {
			<-ctx.Done()
			return spool.Summary{}, ctx.Err()
		}, context.DeadlineExceeded},
		{"empty", func(context.Context, spool.SummaryInput) (spool.Summary, error) { return spool.Summary{Text: ""}, nil }, spool.ErrSummarizer},
	} {
		t.Run(c.name, func(t *testing.T) {
			var codes []transcript.ErrorCode
			obs := spool.ObserverFunc(func(_ context.Context, o spool.Observation) {
				if o.Kind == spool.ObserveCompaction {
					codes = append(codes, o.ErrorCode)
				}
			})
			a := newAgent(t, spool.Config{Compaction: spool.Compaction{Timeout: 50 * time.Millisecond}, Observers: []spool.Observer{obs}})
			s := session(t, a, ctx, "s")
			sendAll(t, s, "one", "two", "three")
			before, _ := s.Transcript(ctx)
			_, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1, Summarizer: c.fn})
			if !errors.Is(err, spool.ErrSummarizer) || !errors.Is(err, c.is) {
				t.Fatalf("Compact = %v, want ErrSummarizer and %v", err, c.is)
			}
			after, _ := s.Transcript(ctx)
			if len(after) != len(before) {
				t.Errorf("a failed compaction appended %d entries", len(after)-len(before))
			}
			if len(codes) != 1 || codes[0] == "" {
				t.Errorf("observed %v, want one compaction with an error code", codes)
			}
		})
	}
}

// TestAutoCompaction: with a turn trigger, a compaction follows the turn
// that reaches it, in the background: the turn's answer is back while the
// summarizer still runs, the next turn waits for it and then carries the
// summary, and the summarizer's usage counts in the session's budget.
func TestAutoCompaction(t *testing.T) {
	ctx := t.Context()
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	done := make(chan spool.Observation, 4)
	sum := func(ctx context.Context, in spool.SummaryInput) (spool.Summary, error) {
		started <- struct{}{}
		<-release
		return spool.Summary{Text: fmt.Sprintf("%d messages", len(in.Messages)), Model: "cheap", Usage: transcript.Usage{InputTokens: 1000, OutputTokens: 10}}, nil
	}
	obs := spool.ObserverFunc(func(_ context.Context, o spool.Observation) {
		if o.Kind == spool.ObserveCompaction {
			done <- o
		}
	})
	a := newAgent(t, spool.Config{Compaction: spool.Compaction{Turns: 3, KeepTurns: 1, Summarizer: sum}, Observers: []spool.Observer{obs}})
	s := session(t, a, ctx, "auto")
	sendAll(t, s, "one", "two")
	select {
	case <-started:
		t.Fatal("compacted before the trigger")
	case <-time.After(50 * time.Millisecond):
	}
	sendAll(t, s, "three") // returns with the summarizer still running
	<-started
	next := make(chan error, 1)
	go func() { _, err := s.Send(ctx, "four"); next <- err }()
	select {
	case err := <-next:
		t.Fatalf("a turn ran during the compaction (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	o := <-done
	if o.ErrorCode != "" || o.Model != "cheap" || o.Usage.InputTokens != 1000 {
		t.Fatalf("observation %+v", o)
	}
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	got, _ := s.History(ctx)
	if len(got) != 6 || got[1].Content != history.SummaryPrefix+"4 messages" {
		t.Fatalf("history %v: want the summary of two turns and the last two turns", got)
	}
	entries, _ := s.Transcript(ctx)
	types := []transcript.Type{}
	for _, e := range entries {
		types = append(types, e.Type)
	}
	if types[9] != transcript.TypeCompaction || types[10] != transcript.TypeUserMessage {
		t.Fatalf("types %v: the compaction is not between the third and the fourth turn", types)
	}
	// The summarizer's tokens count in the session's budget.
	b := newAgent(t, spool.Config{Store: a.Store(), SessionTokenBudget: 1000})
	if _, err := session(t, b, ctx, "auto").Send(ctx, "five"); err == nil {
		t.Fatal("a turn ran over a budget the compaction used up")
	}
}

// TestAutoCompactionFailure: a failing summarizer never fails a turn; the
// failure is observed and recorded (governance.notice
// compaction_failed), and the next trigger waits out a backoff instead of
// calling it again at once.
func TestAutoCompactionFailure(t *testing.T) {
	ctx := t.Context()
	n := 0
	sum := func(context.Context, spool.SummaryInput) (spool.Summary, error) {
		n++
		return spool.Summary{}, errors.New("the cheap model is down")
	}
	failed := make(chan struct{}, 4)
	obs := spool.ObserverFunc(func(_ context.Context, o spool.Observation) {
		if o.Kind == spool.ObserveCompaction && o.ErrorCode != "" {
			failed <- struct{}{}
		}
	})
	a := newAgent(t, spool.Config{Compaction: spool.Compaction{Turns: 2, KeepTurns: 1, Summarizer: sum}, Observers: []spool.Observer{obs}})
	s := session(t, a, ctx, "failing")
	sendAll(t, s, "one", "two")
	<-failed
	sendAll(t, s, "three", "four") // the next call waits for the background one
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("summarizer called %d times, want once (then the backoff)", n)
	}
	entries, _ := s.Transcript(ctx)
	notices := 0
	for _, e := range entries {
		var g transcript.GovernanceNotice
		if e.Type == transcript.TypeGovernanceNotice && e.DecodeData(&g) == nil && g.Kind == spool.NoticeCompactionFailed {
			notices++
			if !strings.Contains(g.Message, "the cheap model is down") {
				t.Errorf("notice %q", g.Message)
			}
		}
	}
	if notices != 1 {
		t.Errorf("%d compaction_failed notices, want 1", notices)
	}
	got := history.Build(entries, history.Options{})
	if len(got) != 8 {
		t.Errorf("history has %d messages, want the four turns", len(got))
	}
}

// TestForkKeepsCompaction: a fork at a turn after a compaction copies it,
// and the fork's history is the source's.
func TestForkKeepsCompaction(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{})
	s := session(t, a, ctx, "src")
	sendAll(t, s, "one", "two", "three", "four")
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := s.Messages(ctx, 0)
	f, err := a.Fork(ctx, "src", msgs[len(msgs)-1].TurnID, spool.WithForkID("fork"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.History(ctx)
	got, _ := f.History(ctx)
	if !reflect.DeepEqual(got, want) || len(got) != 4 {
		t.Fatalf("fork's history\n%v\nsource's\n%v", got, want)
	}
}

// TestCompactAndEdit: an edit of a covered turn ends the compaction (the
// history is the new branch's, whole); a switch back makes it apply
// again.
func TestCompactAndEdit(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{})
	s := session(t, a, ctx, "edit")
	sendAll(t, s, "one", "two", "three")
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := s.Messages(ctx, 0)
	two := msgs[2].TurnID
	if _, err := s.Edit(ctx, two, "TWO"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.History(ctx)
	if len(got) != 4 || got[2].Content != "TWO" {
		t.Fatalf("after an edit of a covered turn: %v", got)
	}
	if err := s.SwitchBranch(ctx, two); err != nil {
		t.Fatal(err)
	}
	got, _ = s.History(ctx)
	if len(got) != 4 || !strings.HasPrefix(got[1].Content, history.SummaryPrefix) || got[2].Content != "three" {
		t.Fatalf("after switching back: %v", got)
	}
}

// windowModel refuses a request of more than max messages as a provider
// refuses one over its context window, and is the echo model otherwise.
type windowModel struct {
	max   int
	inner model.Model
}

func (m windowModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	if len(req.Messages) > m.max {
		return func(yield func(model.Event, error) bool) {
			yield(model.Event{}, &model.Error{Code: transcript.CodeContextTooLong, StatusCode: 400, Message: "Bad Request; type invalid_request_error"})
		}
	}
	return m.inner.Stream(ctx, req)
}

// A turn the model refuses as longer than its context window ends
// context_too_long, with a notice saying what to do; with automatic
// compaction the session is compacted after it whatever the thresholds
// say, and the next turn fits. Without, the next turn is refused too:
// nothing is dropped from the history behind the caller's back.
func TestContextTooLongCompacts(t *testing.T) {
	ctx := t.Context()
	for _, auto := range []bool{true, false} {
		t.Run(fmt.Sprint("automatic=", auto), func(t *testing.T) {
			cfg := spool.Config{Model: windowModel{max: 6, inner: echo.New()}}
			summaries := 0
			if auto {
				cfg.Compaction = spool.Compaction{Turns: 1000, KeepTurns: 1, Summarizer: func(context.Context, spool.SummaryInput) (spool.Summary, error) {
					summaries++
					return spool.Summary{Text: "earlier turns"}, nil
				}}
			}
			a := newAgent(t, cfg)
			s := session(t, a, ctx, "long")
			sendAll(t, s, "one", "two", "three") // six messages: the seventh is over
			_, err := s.Send(ctx, "four")
			var te *spool.TurnError
			if !errors.As(err, &te) || te.Code != transcript.CodeContextTooLong || !errors.Is(err, model.ErrContextTooLong) {
				t.Fatalf("a turn over the window: %v", err)
			}
			entries, _ := s.Transcript(ctx)
			var notice transcript.GovernanceNotice
			for _, e := range entries {
				if e.Type == transcript.TypeGovernanceNotice {
					_ = e.DecodeData(&notice)
				}
			}
			if notice.Kind != transcript.NoticeContextTooLong || !strings.Contains(notice.Message, "compact") {
				t.Fatalf("notice %+v", notice)
			}
			_, err = s.Send(ctx, "five")
			if auto && (err != nil || summaries != 1) {
				t.Fatalf("after the automatic compaction: %v (%d summaries)", err, summaries)
			}
			if !auto && !errors.Is(err, model.ErrContextTooLong) {
				t.Fatalf("without compaction the next turn is over the window too: %v", err)
			}
			if auto {
				// The trigger was the refusal: the turns after it do not
				// compact again.
				sendAll(t, s, "six")
				if summaries != 1 {
					t.Fatalf("%d summaries after the refusal was dealt with", summaries)
				}
			}
		})
	}
}

// TestCompactAfterDeadTurn: a turn whose process died (its user message
// written, no end) is no turn running. On a store with a lock, which a
// running turn holds, Compact closes it as cancelled, as the next turn
// and SwitchBranch do, and compacts; it does not answer ErrTurnRunning
// (409 turn_running) for a turn that will never end.
func TestCompactAfterDeadTurn(t *testing.T) {
	ctx := t.Context()
	st := newFileStore(t)
	a := newAgent(t, spool.Config{Store: st})
	s := session(t, a, ctx, "dead")
	sendAll(t, s, "one", "two", "three")
	entries, _ := s.Transcript(ctx)
	now := entries[len(entries)-1].Timestamp
	e, err := transcript.New(now, transcript.TypeUserMessage, transcript.NewIDAfter(now, entries[len(entries)-1].TurnID), transcript.UserMessage{Text: "four"})
	if err != nil {
		t.Fatal(err)
	}
	e.ParentID = entries[len(entries)-1].ID
	if err := st.Append(ctx, s.Key(), e); err != nil {
		t.Fatal(err)
	}

	b := newAgent(t, spool.Config{Store: st}) // a new process
	res, err := session(t, b, ctx, "dead").Compact(ctx, spool.CompactOptions{KeepTurns: 1})
	if err != nil || res.Turns != 3 {
		t.Fatalf("Compact after a dead turn = %+v, %v; want the three ended turns covered", res, err)
	}
	entries, _ = st.Read(ctx, s.Key())
	checkWellFormed(t, entries)
}
