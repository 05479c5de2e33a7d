package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/anthropic"
	"github.com/spool-go/spool/transcript"
)

// secret appears in every prompt the tests send; no error message may
// contain it.
const secret = "SECRET-9c1e"

// blocks returns the SSE events of a testdata recording, each with its
// terminating blank line.
func blocks(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for b := range strings.SplitSeq(string(data), "\n\n") {
		if strings.TrimSpace(b) != "" {
			out = append(out, b+"\n\n")
		}
	}
	return out
}

// server is a fake Messages API.
type server struct {
	*httptest.Server
	requests atomic.Int32
	body     atomic.Value // []byte: the last request body
	header   atomic.Value // http.Header: the last request's headers
}

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.body.Store(body)
		s.header.Store(r.Header.Clone())
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// replay answers with a recording, flushing after every event.
func replay(t *testing.T, name string) func(http.ResponseWriter, *http.Request) {
	events := blocks(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

// status answers with an HTTP error in the API's format; its message
// quotes the prompt.
func status(code int, typ string) func(http.ResponseWriter, *http.Request) {
	return statusSaying(code, typ, "refused: "+secret)
}

// statusSaying answers an error of type typ with message msg.
func statusSaying(code int, typ, msg string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{
			"type": typ, "message": msg,
		}})
	}
}

func newModel(t *testing.T, s *server, opts ...anthropic.Option) *anthropic.Model {
	t.Helper()
	opts = append([]anthropic.Option{anthropic.WithBaseURL(s.URL), anthropic.WithAPIKey("test-key"), anthropic.WithMaxRetries(0)}, opts...)
	m, err := anthropic.New("claude-test-1", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func simpleRequest() *model.Request {
	return &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "tell me " + secret}}}
}

