package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/transcript"
)

// headerTransport adds headers to every request of the MCP client.
type headerTransport struct {
	base http.RoundTripper
	h    map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

func mcpConnect(t *testing.T, e *env, h map[string]string) (*mcp.ClientSession, error) {
	t.Helper()
	return mcpConnectAt(t, e, h, "")
}

// mcpConnectAt connects a client that asks for protocol version (the
// SDK's latest when "").
func mcpConnectAt(t *testing.T, e *env, h map[string]string, version string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{base: e.http.Client().Transport, h: h}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.http.URL + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func callText(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.MCPToolName, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("content %+v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestMCPSendMessage(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != server.MCPToolName {
		t.Fatalf("tools %+v %v", tools, err)
	}
	if text, isErr := callText(t, cs, map[string]any{"prompt": "hello mcp"}); text != "echo: hello mcp" || isErr {
		t.Fatalf("answer %q", text)
	}
	if text, _ := callText(t, cs, map[string]any{"prompt": "second", "sessionId": "other"}); text != "echo: second" {
		t.Fatalf("answer %q", text)
	}
	if got := userTexts(t, e.transcriptOf("", server.DefaultMCPSession)); len(got) != 1 || got[0] != "hello mcp" {
		t.Fatalf("default session holds %q", got)
	}
	if text, _ := callText(t, cs, map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "other"}); !strings.Contains(text, "approve") {
		t.Fatalf("pause answer %q", text)
	}
}

func TestMCPHostAndOrigin(t *testing.T) {
	keys := testKeys(t)
	e := newEnv(t, spool.Config{}, server.Options{Keys: keys, AllowedHosts: []string{"agents.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	e.key = projectKey
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		host, origin string
		want         int
	}{
		{"", "", 200},
		{"evil.example.com", "", 403}, // DNS rebinding: a foreign Host
		{"agents.example.com", "", 200},
		{"", "https://evil.example.com", 403},
		{"", "https://app.example.com", 200},
		{"", "null", 403},
	}
	for _, c := range cases {
		hr := e.newRequest(t.Context(), req{method: "POST", path: "/mcp", body: init, header: map[string]string{"Accept": "application/json, text/event-stream"}})
		if c.host != "" {
			hr.Host = c.host
		}
		if c.origin != "" {
			hr.Header.Set("Origin", c.origin)
		}
		res, err := e.http.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Fatalf("Host %q Origin %q: %d, want %d", c.host, c.origin, res.StatusCode, c.want)
		}
	}
	// The key is required on /mcp like everywhere.
	if _, err := mcpConnect(t, e, nil); err == nil {
		t.Fatal("connected without a key")
	}
	cs, err := mcpConnect(t, e, map[string]string{"Authorization": "Bearer " + projectKey})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := callText(t, cs, map[string]any{"prompt": "with key"}); text != "echo: with key" {
		t.Fatalf("answer %q", text)
	}
}

// On a user-scoped agent the MCP tool acts for the key's user.
func TestMCPUserScope(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	cs, err := mcpConnect(t, e, map[string]string{"Authorization": "Bearer " + aliceKey})
	if err != nil {
		t.Fatal(err)
	}
	callText(t, cs, map[string]any{"prompt": "from alice", "sessionId": "m"})
	if got := userTexts(t, e.transcriptOf("alice", "m")); len(got) != 1 {
		t.Fatalf("alice's session holds %q", got)
	}
	if _, err := mcpConnect(t, e, map[string]string{"Authorization": "Bearer " + projectKey}); err == nil {
		t.Fatal("a project key without X-Spool-User connected to a user-scoped agent")
	}
}

// An MCP client that goes away leaves its turn to Options.TurnTimeout and
// Close, like every other route that runs a turn over HTTP: once Close
// returns, the turn is over and its end recorded (it ran on the MCP
// handler's context, which neither ends; found in review).
func TestMCPTurnEndedByTimeoutAndClose(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{TurnTimeout: 300 * time.Millisecond})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// 200 words at 20 ms: a 4 s turn; the client gives up after 100 ms.
	cs.CallTool(ctx, &mcp.CallToolParams{Name: server.MCPToolName, Arguments: map[string]any{"prompt": strings.Repeat("word ", 200), "sessionId": "m"}})
	time.Sleep(time.Second) // well past TurnTimeout
	sess, _ := e.agent.Session(context.Background(), "m")
	if _, running := sess.Running(); running {
		t.Errorf("the abandoned MCP turn still runs 1s later, past TurnTimeout (300ms)")
	}
	e.srv.Close()
	if _, running := sess.Running(); running {
		t.Fatalf("Server.Close returned with the MCP turn still running (ends so far %v)", turnEnds(e.transcriptOf("", "m")))
	}
	if ends := turnEnds(e.transcriptOf("", "m")); len(ends) != 1 || ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v, want [cancelled]", ends)
	}
}

