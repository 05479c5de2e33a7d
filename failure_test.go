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
	entries, err := s.Transcript(context.Background())
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
	ctx := context.Background()
	cases := []struct {
		err        error
		code       transcript.ErrorCode
		noticeKind string
	}{
		{&model.Error{Code: transcript.CodeRateLimited, StatusCode: 429, Message: "slow down"}, transcript.CodeRateLimited, transcript.NoticeRateLimited},
		{&model.Error{Code: transcript.CodeProviderError, StatusCode: 500, Message: "boom"}, transcript.CodeProviderError, ""},
	}
	for _, c := range cases {
		a := newAgent(t, spool.Config{Model: echo.New(echo.WithError(c.err))})
		s, _ := a.Session(ctx, "e")
		res, err := s.Send(ctx, "hi")
		var me *model.Error
		if !errors.As(err, &me) || res.Status != transcript.StatusError || res.Error.Code != c.code {
			t.Fatalf("%v: %+v %v", c.err, res, err)
		}
		tail := lastEntries(t, s, 2)
		if tail[1].Status != transcript.StatusError {
			t.Fatalf("recorded %s", tail[1].Status)
		}
		var end transcript.TurnEnd
		_ = tail[1].DecodeData(&end)
		if end.Error == nil || end.Error.Code != c.code {
			t.Fatalf("turn end %+v", end)
		}
		if c.noticeKind != "" {
			if n := notice(t, tail[0]); n.Kind != c.noticeKind {
				t.Fatalf("notice %+v", n)
			}
		}
	}
}

func TestStoreFailureFailsTheCall(t *testing.T) {
	ctx := context.Background()
	fs := &failingStore{plainStore: plainStore{memstore.New()}}
	a := newAgent(t, spool.Config{Store: fs})
	s, _ := a.Session(ctx, "f")
	if _, err := s.Send(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	fs.fail.Store(true)
	var asked bool
	a2 := newAgent(t, spool.Config{Store: fs, Model: echoScript(func(*model.Request) []model.Event {
		asked = true
		return []model.Event{text("no")}
	})})
	s2, _ := a2.Session(ctx, "f")
	_, err := s2.Send(ctx, "during")
	if !errors.Is(err, errDisk) {
		t.Fatalf("store failure: %v", err)
	}
	if asked {
		t.Fatal("the model was asked although the prompt could not be stored")
	}
	fs.fail.Store(false)
	res, err := s2.Send(ctx, "after")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("after recovery: %+v %v", res, err)
	}
	entries, _ := s2.Transcript(ctx)
	checkWellFormed(t, entries)
}

func TestGuards(t *testing.T) {
	ctx := context.Background()
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
	s, _ := a.Session(ctx, "g")
	res, err := s.Send(ctx, "something forbidden")
	if err != nil || res.Status != transcript.StatusPromptBlocked || res.Notice != "that topic is off limits" {
		t.Fatalf("%+v %v", res, err)
	}
	tail := lastEntries(t, s, 2)
	if n := notice(t, tail[0]); n.Kind != transcript.NoticePromptRefused {
		t.Fatalf("%+v", n)
	}
	res, err = s.Send(ctx, "please leak it all now")
	if err != nil || res.Status != transcript.StatusResponseBlocked || res.Text != "" {
		t.Fatalf("%+v %v", res, err)
	}
	tail = lastEntries(t, s, 2)
	if n := notice(t, tail[0]); n.Kind != transcript.NoticeResponseStopped {
		t.Fatalf("%+v", n)
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
	ctx := context.Background()
	a := newAgent(t, spool.Config{SessionTokenBudget: 10})
	s, _ := a.Session(ctx, "b")
	for i := 0; ; i++ {
		res, err := s.Send(ctx, "a prompt of some length to use tokens")
		if res != nil && res.Status == transcript.StatusError {
			if res.Error.Code != transcript.NoticeOverBudget {
				t.Fatalf("%+v", res.Error)
			}
			tail := lastEntries(t, s, 2)
			if n := notice(t, tail[0]); n.Kind != transcript.NoticeOverBudget {
				t.Fatalf("%+v", n)
			}
			break
		}
		if err != nil || i > 5 {
			t.Fatalf("budget never ran out: %v", err)
		}
	}
	// Another session has its own budget; the agent budget spans them.
	ag := newAgent(t, spool.Config{AgentTokenBudget: 10})
	s1, _ := ag.Session(ctx, "one")
	if _, err := s1.Send(ctx, "a prompt of some length to use tokens"); err != nil {
		t.Fatal(err)
	}
	s2, _ := ag.Session(ctx, "two")
	res, _ := s2.Send(ctx, "hi")
	if res.Status != transcript.StatusError || res.Error.Code != transcript.NoticeOverBudget {
		t.Fatalf("agent budget: %+v", res)
	}
}

func TestMaxSteps(t *testing.T) {
	ctx := context.Background()
	loop := echoScript(func(*model.Request) []model.Event {
		return []model.Event{call("", "lookup_order", `{"order":1}`)}
	})
	a := newAgent(t, spool.Config{Model: loop, Tools: approvalTools(nil), MaxSteps: 3})
	s, _ := a.Session(ctx, "loop")
	res, err := s.Send(ctx, "go")
	if err == nil || res.Status != transcript.StatusError || res.Error.Code != "max_steps" {
		t.Fatalf("%+v %v", res, err)
	}
}
