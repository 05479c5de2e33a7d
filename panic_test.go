package spool_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/transcript"
)

// secret is what the panicking code below panics with: content, which the
// log must never get.
const secret = "the user's words hunter2"

// panicModel panics in its iterator after streaming some text, on its
// first request only: the session goes on with the next turn.
type panicModel struct{ once sync.Once }

func (m *panicModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		panicking := false
		m.once.Do(func() { panicking = true })
		if !yield(model.Event{Kind: model.EventText, Text: "half "}, nil) {
			return
		}
		if panicking {
			panic(secret)
		}
		yield(model.Event{Kind: model.EventText, Text: "whole"}, nil)
	}
}

// lastEnd returns the status and error of the session's newest turn end.
func lastEnd(t *testing.T, s *spool.Session) (transcript.Status, *transcript.ErrorInfo) {
	t.Helper()
	entries, err := s.Transcript(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Type == transcript.TypeTurnEnd {
			var d transcript.TurnEnd
			if err := e.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			return e.Status, d.Error
		}
	}
	t.Fatal("no turn end")
	return "", nil
}

// checkPanicLogged fails t unless the log says a panic was recovered in
// what, with its stack and without its value.
func checkPanicLogged(t *testing.T, log *spooltest.Buffer, what string) {
	t.Helper()
	s := log.String()
	if !strings.Contains(s, "recovered a panic") || !strings.Contains(s, what) || !strings.Contains(s, "stack=") || strings.Contains(s, "hunter2") {
		t.Fatalf("log:\n%s", s)
	}
}

// A model that panics mid-answer ends its turn with model_error, whose
// message says so without the panic's value; the log has the stack; the
// session's next turn runs. The process goes on: a server's turn runs on
// a goroutine of its own, where a panic would end it.
func TestModelPanicEndsTheTurn(t *testing.T) {
	var log spooltest.Buffer
	a := newAgent(t, spool.Config{Model: &panicModel{}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	s := session(t, a, t.Context(), "s")
	res, err := s.Send(t.Context(), "hello")
	if err == nil || res == nil || res.Status != transcript.StatusError {
		t.Fatalf("Send = %+v, %v; want the turn ended with an error", res, err)
	}
	status, info := lastEnd(t, s)
	if status != transcript.StatusError || info == nil || info.Code != transcript.CodeModelError ||
		!strings.Contains(info.Message, "the model panicked") || strings.Contains(info.Message, "hunter2") {
		t.Fatalf("turn end %s %+v", status, info)
	}
	checkPanicLogged(t, &log, "the model")
	if res, err := s.Send(t.Context(), "again"); err != nil || res.Text != "half whole" {
		t.Fatalf("the next turn: %+v, %v", res, err)
	}
}

// A panic of the consumer's loop body is the consumer's: it reaches the
// consumer, as any panic in a range loop's body does.
func TestConsumerPanicIsTheConsumers(t *testing.T) {
	a := newAgent(t, spool.Config{})
	s := session(t, a, t.Context(), "s")
	defer func() {
		if p := recover(); p != "mine" {
			t.Fatalf("recovered %v, want the consumer's own panic", p)
		}
	}()
	for range s.Stream(t.Context(), "hello") {
		panic("mine")
	}
	t.Fatal("no panic")
}

// A guard that panics refuses (it fails closed): the prompt or the
// answer is blocked, the notice says a guard panicked, the log has the
// stack.
func TestGuardPanicRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  spool.Config
		want transcript.Status
	}{
		{"prompt", spool.Config{PromptGuards: []spool.PromptGuard{func(context.Context, string) error { panic(errors.New(secret)) }}}, transcript.StatusPromptBlocked},
		{"answer", spool.Config{AnswerGuards: []spool.AnswerGuard{func(context.Context, string) error { panic(secret) }}}, transcript.StatusResponseBlocked},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log spooltest.Buffer
			c.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
			s := session(t, newAgent(t, c.cfg), t.Context(), "s")
			res, _ := s.Send(t.Context(), "hello")
			if res == nil || res.Status != c.want || !strings.Contains(res.Notice, "guard panicked") || strings.Contains(res.Notice, "hunter2") {
				t.Fatalf("Send = %+v", res)
			}
			checkPanicLogged(t, &log, "guard")
		})
	}
}

// panicObserver panics at every observation.
type panicObserver struct{}

func (panicObserver) Observe(context.Context, spool.Observation) { panic(secret) }

// An observer that panics loses its observations; the turn is not
// touched, and the log says so once.
func TestObserverPanicIsContained(t *testing.T) {
	var log spooltest.Buffer
	a := newAgent(t, spool.Config{Observers: []spool.Observer{panicObserver{}}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	s := session(t, a, t.Context(), "s")
	for range 2 {
		if res, err := s.Send(t.Context(), "hello"); err != nil || res.Status != transcript.StatusOK {
			t.Fatalf("Send = %+v, %v", res, err)
		}
	}
	checkPanicLogged(t, &log, "an observer")
	if n := strings.Count(log.String(), "recovered a panic"); n != 1 {
		t.Fatalf("%d panics logged, want the first only:\n%s", n, log.String())
	}
}

// A summarizer that panics fails its compaction as an error of its would
// (ErrSummarizer); the session is as it was.
func TestSummarizerPanicFailsTheCompaction(t *testing.T) {
	var log spooltest.Buffer
	a := newAgent(t, spool.Config{Model: echo.New(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	s := session(t, a, t.Context(), "s")
	for _, p := range []string{"one", "two", "three"} {
		if _, err := s.Send(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.Transcript(t.Context())
	_, err := s.Compact(t.Context(), spool.CompactOptions{KeepTurns: 1, Summarizer: func(context.Context, spool.SummaryInput) (spool.Summary, error) {
		panic(secret)
	}})
	if !errors.Is(err, spool.ErrSummarizer) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Compact: %v", err)
	}
	if after, _ := s.Transcript(t.Context()); len(after) != len(before) {
		t.Fatalf("%d entries after, %d before", len(after), len(before))
	}
	checkPanicLogged(t, &log, "the summarizer")
}
