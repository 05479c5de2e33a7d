package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// A stream that ends before its choice's finish_reason is not an answer:
// a connection a proxy closed mid-answer, a body with no stream in it (a
// server or gateway that ignored "stream": true and sent one JSON
// completion), an empty body. Each used to end as an answer, cut or
// empty, recorded as if the model had finished; each now fails, after
// whatever text came, as the anthropic provider fails a stream without
// message_stop.
func TestStreamEndingBeforeFinishReason(t *testing.T) {
	text := blocks(t, "text.sse")
	for name, c := range map[string]struct {
		contentType, body, text string
	}{
		"cut mid-answer": {"text/event-stream", strings.Join(text[:4], ""), "The answer"},
		"non-streamed JSON": {"application/json", `{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"gpt-test-mini",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, ""},
		"empty body": {"text/event-stream", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				io.WriteString(w, c.body)
			})
			events, err := collect(newModel(t, s), context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || me.Code != transcript.CodeProviderError || !strings.Contains(me.Message, "finish_reason") {
				t.Fatalf("err = %v, want provider_error naming finish_reason", err)
			}
			if texts, _, _ := split(events); strings.Join(texts, "") != c.text {
				t.Errorf("texts = %q, want %q", texts, c.text)
			}
		})
	}
}
