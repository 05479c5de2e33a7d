package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/apicontract"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// A delegated agent's events reach the /chat stream as "delegate" events.
func TestChatSSEDelegateEvents(t *testing.T) {
	helper, err := spool.New(spool.Config{Name: "helper", Model: echo.New(), Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, spool.Config{Tools: []*tool.Tool{helper.AsTool("ask_helper", "Ask the helper.")}}, server.Options{})
	_, events, _ := e.stream("/chat", map[string]any{"sessionId": "d", "text": `/call ask_helper {"prompt":"hi"}`})
	var delegated []string
	for _, ev := range events {
		if ev.name == "delegate" {
			var de spool.Event
			if err := json.Unmarshal([]byte(ev.data), &de); err != nil || de.Delegate == nil || de.Delegate.Agent != "helper" {
				t.Fatalf("delegate event %s", ev.data)
			}
			delegated = append(delegated, string(de.Delegate.Event.Kind))
		}
	}
	if len(delegated) == 0 || delegated[len(delegated)-1] != "turn_end" {
		t.Fatalf("delegate events %v (all: %v)", delegated, names(events))
	}
}

// An approval answered after the session expired with it pending is 410.
func TestApprovalAfterExpiryIs410(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, spool.Config{TTL: time.Hour, Clock: clock}, server.Options{})
	var res spool.Result
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "old"}).json(t, &res)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	r := e.post("/v1/sessions/old/approvals/"+res.Pending[0].ID, map[string]any{"decision": "allow"})
	if r.status != http.StatusGone || r.errCode(t) != server.CodeSessionExpired {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// brokenStore fails listing, as a store whose database is down would.
type brokenStore struct{ store.Store }

func (brokenStore) List(context.Context, store.Namespace, store.ListOptions) (store.SessionPage, error) {
	return store.SessionPage{}, errors.New("connection refused by db.internal:5432")
}

// A failure the client cannot act on is a 500 with a generic message; the
// details go to the log under the request id.
func TestInternalErrors(t *testing.T) {
	e := newEnv(t, spool.Config{Store: brokenStore{memstore.New()}}, server.Options{})
	r := e.get("/v1/sessions", "X-Request-Id", "broken-1")
	if r.status != 500 || r.errCode(t) != server.CodeInternal || strings.Contains(string(r.body), "db.internal") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var line string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "request failed") {
			line = l
		}
	}
	if !strings.Contains(line, "db.internal") || !strings.Contains(line, "requestId=broken-1") {
		t.Fatalf("log line %q", line)
	}
}

