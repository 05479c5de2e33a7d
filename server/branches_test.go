package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// messagesOf returns GET /v1/sessions/{id}/messages?order=asc&query as
// "role: text" lines, " (i/n)" for a turn with versions, " [superseded]"
// off the active branch; and the messages themselves.
func messagesOf(t *testing.T, e *env, id, query string, header ...string) ([]string, []spool.Message) {
	t.Helper()
	r := e.get("/v1/sessions/"+id+"/messages?order=asc"+query, header...)
	if r.status != 200 {
		t.Fatalf("messages: %d %s", r.status, r.body)
	}
	var page struct{ Messages []spool.Message }
	r.json(t, &page)
	var lines []string
	for _, m := range page.Messages {
		l := string(m.Role) + ": " + m.Text
		if m.Branch != nil {
			l += " (" + strconv.Itoa(m.Branch.Index) + "/" + strconv.Itoa(m.Branch.Count) + ")"
		}
		if m.Superseded {
			l += " [superseded]"
		}
		lines = append(lines, l)
	}
	return lines, page.Messages
}

func wantLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestBranchRoutes: regenerate, edit and switch through the REST API, as
// JSON and as event streams, with the messages route showing the active
// branch and the versions of each turn, and every branch on request.
func TestBranchRoutes(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	var first, second spool.Result
	e.post("/invoke", map[string]any{"prompt": "one", "sessionId": "s"}).json(t, &first)
	e.post("/invoke", map[string]any{"prompt": "two", "sessionId": "s"}).json(t, &second)

	// Regenerate, with no body at all, as JSON.
	r := e.do(req{method: "POST", path: "/v1/sessions/s/regenerate"})
	var regen spool.Result
	r.json(t, &regen)
	if r.status != 200 || regen.Status != "ok" || regen.Text != "echo: two" || len(regen.Supersedes) != 1 || regen.Supersedes[0] != second.TurnID {
		t.Fatalf("regenerate: %d %s", r.status, r.body)
	}
	lines, msgs := messagesOf(t, e, "s", "")
	wantLines(t, "after the regenerate", lines, "user: one", "assistant: echo: one", "user: two (2/2)", "assistant: echo: two (2/2)")
	if b := msgs[2].Branch; b.Turns[0] != second.TurnID || b.Turns[1] != regen.TurnID {
		t.Fatalf("versions %v, want [%s %s]", b.Turns, second.TurnID, regen.TurnID)
	}

	// Edit the first question, as an event stream.
	res, events, _ := e.stream("/v1/sessions/s/turns/"+first.TurnID+"/edit", map[string]any{"text": "uno"})
	if res.status != 200 || names(events)[0] != "turn_start" || names(events)[len(events)-1] != "turn_end" {
		t.Fatalf("edit stream: %d %v %s", res.status, names(events), res.body)
	}
	var end spool.Event
	json.Unmarshal([]byte(events[len(events)-1].data), &end)
	if end.Result.Text != "echo: uno" || strings.Join(end.Result.Supersedes, ",") != first.TurnID+","+regen.TurnID {
		t.Fatalf("edit's end: %s", events[len(events)-1].data)
	}
	lines, _ = messagesOf(t, e, "s", "")
	wantLines(t, "after the edit", lines, "user: uno (2/2)", "assistant: echo: uno (2/2)")
	lines, _ = messagesOf(t, e, "s", "&branches=all")
	wantLines(t, "every branch", lines,
		"user: one (1/2) [superseded]", "assistant: echo: one (1/2) [superseded]",
		"user: two (1/2) [superseded]", "assistant: echo: two (1/2) [superseded]",
		"user: two (2/2) [superseded]", "assistant: echo: two (2/2) [superseded]",
		"user: uno (2/2)", "assistant: echo: uno (2/2)")

	// Switch back to the first version: its branch returns, with the
	// regenerated answer that was active when it was left.
	if r := e.post("/v1/sessions/s/turns/"+first.TurnID+"/switch", nil); r.status != 204 {
		t.Fatalf("switch: %d %s", r.status, r.body)
	}
	lines, _ = messagesOf(t, e, "s", "")
	wantLines(t, "after the switch", lines, "user: one (1/2)", "assistant: echo: one (1/2)", "user: two (2/2)", "assistant: echo: two (2/2)")
	var hist struct {
		Messages []struct{ Role, Content string }
	}
	e.get("/v1/sessions/s/history").json(t, &hist)
	if len(hist.Messages) != 4 || hist.Messages[3].Content != "echo: two" {
		t.Fatalf("history after the switch: %+v", hist.Messages)
	}
	checkChain(t, e.transcriptOf("", "s"))
}

