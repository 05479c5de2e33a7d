package openai_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/openai"
	"github.com/spool-go/spool/transcript"
)

func authOf(s *server) string { return s.header.Load().(http.Header).Get("Authorization") }

// The environment configures the provider; a Config (flags) wins over it.
func TestEnvironmentAndConfig(t *testing.T) {
	envServer := newServer(t, replay(t, "text.sse"))
	flagServer := newServer(t, replay(t, "text.sse"))
	t.Setenv("OPENAI_BASE_URL", envServer.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "env-key")

	m, err := model.Open("openai:gpt-test-mini", model.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if envServer.requests.Load() != 1 || authOf(envServer) != "Bearer env-key" {
		t.Errorf("environment not used: %d requests, auth %q", envServer.requests.Load(), authOf(envServer))
	}
	if m.(model.Named).Name() != "gpt-test-mini" {
		t.Errorf("Name = %q", m.(model.Named).Name())
	}

	m, err = model.Open("openai:gpt-test-mini", model.Config{BaseURL: flagServer.URL + "/v1", APIKey: "flag-key"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if flagServer.requests.Load() != 1 || authOf(flagServer) != "Bearer flag-key" || envServer.requests.Load() != 1 {
		t.Errorf("config did not win: flag server %d requests, auth %q", flagServer.requests.Load(), authOf(flagServer))
	}

	if _, err := model.Open("openai", model.Config{}); err == nil {
		t.Error("openai without a model name opened")
	}
}

// Ollama is the OpenAI-compatible API at OLLAMA_HOST, and never gets the
// OpenAI key from the environment.
func TestOllama(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	t.Setenv("OPENAI_API_KEY", "must-not-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OLLAMA_HOST", s.URL)

	m, err := model.Open("ollama:llama3.2", model.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(*openai.Model).BaseURL(); got != s.URL+"/v1" {
		t.Errorf("BaseURL = %q", got)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if auth := authOf(s); auth != "" {
		t.Errorf("Authorization %q sent to ollama", auth)
	}
}

func TestOllamaBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "http://localhost:11434/v1",
		"127.0.0.1":                  "http://127.0.0.1:11434/v1",
		"0.0.0.0:9999":               "http://0.0.0.0:9999/v1",
		"http://gpu-box:11434":       "http://gpu-box:11434/v1",
		"https://ollama.example.com": "https://ollama.example.com/v1",
		"http://proxy:80/ollama/v1":  "http://proxy:80/ollama/v1",
	} {
		if got := openai.OllamaBaseURL(in); got != want {
			t.Errorf("OllamaBaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// Without a key, OpenAI's API is not even called.
func TestNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m, err := openai.New("gpt-test-mini")
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(m, context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeAuth {
		t.Errorf("err = %v, want auth", err)
	}
	if m.BaseURL() != openai.DefaultBaseURL {
		t.Errorf("BaseURL = %q", m.BaseURL())
	}
}
