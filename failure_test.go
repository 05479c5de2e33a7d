package spool_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

func lastEntries(t *testing.T, s *spool.Session, n int) []transcript.Entry {
	t.Helper()
	entries, err := s.Transcript(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return entries[max(0, len(entries)-n):]
}

func notice(t *testing.T, e transcript.Entry) transcript.GovernanceNotice {
	t.Helper()
	if e.Type != transcript.TypeGovernanceNotice {
		t.Fatalf("entry is %s, want a governance notice", e.Type)
	}
	var n transcript.GovernanceNotice
	_ = e.DecodeData(&n)
	return n
}

func TestModelErrors(t *testing.T) {
	cases := []struct {
		err        error
		code       transcript.ErrorCode
		noticeKind string
	}{
		{&model.Error{Code: transcript.CodeRateLimited, StatusCode: 429, Message: "slow down"}, transcript.CodeRateLimited, transcript.NoticeRateLimited},
		{&model.Error{Code: transcript.CodeProviderError, StatusCode: 500, Message: "boom"}, transcript.CodeProviderError, ""},
	}
	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			ctx := t.Context()
			a := newAgent(t, spool.Config{Model: echo.New(echo.WithError(c.err))})
			s := session(t, a, ctx, "e")
			res, err := s.Send(ctx, "hi")
			var me *model.Error
			if !errors.As(err, &me) || res.Status != transcript.StatusError || res.Error.Code != c.code {
				t.Fatalf("model failing with %v: Send = %+v, %v; want a *model.Error and status error with code %s", c.err, res, err, c.code)
			}
			tail := lastEntries(t, s, 2)
			if tail[1].Status != transcript.StatusError {
				t.Fatalf("the turn end recorded status %s, want error", tail[1].Status)
			}
			var end transcript.TurnEnd
			_ = tail[1].DecodeData(&end)
			if end.Error == nil || end.Error.Code != c.code {
				t.Fatalf("turn end %+v, want error code %s", end, c.code)
			}
			if c.noticeKind != "" {
				if n := notice(t, tail[0]); n.Kind != c.noticeKind {
					t.Fatalf("notice %+v, want kind %s", n, c.noticeKind)
				}
			}
		})
	}
}

func TestStoreFailureFailsTheCall(t *testing.T) {
	ctx := t.Context()
	fs := &failingStore{plainStore: plainStore{memstore.New()}}
	a := newAgent(t, spool.Config{Store: fs})
	s := session(t, a, ctx, "f")
	if _, err := s.Send(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	fs.fail.Store(true)
	var asked bool
	a2 := newAgent(t, spool.Config{Store: fs, Model: echoScript(func(*model.Request) []model.Event {
		asked = true
		return []model.Event{text("no")}
	})})
	s2 := session(t, a2, ctx, "f")
	_, err := s2.Send(ctx, "during")
	if !errors.Is(err, errDisk) {
		t.Fatalf("Send while the store fails = %v, want the store's error", err)
	}
	if asked {
		t.Fatal("the model was asked although the prompt could not be stored")
	}
	fs.fail.Store(false)
	res, err := s2.Send(ctx, "after")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send after the store recovered = %+v, %v; want ok", res, err)
	}
	entries, _ := s2.Transcript(ctx)
	checkWellFormed(t, entries)
}

