package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/openai"
	"github.com/spool-go/spool/transcript"
)

// secret appears in every prompt and tool argument the tests send; no
// error message may contain it.
const secret = "SECRET-7f3a"

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

// server is a fake chat completions endpoint.
type server struct {
	*httptest.Server
	requests atomic.Int32
	body     atomic.Value // []byte: the last request body
	header   atomic.Value // http.Header: the last request's headers
}

// newServer serves each request with handle after recording it. Requests
// must go to /v1/chat/completions.
func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.body.Store(body)
		s.header.Store(r.Header.Clone())
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// replay answers with a recording, flushing after every event as a real
// server does.
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

// status answers with an HTTP error in the API's error format. Its message
// quotes the prompt, as some servers' messages do.
func status(code int, typ, errCode string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": "refused: " + secret, "type": typ, "param": nil, "code": errCode,
		}})
	}
}

func newModel(t *testing.T, s *server, opts ...openai.Option) *openai.Model {
	t.Helper()
	opts = append([]openai.Option{openai.WithBaseURL(s.URL + "/v1"), openai.WithAPIKey("test-key"), openai.WithMaxRetries(0)}, opts...)
	m, err := openai.New("gpt-test-mini", opts...)
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
	if len(usage) != 1 || usage[0] != (transcript.Usage{InputTokens: 31, OutputTokens: 11}) {
		t.Errorf("usage = %+v", usage)
	}
	if events[len(events)-1].Kind != model.EventUsage {
		t.Errorf("usage is not last: %+v", events[len(events)-1])
	}
	if m.Name() != "gpt-test-mini" {
		t.Errorf("Name = %q", m.Name())
	}
	if got := s.header.Load().(http.Header).Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestParallelToolCallsSplitAcrossChunks(t *testing.T) {
	s := newServer(t, replay(t, "tool_calls.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	texts, calls, usage := split(events)
	if len(texts) != 0 {
		t.Errorf("texts = %q", texts)
	}
	want := []transcript.ToolCall{
		{ID: "call_w1", Name: "weather", Arguments: json.RawMessage(`{"city": "Oslo", "unit": "C"}`)},
		{ID: "call_t2", Name: "local_time", Arguments: json.RawMessage(`{"zone": "Europe/Oslo"}`)},
	}
	if len(calls) != len(want) {
		t.Fatalf("calls = %+v", calls)
	}
	for i := range want {
		if calls[i].ID != want[i].ID || calls[i].Name != want[i].Name || string(calls[i].Arguments) != string(want[i].Arguments) {
			t.Errorf("call %d = %+v %s, want %+v %s", i, calls[i], calls[i].Arguments, want[i], want[i].Arguments)
		}
	}
	if len(usage) != 1 || usage[0] != (transcript.Usage{InputTokens: 80, OutputTokens: 40}) {
		t.Errorf("usage = %+v", usage)
	}
	// Calls come only once the choice finished: after every fragment.
	for i, ev := range events {
		if ev.Kind == model.EventToolCall && i+len(calls) > len(events) {
			t.Errorf("call event at %d of %d", i, len(events))
		}
	}
}

func TestInvalidArgumentsBecomeAJSONString(t *testing.T) {
	s := newServer(t, replay(t, "bad_arguments.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	texts, calls, _ := split(events)
	if strings.Join(texts, "") != "Let me check." || len(calls) != 1 {
		t.Fatalf("events = %+v", events)
	}
	if string(calls[0].Arguments) != `"city=Oslo"` {
		t.Errorf("arguments = %s", calls[0].Arguments)
	}
}

// A stream that ends without a finish_reason was cut short, however it
// ended: its calls may be fragments, or prefixes that happen to be valid
// JSON, and are not delivered.
func TestCallsNotDeliveredWithoutFinishReason(t *testing.T) {
	var cut []string
	for _, b := range blocks(t, "tool_calls.sse") {
		if !strings.Contains(b, `"finish_reason":"tool_calls"`) {
			cut = append(cut, b)
		}
	}
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(cut, ""))
	})
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeProviderError {
		t.Fatalf("err = %v, want provider_error", err)
	}
	if _, calls, _ := split(events); len(calls) != 0 {
		t.Errorf("calls = %+v", calls)
	}
}

// The request body maps the history faithfully.
func TestRequestBody(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "Be brief."},
			{Role: model.RoleUser, Content: "weather and time in Oslo? " + secret},
			{Role: model.RoleAssistant, ToolCalls: []transcript.ToolCall{
				{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
				{ID: "call_2", Name: "local_time", Arguments: json.RawMessage(`{}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", Content: "sunny"},
			{Role: model.RoleTool, ToolCallID: "call_2", Content: "12:00"},
			{Role: model.RoleAssistant, Content: "Sunny, noon."},
			{Role: model.RoleUser, Content: "thanks"},
		},
		Tools: []model.ToolSpec{
			{Name: "weather", Description: "Current weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "local_time"},
		},
		MaxOutputTokens: 300,
	}
	if _, err := collect(newModel(t, s), context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens           *int64 `json:"max_tokens"`
		MaxCompletionTokens *int64 `json:"max_completion_tokens"`
		Messages            []struct {
			Role       string  `json:"role"`
			Content    *string `json:"content"`
			ToolCallID string  `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	body := s.body.Load().([]byte)
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Model != "gpt-test-mini" || !got.Stream || !got.StreamOptions.IncludeUsage {
		t.Errorf("model/stream/options wrong: %s", body)
	}
	// A compatible server gets the widely supported max_tokens.
	if got.MaxTokens == nil || *got.MaxTokens != 300 || got.MaxCompletionTokens != nil {
		t.Errorf("max tokens wrong: %s", body)
	}
	roles := []string{"system", "user", "assistant", "tool", "tool", "assistant", "user"}
	if len(got.Messages) != len(roles) {
		t.Fatalf("messages: %s", body)
	}
	for i, r := range roles {
		if got.Messages[i].Role != r {
			t.Errorf("message %d role %q, want %q", i, got.Messages[i].Role, r)
		}
	}
	if c := got.Messages[0].Content; c == nil || *c != "Be brief." {
		t.Errorf("system content %v", c)
	}
	a := got.Messages[2]
	if a.Content != nil || len(a.ToolCalls) != 2 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Name != "weather" || a.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` ||
		a.ToolCalls[1].ID != "call_2" || a.ToolCalls[1].Function.Arguments != "{}" {
		t.Errorf("assistant tool calls wrong: %+v", a)
	}
	if got.Messages[3].ToolCallID != "call_1" || *got.Messages[3].Content != "sunny" || got.Messages[4].ToolCallID != "call_2" {
		t.Errorf("tool messages wrong: %+v %+v", got.Messages[3], got.Messages[4])
	}
	if c := got.Messages[5].Content; c == nil || *c != "Sunny, noon." {
		t.Errorf("assistant text %v", c)
	}
	if len(got.Tools) != 2 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "weather" ||
		got.Tools[0].Function.Description != "Current weather" || got.Tools[0].Function.Parameters["required"] == nil {
		t.Errorf("tools wrong: %+v", got.Tools)
	}
	if p := got.Tools[1].Function.Parameters; p["type"] != "object" {
		t.Errorf("a tool without a schema should take no arguments: %v", p)
	}
}

func TestMaxCompletionTokensForOpenAI(t *testing.T) {
	// api.openai.com gets max_completion_tokens; the transport redirects the
	// request to the fake server.
	s := newServer(t, replay(t, "text.sse"))
	target, _ := http.NewRequest("GET", s.URL, nil)
	client := &http.Client{Transport: rewrite{host: target.URL.Host}}
	m, err := openai.New("gpt-test-mini", openai.WithBaseURL("https://api.openai.com/v1"), openai.WithAPIKey("k"),
		openai.WithHTTPClient(client), openai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	req := simpleRequest()
	req.MaxOutputTokens = 77
	if _, err := collect(m, context.Background(), req); err != nil {
		t.Fatal(err)
	}
	body := string(s.body.Load().([]byte))
	if !strings.Contains(body, `"max_completion_tokens":77`) || strings.Contains(body, `"max_tokens"`) {
		t.Errorf("body = %s", body)
	}
}

// rewrite sends every request to host over plain HTTP.
type rewrite struct{ host string }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = "http", r.host
	return http.DefaultTransport.RoundTrip(req)
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		status   int
		typ      string
		code     string
		wantCode transcript.ErrorCode
	}{
		{429, "requests", "rate_limit_exceeded", transcript.CodeRateLimited},
		{500, "server_error", "", transcript.CodeProviderError},
		{401, "invalid_request_error", "invalid_api_key", transcript.CodeAuth},
		{403, "invalid_request_error", "", transcript.CodeAuth},
		{400, "invalid_request_error", "context_length_exceeded", transcript.CodeContextTooLong},
		{400, "invalid_request_error", "", transcript.CodeProviderError},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+" "+tt.code, func(t *testing.T) {
			s := newServer(t, status(tt.status, tt.typ, tt.code))
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
				t.Errorf("errors.Is(err, ErrContextTooLong) wrong for %d %s", tt.status, tt.code)
			}
			if tt.code != "" && !strings.Contains(err.Error(), tt.code) {
				t.Errorf("error %q does not name the provider's code", err)
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

// By default a 429 is retried as the server's Retry-After asks.
func TestRateLimitRetriedByDefault(t *testing.T) {
	var calls atomic.Int32
	text := replay(t, "text.sse")
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			status(429, "requests", "rate_limit_exceeded")(w, r)
			return
		}
		text(w, r)
	})
	m, err := openai.New("gpt-test-mini", openai.WithBaseURL(s.URL+"/v1"), openai.WithAPIKey("k"))
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

func TestMalformedChunk(t *testing.T) {
	s := newServer(t, replay(t, "malformed.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeBadResponse {
		t.Fatalf("err = %v, want bad_response", err)
	}
	if texts, _, _ := split(events); strings.Join(texts, "") != "Hel" {
		t.Errorf("events before the bad chunk = %+v", events)
	}
}

func TestErrorInsideStream(t *testing.T) {
	s := newServer(t, replay(t, "stream_error.sse"))
	events, err := collect(newModel(t, s), context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeProviderError || !strings.Contains(me.Message, "server_error") {
		t.Fatalf("err = %v, want provider_error naming server_error", err)
	}
	if len(events) != 1 {
		t.Errorf("events = %+v", events)
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	m, err := openai.New("m", openai.WithBaseURL("http://"+addr+"/v1"), openai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(m, context.Background(), simpleRequest())
	var me *model.Error
	if !errors.As(err, &me) || me.Code != transcript.CodeProviderError || !strings.Contains(me.Message, "connection failed") {
		t.Errorf("err = %v, want provider_error about the connection", err)
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
	s := newServer(t, hold(t, "text.sse", 4, gone)) // a comment, the role chunk, two words
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var texts []string
	var err error
	for ev, e := range newModel(t, s).Stream(ctx, simpleRequest()) {
		if e != nil {
			err = e
			break
		}
		texts = append(texts, ev.Text)
		if len(texts) == 2 {
			// The consumer now blocks on a server that sends nothing more;
			// cancelling must free it.
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

// Stopping after one event closes the response body: the server sees the
// connection go away although it never finished.
func TestConsumerStopsEarly(t *testing.T) {
	gone := make(chan struct{})
	s := newServer(t, hold(t, "text.sse", 4, gone))
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

// Events reach the consumer while the response is still being written: the
// server sends each chunk only after the consumer has seen the previous
// one, which deadlocks if the provider reads ahead of the consumer.
func TestEventsArriveBeforeTheBodyEnds(t *testing.T) {
	events := blocks(t, "text.sse")
	seen := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
			if i >= 2 && i <= 4 { // after a comment and the role chunk, chunks 2..4 each carry one word
				select {
				case <-seen:
				case <-time.After(20 * time.Second):
					t.Error("the consumer did not get the chunk the server sent")
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
	if _, err := openai.New(""); err == nil {
		t.Error("empty model name accepted")
	}
	if _, err := openai.New("m", openai.WithBaseURL("localhost:11434")); err == nil {
		t.Error("base URL without scheme accepted")
	}
}

func TestBadRequestsFailBeforeSending(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	m := newModel(t, s)
	for name, req := range map[string]*model.Request{
		"role":         {Messages: []model.Message{{Role: "narrator", Content: secret}}},
		"tool call id": {Messages: []model.Message{{Role: model.RoleTool, Content: secret}}},
		"schema":       {Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
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
// CLI's --max-output-tokens) goes with every request that sets none of
// its own; without one, a request carries no cap.
func TestMaxTokensFromConfig(t *testing.T) {
	s := newServer(t, replay(t, "text.sse"))
	for _, c := range []struct {
		cfg, req int64
		want     string
	}{{5000, 0, `"max_tokens":5000`}, {5000, 64, `"max_tokens":64`}, {0, 0, ""}} {
		m, err := model.Open("openai:gpt-test-mini", model.Config{BaseURL: s.URL + "/v1", APIKey: "k", MaxOutputTokens: c.cfg})
		if err != nil {
			t.Fatal(err)
		}
		req := simpleRequest()
		req.MaxOutputTokens = c.req
		if _, err := collect(m, context.Background(), req); err != nil {
			t.Fatal(err)
		}
		body := string(s.body.Load().([]byte))
		if c.want == "" && strings.Contains(body, `max_`) || c.want != "" && !strings.Contains(body, c.want) {
			t.Errorf("config %d, request %d: body %s, want %s", c.cfg, c.req, body, c.want)
		}
	}
}