// An answer the provider stopped short reaches the MCP client with the
// note that it is incomplete, in the text and in the structured result.
func TestMCPSaysAnAnswerIsIncomplete(t *testing.T) {
	cut := echo.New(echo.WithScript(func(*model.Request) []model.Event {
		return []model.Event{{Kind: model.EventText, Text: "once upon a"}, {Kind: model.EventStop, Stop: model.StopLength}}
	}))
	e := newEnv(t, spool.Config{Model: cut}, server.Options{})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.MCPToolName, Arguments: map[string]any{"prompt": "a story"}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, "once upon a\n\n(incomplete: the answer reached the model's output token limit") {
		t.Fatalf("text %q", text)
	}
	var out struct{ Status, Notice string }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.Status != "ok" || !strings.HasPrefix(out.Notice, "the answer reached") {
		t.Fatalf("structured %s", b)
	}
}

// Under OnDisconnect cancel, an MCP client that gives up on a call stops
// its turn, recorded cancelled, as a client of /invoke does: the current
// protocol cancels a call by closing its POST, and the turn ran on to its
// end, 20 s here, whatever the option said. (The SDK's client also sends
// notifications/cancelled, which stops the turn by itself now; see
// TestMCPClosedPOSTStopsTurnUnderDisconnectCancel for the close alone.)
func TestMCPClientCancelStopsTurnUnderDisconnectCancel(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{OnDisconnect: server.DisconnectCancel})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ends := giveUpOnceRunning(t, e, cs, 10*time.Second); len(ends) != 1 || ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v 10s after the client gave up, want [cancelled]", ends)
	}
}

// giveUpOnceRunning calls send_message on session m with a 20 s turn
// (1000 words of slowModel's, at 20 ms), cancels the call once its turn
// runs (a fixed wait could end before a loaded machine starts the turn,
// which then never runs), and returns the session's turn ends once the
// turn is over, or wait after the cancel.
func giveUpOnceRunning(t *testing.T, e *env, cs *mcp.ClientSession, wait time.Duration) []transcript.Status {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, _ := e.agent.Session(context.Background(), "m")
	go func() {
		for _, running := sess.Running(); !running && ctx.Err() == nil; _, running = sess.Running() {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.MCPToolName, Arguments: map[string]any{"prompt": strings.Repeat("word ", 1000), "sessionId": "m"}}); err == nil {
		t.Fatal("the call returned before the client gave up")
	}
	deadline := time.Now().Add(wait)
	for _, running := sess.Running(); running && time.Now().Before(deadline); _, running = sess.Running() {
		time.Sleep(10 * time.Millisecond)
	}
	return turnEnds(e.transcriptOf("", "m"))
}

// A call of a tool the server does not have is a protocol error (not a
// tool result with isError), which the MCP SDK answers 400 with a
// JSON-RPC error body; the OpenAPI document describes that answer (the
// env checks every response against it), where it said a 4XX JSON body
// of /mcp was the server's {"error":{"code","message"}}.
func TestMCPUnknownToolIsAProtocolError(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("CallTool of an unknown tool = %+v, %v; want a protocol error", res, err)
	}
}

