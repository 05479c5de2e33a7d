package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
)

// The routes that make a conversation a tree, and copy it:
//
//	POST /v1/sessions/{id}/regenerate              {} (or no body) → the new turn: SSE or JSON
//	POST /v1/sessions/{id}/turns/{turnId}/edit     {"text"} → the new turn: SSE or JSON
//	POST /v1/sessions/{id}/turns/{turnId}/switch   → 204: that version is active again
//	POST /v1/sessions/{id}/fork                    {"atTurn","sessionId"?} → 201, the new session's info

// handleRegenerate is POST /v1/sessions/{id}/regenerate: the newest turn of
// the active branch answered again (spool.Session.Regenerate), answered
// like /chat.
func (s *Server) handleRegenerate(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existingNoBody(w, r)
	if !ok {
		return
	}
	s.answerTurn(w, r, s.detach(ctx, sess.RegenerateStream))
}

type editRequest struct {
	Text string `json:"text"`
}

// handleEdit is POST /v1/sessions/{id}/turns/{turnId}/edit {"text"}: the
// turn's question asked again as text, in place of it and every later
// turn of the branch (spool.Session.Edit), answered like /chat.
func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	var req editRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		// Said here, where the field is known: the runtime's
		// ErrEmptyPrompt names no field.
		s.writeError(w, r, errf(http.StatusBadRequest, CodeEmptyPrompt, `"text" is missing or blank`))
		return
	}
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	turnID := r.PathValue("turnId")
	s.answerTurn(w, r, s.detach(ctx, func(ctx context.Context) iter.Seq2[spool.Event, error] {
		return sess.EditStream(ctx, turnID, req.Text)
	}))
}

// handleSwitch is POST /v1/sessions/{id}/turns/{turnId}/switch: that
// version of its place on the active branch becomes active again, with
// what followed it (spool.Session.SwitchBranch). 204; the messages route
// then shows the branch.
func (s *Server) handleSwitch(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existingNoBody(w, r)
	if !ok {
		return
	}
	if err := sess.SwitchBranch(ctx, r.PathValue("turnId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type forkRequest struct {
	AtTurn    string `json:"atTurn"`
	SessionID string `json:"sessionId,omitempty"`
}

// handleFork is POST /v1/sessions/{id}/fork {"atTurn","sessionId"?}: a new
// session of the caller's whose history is this one's when turn atTurn
// ended (spool.Agent.Fork). 201 with the new session's info and its
// Location; 409 session_exists when sessionId names a session that
// exists.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	var req forkRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.AtTurn == "" {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"atTurn" (the id of the turn to fork at) is missing`))
		return
	}
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	var opts []spool.ForkOption
	if req.SessionID != "" {
		if _, err := s.sessionFor(ctx, req.SessionID); err != nil {
			s.writeError(w, r, err)
			return
		}
		opts = append(opts, spool.WithForkID(req.SessionID))
	}
	fork, err := s.agent.Fork(ctx, sess.ID(), req.AtTurn, opts...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := store.Stat(ctx, s.agent.Store(), fork.Key())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+fork.ID())
	writeJSON(w, http.StatusCreated, info)
}

// answerTurn answers with a turn's events: SSE when the request asks for
// it, else the Result as JSON.
func (s *Server) answerTurn(w http.ResponseWriter, r *http.Request, events func(func(spool.Event, error) bool)) {
	if !wantsSSE(r) {
		res, err := spool.Collect(events)
		s.writeResult(w, r, res, err)
		return
	}
	s.streamEvents(w, r, events)
}

// existingNoBody is existing for a route that takes no fields: its body
// is left out, empty or {}.
func (s *Server) existingNoBody(w http.ResponseWriter, r *http.Request) (context.Context, *spool.Session, bool) {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return nil, nil, false
	}
	return s.existing(w, r)
}

// decodeOptional is decodeJSON for a route whose body may be left out
// (or sent empty).
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errf(http.StatusBadRequest, CodeBadRequest, "cannot read the request body")
	}
	if len(b) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return decodeJSON(r, v, true)
}