// Options.UI serves the paths no route matches, without a key; the API
// around it still needs one.
func TestUIHook(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := server.IdentityFromContext(r.Context())
		io.WriteString(w, "ui "+r.URL.Path+" "+id.Name)
	})
	e := newEnv(t, spool.Config{}, server.Options{UI: ui, Keys: testKeys(t)})
	if r := e.get("/"); r.status != 200 || string(r.body) != "ui / " {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.get("/app/sessions/x"); r.status != 200 || string(r.body) != "ui /app/sessions/x " {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.get("/v1/sessions"); r.status != 401 {
		t.Fatalf("API without key: %d", r.status)
	}
}

func TestOverBudgetIs429(t *testing.T) {
	a, err := spool.New(spool.Config{Model: echo.New(), Store: memstore.New(), SessionTokenBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := server.New(a, server.Options{})
	for i, want := range []int{200, 429} {
		req := httptest.NewRequest("POST", "http://127.0.0.1/invoke", strings.NewReader(`{"prompt":"use some tokens please"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("request %d: %d %s, want %d", i, rec.Code, rec.Body, want)
		}
		if want == 429 && !strings.Contains(rec.Body.String(), `"over_budget"`) {
			t.Fatalf("body %s", rec.Body)
		}
	}
}

// Which token budget ran out, and its size, are fields of the error, for
// a client to word the refusal (a new chat, or the operator) without
// reading the message: in a JSON answer's error, and in an event
// stream's turn_end, whose result carries the turn's error.
func TestOverBudgetFields(t *testing.T) {
	type overBudget struct {
		Code        string `json:"code"`
		Budget      int64  `json:"budget"`
		BudgetScope string `json:"budgetScope"`
	}
	want := overBudget{Code: "over_budget", Budget: 1, BudgetScope: "session"}
	e := newEnv(t, spool.Config{SessionTokenBudget: 1}, server.Options{})
	e.post("/chat", map[string]any{"text": "use some tokens please", "sessionId": "json"})
	r := e.post("/chat", map[string]any{"text": "and more", "sessionId": "json"})
	var body struct{ Error overBudget }
	r.json(t, &body)
	if r.status != 429 || body.Error != want {
		t.Fatalf("/chat over the budget: %d %s, want 429 with %+v", r.status, r.body, want)
	}
	e.stream("/chat", map[string]any{"text": "use some tokens please", "sessionId": "sse"})
	_, events, _ := e.stream("/chat", map[string]any{"text": "and more", "sessionId": "sse"})
	var end struct{ Result struct{ Error overBudget } }
	if len(events) == 0 || events[len(events)-1].name != "turn_end" || json.Unmarshal([]byte(events[len(events)-1].data), &end) != nil || end.Result.Error != want {
		t.Fatalf("/chat stream over the budget: %v, want a turn_end whose result's error is %+v", events, want)
	}
	ag := newEnv(t, spool.Config{AgentTokenBudget: 1}, server.Options{})
	ag.post("/chat", map[string]any{"text": "use some tokens please", "sessionId": "one"})
	r = ag.post("/chat", map[string]any{"text": "hi", "sessionId": "two"})
	body.Error = overBudget{}
	r.json(t, &body)
	if want := (overBudget{Code: "over_budget", Budget: 1, BudgetScope: "agent"}); r.status != 429 || body.Error != want {
		t.Fatalf("/chat over the agent's budget: %d %s, want 429 with %+v", r.status, r.body, want)
	}
}

// overWindow refuses every request as longer than the model's context
// window, as a provider does (model.ErrContextTooLong).
type overWindow struct{}

func (overWindow) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{}, &model.Error{Code: transcript.CodeContextTooLong, StatusCode: 400, Message: "Bad Request"})
	}
}

// A turn the model refuses as over its context window is 422
// context_too_long, and the message says what to do: retrying as it is
// would fail again. The response keeps the OpenAPI document.
func TestContextTooLongIs422(t *testing.T) {
	a, err := spool.New(spool.Config{Model: overWindow{}, Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	h := apicontract.Record(t, server.New(a, server.Options{}))
	req := httptest.NewRequest("POST", "http://127.0.0.1/invoke", strings.NewReader(`{"prompt":"hello"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 422 || !strings.Contains(rec.Body.String(), `"context_too_long"`) || !strings.Contains(rec.Body.String(), "/compact") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// failingReads is a store whose reads fail, once fail is set, with an
// error the server does not know (internal to its clients).
type failingReads struct {
	store.Store
	fail *atomic.Bool
}

func (s failingReads) Read(ctx context.Context, key store.Key) ([]transcript.Entry, error) {
	if s.fail.Load() {
		return nil, errors.New("read failed on disk /var/lib/spool-7")
	}
	return s.Store.Read(ctx, key)
}

// The error event of an event stream carries the request's id (its
// X-Request-Id), under which the server logs an internal error's cause:
// a client reading the events, not the headers, has it to quote. /chat's
// stream and a /v1 follow stream that fail internally, and a /chat
// refused for a pending approval.
func TestStreamErrorsCarryRequestID(t *testing.T) {
	fail := new(atomic.Bool)
	e := newEnv(t, spool.Config{Store: failingReads{memstore.New(), fail}}, server.Options{})
	e.post("/invoke", map[string]any{"prompt": "hello", "sessionId": "s"})
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "p"})
	errorOf := func(what string, ev sseEvent) errBody {
		t.Helper()
		var body struct {
			Error *struct {
				errBody
				RequestID string `json:"requestId"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.data), &body); ev.name != "error" || err != nil || body.Error == nil {
			t.Fatalf("%s: the last event is %s %s, want an error", what, ev.name, ev.data)
		}
		if body.Error.RequestID != what {
			t.Errorf("%s: the error event's requestId is %q, want the request's id: %s", what, body.Error.RequestID, ev.data)
		}
		return body.Error.errBody
	}

	r, events, _ := e.stream("/chat", map[string]any{"sessionId": "p", "text": "hi"}, "X-Request-Id", "chat-pending")
	if len(events) == 0 {
		t.Fatalf("chat-pending: %d %s, no events", r.status, r.body)
	}
	if got := errorOf("chat-pending", events[len(events)-1]); got.Code != server.CodeApprovalPending {
		t.Errorf("chat-pending: code %s", got.Code)
	}

	// A follow stream that the store fails under, once it has begun.
	ls := e.open("GET", "/v1/sessions/s/events?follow=1", nil, "X-Request-Id", "follow-broken")
	if ls.res.StatusCode != 200 {
		t.Fatalf("follow: %d", ls.res.StatusCode)
	}
	fail.Store(true)
	ev, ok := ls.next()
	if !ok {
		t.Fatal("the follow stream ended without an error event")
	}
	if got := errorOf("follow-broken", ev); got.Code != server.CodeInternal || strings.Contains(ev.data, "/var/lib") {
		t.Errorf("follow-broken: %s", ev.data)
	}

	r, events, _ = e.stream("/chat", map[string]any{"sessionId": "s", "text": "hi"}, "X-Request-Id", "chat-broken")
	if len(events) == 0 {
		t.Fatalf("chat-broken: %d %s, no events", r.status, r.body)
	}
	if got := errorOf("chat-broken", events[len(events)-1]); got.Code != server.CodeInternal || strings.Contains(events[len(events)-1].data, "/var/lib") {
		t.Errorf("chat-broken: %s", events[len(events)-1].data)
	}
}

// failingAppends is a store whose appends fail, once fail is set, with an
// error the server does not know (internal to its clients).
type failingAppends struct {
	store.Store
	fail *atomic.Bool
}

func (s failingAppends) Append(ctx context.Context, key store.Key, e transcript.Entry) error {
	if s.fail.Load() {
		return errors.New("write failed on disk /var/lib/spool-7")
	}
	return s.Store.Append(ctx, key, e)
}

// failsTheStore answers, after setting fail: the answer's record fails.
type failsTheStore struct{ fail *atomic.Bool }

func (m failsTheStore) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		m.fail.Store(true)
		yield(model.Event{Kind: model.EventText, Text: "lost"}, nil)
	}
}

// The AI SDK route's error chunk names the request's id, under which the
// server logs an internal error's cause, as the other routes' error
// events do in requestId: in its errorText, the one field the chunk has
// (clients of the protocol refuse a chunk with a field they do not know;
// see documented), which the client shows as the error's message.
func TestAIChatErrorNamesRequestID(t *testing.T) {
	fail := new(atomic.Bool)
	e := newEnv(t, spool.Config{Model: failsTheStore{fail}, Store: failingAppends{memstore.New(), fail}}, server.Options{})
	r := e.post("/api/chat", map[string]any{"id": "broken", "messages": []any{userMsg("u1", "hi")}}, "X-Request-Id", "ai-broken")
	events, _ := readSSE(t, strings.NewReader(string(r.body)))
	var chunk struct{ Type, ErrorText string }
	for _, ev := range events {
		if json.Unmarshal([]byte(ev.data), &chunk) == nil && chunk.Type == "error" {
			break
		}
		chunk.Type = ""
	}
	want := "internal error; the server log has the details under this request's id (request id ai-broken)"
	if r.status != 200 || chunk.Type != "error" || chunk.ErrorText != want {
		t.Fatalf("/api/chat whose store fails mid-turn: %d %s; want an error chunk whose errorText is %q", r.status, r.body, want)
	}
}
