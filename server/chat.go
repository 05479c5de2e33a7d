package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/store"
)

// HTTPChannel is the HTTP channel: the channel.Driver behind POST /chat.
// Each request is a message in; its reply goes out on the same request,
// as Server-Sent Events or as one JSON answer. Requests of one session are
// answered in arrival order (the order they take their place in the
// session's queue); closing the channel answers those still waiting with
// an error.
type HTTPChannel struct {
	s *Server
	q channel.Queue

	mu sync.Mutex
	d  channel.Dispatcher
}

func newHTTPChannel(s *Server) *HTTPChannel { return &HTTPChannel{s: s} }

// Name implements channel.Driver.
func (c *HTTPChannel) Name() string { return "http" }

// Listen implements channel.Driver.
func (c *HTTPChannel) Listen(ctx context.Context, d channel.Dispatcher) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d = d
	return nil
}

// Send implements channel.Driver: the payload goes to the oldest request
// waiting on target.
func (c *HTTPChannel) Send(ctx context.Context, target channel.Target, p channel.Payload) error {
	err := c.q.Deliver(ctx, target, p)
	if rel, ok := p.Origin.(turnRelease); ok && p.Final {
		rel()
	}
	if errors.Is(err, channel.ErrGone) && c.s.opts.OnDisconnect != DisconnectCancel {
		// The client went away; its turn runs on (for watchers, or to be
		// stopped by POST /v1/sessions/{id}/stop).
		return nil
	}
	return err
}

// turnRelease is the Origin of a /chat request's Inbound: it releases the
// turn's context once its final payload is sent.
type turnRelease func()

// Close implements channel.Driver.
func (c *HTTPChannel) Close() error {
	c.q.Close()
	return nil
}

type chatRequest struct {
	SessionID string  `json:"sessionId,omitempty"`
	Text      *string `json:"text"`
}

// SessionHeader carries the session id of a /chat answer (also in the
// JSON answer and the first SSE event), useful when the server chose it.
const SessionHeader = "X-Spool-Session-Id"

// ServeHTTP handles POST /chat.
func (c *HTTPChannel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := c.s
	var req chatRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Text == nil || strings.TrimSpace(*req.Text) == "" {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeEmptyPrompt, `"text" is missing or blank`))
		return
	}
	_, user, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	id := req.SessionID
	if id == "" {
		id = uuid.NewString()
	}
	ns := store.Namespace{Agent: s.agent.Name(), Owner: user}
	if store.ValidateKey(ns.Key(id)) != nil {
		s.writeError(w, r, invalidSessionID())
		return
	}
	c.mu.Lock()
	d := c.d
	c.mu.Unlock()
	rid := RequestIDFromContext(r.Context())
	target := channel.Target{SessionID: id, User: user}
	if m := s.opts.MaxQueue; m > 0 && c.q.Len(target) >= m {
		writeAPIError(w, &apiError{Status: http.StatusTooManyRequests, Code: CodeQueueFull,
			Message: "too many requests wait on this session; retry later", RetryAfter: 1}, errorBody{})
		return
	}
	tctx, release := s.turnContext(r.Context())
	in := channel.Inbound{Target: target, Text: *req.Text, Origin: turnRelease(release)}
	p, err := c.q.Accept(tctx, d, in, func() {
		if s.opts.OnAccept != nil {
			s.opts.OnAccept(rid, id)
		}
	})
	if err != nil {
		release()
		writeAPIError(w, closedError(), errorBody{})
		return
	}
	// However this handler ends, the request stops waiting: a turn still
	// running for it runs on without it (Options.OnDisconnect continue),
	// or stops at its next event, recorded cancelled (cancel).
	defer p.Abandon()
	w.Header().Set(SessionHeader, id)
	if wantsSSE(r) {
		c.stream(w, r, p, id)
		return
	}
	for {
		select {
		case pl := <-p.Payloads():
			if pl.Final {
				s.writeResult(w, r, pl.Result, pl.Err)
				return
			}
		case <-p.Rejected():
			writeAPIError(w, closedError(), errorBody{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func closedError() *apiError {
	return stoppingError("the chat channel is closed; the request was not answered", 0)
}

// sessionEvent is the first event of a /chat stream.
type sessionEvent struct {
	SessionID string `json:"sessionId"`
}

// stream answers a /chat request as Server-Sent Events: "session" first,
// then one event per event of the turn, named by its kind (turn_start,
// step_start, text, tool_call, approval_request, tool_result, step_end,
// delegate, turn_end) with the spool.Event as JSON data, or "error" with
// {"error":{"code","message","requestId"}} when the turn could not run.
func (c *HTTPChannel) stream(w http.ResponseWriter, r *http.Request, p *channel.Pending, id string) {
	sse := startSSE(w, c.s.opts.KeepAlive, nil)
	defer sse.close()
	if sse.event("session", sessionEvent{SessionID: id}) != nil {
		return
	}
	for {
		select {
		case pl := <-p.Payloads():
			if !pl.Final {
				if sse.eventID(string(pl.Event.Kind), pl.Event.ID, pl.Event) != nil {
					return
				}
				continue
			}
			if pl.Result == nil && pl.Err != nil {
				sse.event("error", errorBody{Error: c.s.streamError(r, pl.Err)})
			}
			return
		case <-p.Rejected():
			sse.event("error", errorBody{Error: c.s.streamError(r, closedError())})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// streamError is the API error of a failure inside an event stream,
// logged like writeError does, with the request's id: the error event
// is read by clients that do not see the response's X-Request-Id.
func (s *Server) streamError(r *http.Request, err error) *apiError {
	ae := apiErrorFor(err)
	if ae.Code == CodeInternal {
		s.log.ErrorContext(r.Context(), "stream failed", "error", err)
	}
	e := *ae // ae may be shared (an error's own *apiError)
	e.RequestID = RequestIDFromContext(r.Context())
	return &e
}

// Waiting returns how many /chat requests wait on target, the one being
// answered included.
func (c *HTTPChannel) Waiting(target channel.Target) int { return c.q.Len(target) }
