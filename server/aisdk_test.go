package server_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// aiPost posts a chat request and returns the stream's data lines.
func aiPost(t *testing.T, e *env, body any) ([]string, resp) {
	t.Helper()
	r := e.post("/api/chat", body)
	if r.status != 200 {
		return nil, r
	}
	if r.header.Get(server.AIStreamHeader) != "v1" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("headers %v", r.header)
	}
	events, _ := readSSE(t, strings.NewReader(string(r.body)))
	var out []string
	for _, ev := range events {
		if ev.name != "" {
			t.Fatalf("a UI message stream has no event names: %q", ev.name)
		}
		out = append(out, ev.data)
	}
	return out, r
}

func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

// documented lists the fields each chunk type may have (those this server
// sends, a subset of the protocol's): the client rejects others.
var documented = map[string][]string{
	"start":                 {"messageId", "type"},
	"start-step":            {"type"},
	"text-start":            {"id", "type"},
	"text-delta":            {"delta", "id", "type"},
	"text-end":              {"id", "type"},
	"tool-input-available":  {"input", "toolCallId", "toolName", "type"},
	"tool-approval-request": {"approvalId", "toolCallId", "type"},
	"tool-output-available": {"output", "toolCallId", "type"},
	"tool-output-error":     {"errorText", "toolCallId", "type"},
	"tool-output-denied":    {"toolCallId", "type"},
	"finish-step":           {"type"},
	"finish":                {"finishReason", "messageMetadata", "type"},
	"error":                 {"errorText", "type"},
	"abort":                 {"reason", "type"},
}

func checkChunks(t *testing.T, chunks []string) {
	t.Helper()
	if len(chunks) == 0 || chunks[len(chunks)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %v", chunks)
	}
	for _, c := range chunks[:len(chunks)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(c), &m); err != nil {
			t.Fatalf("chunk %q: %v", c, err)
		}
		typ, _ := m["type"].(string)
		want, ok := documented[typ]
		if !ok {
			t.Fatalf("chunk of unknown type: %s", c)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Fatalf("chunk %s has fields %v, want %v", c, keys, want)
		}
	}
}

var (
	ulidRE     = regexp.MustCompile(`[0-9A-HJKMNP-TV-Z]{26}`)
	callRE     = regexp.MustCompile(`"call_[A-Za-z0-9_]+"`)
	durationRE = regexp.MustCompile(`"durationMs":[0-9]+`)
)

func normalize(chunks []string) string {
	s := strings.Join(chunks, "\n") + "\n"
	s = ulidRE.ReplaceAllString(s, "ULID")
	s = durationRE.ReplaceAllString(s, `"durationMs":N`)
	return callRE.ReplaceAllString(s, `"call_ID"`)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "aisdk", name+".golden")
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from %s:\n%s", name, p, got)
	}
}

// The streams, against golden files: a plain answer, a tool call, a
// call waiting on approval, its approval answered by the client (allowed,
// then another denied), each chunk with only documented fields.
func TestAIChatGolden(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	msgs := []any{userMsg("u1", "hello world")}
	chunks, r := aiPost(t, e, map[string]any{"id": "chat1", "messages": msgs, "trigger": "submit-message"})
	if chunks == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	checkChunks(t, chunks)
	golden(t, "text", normalize(chunks))

	msgs = append(msgs, map[string]any{"id": "a1", "role": "assistant", "parts": []any{}}, userMsg("u2", "/call get_time {}"))
	chunks, _ = aiPost(t, e, map[string]any{"id": "chat1", "messages": msgs, "trigger": "submit-message"})
	checkChunks(t, chunks)
	golden(t, "tool", normalize(chunks))

	for _, c := range []struct {
		name     string
		approved bool
	}{{"approve", true}, {"deny", false}} {
		chunks, _ = aiPost(t, e, map[string]any{"id": "chat1", "messages": []any{userMsg("u3", `/call save_note {"text":"milk"}`)}})
		checkChunks(t, chunks)
		golden(t, c.name+"-request", normalize(chunks))
		messageID, answer := approvalAnswer(chunks, c.approved, "because")
		chunks, r = aiPost(t, e, map[string]any{"id": "chat1", "messages": []any{userMsg("u3", "x"), answer}, "trigger": "submit-message", "messageId": messageID})
		if chunks == nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		checkChunks(t, chunks)
		if !strings.Contains(chunks[0], messageID) {
			t.Fatalf("the resumed stream does not continue message %s: %s", messageID, chunks[0])
		}
		golden(t, c.name+"-response", normalize(chunks))
		// Answering it again: no such approval any more.
		if r := e.post("/api/chat", map[string]any{"id": "chat1", "messages": []any{answer}}); r.status != 404 {
			t.Fatalf("answered twice: %d %s", r.status, r.body)
		}
	}
}

