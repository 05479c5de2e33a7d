package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/tool"
)

type weatherArgs struct {
	City  string   `json:"city" jsonschema:"the city"`
	Days  int      `json:"days,omitempty"`
	Units []string `json:"units,omitempty"`
}

type forecast struct {
	City string `json:"city"`
	Temp int    `json:"temp"`
}

func weather() *tool.Tool {
	return tool.New("weather", "Forecast.", func(ctx context.Context, a weatherArgs) (forecast, error) {
		if a.City == "Atlantis" {
			return forecast{}, errors.New("no such city")
		}
		return forecast{City: a.City, Temp: 20 + a.Days}, nil
	}, tool.WithTimeout(time.Second))
}

func TestSchemaFromStruct(t *testing.T) {
	w := weather()
	var s struct {
		Type       string                    `json:"type"`
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(w.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Required) != 1 || s.Required[0] != "city" {
		t.Fatalf("schema %s", w.Schema())
	}
	if s.Properties["city"]["description"] != "the city" || s.Properties["days"]["type"] != "integer" {
		t.Fatalf("schema %s", w.Schema())
	}
	if sp := w.Spec(); sp.Name != "weather" || sp.Description != "Forecast." {
		t.Fatalf("spec %+v", sp)
	}
}

func TestCall(t *testing.T) {
	ctx := context.Background()
	w := weather()
	out, err := w.Run(ctx, json.RawMessage(`{"city":"Oslo","days":2}`), 0)
	if err != nil || out != `{"city":"Oslo","temp":22}` {
		t.Fatalf("%q %v", out, err)
	}
	for _, bad := range []string{`{"days":2}`, `{"city":7}`, `[1]`, `not json`, `{"city":"x","days":"many"}`} {
		if _, err := w.Run(ctx, json.RawMessage(bad), 0); !errors.Is(err, tool.ErrInvalidArguments) {
			t.Errorf("arguments %s: %v, want ErrInvalidArguments", bad, err)
		}
	}
	if _, err := w.Run(ctx, json.RawMessage(`{"city":"Atlantis"}`), 0); err == nil || err.Error() != "no such city" {
		t.Fatalf("tool error: %v", err)
	}
}

func TestRunTimesOutEvenIfTheToolIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stubborn := tool.New("stubborn", "Ignores cancellation.", func(ctx context.Context, _ struct{}) (string, error) {
		<-release
		return "late", nil
	})
	_, err := stubborn.Run(context.Background(), nil, 10*time.Millisecond)
	if !errors.Is(err, tool.ErrTimeout) {
		t.Fatalf("%v, want ErrTimeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := stubborn.Run(ctx, nil, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	p := tool.New("panics", "Panics.", func(ctx context.Context, _ struct{}) (string, error) {
		panic("oops")
	})
	if _, err := p.Run(context.Background(), nil, time.Second); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("%v", err)
	}
}

func TestNamesAreChecked(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a bad tool name was accepted")
		}
	}()
	tool.New("no spaces allowed", "", func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
}

func TestRawTool(t *testing.T) {
	r := tool.NewRaw("raw", "Raw.", json.RawMessage(`{"type":"object"}`), func(ctx context.Context, args json.RawMessage) (string, error) {
		return string(args), nil
	}, tool.RequireApproval())
	if !r.RequiresApproval() {
		t.Fatal("approval option lost")
	}
	out, _ := r.Call(context.Background(), json.RawMessage(`{"a":1}`))
	if out != `{"a":1}` {
		t.Fatal(out)
	}
}
