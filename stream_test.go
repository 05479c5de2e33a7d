package spool_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// countingModel streams n text pieces and counts how many it has produced.
type countingModel struct {
	n        int
	produced atomic.Int32
}

func (m *countingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		for i := 0; i < m.n; i++ {
			if err := ctx.Err(); err != nil {
				yield(model.Event{}, err)
				return
			}
			m.produced.Add(1)
			if !yield(model.Event{Kind: model.EventText, Text: "x"}, nil) {
				return
			}
		}
		yield(model.Event{Kind: model.EventUsage, Usage: transcript.Usage{InputTokens: 1, OutputTokens: int64(m.n)}}, nil)
	}
}

func TestStreamEventsInOrder(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Tools: approvalTools(nil), ToolMode: transcript.ToolModeAuto})
	s := session(t, a, ctx, "st")
	var kinds []spool.EventKind
	var text strings.Builder
	var end *spool.Result
	for ev, err := range s.Stream(ctx, `/call lookup_order {"order":3}`) {
		if err != nil {
			t.Fatal(err)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
		if ev.TurnID == "" {
			t.Fatalf("event %s without turn id, want every event to name its turn", ev.Kind)
		}
		switch ev.Kind {
		case spool.EventText:
			text.WriteString(ev.Text)
		case spool.EventTurnEnd:
			end = ev.Result
		}
	}
	want := []spool.EventKind{spool.EventTurnStart, spool.EventStepStart, spool.EventToolCall, spool.EventStepEnd,
		spool.EventToolResult, spool.EventStepStart, spool.EventText, spool.EventStepEnd, spool.EventTurnEnd}
	if len(kinds) != len(want) {
		t.Fatalf("events %v\nwant   %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v\nwant   %v", kinds, want)
		}
	}
	if end == nil || end.Status != transcript.StatusOK || end.Text != text.String() {
		t.Fatalf("turn end %+v after streaming %q, want ok with the text streamed", end, text.String())
	}
}

func TestStreamBackpressure(t *testing.T) {
	ctx := t.Context()
	m := &countingModel{n: 1000}
	a := newAgent(t, spool.Config{Model: m})
	s := session(t, a, ctx, "bp")
	consumed := 0
	for ev, err := range s.Stream(ctx, "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != spool.EventText {
			continue
		}
		consumed++
		if p := int(m.produced.Load()); p > consumed {
			t.Fatalf("the model ran ahead of the consumer: %d produced, %d consumed; want no more produced than consumed", p, consumed)
		}
	}
	if consumed != 1000 {
		t.Fatalf("consumed %d pieces, want 1000", consumed)
	}
}

func TestConsumerStoppingEarlyRecordsCancelled(t *testing.T) {
	ctx := t.Context()
	m := &countingModel{n: 1000}
	a := newAgent(t, spool.Config{Model: m})
	s := session(t, a, ctx, "early")
	n := 0
	for ev, err := range s.Stream(ctx, "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == spool.EventText {
			n++
			if n == 3 {
				break
			}
		}
	}
	if p := m.produced.Load(); p > 4 {
		t.Fatalf("the model produced %d pieces for a consumer that took 3, want at most 4", p)
	}
	entries, _ := s.Transcript(ctx)
	last := entries[len(entries)-1]
	if last.Type != transcript.TypeTurnEnd || last.Status != transcript.StatusCancelled {
		t.Fatalf("last entry %s %s, want a cancelled turn end", last.Type, last.Status)
	}
	var am transcript.AssistantMessage
	_ = entries[1].DecodeData(&am)
	if am.Text != "xxx" {
		t.Fatalf("the partial answer recorded is %q, want %q", am.Text, "xxx")
	}
	// The session goes on, and history leaves the cancelled turn out.
	res, err := s.Send(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	h, _ := s.History(ctx)
	for _, m := range h {
		if m.Content == "go" {
			t.Fatalf("History = %+v, want the cancelled turn left out", h)
		}
	}
}

func TestCancelledContextRecordsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	m := echoScript(func(req *model.Request) []model.Event {
		cancel()
		return []model.Event{text("never")}
	})
	a := newAgent(t, spool.Config{Model: m})
	s := session(t, a, t.Context(), "c")
	res, err := s.Send(ctx, "go")
	var te *spool.TurnError
	if !errors.As(err, &te) || !errors.Is(err, context.Canceled) || res.Status != transcript.StatusCancelled {
		t.Fatalf("Send with a cancelled context = %+v, %v; want a TurnError wrapping context.Canceled and status cancelled", res, err)
	}
	entries, _ := s.Transcript(t.Context())
	if last := entries[len(entries)-1]; last.Status != transcript.StatusCancelled {
		t.Fatalf("the transcript ends %s, want cancelled", last.Status)
	}
}

func TestDeeplyNestedToolArgumentsAreKeptAsText(t *testing.T) {
	ctx := t.Context()
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	m := scripted([]model.Event{call("c1", "lookup_order", deep)})
	a := newAgent(t, spool.Config{Model: m, Tools: approvalTools(nil), ToolMode: transcript.ToolModeAuto})
	s := session(t, a, ctx, "deep")
	res, err := s.Send(ctx, "go")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send = %+v, %v; want ok", res, err)
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	var am transcript.AssistantMessage
	if err := entries[1].DecodeData(&am); err != nil || am.ToolCalls[0].Arguments[0] != '"' {
		t.Fatalf("the call's arguments are recorded as %.40s (%v), want them kept as a JSON string", am.ToolCalls[0].Arguments, err)
	}
}
