package echo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/transcript"
)

// collect drains a stream into its events and its error.
func collect(t *testing.T, m model.Model, ctx context.Context, req *model.Request) ([]model.Event, error) {
	t.Helper()
	var events []model.Event
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func text(events []model.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Kind == model.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func calls(events []model.Event) []transcript.ToolCall {
	var out []transcript.ToolCall
	for _, ev := range events {
		if ev.Kind == model.EventToolCall {
			out = append(out, ev.ToolCall)
		}
	}
	return out
}

func user(s string) model.Message { return model.Message{Role: model.RoleUser, Content: s} }

var weather = model.ToolSpec{Name: "weather", Description: "the weather", Parameters: json.RawMessage(`{"type":"object"}`)}

func TestEchoStreamsWordByWord(t *testing.T) {
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: "be brief"},
		user("first"),
		{Role: model.RoleAssistant, Content: "echo: first"},
		user("hello  wide\nworld"),
	}}
	events, err := collect(t, echo.New(), context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for _, ev := range events[:len(events)-1] {
		if ev.Kind != model.EventText {
			t.Fatalf("event %+v before usage is not text", ev)
		}
		pieces = append(pieces, ev.Text)
	}
	want := []string{"echo: ", "hello  ", "wide\n", "world"}
	if strings.Join(pieces, "|") != strings.Join(want, "|") {
		t.Errorf("pieces = %q, want %q", pieces, want)
	}
	last := events[len(events)-1]
	if last.Kind != model.EventUsage {
		t.Fatalf("last event = %+v, want usage", last)
	}
	// Input: "be brief"(8) + "first"(5) + "echo: first"(11) + "hello  wide\nworld"(17) = 41 bytes -> 11 tokens.
	// Output: "echo: hello  wide\nworld" = 23 bytes -> 6 tokens.
	if want := (transcript.Usage{InputTokens: 11, OutputTokens: 6}); last.Usage != want {
		t.Errorf("usage = %+v, want %+v", last.Usage, want)
	}
}

func TestEchoIsDeterministic(t *testing.T) {
	req := &model.Request{Messages: []model.Message{user("/call weather {\"city\":\"Oslo\"}")}, Tools: []model.ToolSpec{weather}}
	a, _ := collect(t, echo.New(), context.Background(), req)
	b, _ := collect(t, echo.New(), context.Background(), req)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("two runs differ:\n%s\n%s", ja, jb)
	}
}

func TestEchoCallConvention(t *testing.T) {
	tools := []model.ToolSpec{weather, {Name: "time"}}
	tests := []struct {
		name      string
		prompt    string
		tools     []model.ToolSpec
		wantCalls []string // name + " " + arguments
		wantText  string
	}{
		{"one call", `/call weather {"city": "Oslo"}`, tools, []string{`weather {"city": "Oslo"}`}, ""},
		{"no arguments", "/call time", tools, []string{"time {}"}, ""},
		{"parallel calls", "please\n/call weather {\"city\":\"Oslo\"}\n/call time {}\n", tools,
			[]string{`weather {"city":"Oslo"}`, "time {}"}, ""},
		{"arguments not JSON", "/call weather Oslo please", tools, []string{`weather "Oslo please"`}, ""},
		{"unknown tool", "/call launch {}", tools, nil, `echo: tool "launch" is not available`},
		{"tools off", "/call weather {}", nil, nil, `echo: tool "weather" is not available`},
		{"no tool name", "/call", tools, nil, "echo: /call needs a tool name: /call <tool> <json arguments>"},
		{"not at line start", "what does /call do?", tools, nil, "echo: what does /call do?"},
		{"prefix of a word", "/caller x", tools, nil, "echo: /caller x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &model.Request{Messages: []model.Message{user(tt.prompt)}, Tools: tt.tools}
			events, err := collect(t, echo.New(), context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			ids := map[string]bool{}
			for _, c := range calls(events) {
				got = append(got, c.Name+" "+string(c.Arguments))
				if !json.Valid(c.Arguments) {
					t.Errorf("arguments %s are not JSON", c.Arguments)
				}
				if c.ID == "" || ids[c.ID] {
					t.Errorf("call id %q empty or repeated", c.ID)
				}
				ids[c.ID] = true
			}
			if strings.Join(got, "|") != strings.Join(tt.wantCalls, "|") {
				t.Errorf("calls = %q, want %q", got, tt.wantCalls)
			}
			if got := text(events); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
		})
	}
}

