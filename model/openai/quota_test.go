package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/openai"
	"github.com/spool-go/spool/transcript"
)

// OpenAI answers an account with no credit left, or one over its spend
// limit, with a 429 like a rate limit's, of type insufficient_quota (its
// code names the cause). It is no rate limit: waiting does not end it,
// and as one the runtime recorded rate_limited and the server told its
// callers to retry in five seconds, for ever. It is the provider's refusal.
func TestInsufficientQuotaIsNotARateLimit(t *testing.T) {
	for _, c := range []struct{ typ, code string }{
		{"insufficient_quota", "insufficient_quota"},
		{"insufficient_quota", "project_spend_limit_exceeded"},
		{"insufficient_quota", ""},
	} {
		t.Run(c.typ+" "+c.code, func(t *testing.T) {
			s := newServer(t, status(429, c.typ, c.code))
			_, err := collect(newModel(t, s), context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) || me.Code != transcript.CodeProviderError || me.StatusCode != 429 {
				t.Fatalf("err = %v, want provider_error (HTTP 429)", err)
			}
			if errors.Is(err, model.ErrRateLimited) {
				t.Errorf("err = %v matches ErrRateLimited", err)
			}
			if !strings.Contains(me.Message, "insufficient_quota") {
				t.Errorf("message %q does not say why", me.Message)
			}
		})
	}
}

// The SDK retries a 429; a quota that has run out is not retried (it
// does not come back in the seconds the retries wait), a rate limit is.
func TestInsufficientQuotaIsNotRetried(t *testing.T) {
	s := newServer(t, status(429, "insufficient_quota", "insufficient_quota"))
	if _, err := collect(newModel(t, s, openai.WithMaxRetries(2)), context.Background(), simpleRequest()); err == nil {
		t.Fatal("no error")
	}
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("%d requests for a 429 insufficient_quota, want 1", n)
	}
	s = newServer(t, status(429, "requests", "rate_limit_exceeded"))
	if _, err := collect(newModel(t, s, openai.WithMaxRetries(2)), context.Background(), simpleRequest()); !errors.Is(err, model.ErrRateLimited) {
		t.Fatalf("err = %v, want a rate limit", err)
	}
	if n := s.requests.Load(); n != 3 {
		t.Fatalf("%d requests for a rate limit with two retries, want 3", n)
	}
}
