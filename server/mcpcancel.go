package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// mcpCalls routes an MCP client's notifications/cancelled to the
// send_message call it names. The server is stateless: the notification
// comes in a POST of its own, whose MCP session knows nothing of the
// call, so the SDK's own routing (by request id, within one session)
// never finds it. Calls are found here by their caller and request id
// instead. A caller is the credential a request came with and the user
// it acts for, so a cancel reaches only calls its sender could have made
// itself; a request id two running calls of one caller share (two
// clients on one key) names neither, and the cancel is ignored, as one
// for an id that no call here runs is. A turn a cancelled call started
// ends, recorded cancelled, whatever Options.OnDisconnect says.
type mcpCalls struct {
	mu    sync.Mutex
	calls map[mcpCallKey][]*mcpCall
}

type mcpCallKey struct{ caller, id string }

// An mcpCall is one tools/call request: its context ends when the client
// cancels it. It is registered from the POST that carries it until both
// that POST's handler and the tool (if it started) are done.
type mcpCall struct {
	key    mcpCallKey
	ctx    context.Context
	cancel context.CancelFunc
	refs   int // under mcpCalls.mu
}

type mcpCallCtxKey struct{}

// add registers a call; release it once.
func (m *mcpCalls) add(key mcpCallKey) *mcpCall {
	c := &mcpCall{key: key, refs: 1}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls == nil {
		m.calls = map[mcpCallKey][]*mcpCall{}
	}
	m.calls[key] = append(m.calls[key], c)
	return c
}

// hold keeps a call registered until its release; it reports false for
// one already released for good.
func (m *mcpCalls) hold(c *mcpCall) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.refs == 0 {
		return false
	}
	c.refs++
	return true
}

func (m *mcpCalls) release(c *mcpCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.refs--; c.refs > 0 {
		return
	}
	list := m.calls[c.key]
	for i, o := range list {
		if o == c {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(m.calls, c.key)
	} else {
		m.calls[c.key] = list
	}
	c.cancel()
}

// cancelCall ends the call key names, if exactly one runs.
func (m *mcpCalls) cancelCall(key mcpCallKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if list := m.calls[key]; len(list) == 1 {
		list[0].cancel()
	}
}

// mcpCaller names who sent a request: its bearer token (hashed, to keep
// no credential in memory longer than the request) and the user it acts
// for.
func mcpCaller(h http.Header, user string) string {
	_, tok, _ := strings.Cut(h.Get("Authorization"), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return hex.EncodeToString(sum[:]) + "/" + user
}

// mcpRPCID is a JSON-RPC id as a key: a string or an integer (the SDK
// takes an integral float for that integer); "" for anything else.
func mcpRPCID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return "s" + s
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return "n" + strconv.FormatInt(n, 10)
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f == float64(int64(f)) {
		return "n" + strconv.FormatInt(int64(f), 10)
	}
	return ""
}

type mcpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// routeMCPCancel reads an MCP POST's body (putting it back for the SDK),
// cancels the calls its notifications/cancelled name, and registers its
// tools/call, returning the request to serve and the release to call
// once it is served. A batch (before 2025-06-18) with more than one
// tools/call registers none: the tool cannot tell which of them it runs.
func (s *Server) routeMCPCancel(w http.ResponseWriter, r *http.Request, user string) (*http.Request, func()) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	r.Body.Close()
	if err != nil {
		// The SDK answers the same error (413 for a body too large).
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return r, func() {}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msgs []mcpMessage
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &msgs) != nil {
			return r, func() {}
		}
	} else {
		var m mcpMessage
		if json.Unmarshal(b, &m) != nil {
			return r, func() {}
		}
		msgs = []mcpMessage{m}
	}
	caller := mcpCaller(r.Header, user)
	var calls []mcpCallKey
	for _, m := range msgs {
		switch {
		case m.Method == "notifications/cancelled" && m.ID == nil:
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				if id := mcpRPCID(p.RequestID); id != "" {
					s.mcpCalls.cancelCall(mcpCallKey{caller, id})
				}
			}
		case m.Method == "tools/call":
			if id := mcpRPCID(m.ID); id != "" {
				calls = append(calls, mcpCallKey{caller, id})
			}
		}
	}
	if len(calls) != 1 {
		return r, func() {}
	}
	c := s.mcpCalls.add(calls[0])
	return r.WithContext(context.WithValue(r.Context(), mcpCallCtxKey{}, c)), func() { s.mcpCalls.release(c) }
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// mcpCancelled returns a context that ends when the client cancels the
// tools/call the tool runs for (nil when it cannot: none was registered),
// and the function to call once the tool is done.
func (s *Server) mcpCancelled(ctx context.Context) (context.Context, func()) {
	c, _ := ctx.Value(mcpCallCtxKey{}).(*mcpCall)
	if c == nil || !s.mcpCalls.hold(c) {
		return nil, func() {}
	}
	return c.ctx, func() { s.mcpCalls.release(c) }
}