func TestAIChatBadRequests(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	cases := map[string]any{
		"no id":                              map[string]any{"messages": []any{userMsg("u", "hi")}},
		"no messages":                        map[string]any{"id": "c"},
		"regenerate of an assistant message": map[string]any{"id": "c", "messages": []any{userMsg("u", "hi"), map[string]any{"id": "a", "role": "assistant", "parts": []any{}}}, "trigger": "regenerate-message"},
		"blank text":                         map[string]any{"id": "c", "messages": []any{userMsg("u", " ")}},
		"invalid id":                         map[string]any{"id": "a/b", "messages": []any{userMsg("u", "hi")}},
		"no answers":                         map[string]any{"id": "c", "messages": []any{map[string]any{"id": "a", "role": "assistant", "parts": []any{}}}},
		"system":                             map[string]any{"id": "c", "messages": []any{map[string]any{"id": "s", "role": "system", "parts": []any{}}}},
		"malformed":                          `{"id":`,
		"wrong trigger":                      map[string]any{"id": "c", "messages": []any{userMsg("u", "hi")}, "trigger": "nope"},
	}
	for name, body := range cases {
		r := e.post("/api/chat", body)
		if r.status != 400 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		r.errCode(t)
	}
}

// runAIClient runs testdata/aisdk/script with node against url, the real
// "ai" package installed beside it (npmPackages), and returns what it
// printed.
func runAIClient(t *testing.T, script, url string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the AI SDK client test installs an npm package")
	}
	node, dir := npmPackages(t, "ai@6.0.326")
	for _, f := range []string{script, "memorychat.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "aisdk", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, url)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return out
}