// checkChain checks that a transcript is one chain: markers never move or
// rewrite an entry.
func checkChain(t *testing.T, entries []transcript.Entry) {
	t.Helper()
	for i, e := range entries {
		if want := ""; i > 0 && e.ParentID != entries[i-1].ID || i == 0 && e.ParentID != want {
			t.Fatalf("entry %d: parent %q: not a chain", i, e.ParentID)
		}
	}
}

// TestBranchRouteErrors: each refusal with its status and code, and
// nothing written.
func TestBranchRouteErrors(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	var first spool.Result
	e.post("/invoke", map[string]any{"prompt": "hello", "sessionId": "s"}).json(t, &first)
	turn := "/v1/sessions/s/turns/" + first.TurnID
	for _, c := range []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"regenerate of an unknown session", req{method: "POST", path: "/v1/sessions/nope/regenerate"}, 404, server.CodeSessionNotFound},
		{"regenerate with an unknown field", req{method: "POST", path: "/v1/sessions/s/regenerate", body: map[string]any{"x": 1}}, 400, server.CodeInvalidRequest},
		{"edit of an unknown turn", req{method: "POST", path: "/v1/sessions/s/turns/nope/edit", body: map[string]any{"text": "x"}}, 404, server.CodeTurnNotFound},
		{"edit to a blank text", req{method: "POST", path: turn + "/edit", body: map[string]any{"text": " "}}, 400, server.CodeEmptyPrompt},
		{"edit without a body", req{method: "POST", path: turn + "/edit"}, 400, server.CodeUnsupportedType},
		{"switch to an unknown turn", req{method: "POST", path: "/v1/sessions/s/turns/nope/switch"}, 404, server.CodeTurnNotFound},
		{"fork without atTurn", req{method: "POST", path: "/v1/sessions/s/fork", body: map[string]any{}}, 400, server.CodeBadRequest},
		{"fork at an unknown turn", req{method: "POST", path: "/v1/sessions/s/fork", body: map[string]any{"atTurn": "nope"}}, 404, server.CodeTurnNotFound},
		{"fork into an id no session can have", req{method: "POST", path: "/v1/sessions/s/fork", body: map[string]any{"atTurn": first.TurnID, "sessionId": "a/b"}}, 400, server.CodeInvalidSessionID},
		{"fork into an existing session", req{method: "POST", path: "/v1/sessions/s/fork", body: map[string]any{"atTurn": first.TurnID, "sessionId": "s"}}, 409, server.CodeSessionExists},
		{"messages of an unknown view", req{method: "GET", path: "/v1/sessions/s/messages?branches=some"}, 400, server.CodeBadRequest},
		{"GET on regenerate", req{method: "GET", path: "/v1/sessions/s/regenerate"}, 405, server.CodeMethodNotAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(e.transcriptOf("", "s"))
			r := e.do(c.r)
			if r.status != c.status || r.errCode(t) != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
			if after := len(e.transcriptOf("", "s")); after != before {
				t.Fatalf("the refusal wrote %d entries", after-before)
			}
		})
	}
	// With an approval pending: 409 approval_pending for each.
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "s"})
	for _, r := range []req{
		{method: "POST", path: "/v1/sessions/s/regenerate", body: map[string]any{}},
		{method: "POST", path: turn + "/edit", body: map[string]any{"text": "hi"}},
		{method: "POST", path: turn + "/switch"},
	} {
		if res := e.do(r); res.status != 409 || res.errCode(t) != server.CodeApprovalPending {
			t.Fatalf("%s with an approval pending: %d %s", r.path, res.status, res.body)
		}
	}
}

