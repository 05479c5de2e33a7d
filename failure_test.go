package spool_test

import (
	"context"
	"errors"
	"fmt"
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
			if res.Error.Code != transcript.CodeOverBudget {
				t.Fatalf("the turn's error %+v, want code %s", res.Error, transcript.CodeOverBudget)
			}
			tail := lastEntries(t, s, 2)
			if n := notice(t, tail[0]); n.Kind != transcript.NoticeOverBudget {
				t.Fatalf("notice %+v, want kind %s", n, transcript.NoticeOverBudget)
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
	if res == nil || res.Status != transcript.StatusError || res.Error.Code != transcript.CodeOverBudget {
		t.Fatalf("Send over the agent's budget = %+v, %v; want status error, code over_budget", res, err)
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
