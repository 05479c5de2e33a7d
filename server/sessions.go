package server

import (
	"context"
	"iter"
	"net/http"
	"strconv"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// sessionList is the answer of GET /v1/sessions.
type sessionList struct {
	Sessions   []store.SessionInfo `json:"sessions"`
	NextCursor *string             `json:"nextCursor"` // null on the last page
}

// messageList is the answer of GET /v1/sessions/{id}/messages.
type messageList struct {
	Messages   []spool.Message  `json:"messages"`
	NextCursor *string          `json:"nextCursor"`
	Turns      []spool.TurnInfo `json:"turns,omitempty"`
}

func cursorOrNull(c string) *string {
	if c == "" {
		return nil
	}
	return &c
}

// parseLimit reads the limit query parameter: absent is the default,
// otherwise 1 to store.MaxListLimit.
func parseLimit(r *http.Request) (int, *apiError) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxListLimit {
		return 0, errf(http.StatusBadRequest, CodeBadRequest, "limit must be a whole number from 1 to "+strconv.Itoa(store.MaxListLimit))
	}
	return n, nil
}

// handleList is GET /v1/sessions?limit=&cursor=: the caller's sessions,
// newest activity first.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	limit, aerr := parseLimit(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	page, err := s.agent.ListSessions(ctx, store.ListOptions{Limit: limit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := sessionList{Sessions: page.Sessions, NextCursor: cursorOrNull(page.NextCursor)}
	if out.Sessions == nil {
		out.Sessions = []store.SessionInfo{}
	}
	writeJSON(w, http.StatusOK, out)
}

// existing returns the session of the path's {id} when it exists and is
// the caller's; anything else is 404 (an id no session can have too).
func (s *Server) existing(w http.ResponseWriter, r *http.Request) (context.Context, *spool.Session, bool) {
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return nil, nil, false
	}
	id := r.PathValue("id")
	if _, err := s.agent.SessionInfo(ctx, id); err != nil {
		s.writeError(w, r, err)
		return nil, nil, false
	}
	sess, err := s.agent.Session(ctx, id)
	if err != nil {
		s.writeError(w, r, err)
		return nil, nil, false
	}
	return ctx, sess, true
}

// handleInfo is GET /v1/sessions/{id}.
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	info, err := s.agent.SessionInfo(ctx, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// handleDelete is DELETE /v1/sessions/{id}: 204, or 404 for a session
// the caller does not have.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	if err := s.agent.DeleteSession(ctx, sess.ID()); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleMessages is GET /v1/sessions/{id}/messages?limit=&order=&cursor=&branches=:
// the messages of the active branch (branches=active, the default) or of
// every branch (branches=all, those off the active branch marked
// "superseded"), each of a turn with other versions carrying
// "branch":{"index","count","turns"}.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	limit, aerr := parseLimit(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	q := r.URL.Query()
	order := spool.Order(q.Get("order"))
	if order != "" && order != spool.OrderAsc && order != spool.OrderDesc {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, "order must be asc or desc"))
		return
	}
	var all bool
	switch q.Get("branches") {
	case "", "active":
	case "all":
		all = true
	default:
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, "branches must be active or all"))
		return
	}
	page, err := sess.Page(ctx, spool.PageOptions{Limit: limit, Order: order, Cursor: q.Get("cursor"), AllBranches: all})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := messageList{Messages: page.Messages, NextCursor: cursorOrNull(page.NextCursor), Turns: page.Turns}
	if out.Messages == nil {
		out.Messages = []spool.Message{}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleHistory is GET /v1/sessions/{id}/history: what the next model
// request would carry, {"messages":[{"role","content",…}]}.
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	msgs, err := sess.History(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if msgs == nil {
		msgs = []model.Message{}
	}
	entries, err := sess.Transcript(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var sum *historySummary
	if hs, ok := history.SummaryOf(entries); ok {
		sum = summaryIn(msgs, hs)
	}
	writeJSON(w, http.StatusOK, struct {
		Messages []model.Message `json:"messages"`
		Summary  *historySummary `json:"summary,omitempty"`
	}{msgs, sum})
}

// handleApprovals is GET /v1/sessions/{id}/approvals: the tool calls
// waiting on a person, oldest first.
func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	ps, err := sess.PendingApprovals(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ps == nil {
		ps = []spool.Approval{}
	}
	writeJSON(w, http.StatusOK, struct {
		Approvals []spool.Approval `json:"approvals"`
	}{ps})
}

type decisionRequest struct {
	Decision string `json:"decision"`
	Scope    string `json:"scope,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// handleDecide is POST /v1/sessions/{id}/approvals/{approvalId}:
// {"decision":"allow"|"deny","scope":"once"|"session","reason"?}. It
// resumes the turn and answers like /chat: SSE when asked for, else the
// Result as JSON.
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) {
	var req decisionRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	var d spool.Decision
	switch req.Decision {
	case "allow":
		d.Allow = true
	case "deny":
	default:
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"decision" must be "allow" or "deny"`))
		return
	}
	switch transcript.ApprovalScope(req.Scope) {
	case "", transcript.ApprovalScopeOnce, transcript.ApprovalScopeSession:
		d.Scope = transcript.ApprovalScope(req.Scope)
	default:
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"scope" must be "once" or "session"`))
		return
	}
	d.Reason = req.Reason
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	approvalID := r.PathValue("approvalId")
	events := s.detach(ctx, func(ctx context.Context) iter.Seq2[spool.Event, error] {
		return sess.Resolve(ctx, approvalID, d)
	})
	if !wantsSSE(r) {
		res, err := spool.Collect(events)
		s.writeResult(w, r, res, err)
		return
	}
	s.streamEvents(w, r, events)
}

// streamEvents answers with a turn's events as SSE, the /chat way. An
// error before the first event is a plain JSON error response.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, events func(func(spool.Event, error) bool)) {
	var sse *sseWriter
	defer func() {
		if sse != nil {
			sse.close()
		}
	}()
	for ev, err := range events {
		if err != nil {
			if sse == nil {
				s.writeError(w, r, err)
			} else {
				sse.event("error", errorBody{Error: s.streamError(r, err)})
			}
			return
		}
		if sse == nil {
			sse = startSSE(w, s.opts.KeepAlive, nil)
		}
		if sse.eventID(string(ev.Kind), ev.ID, ev) != nil {
			return // the client went away: stopping stops the turn
		}
	}
}