// A turn a guard stopped reaches the MCP client as an error result
// saying why, in the text and in the structured result's notice, as
// /api/chat's error chunk and /invoke's notice say it: it was an empty
// text with isError false and no notice, an answer of nothing.
func TestMCPSaysAGuardStoppedTheTurn(t *testing.T) {
	e := newEnv(t, spool.Config{
		PromptGuards: []spool.PromptGuard{func(_ context.Context, p string) error {
			if strings.Contains(p, "secret") {
				return errors.New("prompts may not ask for secrets")
			}
			return nil
		}},
		AnswerGuards: []spool.AnswerGuard{func(_ context.Context, a string) error {
			if strings.Contains(a, "forbidden") {
				return errors.New("the answer said a forbidden word")
			}
			return nil
		}},
	}, server.Options{})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ prompt, status, notice string }{
		{"tell me the secret", "prompt_blocked", "prompts may not ask for secrets"},
		{"say forbidden things", "response_blocked", "the answer said a forbidden word"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.MCPToolName, Arguments: map[string]any{"prompt": c.prompt}})
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("%s: CallTool = %+v, %v", c.status, res, err)
		}
		var out struct{ Status, Text, Notice string }
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || text != c.notice || out.Status != c.status || out.Notice != c.notice || out.Text != "" {
			t.Fatalf("%s: isError %v, text %q, structured %s; want an error result saying %q", c.status, res.IsError, text, b, c.notice)
		}
	}
}

// mcpVersions are the protocol versions the server negotiates, newest
// first.
var mcpVersions = mcp.SupportedProtocolVersions()

// A client that cancels a call stops its turn, recorded cancelled, as
// POST /v1/sessions/{id}/stop does, on every protocol version the server
// negotiates and whatever OnDisconnect says: a client before 2026-07-28
// cancels with notifications/cancelled, which comes in a POST of its own,
// and in a stateless server that POST's session knew nothing of the call,
// so the turn ran on to its end (20 s here); closing the call's POST is
// no cancel in those versions, and under DisconnectContinue not in
// 2026-07-28 either.
func TestMCPCancelStopsTurnOnEveryVersion(t *testing.T) {
	for _, v := range mcpVersions {
		for _, od := range []server.Disconnect{server.DisconnectContinue, server.DisconnectCancel} {
			t.Run(v+"/"+string(od), func(t *testing.T) {
				e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{OnDisconnect: od})
				cs, err := mcpConnectAt(t, e, nil, v)
				if err != nil {
					t.Fatal(err)
				}
				if got := cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("negotiated %s, want %s", got, v)
				}
				if ends := giveUpOnceRunning(t, e, cs, 5*time.Second); len(ends) != 1 || ends[0] != transcript.StatusCancelled {
					t.Fatalf("turn ends %v 5s after the client cancelled, want [cancelled]", ends)
				}
			})
		}
	}
}

// mcpPost posts one JSON-RPC message to /mcp as a client of protocol
// 2025-06-18 with headers h, and returns the status and body once the
// answer ends (or ctx does).
func mcpPost(ctx context.Context, t *testing.T, e *env, h map[string]string, msg string) (int, string) {
	hr, err := http.NewRequestWithContext(ctx, "POST", e.http.URL+"/mcp", strings.NewReader(msg))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	for k, v := range h {
		hr.Header.Set(k, v)
	}
	res, err := e.http.Client().Do(hr)
	if err != nil {
		if ctx.Err() == nil {
			t.Error(err)
		}
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// startMCPCall starts send_message as JSON-RPC request id on session sid
// and waits for its turn to run; the call's POST stays open until the
// test ends.
func startMCPCall(t *testing.T, e *env, h map[string]string, user, id, sid string) *spool.Session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"prompt":%q,"sessionId":%q}}}`, id, server.MCPToolName, strings.Repeat("word ", 1000), sid)
	go mcpPost(ctx, t, e, h, call)
	sess, err := e.agent.Session(spool.ContextWithUser(context.Background(), user), sid)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, running := sess.Running(); running {
			return sess
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %s on %s: no turn runs after 5s", id, sid)
		}
	}
}

// mcpCancel sends notifications/cancelled for requestId (JSON) and wants
// it accepted quietly: 202 and no body.
func mcpCancel(t *testing.T, e *env, h map[string]string, requestID string) {
	t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"test"}}`, requestID)
	if status, body := mcpPost(context.Background(), t, e, h, msg); status != http.StatusAccepted || body != "" {
		t.Fatalf("cancel %s: %d %q, want 202 and no body", requestID, status, body)
	}
}