func TestGuards(t *testing.T) {
	ctx := t.Context()
	stopped := false // the answer guard stops one answer only
	a := newAgent(t, spool.Config{
		PromptGuards: []spool.PromptGuard{func(ctx context.Context, p string) error {
			if strings.Contains(p, "forbidden") {
				return errors.New("that topic is off limits")
			}
			return nil
		}},
		AnswerGuards: []spool.AnswerGuard{func(ctx context.Context, answer string) error {
			if strings.Contains(answer, "leak") && !stopped {
				stopped = true
				return errors.New("the answer was stopped")
			}
			return nil
		}},
	})
	s := session(t, a, ctx, "g")
	res, err := s.Send(ctx, "something forbidden")
	if err != nil || res.Status != transcript.StatusPromptBlocked || res.Notice != "that topic is off limits" {
		t.Fatalf("Send of a refused prompt = %+v, %v; want prompt_blocked with the guard's message", res, err)
	}
	tail := lastEntries(t, s, 2)
	if n := notice(t, tail[0]); n.Kind != transcript.NoticePromptRefused {
		t.Fatalf("notice %+v, want kind %s", n, transcript.NoticePromptRefused)
	}
	res, err = s.Send(ctx, "please leak it all now")
	if err != nil || res.Status != transcript.StatusResponseBlocked || res.Text != "" {
		t.Fatalf("Send of a stopped answer = %+v, %v; want response_blocked and no text", res, err)
	}
	tail = lastEntries(t, s, 2)
	if n := notice(t, tail[0]); n.Kind != transcript.NoticeResponseStopped {
		t.Fatalf("notice %+v, want kind %s", n, transcript.NoticeResponseStopped)
	}
	if _, err := s.Send(ctx, "fine"); err != nil {
		t.Fatal(err)
	}
	h, _ := s.History(ctx)
	var got []string
	for _, m := range h {
		got = append(got, fmt.Sprintf("%s:%s", m.Role, m.Content))
	}
	// The refused turn is gone; of the stopped one only the question stays,
	// merged with the next.
	want := []string{"user:please leak it all now\n\nfine", "assistant:echo: please leak it all now\n\nfine"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("history %q, want %q", got, want)
	}
}

func TestTokenBudgets(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{SessionTokenBudget: 10})
	s := session(t, a, ctx, "b")
	for i := 0; ; i++ {
		res, err := s.Send(ctx, "a prompt of some length to use tokens")
		if res != nil && res.Status == transcript.StatusError {
			// Which budget and how large are fields, for clients to word
			// the refusal without reading the message; the transcript
			// keeps them.
			want := transcript.ErrorInfo{Code: transcript.CodeOverBudget, Message: "the session used its budget of 10 tokens", Budget: 10, BudgetScope: "session"}
			if *res.Error != want {
				t.Fatalf("the turn's error %+v, want %+v", res.Error, want)
			}
			tail := lastEntries(t, s, 2)
			if n := notice(t, tail[0]); n.Kind != transcript.NoticeOverBudget {
				t.Fatalf("notice %+v, want kind %s", n, transcript.NoticeOverBudget)
			}
			var end transcript.TurnEnd
			if err := tail[1].DecodeData(&end); err != nil || end.Error == nil || *end.Error != want {
				t.Fatalf("the recorded end %+v (%v), want error %+v", end.Error, err, want)
			}
			break
		}
		if err != nil || i > 5 {
			t.Fatalf("the session budget never ran out (%v), want a turn ended over_budget within 5", err)
		}
	}
	// Another session has its own budget; the agent budget spans them.
	ag := newAgent(t, spool.Config{AgentTokenBudget: 10})
	s1 := session(t, ag, ctx, "one")
	if _, err := s1.Send(ctx, "a prompt of some length to use tokens"); err != nil {
		t.Fatal(err)
	}
	s2 := session(t, ag, ctx, "two")
	res, err := s2.Send(ctx, "hi")
	if res == nil || res.Status != transcript.StatusError || res.Error.Code != transcript.CodeOverBudget || res.Error.Budget != 10 || res.Error.BudgetScope != "agent" {
		t.Fatalf("Send over the agent's budget = %+v, %v; want status error, code over_budget, the agent's budget of 10", res, err)
	}
}

func TestMaxSteps(t *testing.T) {
	ctx := t.Context()
	loop := echoScript(func(*model.Request) []model.Event {
		return []model.Event{call("", "lookup_order", `{"order":1}`)}
	})
	a := newAgent(t, spool.Config{Model: loop, Tools: approvalTools(nil), MaxSteps: 3})
	s := session(t, a, ctx, "loop")
	res, err := s.Send(ctx, "go")
	if err == nil || res.Status != transcript.StatusError || res.Error.Code != transcript.CodeMaxSteps {
		t.Fatalf("Send of a turn that never ends = %+v, %v; want a TurnError and code max_steps", res, err)
	}
}

// stoppingModel answers with text that its provider stopped for stop.
type stoppingModel struct{ stop model.StopReason }

func (m stoppingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		_ = yield(model.Event{Kind: model.EventText, Text: "the first half of"}, nil) &&
			yield(model.Event{Kind: model.EventUsage, Usage: transcript.Usage{InputTokens: 5, OutputTokens: 4}}, nil) &&
			yield(model.Event{Kind: model.EventStop, Stop: m.stop}, nil)
	}
}

