package server_test

import (
	"context"
	"encoding/json"
	"errors"
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
	hc := &http.Client{Transport: headerTransport{base: e.http.Client().Transport, h: h}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.http.URL + "/mcp", HTTPClient: hc}, nil)
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
// protocol cancels a call by closing its POST (there is no separate
// notifications/cancelled to route in a stateless server), and the turn
// ran on to its end, 20 s here, whatever the option said.
func TestMCPClientCancelStopsTurnUnderDisconnectCancel(t *testing.T) {
	e := newEnv(t, spool.Config{Model: slowModel()}, server.Options{OnDisconnect: server.DisconnectCancel})
	cs, err := mcpConnect(t, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, _ := e.agent.Session(context.Background(), "m")
	go func() {
		// The client gives up once its turn runs: a fixed wait could end
		// before a loaded machine starts the turn, which then never runs.
		for _, running := sess.Running(); !running && ctx.Err() == nil; _, running = sess.Running() {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	// 1000 words at 20 ms: a 20 s turn.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.MCPToolName, Arguments: map[string]any{"prompt": strings.Repeat("word ", 1000), "sessionId": "m"}}); err == nil {
		t.Fatal("the call returned before the client gave up")
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, running := sess.Running(); running && time.Now().Before(deadline); _, running = sess.Running() {
		time.Sleep(10 * time.Millisecond)
	}
	if ends := turnEnds(e.transcriptOf("", "m")); len(ends) != 1 || ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v 10s after the client gave up, want [cancelled]", ends)
	}
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