// waitEnded waits up to within for sess's turn to end and reports
// whether it did.
func waitEnded(sess *spool.Session, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, running := sess.Running(); !running {
			return true
		}
	}
	_, running := sess.Running()
	return !running
}

// A cancel reaches only a call its sender made: one from another user's
// key, or from a project key acting for the same user, or naming another
// id (the string "7" is not the number 7) or none that runs, is accepted
// and ignored, and the call runs on; the caller's own cancel stops its
// turn, recorded cancelled, and sent again, once the call is over, is
// ignored as quietly.
func TestMCPCancelReachesOnlyTheCallersCall(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel(), Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := map[string]string{"Authorization": "Bearer " + aliceKey}
	sess := startMCPCall(t, e, alice, "alice", "7", "a")
	for _, c := range []struct {
		h  map[string]string
		id string
	}{
		{map[string]string{"Authorization": "Bearer " + bobKey}, "7"},
		{map[string]string{"Authorization": "Bearer " + projectKey, "X-Spool-User": "bob"}, "7"},
		{map[string]string{"Authorization": "Bearer " + projectKey, "X-Spool-User": "alice"}, "7"},
		{alice, `"7"`},
		{alice, "8"},
		{alice, `{"not":"an id"}`},
	} {
		mcpCancel(t, e, c.h, c.id)
	}
	if waitEnded(sess, 300*time.Millisecond) {
		t.Fatalf("a cancel not alice's, or not of her call, ended her turn: %v", turnEnds(e.transcriptOf("alice", "a")))
	}
	mcpCancel(t, e, alice, "7")
	if !waitEnded(sess, 5*time.Second) {
		t.Fatal("alice's turn runs 5s after she cancelled its call")
	}
	if ends := turnEnds(e.transcriptOf("alice", "a")); len(ends) != 1 || ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v, want [cancelled]", ends)
	}
	mcpCancel(t, e, alice, "7")
	cs, err := mcpConnectAt(t, e, alice, "2025-06-18")
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := callText(t, cs, map[string]any{"prompt": "after", "sessionId": "a2"}); text != "echo: after" || isErr {
		t.Fatalf("answer %q", text)
	}
}

// Two running calls of one caller with the same request id (two clients
// on one key, each counting from 1) cannot be told apart: a cancel of
// that id ends neither, rather than one its sender did not mean.
func TestMCPCancelOfAnAmbiguousIDIsIgnored(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{})
	x := startMCPCall(t, e, nil, "", "3", "x")
	y := startMCPCall(t, e, nil, "", "3", "y")
	mcpCancel(t, e, nil, "3")
	if waitEnded(x, 300*time.Millisecond) || waitEnded(y, 0) {
		t.Fatalf("a cancel of an id two calls share ended one: x %v, y %v", turnEnds(e.transcriptOf("", "x")), turnEnds(e.transcriptOf("", "y")))
	}
}

// A 2026-07-28 client may cancel a call by closing its POST alone, with
// no notifications/cancelled (the protocol expects none): under
// DisconnectCancel that stops the turn, recorded cancelled. A guard of
// PropagateRequestCancellation, which the SDK client's test no longer
// isolates, since that client sends the notification too.
func TestMCPClosedPOSTStopsTurnUnderDisconnectCancel(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{OnDisconnect: server.DisconnectCancel})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"prompt":%q,"sessionId":"m"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, server.MCPToolName, strings.Repeat("word ", 1000))
	done := make(chan struct{})
	go func() {
		defer close(done)
		mcpPost(ctx, t, e, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": server.MCPToolName}, call)
	}()
	sess, _ := e.agent.Session(context.Background(), "m")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, running := sess.Running(); running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no turn runs 5s after the call")
		}
	}
	cancel()
	<-done
	if !waitEnded(sess, 5*time.Second) {
		t.Fatal("the turn runs 5s after its client closed the call's POST")
	}
	if ends := turnEnds(e.transcriptOf("", "m")); len(ends) != 1 || ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v, want [cancelled]", ends)
	}
}
