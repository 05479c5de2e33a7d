package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/anthropic"
	"github.com/spool-go/spool/transcript"
)

func keyAt(s *server) string { return keyOf(s.header.Load().(http.Header)) }

// The environment configures the provider; a Config (flags) wins over it.
func TestEnvironmentAndConfig(t *testing.T) {
	envServer := newServer(t, replay(t, "text.sse"))
	flagServer := newServer(t, replay(t, "text.sse"))
	t.Setenv("ANTHROPIC_BASE_URL", envServer.URL)
	t.Setenv("ANTHROPIC_API_KEY", "env-key")

	m, err := model.Open("anthropic:claude-test-1", model.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if envServer.requests.Load() != 1 || keyAt(envServer) != "env-key" {
		t.Errorf("environment not used: %d requests, key %q", envServer.requests.Load(), keyAt(envServer))
	}
	if m.(model.Named).Name() != "claude-test-1" {
		t.Errorf("Name = %q", m.(model.Named).Name())
	}

	m, err = model.Open("anthropic:claude-test-1", model.Config{BaseURL: flagServer.URL, APIKey: "flag-key"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if flagServer.requests.Load() != 1 || keyAt(flagServer) != "flag-key" || envServer.requests.Load() != 1 {
		t.Errorf("config did not win: flag server %d requests, key %q", flagServer.requests.Load(), keyAt(flagServer))
	}

	if _, err := model.Open("anthropic", model.Config{}); err == nil {
		t.Error("anthropic without a model name opened")
	}
}

func TestAuthToken(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-1")
	m, err := anthropic.New("claude-test-1", anthropic.WithBaseURL(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if got := s.header.Load().(http.Header).Get("Authorization"); got != "Bearer token-1" {
		t.Errorf("Authorization = %q", got)
	}
}

// Without any key, the Anthropic API is not even called.
func TestNoKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	m, err := anthropic.New("claude-test-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(m, context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeAuth {
		t.Errorf("err = %v, want auth", err)
	}
	if m.BaseURL() != anthropic.DefaultBaseURL {
		t.Errorf("BaseURL = %q", m.BaseURL())
	}
}