// An answer the provider stopped before the model ended it (its output
// token limit, its content filter) is the turn's answer, and the turn
// ends ok, but with a notice that says it is incomplete and why: it ended
// ok with nothing to tell it from a whole answer.
func TestStoppedAnswerHasANotice(t *testing.T) {
	for stop, kind := range map[model.StopReason]string{model.StopLength: transcript.NoticeOutputLimit, model.StopFiltered: transcript.NoticeAnswerFiltered} {
		t.Run(string(stop), func(t *testing.T) {
			ctx := t.Context()
			a := newAgent(t, spool.Config{Model: stoppingModel{stop}})
			s := session(t, a, ctx, "cut")
			res, err := s.Send(ctx, "hi")
			if err != nil || res.Status != transcript.StatusOK || res.Text != "the first half of" || res.Notice == "" {
				t.Fatalf("Send = %+v, %v; want ok, the text, and a notice", res, err)
			}
			tail := lastEntries(t, s, 3)
			if tail[0].Type != transcript.TypeAssistantMessage || tail[2].Status != transcript.StatusOK {
				t.Fatalf("the turn recorded %s … %s %s", tail[0].Type, tail[2].Type, tail[2].Status)
			}
			if n := notice(t, tail[1]); n.Kind != kind || n.Message != res.Notice || res.NoticeKind != kind {
				t.Fatalf("notice %+v; want kind %s and the result's message %q", n, kind, res.Notice)
			}
			// The answer stays in what the model sees next.
			h, err := s.History(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if last := h[len(h)-1]; last.Role != model.RoleAssistant || last.Content != "the first half of" {
				t.Fatalf("history ends with %+v", last)
			}
		})
	}
}

// A summary the provider stopped short fails the compaction, and the
// session stays as it was: a cut summary would stand for its turns with
// part of what they said.
func TestStoppedSummaryFailsTheCompaction(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Model: echo.New()})
	s := session(t, a, ctx, "s")
	for _, p := range []string{"one", "two", "three"} {
		if _, err := s.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.Transcript(ctx)
	_, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1, Summarizer: spool.ModelSummarizer(stoppingModel{model.StopLength}, "")})
	var me *model.Error
	if !errors.Is(err, spool.ErrSummarizer) || !errors.As(err, &me) || me.Code != transcript.CodeModelError || !strings.Contains(err.Error(), "output token limit") {
		t.Fatalf("Compact: %v; want the summarizer's model_error", err)
	}
	if after, _ := s.Transcript(ctx); len(after) != len(before) {
		t.Fatalf("%d entries after, %d before", len(after), len(before))
	}
}

// A watcher that follows the turn through the transcript (another
// process, a store without notifications) gets the turn's end with its
// notice, as the process that ran it does: an ok turn's end read back
// from the transcript had none, so the incomplete answer looked whole.
func TestStoppedAnswerNoticeReadBack(t *testing.T) {
	ctx := t.Context()
	mem := memstore.New()
	runs := newAgent(t, spool.Config{Model: stoppingModel{model.StopLength}, Store: quietStore{mem}})
	watches := newAgent(t, spool.Config{Model: stoppingModel{model.StopLength}, Store: quietStore{mem}})
	sess, other := session(t, runs, ctx, "cut"), session(t, watches, ctx, "cut")
	got := make(chan *spool.Result, 1)
	ready := make(chan struct{})
	go func() {
		defer close(got)
		for ev, err := range other.Watch(ctx, spool.WatchOptions{Follow: true, Ready: func() { close(ready) }}) {
			if err != nil {
				t.Error(err)
				return
			}
			if ev.Kind == spool.EventTurnEnd {
				got <- ev.Result
				return
			}
		}
	}()
	<-ready
	res, err := sess.Send(ctx, "hi")
	if err != nil || res.Notice == "" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	end := <-got
	if end == nil || end.Status != transcript.StatusOK || end.Notice != res.Notice || end.NoticeKind != transcript.NoticeOutputLimit {
		t.Fatalf("the watcher's end %+v; want ok with notice %q", end, res.Notice)
	}
}
