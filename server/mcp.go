package server

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/transcript"
)

// DefaultMCPSession is the session the MCP tool sends to when the call
// names none.
const DefaultMCPSession = "mcp"

// MCPToolName is the name of the MCP tool that sends a prompt to the
// agent.
const MCPToolName = "send_message"

type mcpArgs struct {
	Prompt    string `json:"prompt" jsonschema:"the message to send to the agent"`
	SessionID string `json:"sessionId,omitempty" jsonschema:"the session to continue; default \"mcp\""`
}

type mcpResult struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
	Text      string `json:"text"`
	Notice    string `json:"notice,omitempty"` // why a guard or limit stopped the turn; with status ok, why the provider stopped the answer short
}

// mcpHandler returns /mcp: the agent as an MCP server over streamable
// HTTP (stateless: every request stands alone), with one tool,
// send_message, behind the Host and Origin checks.
func (s *Server) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "spool-" + s.agent.Name(), Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        MCPToolName,
		Description: fmt.Sprintf("Send a message to the agent %q and get its answer. Messages with the same sessionId continue one conversation.", s.agent.Name()),
	}, s.mcpSend)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// The checks below are the SDK's localhost protection and more.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        s.opts.MaxBodyBytes,
		// A client of the current protocol cancels a call by closing its
		// POST: the tool's context then ends, which stops the turn under
		// DisconnectCancel (collect detaches it under DisconnectContinue).
		PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeAPIError(w, errf(http.StatusForbidden, CodeForbidden, "Host "+r.Host+" is not allowed (DNS rebinding protection); add it to the allowed hosts"), errorBody{})
			return
		}
		if !s.originAllowed(r) {
			writeAPIError(w, errf(http.StatusForbidden, CodeForbidden, "Origin "+r.Header.Get("Origin")+" is not allowed; add it to the allowed origins"), errorBody{})
			return
		}
		user, aerr := s.actor(identityOf(r.Context()), r.Header)
		if aerr != nil {
			writeAPIError(w, aerr, errorBody{})
			return
		}
		r, release := s.routeMCPCancel(w, r, user)
		defer release()
		h.ServeHTTP(w, r)
	})
}

func identityOf(ctx context.Context) Identity {
	id, _ := IdentityFromContext(ctx)
	return id
}

// mcpSend is the send_message tool. The caller's identity is taken again
// from the request's headers, which the middleware has already checked:
// the tool's context is the MCP session's, not the request's.
func (s *Server) mcpSend(ctx context.Context, req *mcp.CallToolRequest, args mcpArgs) (*mcp.CallToolResult, mcpResult, error) {
	var h http.Header
	if req.Extra != nil {
		h = req.Extra.Header
	}
	id, aerr := s.authenticate(h)
	if aerr != nil {
		return nil, mcpResult{}, aerr
	}
	user, aerr := s.actor(id, h)
	if aerr != nil {
		return nil, mcpResult{}, aerr
	}
	if user != "" {
		ctx = spool.ContextWithUser(ctx, user)
	}
	sid := args.SessionID
	if sid == "" {
		sid = DefaultMCPSession
	}
	sess, err := s.sessionFor(ctx, sid)
	if err != nil {
		return nil, mcpResult{}, apiErrorFor(err)
	}
	// The turn runs as /invoke's does: under Options.TurnTimeout, and
	// ended by Close; under OnDisconnect cancel it ends with ctx, which
	// ends when the client closes its request
	// (PropagateRequestCancellation).
	// A client that cancels the call (notifications/cancelled, routed by
	// routeMCPCancel) ends the turn whatever OnDisconnect says, as a
	// Stop does.
	cancelled, done := s.mcpCancelled(ctx)
	defer done()
	res, err := s.collect(ctx, func(ctx context.Context) iter.Seq2[spool.Event, error] {
		if cancelled == nil {
			return sess.Stream(ctx, args.Prompt)
		}
		return func(yield func(spool.Event, error) bool) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(cancelled, cancel)()
			for ev, err := range sess.Stream(ctx, args.Prompt) {
				if !yield(ev, err) {
					return
				}
			}
		}
	})
	if res == nil {
		return nil, mcpResult{}, apiErrorFor(err)
	}
	out := mcpResult{SessionID: res.SessionID, Status: string(res.Status), Text: res.Text, Notice: res.Notice}
	text := res.Text
	isErr := false
	switch {
	case res.Status == spool.StatusAwaitingApproval:
		ids := make([]string, len(res.Pending))
		for i, p := range res.Pending {
			ids[i] = p.ID
		}
		text = fmt.Sprintf("The turn waits for a person to approve %s (POST /v1/sessions/%s/approvals/{approvalId}).", strings.Join(ids, ", "), res.SessionID)
	case resultError(res) != nil:
		text, isErr = resultError(res).Message, true
	case res.Status == transcript.StatusPromptBlocked || res.Status == transcript.StatusResponseBlocked:
		// A guard stopped the turn: there is no answer, and the client
		// (often a model) is told why, as /api/chat's error chunk does.
		text, isErr = turnEndError(res), true
	case res.Status == transcript.StatusOK && res.Notice != "":
		text += "\n\n(incomplete: " + res.Notice + ")"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}, out, nil
}

// hostAllowed reports whether a Host header names this server: a loopback
// name or address, or one of Options.AllowedHosts.
func (s *Server) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if strings.EqualFold(name, "localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a request's Origin, if it has one, is the
// server's own or one of Options.AllowedOrigins. Requests without Origin
// (not from a browser) pass.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	for _, a := range s.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), o) {
			return true
		}
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host)
}
