package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
)

// DefaultInvokeSession is the session POST /invoke uses when the request
// names none.
const DefaultInvokeSession = "http"

type invokeRequest struct {
	Prompt    *string `json:"prompt"`
	SessionID string  `json:"sessionId,omitempty"`
}

// handleInvoke is POST /invoke: one prompt, one JSON answer, the turn
// consumed on the server.
func (s *Server) handleInvoke(w http.ResponseWriter, r *http.Request) {
	var req invokeRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Prompt == nil || strings.TrimSpace(*req.Prompt) == "" {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeEmptyPrompt, `"prompt" is missing or blank`))
		return
	}
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	id := req.SessionID
	if id == "" {
		id = DefaultInvokeSession
	}
	sess, err := s.sessionFor(ctx, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	prompt := *req.Prompt
	res, err := s.collect(ctx, func(ctx context.Context) iter.Seq2[spool.Event, error] {
		return sess.Stream(ctx, prompt)
	})
	s.writeResult(w, r, res, err)
}

// collect is spool.Collect(s.detach(ctx, start)) for a request that wants
// only the turn's result. With OnDisconnect continue the turn still runs
// under its own context (turnContext: the request's cancellation does not
// reach it) and to its end, but on the request's goroutine, which has
// nothing else to do meanwhile: no goroutine to start and grow a stack
// for, no handing every event across through detach's buffer. A client
// that goes away is simply not answered.
func (s *Server) collect(ctx context.Context, start func(ctx context.Context) iter.Seq2[spool.Event, error]) (*spool.Result, error) {
	if s.opts.OnDisconnect == DisconnectCancel {
		return spool.Collect(start(ctx))
	}
	tctx, release := s.turnContext(ctx)
	s.turns.Add(1)
	defer s.turns.Done()
	defer release()
	events := start(tctx)
	// The turn runs to its end whatever Collect makes of an event, as it
	// does under detach: Collect stopping at an error stops only what it
	// reads.
	return spool.Collect(func(yield func(spool.Event, error) bool) {
		reading := true
		for ev, err := range events {
			if reading && !yield(ev, err) {
				reading = false
			}
		}
	})
}

// sessionFor returns a handle on a session a request body names, which
// may not exist yet: an id no session can have is a 400 here, since the
// client asked to create it.
func (s *Server) sessionFor(ctx context.Context, id string) (*spool.Session, error) {
	sess, err := s.agent.Session(ctx, id)
	if errors.Is(err, store.ErrInvalidKey) {
		return nil, invalidSessionID()
	}
	return sess, err
}

// invalidSessionID is the error for a session id in a body that no
// session can have.
func invalidSessionID() *apiError {
	return errf(http.StatusBadRequest, CodeInvalidSessionID, "a session id is 1-128 of A-Z a-z 0-9 . _ @ -, and not . or ..")
}

// writeResult answers with a turn's Result, or the error that kept it
// from running. A turn that ran and failed is answered with an error
// status and its session and turn ids.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, res *spool.Result, err error) {
	if res != nil {
		if ae := resultError(res); ae != nil {
			writeAPIError(w, ae, errorBody{SessionID: res.SessionID, TurnID: res.TurnID, Status: res.Status})
			return
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// decodeJSON reads a JSON object body into v. It requires Content-Type
// application/json, refuses trailing data and, when strict, unknown
// fields. Errors are 400 (415-worthy content types are 400 too, as the
// API promises one status for a malformed request): bad_request for what
// is not JSON, invalid_request for JSON with an unknown field (naming the
// fields the route takes) or a field of the wrong type; 408 for a body
// that did not arrive within the read timeout; 413 for one too large.
func decodeJSON(r *http.Request, v any, strict bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		// Parsed only when it is not the usual value: ParseMediaType
		// makes a map of the parameters.
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errf(http.StatusBadRequest, CodeUnsupportedType, "the body must be JSON with Content-Type: application/json")
		}
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return err
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errf(http.StatusRequestTimeout, CodeRequestTimeout, "the request body did not arrive in time")
		}
		return errf(http.StatusBadRequest, CodeBadRequest, "cannot read the request body")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return errf(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("unknown field %s; this route takes %s", name, fieldList(v)))
		}
		if errors.As(err, &te) && te.Field != "" {
			return errf(http.StatusBadRequest, CodeInvalidRequest, jsonProblem(err))
		}
		return errf(http.StatusBadRequest, CodeBadRequest, "malformed JSON: "+jsonProblem(err))
	}
	// Nothing but white space may follow the object. (More would take a
	// closing '}' or ']' after it for the end.)
	if _, err := dec.Token(); err != io.EOF {
		return errf(http.StatusBadRequest, CodeBadRequest, "malformed JSON: data after the object")
	}
	return nil
}

// fieldList names the JSON fields of the struct v points to: `"prompt"
// and "sessionId"`.
func fieldList(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "no such field"
	}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, strconv.Quote(name))
	}
	switch len(names) {
	case 0:
		return "no fields"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// jsonKind names what a json.UnmarshalTypeError's Value says was found
// ("array", "string", "number", "bool"), for a person.
func jsonKind(v string) string {
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	switch v {
	case "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return v
}

// jsonProblem describes a decoding error by position and field, never by
// the values it saw.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te) && te.Field == "":
		return "the body must be a JSON object, not " + jsonKind(te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s", te.Field, te.Type.String())
	case errors.Is(err, io.EOF):
		return "the body is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "not a JSON object"
}