// A whole tool round trip: the call, the results, then a text answer and
// never another call, so a runtime loop always ends.
func TestEchoAnswersToolResults(t *testing.T) {
	m := echo.New()
	msgs := []model.Message{user("/call weather {\"city\":\"Oslo\"}\n/call time")}
	req := &model.Request{Messages: msgs, Tools: []model.ToolSpec{weather, {Name: "time"}}}
	events, err := collect(t, m, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	cs := calls(events)
	if len(cs) != 2 {
		t.Fatalf("calls = %+v", cs)
	}
	msgs = append(msgs,
		model.Message{Role: model.RoleAssistant, ToolCalls: cs},
		model.Message{Role: model.RoleTool, ToolCallID: cs[0].ID, Content: "sunny"},
		model.Message{Role: model.RoleTool, ToolCallID: cs[1].ID, Content: "noon"},
	)
	req.Messages = msgs
	events, err = collect(t, m, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls(events)) != 0 {
		t.Errorf("echo called a tool again after results: %+v", calls(events))
	}
	if got, want := text(events), "tool weather returned: sunny\ntool time returned: noon"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	// The next turn's identical prompt gets new call ids: the history differs.
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: text(events)}, msgs[0])
	req.Messages = msgs
	events, _ = collect(t, m, context.Background(), req)
	if again := calls(events); len(again) != 2 || again[0].ID == cs[0].ID {
		t.Errorf("second turn calls %+v reuse ids of %+v", again, cs)
	}
}

func TestEchoNoUserMessage(t *testing.T) {
	events, err := collect(t, echo.New(), context.Background(), &model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(events); got != "echo: (no message)" {
		t.Errorf("text = %q", got)
	}
	if _, err := collect(t, echo.New(), context.Background(), nil); err != nil {
		t.Errorf("nil request: %v", err)
	}
}

func TestEchoScript(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	m := echo.New(echo.WithName("scripted"), echo.WithScript(func(r *model.Request) []model.Event {
		mu.Lock()
		seen = append(seen, len(r.Messages))
		mu.Unlock()
		return []model.Event{
			{Kind: model.EventText, Text: "calling"},
			{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{Name: "weather"}},
			{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{ID: "mine", Name: "weather", Arguments: json.RawMessage("{oops")}},
		}
	}))
	if m.Name() != "scripted" {
		t.Errorf("Name = %q", m.Name())
	}
	events, err := collect(t, m, context.Background(), &model.Request{Messages: []model.Message{user("x")}})
	if err != nil {
		t.Fatal(err)
	}
	cs := calls(events)
	if len(events) != 3 || len(cs) != 2 {
		t.Fatalf("events = %+v", events)
	}
	if cs[0].ID == "" || string(cs[0].Arguments) != "{}" {
		t.Errorf("first call not completed: %+v", cs[0])
	}
	if cs[1].ID != "mine" || string(cs[1].Arguments) != `"{oops"` {
		t.Errorf("second call = %+v, want id kept and arguments as a JSON string", cs[1])
	}
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("script saw %v", seen)
	}
}

