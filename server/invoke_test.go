package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/transcript"
)

func TestInvoke(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.post("/invoke", map[string]any{"prompt": "hello there", "sessionId": "s1"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var res struct {
		SessionID string `json:"sessionId"`
		TurnID    string `json:"turnId"`
		Text      string `json:"text"`
		Status    string `json:"status"`
		Usage     struct {
			InputTokens  int `json:"inputTokens"`
			OutputTokens int `json:"outputTokens"`
		} `json:"usage"`
	}
	r.json(t, &res)
	if res.SessionID != "s1" || res.Text != "echo: hello there" || res.Status != "ok" || res.TurnID == "" || res.Usage.OutputTokens == 0 {
		t.Fatalf("result %+v", res)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

func TestInvokeDefaultSession(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.post("/invoke", map[string]any{"prompt": "one"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got := userTexts(t, e.transcriptOf("", server.DefaultInvokeSession)); len(got) != 1 || got[0] != "one" {
		t.Fatalf("session http holds %q", got)
	}
}

func TestInvokeBadRequests(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{MaxBodyBytes: 1024})
	cases := []struct {
		name   string
		body   string
		ctype  string
		status int
		code   string
	}{
		{"blank prompt", `{"prompt":"   "}`, "application/json", 400, server.CodeEmptyPrompt},
		{"missing prompt", `{"sessionId":"x"}`, "application/json", 400, server.CodeEmptyPrompt},
		{"malformed JSON", `{"prompt":`, "application/json", 400, server.CodeBadRequest},
		{"not an object", `["prompt"]`, "application/json", 400, server.CodeBadRequest},
		{"wrong type", `{"prompt":42}`, "application/json", 400, server.CodeInvalidRequest},
		{"unknown field", `{"prompt":"hi","session":"x"}`, "application/json", 400, server.CodeInvalidRequest},
		{"trailing data", `{"prompt":"hi"} {}`, "application/json", 400, server.CodeBadRequest},
		{"trailing brace", `{"prompt":"hi"}}`, "application/json", 400, server.CodeBadRequest},
		{"trailing bracket", `{"prompt":"hi"}]`, "application/json", 400, server.CodeBadRequest},
		{"trailing space", "{\"prompt\":\"hi\"}\n\t ", "application/json", 200, ""},
		{"empty body", ``, "application/json", 400, server.CodeBadRequest},
		{"text/plain", `{"prompt":"hi"}`, "text/plain", 400, server.CodeUnsupportedType},
		{"no content type", `{"prompt":"hi"}`, "", 400, server.CodeUnsupportedType},
		{"form", `prompt=hi`, "application/x-www-form-urlencoded", 400, server.CodeUnsupportedType},
		{"invalid session id", `{"prompt":"hi","sessionId":"../etc"}`, "application/json", 400, server.CodeInvalidSessionID},
		{"too large", `{"prompt":"` + strings.Repeat("x", 2000) + `"}`, "application/json", 413, server.CodeBodyTooLarge},
		{"too large after the object", `{"prompt":"hi"}` + strings.Repeat(" ", 2000), "application/json", 413, server.CodeBodyTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: "/invoke", body: c.body, header: map[string]string{"Content-Type": c.ctype}})
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.status == 200 {
				return
			}
			if code := r.errCode(t); code != c.code {
				t.Fatalf("code %q, want %q", code, c.code)
			}
			// A client words the refusal from the limit, not from the
			// message.
			if got := r.apiErr(t).MaxBytes; c.code == server.CodeBodyTooLarge && (got == nil || *got != 1024) || c.code != server.CodeBodyTooLarge && got != nil {
				t.Fatalf("maxBytes %v, want %v: %s", got, c.code == server.CodeBodyTooLarge, r.body)
			}
		})
	}
	// A body that is JSON but not an object says so, in words.
	for body, want := range map[string]string{`[]`: "not an array", `"x"`: "not a string", `42`: "not a number", `true`: "not true or false"} {
		r := e.do(req{method: "POST", path: "/invoke", body: body, header: map[string]string{"Content-Type": "application/json"}})
		if msg := string(r.body); r.status != 400 || !strings.Contains(msg, "the body must be a JSON object, "+want) {
			t.Errorf("body %s: %d %s", body, r.status, msg)
		}
	}
}

func TestInvokeApprovalPendingIs409(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "ap"})
	var res spool.Result
	r.json(t, &res)
	if r.status != 200 || res.Status != spool.StatusAwaitingApproval || len(res.Pending) != 1 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	r = e.post("/invoke", map[string]any{"prompt": "again", "sessionId": "ap"})
	if r.status != http.StatusConflict || r.errCode(t) != server.CodeApprovalPending {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

func TestInvokeModelErrors(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"provider failure", &model.Error{Code: transcript.CodeProviderError, StatusCode: 500, Message: "upstream broke"}, 502, server.CodeModelError},
		{"rate limited", &model.Error{Code: transcript.CodeRateLimited, StatusCode: 429, Message: "slow down"}, 429, server.CodeRateLimited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, spool.Config{Model: echo.New(echo.WithError(c.err))}, server.Options{})
			r := e.post("/invoke", map[string]any{"prompt": "hi", "sessionId": "m"})
			if r.status != c.status || r.errCode(t) != c.code {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var body struct {
				SessionID, TurnID, Status string
			}
			r.json(t, &body)
			if body.SessionID != "m" || body.TurnID == "" || body.Status != "error" {
				t.Fatalf("body %s", r.body)
			}
			if c.status == 429 && r.retryAfter(t) != 5 {
				t.Fatalf("429 asks to wait %d seconds, want 5", r.retryAfter(t))
			}
		})
	}
}
