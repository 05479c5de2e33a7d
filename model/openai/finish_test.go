package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// An answer cut by the output token limit (finish_reason "length") in the
// middle of a tool call must not hand the runtime that call: its arguments
// are a fragment, and running it (or asking a person to approve it) acts
// on half a request. The stream fails instead, saying why, after the text
// and the usage.
func TestLengthStopMidToolCall(t *testing.T) {
	s := newServer(t, replay(t, "length_tool_call.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeModelError || !strings.Contains(me.Message, "max_tokens") {
		t.Fatalf("err = %v, want a model_error naming max_tokens", err)
	}
	texts, calls, usage := split(events)
	if len(calls) != 0 {
		t.Errorf("a truncated call was delivered: %+v", calls)
	}
	if strings.Join(texts, "") != "Writing the file." {
		t.Errorf("texts = %q", texts)
	}
	if len(usage) != 1 || usage[0] != (transcript.Usage{InputTokens: 50, OutputTokens: 16}) {
		t.Errorf("usage = %+v", usage)
	}
}

// Azure's content filter stops an answer the same way.
func TestContentFilterStopMidToolCall(t *testing.T) {
	s := newServer(t, replaySwapped(t, "length_tool_call.sse", `"finish_reason":"length"`, `"finish_reason":"content_filter"`))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeModelError || !strings.Contains(me.Message, "content_filter") {
		t.Fatalf("err = %v, want a model_error naming content_filter", err)
	}
	if _, calls, _ := split(events); len(calls) != 0 {
		t.Errorf("a truncated call was delivered: %+v", calls)
	}
}

// A text answer cut by the limit, or by the content filter, is still an
// answer: the runtime keeps it, told why it stopped by one EventStop.
// One the model ended has none.
func TestStopInText(t *testing.T) {
	for reason, want := range map[string]model.StopReason{"stop": "", "length": model.StopLength, "content_filter": model.StopFiltered} {
		t.Run(reason, func(t *testing.T) {
			s := newServer(t, replaySwapped(t, "text.sse", `"finish_reason":"stop"`, `"finish_reason":"`+reason+`"`))
			events, err := collect(newModel(t, s), context.Background(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if texts, _, _ := split(events); len(texts) != 11 {
				t.Errorf("texts = %q", texts)
			}
			if got := stops(events); want == "" && len(got) != 0 || want != "" && !slices.Equal(got, []model.StopReason{want}) {
				t.Errorf("stops = %q, want %q", got, want)
			}
		})
	}
}

// stops returns the stop reasons of events, in order.
func stops(events []model.Event) []model.StopReason {
	var out []model.StopReason
	for _, ev := range events {
		if ev.Kind == model.EventStop {
			out = append(out, ev.Stop)
		}
	}
	return out
}

// replaySwapped answers with a recording in which old is replaced by new.
func replaySwapped(t *testing.T, name, old, new string) func(http.ResponseWriter, *http.Request) {
	events := blocks(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, strings.ReplaceAll(e, old, new))
			w.(http.Flusher).Flush()
		}
	}
}
