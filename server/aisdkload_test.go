package server_test

import (
	"encoding/json"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// uiMsg is a UIMessage as a test reads it.
type uiMsg struct {
	ID       string           `json:"id"`
	Role     string           `json:"role"`
	Metadata map[string]any   `json:"metadata"`
	Parts    []map[string]any `json:"parts"`
}

func (m uiMsg) text() string {
	var out string
	for _, p := range m.Parts {
		if p["type"] == "text" {
			out += p["text"].(string)
		}
	}
	return out
}

// sameMessages fails t unless the chat a client shows and the one loaded
// are the same: the questions' texts, and the answers whole (ids, parts
// and metadata).
func sameMessages(t *testing.T, what string, shown, loaded []uiMsg) {
	t.Helper()
	if len(shown) != len(loaded) {
		t.Fatalf("%s: the client shows %d messages, the load has %d:\n%s\n%s", what, len(shown), len(loaded), dump(shown), dump(loaded))
	}
	for i := range shown {
		s, l := shown[i], loaded[i]
		if s.Role != l.Role {
			t.Fatalf("%s: message %d is %s in the client, %s loaded", what, i, s.Role, l.Role)
		}
		if s.Role == "user" {
			if s.text() != l.text() {
				t.Fatalf("%s: question %d: %q in the client, %q loaded", what, i, s.text(), l.text())
			}
			continue
		}
		if dump(s) != dump(l) {
			t.Fatalf("%s: answer %d differs\n client: %s\n loaded: %s", what, i, dump(s), dump(l))
		}
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAIChatReloadRealClient: a conversation held with the real client
// (text, a tool call, an approval allowed, one denied, one left waiting)
// loads back with GET /api/chat/{id} exactly as the client shows it: the
// same answer ids the stream gave, the same parts in the same states
// (no empty step-start after an approval), the same metadata; the
// package's safeValidateUIMessages accepts it unchanged. A second chat
// started from the loaded messages answers the waiting approval,
// continuing that message, asks again and regenerates, and its messages
// load back the same way.
func TestAIChatReloadRealClient(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	out := runAIClient(t, "reload.mjs", e.http.URL+"/api/chat")
	type load struct {
		Status     int
		ID         string
		Messages   []uiMsg
		Valid      bool
		ValidError string
		Unchanged  bool
	}
	var got struct {
		Errors           []string
		First, Second    []uiMsg
		Loaded, Reloaded load
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 {
		t.Fatalf("client errors %v", got.Errors)
	}
	for _, l := range []load{got.Loaded, got.Reloaded} {
		if l.Status != 200 || l.ID != "aisdk-reload" || !l.Valid || !l.Unchanged {
			t.Fatalf("load: status %d id %q valid %v (%s) unchanged %v:\n%s", l.Status, l.ID, l.Valid, l.ValidError, l.Unchanged, dump(l.Messages))
		}
	}
	sameMessages(t, "first chat", got.First, got.Loaded.Messages)
	// The answers' metadata: the model, the usage, how the turn ended and,
	// once it has, how long it took.
	for _, m := range got.Reloaded.Messages {
		md := m.Metadata
		if m.Role != "assistant" {
			continue
		}
		usage, _ := md["usage"].(map[string]any)
		_, timed := md["durationMs"].(float64)
		if md["model"] != "echo" || md["status"] != "ok" || usage["outputTokens"].(float64) <= 0 || !timed {
			t.Fatalf("answer %s: metadata %v", m.ID, md)
		}
	}
	// No step without content: each step-start is followed by a part of
	// its own (an answered approval adds to the step that asked for it).
	for _, m := range append(got.First, got.Second...) {
		for i, p := range m.Parts {
			if p["type"] == "step-start" && (i == len(m.Parts)-1 || m.Parts[i+1]["type"] == "step-start") {
				t.Fatalf("an empty step in %s: %s", m.ID, dump(m.Parts))
			}
		}
	}
	sameMessages(t, "second chat", got.Second, got.Reloaded.Messages)
	if n := len(got.Reloaded.Messages); n != 12 {
		t.Fatalf("%d messages reloaded, want 12: %s", n, dump(got.Reloaded.Messages))
	}
}

// TestAIChatLoadScope: GET /api/chat/{id} reads only the caller's own
// sessions (another user's is not found, as an unknown one is) and needs
// a key.
func TestAIChatLoadScope(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := []string{"Authorization", "Bearer " + aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}
	e.post("/invoke", map[string]any{"prompt": "alice's", "sessionId": "chat"}, alice...)
	e.post("/invoke", map[string]any{"prompt": "alice only", "sessionId": "alice-only"}, alice...)
	e.post("/invoke", map[string]any{"prompt": "bob's", "sessionId": "chat"}, bob...)
	var chat struct {
		ID       string
		Messages []uiMsg
	}
	e.get("/api/chat/chat", bob...).json(t, &chat)
	if chat.ID != "chat" || len(chat.Messages) != 2 || chat.Messages[0].text() != "bob's" || chat.Messages[1].text() != "echo: bob's" {
		t.Fatalf("bob's chat: %+v", chat)
	}
	for _, c := range []struct {
		path   string
		header []string
		status int
	}{
		{"/api/chat/alice-only", bob, 404},
		{"/api/chat/nobody", alice, 404},
		{"/api/chat/chat", nil, 401},
	} {
		if r := e.get(c.path, c.header...); r.status != c.status {
			t.Fatalf("GET %s: %d %s, want %d", c.path, r.status, r.body, c.status)
		} else {
			r.errCode(t)
		}
	}
}