func collect(m model.Model, ctx context.Context, req *model.Request) ([]model.Event, error) {
	var events []model.Event
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func split(events []model.Event) (texts []string, calls []transcript.ToolCall, usage []transcript.Usage) {
	for _, ev := range events {
		switch ev.Kind {
		case model.EventText:
			texts = append(texts, ev.Text)
		case model.EventToolCall:
			calls = append(calls, ev.ToolCall)
		case model.EventUsage:
			usage = append(usage, ev.Usage)
		}
	}
	return
}

func keyOf(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

func TestTextInManyChunks(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	m := newModel(t, s)
	events, err := collect(m, context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	texts, calls, usage := split(events)
	if len(texts) != 11 || strings.Join(texts, "") != "The answer is forty-two, as every reader knows." {
		t.Errorf("texts = %q", texts)
	}
	if len(calls) != 0 {
		t.Errorf("calls = %+v", calls)
	}
	// message_start (input 25 + 5 cache reads), then message_delta's output.
	want := []transcript.Usage{{InputTokens: 30, OutputTokens: 1}, {InputTokens: 30, OutputTokens: 12}}
	if len(usage) != 2 || usage[0] != want[0] || usage[1] != want[1] {
		t.Errorf("usage = %+v, want %+v", usage, want)
	}
	if m.Name() != "claude-test-1" {
		t.Errorf("Name = %q", m.Name())
	}
	if got := keyOf(s.header.Load().(http.Header)); got != "test-key" {
		t.Errorf("key sent = %q", got)
	}
}

func TestParallelToolUseSplitAcrossChunks(t *testing.T) {
	s := newServer(t, replay(t, "tool_use.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []model.EventKind
	for _, ev := range events {
		kinds = append(kinds, ev.Kind)
	}
	// Usage from message_start, the text, each call as its block stops,
	// then usage from message_delta.
	wantKinds := []model.EventKind{model.EventUsage, model.EventText, model.EventToolCall, model.EventToolCall, model.EventToolCall, model.EventUsage}
	if len(kinds) != len(wantKinds) {
		t.Fatalf("event kinds = %v, want %v", kinds, wantKinds)
	}
	for i := range kinds {
		if kinds[i] != wantKinds[i] {
			t.Fatalf("event kinds = %v, want %v", kinds, wantKinds)
		}
	}
	texts, calls, usage := split(events)
	if strings.Join(texts, "") != "Checking both." {
		t.Errorf("texts = %q", texts)
	}
	want := []transcript.ToolCall{
		{ID: "toolu_01W", Name: "weather", Arguments: json.RawMessage(`{"city": "Oslo", "unit": "C"}`)},
		{ID: "toolu_02T", Name: "local_time", Arguments: json.RawMessage(`{"zone": "Europe/Oslo"}`)},
		{ID: "toolu_03N", Name: "now", Arguments: json.RawMessage(`{}`)},
	}
	for i := range want {
		if calls[i].ID != want[i].ID || calls[i].Name != want[i].Name || string(calls[i].Arguments) != string(want[i].Arguments) {
			t.Errorf("call %d = %+v %s, want %+v %s", i, calls[i], calls[i].Arguments, want[i], want[i].Arguments)
		}
	}
	if last := usage[len(usage)-1]; last != (transcript.Usage{InputTokens: 500, OutputTokens: 95}) {
		t.Errorf("final usage = %+v", last)
	}
}

// The request body maps the history faithfully.
func TestRequestBody(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "Be brief."},
			{Role: model.RoleUser, Content: "weather and time in Oslo? " + secret},
			{Role: model.RoleAssistant, Content: "Checking.", ToolCalls: []transcript.ToolCall{
				{ID: "toolu_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
				{ID: "toolu_2", Name: "local_time", Arguments: json.RawMessage(`"zone=Oslo"`)},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", Content: "sunny"},
			{Role: model.RoleTool, ToolCallID: "toolu_2", Content: "error: bad arguments"},
			{Role: model.RoleUser, Content: "and tomorrow?"},
			{Role: model.RoleAssistant, Content: ""},      // an empty answer is left out
			{Role: model.RoleAssistant, Content: " \n\t"}, // and a blank one, which the API refuses
			{Role: model.RoleUser, Content: "hello?"},
		},
		Tools: []model.ToolSpec{
			{Name: "weather", Description: "Current weather", Parameters: json.RawMessage(
				`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "local_time"},
		},
	}
	if _, err := collect(newModel(t, s), context.Background(), req); err != nil {
		t.Fatal(err)
	}
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   *bool           `json:"is_error"`
		Content   []block         `json:"content"`
	}
	var got struct {
		Model     string  `json:"model"`
		MaxTokens int64   `json:"max_tokens"`
		Stream    bool    `json:"stream"`
		System    []block `json:"system"`
		Messages  []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	body := s.body.Load().([]byte)
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Model != "claude-test-1" || got.MaxTokens != anthropic.DefaultMaxTokens || !got.Stream {
		t.Errorf("model/max_tokens/stream wrong: %s", body)
	}
	if len(got.System) != 1 || got.System[0].Text != "Be brief." {
		t.Errorf("system = %+v", got.System)
	}
	roles := []string{"user", "assistant", "user"}
	if len(got.Messages) != len(roles) {
		t.Fatalf("messages: %s", body)
	}
	for i, r := range roles {
		if got.Messages[i].Role != r {
			t.Errorf("message %d role %q, want %q", i, got.Messages[i].Role, r)
		}
	}
	a := got.Messages[1].Content
	if len(a) != 3 || a[0].Type != "text" || a[0].Text != "Checking." ||
		a[1].Type != "tool_use" || a[1].ID != "toolu_1" || a[1].Name != "weather" || string(a[1].Input) != `{"city":"Oslo"}` ||
		a[2].Type != "tool_use" || a[2].ID != "toolu_2" || string(a[2].Input) != `{"value":"zone=Oslo"}` {
		t.Errorf("assistant blocks = %+v", a)
	}
	// Tool results and the user messages after them form one user message,
	// results first.
	u := got.Messages[2].Content
	if len(u) != 4 || u[0].Type != "tool_result" || u[0].ToolUseID != "toolu_1" || u[0].Content[0].Text != "sunny" ||
		u[1].Type != "tool_result" || u[1].ToolUseID != "toolu_2" || u[1].IsError != nil ||
		u[2].Type != "text" || u[2].Text != "and tomorrow?" || u[3].Text != "hello?" {
		t.Errorf("user blocks = %+v", u)
	}
	if len(got.Tools) != 2 || got.Tools[0].Name != "weather" || got.Tools[0].Description != "Current weather" {
		t.Fatalf("tools = %+v", got.Tools)
	}
	schema := got.Tools[0].InputSchema
	if schema["type"] != "object" || schema["properties"] == nil || schema["additionalProperties"] != false ||
		len(schema["required"].([]any)) != 1 {
		t.Errorf("input_schema = %v", schema)
	}
	if s := got.Tools[1].InputSchema; s["type"] != "object" {
		t.Errorf("input_schema without parameters = %v", s)
	}
}

func TestMaxTokens(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	m := newModel(t, s, anthropic.WithMaxTokens(1000))
	maxTokens := func() int64 {
		var got struct {
			MaxTokens int64 `json:"max_tokens"`
		}
		json.Unmarshal(s.body.Load().([]byte), &got)
		return got.MaxTokens
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil || maxTokens() != 1000 {
		t.Errorf("WithMaxTokens: %v, max_tokens %d", err, maxTokens())
	}
	req := simpleRequest()
	req.MaxOutputTokens = 64
	if _, err := collect(m, context.Background(), req); err != nil || maxTokens() != 64 {
		t.Errorf("MaxOutputTokens: %v, max_tokens %d", err, maxTokens())
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		status   int
		typ      string
		msg      string // besides the request's secret
		wantCode transcript.ErrorCode
	}{
		{429, "rate_limit_error", "", transcript.CodeRateLimited},
		{500, "api_error", "", transcript.CodeProviderError},
		{529, "overloaded_error", "", transcript.CodeProviderError},
		{401, "authentication_error", "", transcript.CodeAuth},
		{403, "permission_error", "", transcript.CodeAuth},
		{400, "invalid_request_error", "", transcript.CodeProviderError},
		// The API's words for a request over the context window.
		{400, "invalid_request_error", "prompt is too long: 208432 tokens > 200000 maximum", transcript.CodeContextTooLong},
		{400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000", transcript.CodeContextTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+tt.msg, func(t *testing.T) {
			s := newServer(t, statusSaying(tt.status, tt.typ, tt.msg+" "+secret))
			events, err := collect(newModel(t, s), context.Background(), simpleRequest())
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v (%T), want *model.Error", err, err)
			}
			if me.Code != tt.wantCode || me.StatusCode != tt.status || len(events) != 0 {
				t.Errorf("err = %+v after %d events, want code %s", me, len(events), tt.wantCode)
			}
			if errors.Is(err, model.ErrRateLimited) != (tt.status == 429) {
				t.Errorf("errors.Is(err, ErrRateLimited) wrong for %d", tt.status)
			}
			if errors.Is(err, model.ErrContextTooLong) != (tt.wantCode == transcript.CodeContextTooLong) {
				t.Errorf("errors.Is(err, ErrContextTooLong) wrong for %d %q", tt.status, tt.msg)
			}
			if tt.msg != "" && strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q quotes the server's free text", err)
			}
			if !strings.Contains(err.Error(), tt.typ) {
				t.Errorf("error %q does not name the error type", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q quotes the request", err)
			}
			if s.requests.Load() != 1 {
				t.Errorf("%d requests with WithMaxRetries(0)", s.requests.Load())
			}
		})
	}
}

func TestRateLimitRetriedByDefault(t *testing.T) {
	var calls atomic.Int32
	text := replay(t, "text.sse")
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			status(429, "rate_limit_error")(w, r)
			return
		}
		text(w, r)
	})
	m, err := anthropic.New("claude-test-1", anthropic.WithBaseURL(s.URL), anthropic.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("%d requests, want 2", calls.Load())
	}
}

func TestErrorEventMidStream(t *testing.T) {
	s := newServer(t, replay(t, "overloaded.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeProviderError || !strings.Contains(me.Message, "overloaded_error") {
		t.Fatalf("err = %v, want provider_error naming overloaded_error", err)
	}
	if texts, _, _ := split(events); strings.Join(texts, "") != "Partial" {
		t.Errorf("events before the error = %+v", events)
	}

	// A rate limit reported inside the stream is still a rate limit.
	limited := strings.Replace(strings.Join(blocks(t, "overloaded.sse"), ""), "overloaded_error", "rate_limit_error", 1)
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, limited)
	})
	_, err = collect(newModel(t, s), context.Background(), simpleRequest())
	if !errors.Is(err, model.ErrRateLimited) {
		t.Errorf("err = %v, want rate_limited", err)
	}
}

func TestMalformedEvent(t *testing.T) {
	s := newServer(t, replay(t, "malformed.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeBadResponse {
		t.Fatalf("err = %v, want bad_response", err)
	}
	if texts, _, _ := split(events); strings.Join(texts, "") != "Hel" {
		t.Errorf("events before the bad event = %+v", events)
	}
}

// A stream cut off before message_stop is a failure, not a short answer.
func TestTruncatedStream(t *testing.T) {
	all := blocks(t, "text.sse")
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(all[:6], ""))
	})
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeProviderError {
		t.Fatalf("err = %v, want provider_error", err)
	}
	if len(events) == 0 {
		t.Error("the events before the cut were not delivered")
	}
}

// hold serves the first n events of a recording, then blocks until the
// client goes away, and closes gone when it does.
func hold(t *testing.T, name string, n int, gone chan<- struct{}) func(http.ResponseWriter, *http.Request) {
	events := blocks(t, name)[:n]
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second):
			t.Error("the client never closed the connection")
		}
	}
}

func waitClosed(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not see the connection close")
	}
}

func TestCancelMidStream(t *testing.T) {
	gone := make(chan struct{})
	// message_start, content_block_start, ping, two text deltas.
	s := newServer(t, hold(t, "text.sse", 5, gone))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var texts []string
	var err error
	for ev, e := range newModel(t, s).Stream(ctx, simpleRequest()) {
		if e != nil {
			err = e
			break
		}
		if ev.Kind != model.EventText {
			continue
		}
		texts = append(texts, ev.Text)
		if len(texts) == 2 {
			time.AfterFunc(20*time.Millisecond, cancel)
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if strings.Join(texts, "") != "The answer" {
		t.Errorf("texts = %q", texts)
	}
	waitClosed(t, gone)
}

func TestConsumerStopsEarly(t *testing.T) {
	gone := make(chan struct{})
	s := newServer(t, hold(t, "text.sse", 5, gone))
	n := 0
	for _, err := range newModel(t, s).Stream(context.Background(), simpleRequest()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("pulled %d events", n)
	}
	waitClosed(t, gone)
}

// The server sends each text delta only after the consumer has seen the
// previous one, which deadlocks if the provider reads ahead.
func TestEventsArriveBeforeTheBodyEnds(t *testing.T) {
	events := blocks(t, "text.sse")
	seen := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
			if i >= 3 && i <= 5 { // the first three text deltas
				select {
				case <-seen:
				case <-time.After(20 * time.Second):
					t.Error("the consumer did not get the event the server sent")
					return
				}
			}
		}
	})
	n := 0
	for ev, err := range newModel(t, s).Stream(context.Background(), simpleRequest()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == model.EventText && n < 3 {
			n++
			seen <- struct{}{}
		}
	}
	if n != 3 {
		t.Errorf("saw %d lockstep events", n)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := anthropic.New(""); err == nil {
		t.Error("empty model name accepted")
	}
	if _, err := anthropic.New("m", anthropic.WithBaseURL("api.anthropic.com")); err == nil {
		t.Error("base URL without scheme accepted")
	}
	if _, err := anthropic.New("m", anthropic.WithMaxTokens(0)); err == nil {
		t.Error("max tokens 0 accepted")
	}
}

func TestBadRequestsFailBeforeSending(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	m := newModel(t, s)
	for name, req := range map[string]*model.Request{
		"role":         {Messages: []model.Message{{Role: "narrator", Content: secret}}},
		"tool call id": {Messages: []model.Message{{Role: model.RoleTool, Content: secret}}},
		"schema":       {Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
		"required":     {Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"required":"x"}`)}}},
	} {
		_, err := collect(m, context.Background(), req)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if s.requests.Load() != 0 {
		t.Errorf("%d requests sent", s.requests.Load())
	}
}

// One Model serves concurrent streams. Run with -race.
func TestConcurrentStreams(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	m := newModel(t, s)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			events, err := collect(m, context.Background(), simpleRequest())
			if texts, _, _ := split(events); err != nil || strings.Join(texts, "") != "The answer is forty-two, as every reader knows." {
				t.Errorf("err %v, texts %q", err, texts)
			}
		})
	}
	wg.Wait()
	if s.requests.Load() != 8 {
		t.Errorf("%d requests", s.requests.Load())
	}
}

// A cap set where the model is opened (model.Config.MaxOutputTokens, the
// CLI's --max-output-tokens) replaces DefaultMaxTokens; a request's own
// wins over it.
func TestMaxTokensFromConfig(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	for _, c := range []struct{ cfg, req, want int64 }{{9000, 0, 9000}, {9000, 64, 64}, {0, 0, anthropic.DefaultMaxTokens}} {
		m, err := model.Open("anthropic:claude-test", model.Config{BaseURL: s.URL, APIKey: "k", MaxOutputTokens: c.cfg})
		if err != nil {
			t.Fatal(err)
		}
		req := simpleRequest()
		req.MaxOutputTokens = c.req
		if _, err := collect(m, context.Background(), req); err != nil {
			t.Fatal(err)
		}
		var got struct {
			MaxTokens int64 `json:"max_tokens"`
		}
		json.Unmarshal(s.body.Load().([]byte), &got)
		if got.MaxTokens != c.want {
			t.Errorf("config %d, request %d: max_tokens %d, want %d", c.cfg, c.req, got.MaxTokens, c.want)
		}
	}
}