func TestEchoResponsesInOrderThenDefault(t *testing.T) {
	m := echo.New(echo.WithResponses(
		[]model.Event{{Kind: model.EventText, Text: "one"}},
		[]model.Event{{Kind: model.EventText, Text: "two"}},
	))
	req := &model.Request{Messages: []model.Message{user("three")}}
	for _, want := range []string{"one", "two", "echo: three", "echo: three"} {
		events, err := collect(t, m, context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(events); got != want {
			t.Errorf("text = %q, want %q", got, want)
		}
	}
}

// Concurrent callers share the response sequence: each response is used
// exactly once. Run with -race.
func TestEchoConcurrentResponses(t *testing.T) {
	const n = 20
	var rs [][]model.Event
	for i := range n {
		rs = append(rs, []model.Event{{Kind: model.EventText, Text: string(rune('a' + i))}})
	}
	m := echo.New(echo.WithResponses(rs...))
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			events, err := collect(t, m, context.Background(), &model.Request{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[text(events)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != n {
		t.Errorf("got %d distinct responses, want %d: %v", len(got), n, got)
	}
}

func TestEchoErrors(t *testing.T) {
	limited := &model.Error{Code: transcript.CodeRateLimited, StatusCode: 429, Message: "slow down"}
	req := &model.Request{Messages: []model.Message{user("a b c")}}

	events, err := collect(t, echo.New(echo.WithError(limited)), context.Background(), req)
	if !errors.Is(err, model.ErrRateLimited) || len(events) != 0 {
		t.Errorf("WithError: events %v, err %v", events, err)
	}

	events, err = collect(t, echo.New(echo.WithErrorAfter(2, limited)), context.Background(), req)
	if err != limited || len(events) != 2 || text(events) != "echo: a " {
		t.Errorf("WithErrorAfter(2): events %+v, err %v", events, err)
	}

	// More than the response has: all events, then the error.
	events, err = collect(t, echo.New(echo.WithErrorAfter(100, limited)), context.Background(), req)
	if err != limited || len(events) != 5 {
		t.Errorf("WithErrorAfter(100): %d events, err %v", len(events), err)
	}
}

func TestEchoDelayAndCancel(t *testing.T) {
	m := echo.New(echo.WithDelay(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	req := &model.Request{Messages: []model.Message{user("slow answer")}}
	done := make(chan error, 1)
	go func() {
		_, err := collect(t, m, ctx, req)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled stream kept waiting")
	}

	// A short delay still delivers everything.
	events, err := collect(t, echo.New(echo.WithDelay(time.Millisecond)), context.Background(), req)
	if err != nil || text(events) != "echo: slow answer" {
		t.Errorf("events %+v, err %v", events, err)
	}
}

func TestEchoConsumerStopsEarly(t *testing.T) {
	req := &model.Request{Messages: []model.Message{user("one two three")}}
	n := 0
	for _, err := range echo.New().Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("pulled %d events", n)
	}
}

func TestEchoRegistered(t *testing.T) {
	m, err := model.Open("echo", model.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if m.(model.Named).Name() != "echo" {
		t.Errorf("Name = %q", m.(model.Named).Name())
	}
	m, err = model.Open("echo:parrot", model.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if m.(model.Named).Name() != "parrot" {
		t.Errorf("Name = %q", m.(model.Named).Name())
	}
}

// TestEchoSummary: a summary request gets the summary so far and one
// abridged line per user message, the same every time.
func TestEchoSummary(t *testing.T) {
	long := strings.Repeat("word ", 20)
	req := model.NewSummaryRequest("", "- earlier", []model.Message{
		{Role: model.RoleUser, Content: "Where is\n order 1042?"},
		{Role: model.RoleAssistant, Content: "In Lyon."},
		{Role: model.RoleUser, Content: long},
	})
	var got strings.Builder
	for ev, err := range echo.New().Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(ev.Text)
	}
	want := "- earlier\n- Where is order 1042?\n- " + strings.Repeat("word ", 11) + "word…"
	if got.String() != want {
		t.Errorf("summary\n%q\nwant\n%q", got.String(), want)
	}
}