// TestBranchRoutesUserScope: another user's turn is 404 on every route, as
// any other user's data is.
func TestBranchRoutesUserScope(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := []string{"Authorization", "Bearer " + aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}
	var res spool.Result
	e.post("/invoke", map[string]any{"prompt": "alice's", "sessionId": "chat"}, alice...).json(t, &res)
	e.post("/invoke", map[string]any{"prompt": "bob's", "sessionId": "chat"}, bob...)
	turn := "/v1/sessions/chat/turns/" + res.TurnID
	for _, r := range []struct {
		path string
		body any
	}{
		{turn + "/edit", map[string]any{"text": "mine"}},
		{turn + "/switch", nil},
		{"/v1/sessions/chat/fork", map[string]any{"atTurn": res.TurnID}},
	} {
		if got := e.post(r.path, r.body, bob...); got.status != 404 || got.errCode(t) != server.CodeTurnNotFound {
			t.Fatalf("bob on %s: %d %s", r.path, got.status, got.body)
		}
	}
	if got := e.post("/v1/sessions/alice-only/regenerate", nil, bob...); got.status != 404 {
		t.Fatalf("bob regenerating a session only alice has: %d %s", got.status, got.body)
	}
	lines, _ := messagesOf(t, e, "chat", "", alice...)
	wantLines(t, "alice's session", lines, "user: alice's", "assistant: echo: alice's")
	// Alice forks her own session; the fork is hers.
	r := e.post("/v1/sessions/chat/fork", map[string]any{"atTurn": res.TurnID, "sessionId": "chat-copy"}, alice...)
	var info store.SessionInfo
	r.json(t, &info)
	if r.status != 201 || info.ID != "chat-copy" || info.Owner != "alice" || r.header.Get("Location") != "/v1/sessions/chat-copy" {
		t.Fatalf("alice's fork: %d %s %v", r.status, r.body, r.header)
	}
	if got := e.get("/v1/sessions/chat-copy", bob...); got.status != 404 {
		t.Fatalf("bob reading alice's fork: %d", got.status)
	}
}

// TestForkRoute: the fork's history is the source's at the turn.
func TestForkRoute(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	var one spool.Result
	e.post("/invoke", map[string]any{"prompt": "one", "sessionId": "s"}).json(t, &one)
	e.post("/invoke", map[string]any{"prompt": "two", "sessionId": "s"})
	r := e.post("/v1/sessions/s/fork", map[string]any{"atTurn": one.TurnID})
	var info store.SessionInfo
	r.json(t, &info)
	if r.status != 201 || !strings.HasPrefix(info.ID, "ses_") || info.MessageCount != 2 {
		t.Fatalf("fork: %d %s", r.status, r.body)
	}
	var hist struct {
		Messages []struct{ Role, Content string }
	}
	e.get("/v1/sessions/"+info.ID+"/history").json(t, &hist)
	if len(hist.Messages) != 2 || hist.Messages[1].Content != "echo: one" {
		t.Fatalf("the fork's history: %+v", hist.Messages)
	}
	entries := e.transcriptOf("", info.ID)
	if entries[0].Type != transcript.TypeFork {
		t.Fatalf("the fork starts with %s", entries[0].Type)
	}
	checkChain(t, entries)
}

