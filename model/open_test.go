package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

type fake struct {
	name string
	cfg  model.Config
}

func (f *fake) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(func(model.Event, error) bool) {}
}

// The registry is the process's: the test providers are registered once,
// so that the tests pass again in the same process (go test -count=2).
var (
	registerOpen sync.Once
	registerDup  sync.Once
)

func TestOpen(t *testing.T) {
	registerOpen.Do(func() {
		model.Register("fake-open", func(name string, cfg model.Config) (model.Model, error) {
			if name == "broken" {
				return nil, errors.New("no such model")
			}
			return &fake{name: name, cfg: cfg}, nil
		})
	})

	m, err := model.Open(" Fake-Open:some:model ", model.Config{BaseURL: "http://x", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	f := m.(*fake)
	if f.name != "some:model" || f.cfg.BaseURL != "http://x" || f.cfg.APIKey != "k" {
		t.Errorf("opened %+v", f)
	}
	if m, err := model.Open("fake-open", model.Config{}); err != nil || m.(*fake).name != "" {
		t.Errorf("without a model name: %v %v", m, err)
	}

	_, err = model.Open("fake-open:broken", model.Config{})
	if err == nil || !strings.Contains(err.Error(), "no such model") {
		t.Errorf("open error = %v", err)
	}

	_, err = model.Open("nosuch:thing", model.Config{})
	if !errors.Is(err, model.ErrUnknownProvider) {
		t.Fatalf("err = %v, want ErrUnknownProvider", err)
	}
	if !strings.Contains(err.Error(), "fake-open") || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("error %q should name the provider and list the known ones", err)
	}

	if _, err := model.Open("", model.Config{}); err == nil {
		t.Error("empty spec opened")
	}
	if got := model.Providers(); !contains(got, "fake-open") {
		t.Errorf("Providers() = %v", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRegisterPanics(t *testing.T) {
	open := func(string, model.Config) (model.Model, error) { return &fake{}, nil }
	registerDup.Do(func() { model.Register("fake-dup", open) })
	for name, f := range map[string]func(){
		"duplicate": func() { model.Register("fake-dup", open) },
		"nil":       func() { model.Register("fake-nil", nil) },
		"empty":     func() { model.Register("", open) },
		"colon":     func() { model.Register("a:b", open) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

func TestToolArguments(t *testing.T) {
	for in, want := range map[string]string{
		"":                `{}`,
		"  ":              `{}`,
		`{"a":1}`:         `{"a":1}`,
		" {\"a\": [1]}\n": `{"a": [1]}`,
		`{"a":`:           `"{\"a\":"`,
		"Oslo":            `"Oslo"`,
	} {
		got := model.ToolArguments(in)
		if string(got) != want || !json.Valid(got) {
			t.Errorf("ToolArguments(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCodeForStatus(t *testing.T) {
	for status, want := range map[int]transcript.ErrorCode{
		429: transcript.CodeRateLimited, 401: transcript.CodeAuth, 403: transcript.CodeAuth,
		500: transcript.CodeProviderError, 529: transcript.CodeProviderError, 400: transcript.CodeProviderError, 404: transcript.CodeProviderError,
	} {
		if got := model.CodeForStatus(status); got != want {
			t.Errorf("CodeForStatus(%d) = %q, want %q", status, got, want)
		}
	}
}

func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":1}`, `{"a":`, "Oslo", " [1, 2] ", "\x00", `"\ud800"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := model.ToolArguments(s)
		if !json.Valid(got) {
			t.Fatalf("ToolArguments(%q) = %q, not JSON", s, got)
		}
	})
}
