package anthropic_test

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

// An answer that stops with max_tokens while a tool_use block is being
// written must not hand the runtime that call: its input is a fragment,
// or (as the API closes a cut block) a prefix that is valid JSON without
// the fields the model had not reached. Running it, or asking a person to
// approve it, acts on half a request. The stream fails instead, after the
// text and the usage.
func TestMaxTokensMidToolUse(t *testing.T) {
	cases := map[string]func(string) string{
		"fragment": func(e string) string { return e },
		"valid prefix": func(e string) string {
			return strings.ReplaceAll(e, `{\"path\": \"notes.txt\", \"content\": \"first li`, `{\"path\": \"notes.txt\"}`)
		},
		"block never stopped": func(e string) string {
			if strings.Contains(e, `"content_block_stop","index":1`) {
				return ""
			}
			return e
		},
		"refusal": func(e string) string {
			return strings.ReplaceAll(e, `"stop_reason":"max_tokens"`, `"stop_reason":"refusal"`)
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, replayEdited(t, "max_tokens_tool_use.sse", edit))
			events, err := collect(newModel(t, s), context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || me.Code != transcript.CodeModelError {
				t.Fatalf("err = %v, want model_error", err)
			}
			texts, calls, usage := split(events)
			if len(calls) != 0 {
				t.Errorf("a cut call was delivered: %+v", calls)
			}
			if strings.Join(texts, "") != "Writing the file." {
				t.Errorf("texts = %q", texts)
			}
			if len(usage) == 0 || usage[len(usage)-1] != (transcript.Usage{InputTokens: 50, OutputTokens: 16}) {
				t.Errorf("usage = %+v", usage)
			}
		})
	}
}

// A text answer cut by max_tokens, by the context window, or by a
// refusal is still an answer: the runtime keeps it, told why it stopped
// by one EventStop after the text. One the model ended has none.
func TestStopInText(t *testing.T) {
	for reason, want := range map[string]model.StopReason{
		"end_turn": "", "max_tokens": model.StopLength, "model_context_window_exceeded": model.StopLength, "refusal": model.StopFiltered,
	} {
		t.Run(reason, func(t *testing.T) {
			s := newServer(t, replayEdited(t, "text.sse", func(e string) string {
				return strings.ReplaceAll(e, `"stop_reason":"end_turn"`, `"stop_reason":"`+reason+`"`)
			}))
			events, err := collect(newModel(t, s), context.Background(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if texts, _, _ := split(events); len(texts) != 11 {
				t.Errorf("texts = %q", texts)
			}
			var got []model.StopReason
			for _, ev := range events {
				if ev.Kind == model.EventStop {
					got = append(got, ev.Stop)
				}
			}
			if want == "" && len(got) != 0 || want != "" && !slices.Equal(got, []model.StopReason{want}) {
				t.Errorf("stops = %q, want %q", got, want)
			}
		})
	}
}

// replayEdited answers with a recording whose events pass through edit;
// an event edited to "" is left out.
func replayEdited(t *testing.T, name string, edit func(string) string) func(http.ResponseWriter, *http.Request) {
	events := blocks(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			if e = edit(e); e != "" {
				io.WriteString(w, e)
				w.(http.Flusher).Flush()
			}
		}
	}
}
