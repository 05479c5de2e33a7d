package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
)

// The compatible servers the package names refuse a request over the
// model's context window without OpenAI's context_length_exceeded code:
// the llama.cpp server with the type exceed_context_size_error, vLLM with
// a BadRequestError whose message says "maximum context length". Each is
// still a request too long for the window, which the runtime answers by
// compacting the session; as a provider_error it was only a failure.
func TestContextTooLongFromCompatibleServers(t *testing.T) {
	for name, body := range map[string]string{
		"llama.cpp": `{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens)",` +
			`"type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}`,
		"vLLM": `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5120 tokens ` +
			`(4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",` +
			`"type":"BadRequestError","param":null,"code":400}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, body)
			})
			_, err := collect(newModel(t, s), context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || !errors.Is(err, model.ErrContextTooLong) || me.StatusCode != http.StatusBadRequest {
				t.Fatalf("err = %v, want context_too_long (HTTP 400)", err)
			}
			if strings.Contains(me.Message, "tokens") {
				t.Errorf("message %q keeps the server's free text", me.Message)
			}
		})
	}

	// Another 400 is not one.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"max_tokens must be at least 1, got -186.","type":"BadRequestError","param":null,"code":400}}`)
	})
	if _, err := collect(newModel(t, s), context.Background(), simpleRequest()); errors.Is(err, model.ErrContextTooLong) {
		t.Errorf("err = %v, a bad max_tokens taken for context_too_long", err)
	}
}