// The real client: the "ai" package's AbstractChat and
// DefaultChatTransport (what useChat runs) against this server, approvals
// included. Needs node and npm (the package is installed once into the
// user's cache folder); skipped without them, except under CI=true.
func TestAIChatRealClient(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	out := runAIClient(t, "chat.mjs", e.http.URL+"/api/chat")
	var got struct {
		Status   string
		Errors   []string
		Messages []struct {
			ID, Role string
			Parts    []map[string]any
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Status != "ready" || len(got.Errors) > 0 {
		t.Fatalf("client status %s, errors %v", got.Status, got.Errors)
	}
	// Four user messages and four assistant ones; the approvals continued
	// their messages rather than adding new ones.
	if len(got.Messages) != 8 {
		t.Fatalf("%d messages: %s", len(got.Messages), out)
	}
	texts := func(i int) (text string, tools []string) {
		for _, p := range got.Messages[i].Parts {
			switch t := p["type"].(string); {
			case t == "text":
				text += p["text"].(string)
			case strings.HasPrefix(t, "tool-"):
				tools = append(tools, t+":"+p["state"].(string))
			}
		}
		return
	}
	want := []struct {
		text  string
		tools string
	}{
		{"echo: hello world", ""},
		{"tool get_time returned: noon", "tool-get_time:output-available"},
		{"tool save_note returned: saved: milk", "tool-save_note:output-available"},
		{"tool save_note returned: error: the user denied this call: no eggs", "tool-save_note:output-denied"},
	}
	for i, w := range want {
		text, tools := texts(2*i + 1)
		if got.Messages[2*i+1].Role != "assistant" || text != w.text || strings.Join(tools, ",") != w.tools {
			t.Fatalf("assistant message %d: %q %v, want %q %q\n%s", i, text, tools, w.text, w.tools, out)
		}
	}
	// The session holds the four turns, each once.
	if got := userTexts(t, e.transcriptOf("", "aisdk-chat")); len(got) != 4 {
		t.Fatalf("transcript turns %q", got)
	}
}

// TestAIChatBranchesRealClient: useChat's regenerate() and edit flows,
// unchanged, with the real client: regenerate() of the newest answer,
// sendMessage({messageId}) replacing the first question, the list cut by
// hand and a new question sent after it, and regenerate({messageId}) of an
// earlier answer. Each becomes a marker and a new turn in the session, and
// the client's messages are the session's active branch.
func TestAIChatBranchesRealClient(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	out := runAIClient(t, "branches.mjs", e.http.URL+"/api/chat")
	var got struct {
		Errors []string
		Steps  []struct {
			Name, Status string
			Messages     []struct{ ID, Line string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 {
		t.Fatalf("client errors %v\n%s", got.Errors, out)
	}
	want := map[string][]string{
		"two turns":    {"user: one", "assistant: echo: one", "user: two", "assistant: echo: two"},
		"regenerate()": {"user: one", "assistant: echo: one", "user: two", "assistant: echo: two"},
		"sendMessage({messageId}) of the first question": {"user: uno", "assistant: echo: uno"},
		"setMessages(first two), then sendMessage":       {"user: uno", "assistant: echo: uno", "user: DOS", "assistant: echo: DOS"},
		"regenerate({messageId}) of the second answer":   {"user: uno", "assistant: echo: uno", "user: DOS", "assistant: echo: DOS"},
	}
	session := e.transcriptOf("", "aisdk-branches")
	checkChain(t, session)
	var server []string
	active := func() []string {
		r := e.get("/v1/sessions/aisdk-branches/messages?order=asc")
		var page struct{ Messages []spool.Message }
		r.json(t, &page)
		var ids []string
		for _, m := range page.Messages {
			if m.Role == "assistant" {
				ids = append(ids, m.TurnID)
			}
		}
		return ids
	}
	for _, st := range got.Steps {
		var lines, ids []string
		for i, m := range st.Messages {
			lines = append(lines, m.Line)
			if i%2 == 1 {
				ids = append(ids, m.ID)
			}
		}
		if st.Status != "ready" || strings.Join(lines, "\n") != strings.Join(want[st.Name], "\n") {
			t.Fatalf("%s: status %s, messages\n  %s\nwant\n  %s", st.Name, st.Status, strings.Join(lines, "\n  "), strings.Join(want[st.Name], "\n  "))
		}
		server = ids
	}
	// The client's assistant messages are the session's active turns.
	if got := active(); strings.Join(got, ",") != strings.Join(server, ",") {
		t.Fatalf("the session's active branch is %v, the client shows %v", got, server)
	}
	// One marker per regenerate and edit, each of the kind the client asked.
	var kinds []string
	for _, en := range session {
		if en.Type == transcript.TypeBranch {
			var b transcript.Branch
			en.DecodeData(&b)
			kinds = append(kinds, string(b.Kind)+":"+strconv.Itoa(len(b.Supersedes)))
		}
	}
	if strings.Join(kinds, " ") != "regenerate:1 edit:2 edit:2 edit:2" {
		t.Fatalf("markers %v", kinds)
	}
	if n := len(userTexts(t, session)); n != 9 {
		t.Fatalf("%d questions in the transcript, want 9 (nothing rewritten)", n)
	}
}

// approvalAnswer is the assistant message a useChat client sends to
// answer the approval that chunks (a save_note call's stream) asked for,
// and the id of the message it continues.
func approvalAnswer(chunks []string, approved bool, reason string) (string, map[string]any) {
	var start, ap struct{ MessageID, ApprovalID, ToolCallID string }
	json.Unmarshal([]byte(chunks[0]), &start)
	for _, ch := range chunks {
		if strings.Contains(ch, `"tool-approval-request"`) {
			json.Unmarshal([]byte(ch), &ap)
		}
	}
	return start.MessageID, map[string]any{"id": start.MessageID, "role": "assistant", "parts": []any{
		map[string]any{"type": "step-start"},
		map[string]any{"type": "tool-save_note", "toolCallId": ap.ToolCallID, "state": "approval-responded",
			"input": map[string]any{"text": "milk"}, "approval": map[string]any{"id": ap.ApprovalID, "approved": approved, "reason": reason}},
	}}
}

// A denied call replays as denied: the AI SDK's resume of a run that an
// approval's denial began (GET /api/chat/{id}/stream, while the model
// still answers) sends the message's start as the first response
// streamed it, then the same chunks as the response that denied it,
// tool-output-denied and not tool-output-error.
func TestAIChatResumeDenied(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{})
	chunks, r := aiPost(t, e, map[string]any{"id": "deny", "messages": []any{userMsg("u1", `/call save_note {"text":"milk"}`)}})
	if chunks == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	messageID, answer := approvalAnswer(chunks, false, "no "+strings.Repeat("eggs ", 20))
	live := e.open("POST", "/api/chat", map[string]any{"id": "deny", "messages": []any{userMsg("u1", "x"), answer}, "messageId": messageID})
	var got []string
	for ev, ok := live.next(); ok; ev, ok = live.next() {
		got = append(got, ev.data)
		if strings.Contains(ev.data, `"text-delta"`) {
			break // the model answers, slowly: resume now
		}
	}
	resumed := e.open("GET", "/api/chat/deny/stream", nil)
	var replay []string
	for ev, ok := resumed.next(); ok; ev, ok = resumed.next() {
		replay = append(replay, ev.data)
	}
	for ev, ok := live.next(); ok; ev, ok = live.next() {
		got = append(got, ev.data)
	}
	if !strings.Contains(strings.Join(replay, "\n"), `"tool-output-denied"`) {
		t.Fatalf("the resumed stream has no tool-output-denied:\n%s", strings.Join(replay, "\n"))
	}
	// The replay is of the whole message: the call and its approval
	// request, as the first response streamed them (without its finish),
	// then what the live response streamed after its start. The text
	// parts' ids are each response's own; the rest is the same.
	var earlier []string
	for _, c := range chunks[1:] {
		if strings.Contains(c, `"finish"`) {
			break
		}
		earlier = append(earlier, c)
	}
	want := append(append(got[:1:1], earlier...), got[1:]...)
	textID := regexp.MustCompile(`"txt_[0-9A-Z]+"`)
	if a, b := textID.ReplaceAllString(normalize(want), `"txt"`), textID.ReplaceAllString(normalize(replay), `"txt"`); a != b {
		t.Fatalf("the resumed stream differs from the live one:\nlive:\n%s\nresumed:\n%s", a, b)
	}
}

// The finish chunk says why the answer ended, as a streamText server's
// does: the real client's onFinish was given finishReason undefined for
// every turn, an answer cut at the output limit ("length") and one paused
// on an approval ("tool-calls") as a whole one ("stop").
func TestAIChatFinishReasonRealClient(t *testing.T) {
	cut := []model.Event{{Kind: model.EventText, Text: "once upon a"}, {Kind: model.EventStop, Stop: model.StopLength}}
	e := newEnv(t, spool.Config{Model: echo.New(echo.WithResponses(cut))}, server.Options{})
	out := runAIClient(t, "finish.mjs", e.http.URL+"/api/chat")
	var got struct {
		Errors  []string
		Reasons []any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 || fmt.Sprint(got.Reasons) != "[length stop tool-calls]" {
		t.Fatalf("finish reasons %v, want [length stop tool-calls] (errors %v)", got.Reasons, got.Errors)
	}
}

// stalls answers with some text, then waits until its turn is stopped.
type stalls struct{ answering chan struct{} }

func (m stalls) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if !yield(model.Event{Kind: model.EventText, Text: "so far"}, nil) {
			return
		}
		close(m.answering)
		<-ctx.Done()
		yield(model.Event{}, ctx.Err())
	}
}

// The real client, its turn stopped from elsewhere (the stop route, as
// another tab or `spool` would): the stream ends with an abort chunk, as
// streamText ends an aborted answer, so the chat shows no error, keeps
// the text that came and is ready; the message's metadata says
// cancelled.
func TestAIChatStoppedRealClient(t *testing.T) {
	m := stalls{answering: make(chan struct{})}
	e := newEnv(t, spool.Config{Model: m}, server.Options{})
	stopped := make(chan resp, 1)
	go func() {
		<-m.answering
		stopped <- e.post("/v1/sessions/aisdk-abort/stop", nil)
	}()
	out := runAIClient(t, "abort.mjs", e.http.URL+"/api/chat")
	if r := <-stopped; r.status != 200 {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	var got struct {
		Errors   []string
		Status   string
		Finishes []struct {
			IsAbort, IsError     bool
			FinishReason, Status string
			Text                 string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 || got.Status != "ready" || len(got.Finishes) != 1 {
		t.Fatalf("the chat had errors %v, status %q, finishes %+v", got.Errors, got.Status, got.Finishes)
	}
	if f := got.Finishes[0]; f.IsError || f.Status != "cancelled" || f.Text != "so far" || f.FinishReason != "other" {
		t.Fatalf("onFinish had %+v", f)
	}
}

// TestAIChatUserMessageIDsRealClient: a user message keeps the id useChat
// gave it. GET /api/chat/{id} returns the ids the client generated, and an
// edit (sendMessage({text, messageId})) and a regenerate
// (regenerate({messageId})) of a question addressed by its id change the
// same question in a live chat as in a reloaded one, with the whole list
// sent and with only the newest message sent (where the id alone places
// it). The server's conversation is then what the chat shows.
func TestAIChatUserMessageIDsRealClient(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	out := runAIClient(t, "ids.mjs", e.http.URL+"/api/chat")
	var got struct {
		Errors []string
		Flows  []struct {
			Name, Status      string
			Sent, LoadedIDs   []string
			Shown, ShownIDs   []string
			Stored, StoredIDs []string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 || len(got.Flows) != 4 {
		t.Fatalf("client errors %v, %d flows\n%s", got.Errors, len(got.Flows), out)
	}
	want := "user: one|assistant: echo: one|user: TWO|assistant: echo: TWO"
	for _, f := range got.Flows {
		if f.Status != "ready" {
			t.Fatalf("%s: status %s", f.Name, f.Status)
		}
		if strings.Join(f.LoadedIDs, ",") != strings.Join(f.Sent, ",") {
			t.Fatalf("%s: the reload gave the user messages ids %v, the client had %v", f.Name, f.LoadedIDs, f.Sent)
		}
		if s := strings.Join(f.Shown, "|"); s != want {
			t.Fatalf("%s: the chat shows %s, want %s", f.Name, s, want)
		}
		if s := strings.Join(f.Stored, "|"); s != want {
			t.Fatalf("%s: the server stored %s, the chat shows %s", f.Name, s, want)
		}
		if strings.Join(f.StoredIDs, ",") != strings.Join(f.ShownIDs, ",") {
			t.Fatalf("%s: after the edit and regenerate the reload gives ids %v, the chat holds %v", f.Name, f.StoredIDs, f.ShownIDs)
		}
	}
}

// An edit addressed by an id the chat does not hold, in a request that
// sends only its newest message, is refused naming "messageId": nothing
// places it, and counting the questions sent took it for an edit of the
// first question. The chat stays as it was.
func TestAIChatUnknownMessageID(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	for _, q := range []string{"one", "two"} {
		if chunks, r := aiPost(t, e, map[string]any{"id": "c", "messages": []any{userMsg("id-"+q, q)}}); chunks == nil {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
	}
	r := e.post("/api/chat", map[string]any{"id": "c", "messages": []any{userMsg("nobody", "ONE")}, "trigger": "submit-message", "messageId": "nobody"})
	if r.status != 400 || !strings.Contains(string(r.body), `\"messageId\"`) {
		t.Fatalf("an edit of an unknown message: %d %s", r.status, r.body)
	}
	long := strings.Repeat("x", 100_000)
	r = e.post("/api/chat", map[string]any{"id": "c", "messages": []any{userMsg(long, "ONE")}, "trigger": "submit-message", "messageId": long})
	if r.status != 400 || len(r.body) > 2000 {
		t.Fatalf("an edit of an unknown message with an id of 100,000 bytes: %d, an answer of %d bytes", r.status, len(r.body))
	}
	got := e.get("/api/chat/c")
	if got.status != 200 || strings.Contains(string(got.body), "ONE") || !strings.Contains(string(got.body), `"one"`) {
		t.Fatalf("the chat changed: %d %s", got.status, got.body)
	}
}

// A question asked through /api/chat keeps the client's id when it is
// answered again, or edited, through the other routes (the web UI's, a
// program's): a useChat page that reloads finds its question under the
// id it holds. The new version took no id, and the reload gave its entry
// id instead.
func TestAIChatClientIDKeptByOtherRoutes(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	for _, q := range []string{"one", "two"} {
		if chunks, r := aiPost(t, e, map[string]any{"id": "k", "messages": []any{userMsg("id-"+q, q)}}); chunks == nil {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
	}
	if r := e.post("/v1/sessions/k/regenerate", map[string]any{}); r.status != 200 {
		t.Fatalf("regenerate: %d %s", r.status, r.body)
	}
	var chat struct {
		Messages []struct{ ID, Role string }
	}
	load := func() []string {
		r := e.get("/api/chat/k")
		if err := json.Unmarshal(r.body, &chat); r.status != 200 || err != nil {
			t.Fatalf("load: %d %s", r.status, r.body)
		}
		var ids []string
		for _, m := range chat.Messages {
			if m.Role == "user" {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}
	if ids := load(); fmt.Sprint(ids) != "[id-one id-two]" {
		t.Fatalf("after a regenerate the questions' ids are %v, want [id-one id-two]", ids)
	}
	first := chat.Messages[1].ID // the first answer's id, its turn's
	if r := e.post("/v1/sessions/k/turns/"+first+"/edit", map[string]any{"text": "ONE"}); r.status != 200 {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	if ids := load(); fmt.Sprint(ids) != "[id-one]" {
		t.Fatalf("after an edit of the first question the questions' ids are %v, want [id-one]", ids)
	}
}

// slowPrune is a memory store whose retention pass takes a while: the
// turn that creates a session prunes the agent's sessions after its
// answer's end is out, still holding the session.
type slowPrune struct{ *memstore.Store }

func (s slowPrune) Prune(ctx context.Context, ns store.Namespace, r store.Retention, now time.Time) (int, error) {
	time.Sleep(300 * time.Millisecond)
	return s.Store.Prune(ctx, ns, r, now)
}

// A response that has its turn's end (the AI SDK's finish) comes once
// the turn let the session go: a regenerate sent as soon as the answer is
// read is taken. The answer came while the turn still held the session
// (pruning, here), and the regenerate was refused 409 turn_running.
// The same holds of /invoke and of /chat's event stream.
func TestAIChatAnsweredOnceTheTurnIsOver(t *testing.T) {
	e := newEnv(t, spool.Config{Store: slowPrune{memstore.New()}, Retention: store.Retention{MaxSessions: 100}}, server.Options{})
	for _, route := range []string{"/chat", "/api/chat", "/invoke"} {
		id := "k" + strings.ReplaceAll(route, "/", "-")
		if route == "/api/chat" {
			if chunks, r := aiPost(t, e, map[string]any{"id": id, "messages": []any{userMsg("id-one", "one")}}); chunks == nil {
				t.Fatalf("%s: %d %s", route, r.status, r.body)
			}
		} else if r := e.post(route, map[string]any{map[string]string{"/invoke": "prompt", "/chat": "text"}[route]: "one", "sessionId": id}); r.status != 200 {
			t.Fatalf("%s: %d %s", route, r.status, r.body)
		}
		if r := e.post("/v1/sessions/"+id+"/regenerate", map[string]any{}); r.status != 200 {
			t.Fatalf("regenerate right after the answer of %s: %d %s", route, r.status, r.body)
		}
	}
}