// TestAIChatPlacement: which requests of the AI SDK protocol ask a new
// question and which edit or regenerate, with hand-made requests: a
// client that sends only its newest message, or whose assistant messages
// have ids the server never gave, always asks.
func TestAIChatPlacement(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	turnOf := func(chunks []string) string {
		t.Helper()
		var start struct{ MessageID string }
		json.Unmarshal([]byte(chunks[0]), &start)
		return start.MessageID
	}
	chat := func(trigger, messageID string, msgs ...any) string {
		t.Helper()
		body := map[string]any{"id": "placed", "messages": msgs, "trigger": trigger}
		if messageID != "" {
			body["messageId"] = messageID
		}
		chunks, r := aiPost(t, e, body)
		if r.status != 0 && r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		checkChunks(t, chunks)
		return turnOf(chunks)
	}
	asst := func(id string) map[string]any { return map[string]any{"id": id, "role": "assistant", "parts": []any{}} }
	markers := func() (out []string) {
		for _, en := range e.transcriptOf("", "placed") {
			if en.Type == transcript.TypeBranch {
				var b transcript.Branch
				en.DecodeData(&b)
				out = append(out, string(b.Kind)+" "+strings.Join(b.Supersedes, ","))
			}
		}
		return out
	}
	t1 := chat("submit-message", "", userMsg("u1", "one"))
	t2 := chat("submit-message", "", userMsg("u1", "one"), asst(t1), userMsg("u2", "two"))
	t3 := chat("submit-message", "", userMsg("u3", "only the newest"))
	t4 := chat("submit-message", "", userMsg("u1", "one"), asst("not-ours"), userMsg("u4", "four"))
	if m := markers(); len(m) != 0 {
		t.Fatalf("new questions wrote markers %v", m)
	}
	lines, _ := messagesOf(t, e, "placed", "")
	if len(lines) != 8 {
		t.Fatalf("four questions asked, messages %v", lines)
	}
	// The list stops after turn 1: the question in turn 2's place edits it.
	t5 := chat("submit-message", "", userMsg("u1", "one"), asst(t1), userMsg("u5", "dos"))
	wantLines(t, "markers", markers(), "edit "+strings.Join([]string{t2, t3, t4}, ","))
	// regenerate() of the newest, and regenerate({messageId}) of turn 1.
	t6 := chat("regenerate-message", "", userMsg("u1", "one"), asst(t1), userMsg("u5", "dos"))
	chat("regenerate-message", t1, userMsg("u1", "one"))
	wantLines(t, "markers", markers(), "edit "+strings.Join([]string{t2, t3, t4}, ","), "regenerate "+t5, "edit "+t1+","+t6)
	lines, _ = messagesOf(t, e, "placed", "")
	wantLines(t, "the active branch", lines, "user: one (2/2)", "assistant: echo: one (2/2)")
}

// TestREADMEBranchCurls runs the README's curl lines for branches, as a
// person pastes them, against a server with a key: each answers without
// an error, and they do what the README says.
func TestREADMEBranchCurls(t *testing.T) {
	curl, block := readmeFrom(t, "curl -s -X POST localhost:8080/v1/sessions/demo/regenerate", "```")
	e := newEnv(t, spool.Config{}, server.Options{Keys: testKeys(t)})
	e.key = projectKey
	var one spool.Result
	e.post("/invoke", map[string]any{"prompt": "Where is order 1042?", "sessionId": "demo"}).json(t, &one)
	e.post("/invoke", map[string]any{"prompt": "And 1043?", "sessionId": "demo"})
	host := strings.TrimPrefix(e.http.URL, "http://")
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		line = strings.ReplaceAll(strings.ReplaceAll(line, "localhost:8080", host), "TURN_ID", one.TurnID)
		if !strings.HasPrefix(line, "curl ") {
			t.Fatalf("not a curl line: %q", line)
		}
		cmd := exec.Command("bash", "-c", strings.Replace(line, "curl", curl+" -w '\\n%{http_code}'", 1))
		cmd.Env = append(os.Environ(), "AUTH=Authorization: Bearer "+projectKey)
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if status := lines[len(lines)-1]; err != nil || (status != "200" && status != "201" && status != "204") {
			t.Fatalf("%s\n%v: %s", line, err, out)
		}
	}
	lines, _ := messagesOf(t, e, "demo", "")
	wantLines(t, "demo after the README's curls", lines,
		"user: Where is order 1042? (1/2)", "assistant: echo: Where is order 1042? (1/2)",
		"user: And 1043? (2/2)", "assistant: echo: And 1043? (2/2)")
	lines, _ = messagesOf(t, e, "demo-copy", "")
	wantLines(t, "the fork", lines, "user: Where is order 1042?", "assistant: echo: Where is order 1042?")
}

// TestEditNamesText: an edit without a text, or with a blank one, is 400
// empty_prompt whose message names the field, "text", as /chat's does.
func TestEditNamesText(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	var first spool.Result
	e.post("/invoke", map[string]any{"prompt": "hello", "sessionId": "s"}).json(t, &first)
	for _, body := range []map[string]any{{"text": "  "}, {}} {
		r := e.post("/v1/sessions/s/turns/"+first.TurnID+"/edit", body)
		if r.status != 400 || r.errCode(t) != server.CodeEmptyPrompt || !strings.Contains(string(r.body), `\"text\"`) {
			t.Fatalf("edit with %v: %d %s; want 400 empty_prompt naming \"text\"", body, r.status, r.body)
		}
	}
}
