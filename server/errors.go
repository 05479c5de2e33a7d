package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Error codes of the JSON errors, {"error":{"code","message"}}. Clients
// branch on the code; the message is for people, and may be reworded.
// What a client needs to word a refusal itself is a field of its own:
// retryAfter (seconds, as the Retry-After header says) on every error
// that has one, maxBytes on body_too_large, budget and budgetScope on
// over_budget, stopping on an unavailable that is the server (or its
// chat channel) going away.
const (
	CodeBadRequest       = "bad_request"        // 400: malformed JSON, a body that cannot be read
	CodeInvalidRequest   = "invalid_request"    // 400: well-formed JSON with an unknown field or a field of the wrong type
	CodeUnsupportedType  = "unsupported_media"  // 400: not Content-Type application/json
	CodeEmptyPrompt      = "empty_prompt"       // 400: blank or missing prompt
	CodeInvalidSessionID = "invalid_session_id" // 400: a session id in a body that no session can have
	CodeInvalidCursor    = "invalid_cursor"     // 400
	CodeUnauthorized     = "unauthorized"       // 401: no key, or a wrong one
	CodeForbidden        = "forbidden"          // 403: the key may not act for that user, a foreign Host or Origin
	CodeUserRequired     = "user_required"      // 403: a user-scoped agent and no user
	CodeNotFound         = "not_found"          // 404: no such route
	CodeSessionNotFound  = "session_not_found"  // 404: unknown, or not the caller's
	CodeApprovalNotFound = "approval_not_found" // 404: no such pending approval
	CodeTurnNotFound     = "turn_not_found"     // 404: no such turn in the session (or none to regenerate)
	CodeNotRunning       = "not_running"        // 404: no turn is running on the session (stop)
	CodeBadEventID       = "bad_event_id"       // 400: a Last-Event-ID (or after) that is not an event id of the session
	CodeMethodNotAllowed = "method_not_allowed" // 405, with Allow
	CodeApprovalPending  = "approval_pending"   // 409: answer the pending approval first
	CodeSessionBusy      = "session_busy"       // 409: another process is running a turn; retry
	CodeTurnRunning      = "turn_running"       // 409: a turn is running on the session (regenerate, edit, switch), or has not ended (fork)
	CodeNotOnBranch      = "not_on_branch"      // 409: the turn is not on the active branch (edit, switch)
	CodeSessionExists    = "session_exists"     // 409: the fork's sessionId names a session that exists
	CodeNothingToCompact = "nothing_to_compact" // 409: no turn a compaction may cover (compact)
	CodeSummarizerFailed = "summarizer_failed"  // 502: the compaction's summarizer failed, timed out or wrote nothing
	CodeRequestTimeout   = "request_timeout"    // 408: the body did not arrive within Options.ReadTimeout
	CodeSessionExpired   = "session_expired"    // 410: expired with an approval pending
	CodeBodyTooLarge     = "body_too_large"     // 413
	CodeRateLimited      = "rate_limited"       // 429: the model provider is rate limiting
	CodeOverBudget       = "over_budget"        // 429: the session or the agent used its token budget
	CodeQueueFull        = "queue_full"         // 429: too many /chat requests wait on the session; retry after Retry-After
	CodeTooManyWatchers  = "too_many_watchers"  // 429: the session or the server has as many watchers as it allows
	CodeContextTooLong   = "context_too_long"   // 422: the model refused the session's history as longer than its context window; compact it
	CodeInternal         = "internal"           // 500
	CodeModelError       = "model_error"        // 502: the turn ended with an error of the model
	CodeUnavailable      = "unavailable"        // 503: shutting down, the channel closed
	CodeCancelled        = "cancelled"          // the turn was cancelled (SSE error events)
)

// apiError is an error as the API reports it.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter is the seconds to wait before retrying, 0 for none: the
	// Retry-After header of an HTTP answer, and the only place that says
	// it in an event stream's error event.
	RetryAfter int `json:"retryAfter,omitempty"`
	// MaxBytes is the largest body the route takes (body_too_large).
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// Budget is the token budget that ran out and BudgetScope whose it
	// is, "session" or "agent" (over_budget, as the turn's
	// transcript.ErrorInfo records them; absent when it does not): a new
	// session has a budget of its own, the agent's is the operator's to
	// raise, and a client says so without reading the message.
	Budget      int64  `json:"budget,omitempty"`
	BudgetScope string `json:"budgetScope,omitempty"`
	// RequestID is the id the server logged the request under (its
	// X-Request-Id), set in an event stream's error event only: a
	// client that reads the events, not the response's headers, has it
	// there to quote (the cause of an internal error is logged under it).
	RequestID string `json:"requestId,omitempty"`
	// Stopping, on unavailable, says the server (or its chat channel) is
	// going away: shutting down, perhaps to come back or with another
	// replica taking over. The other causes of unavailable (a store
	// down, a request out of time) leave it out, so that a client tells
	// them apart without reading the message.
	Stopping bool `json:"stopping,omitempty"`
}

// stoppingError is unavailable for a server, or its chat channel, going
// away.
func stoppingError(msg string, retryAfter int) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: msg, RetryAfter: retryAfter, Stopping: true}
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errf(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error *apiError `json:"error"`
	// For turns that ran and failed: which turn, and how it ended.
	SessionID string            `json:"sessionId,omitempty"`
	TurnID    string            `json:"turnId,omitempty"`
	Status    transcript.Status `json:"status,omitempty"`
}

// apiErrorFor maps an error of the runtime, the store or a channel to what
// the API says. Errors it does not know are 500 with a generic message:
// their text may name internals, and is logged instead.
func apiErrorFor(err error) *apiError {
	var ae *apiError
	var te *spool.TurnError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mbe):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
			Message: "the request body is larger than " + strconv.FormatInt(mbe.Limit, 10) + " bytes", MaxBytes: mbe.Limit}
	case errors.Is(err, spool.ErrEmptyPrompt):
		return errf(http.StatusBadRequest, CodeEmptyPrompt, "the prompt is empty")
	case errors.Is(err, spool.ErrApprovalPending):
		return errf(http.StatusConflict, CodeApprovalPending, "the session has an approval pending: approve or deny it first (GET /v1/sessions/{id}/approvals)")
	case errors.Is(err, spool.ErrBusy):
		return &apiError{Status: http.StatusConflict, Code: CodeSessionBusy, Message: "another process is running a turn on this session; retry shortly", RetryAfter: 1}
	case errors.Is(err, spool.ErrNoApproval):
		return errf(http.StatusNotFound, CodeApprovalNotFound, "no such approval is pending on this session")
	case errors.Is(err, spool.ErrNoTurn):
		return errf(http.StatusNotFound, CodeTurnNotFound, "no such turn in this session (GET /v1/sessions/{id}/messages lists them), or no turn to regenerate")
	case errors.Is(err, spool.ErrTurnRunning):
		return errf(http.StatusConflict, CodeTurnRunning, "a turn is running on this session: wait for it to end, or stop it, first")
	case errors.Is(err, spool.ErrNotRunning):
		return errf(http.StatusNotFound, CodeNotRunning, "no turn is running on this session")
	case errors.Is(err, spool.ErrBadEventID):
		return errf(http.StatusBadRequest, CodeBadEventID, "the Last-Event-ID (or after) is not an event id of this session: want P.N as the events carry it")
	case errors.Is(err, spool.ErrTooManyWatchers):
		return &apiError{Status: http.StatusTooManyRequests, Code: CodeTooManyWatchers, Message: "too many clients are watching this session or this server; retry later", RetryAfter: 5}
	case errors.Is(err, spool.ErrNotOnBranch):
		return errf(http.StatusConflict, CodeNotOnBranch, "the turn is not on the active branch: switch to it (or to the version of an earlier turn it follows) first")
	case errors.Is(err, spool.ErrNothingToCompact):
		return errf(http.StatusConflict, CodeNothingToCompact, "nothing to compact: every turn is among the newest kept, has not ended, or is summarized already")
	case errors.Is(err, spool.ErrSummarizer):
		return errf(http.StatusBadGateway, CodeSummarizerFailed, "the summarizer failed, so nothing was changed: "+err.Error())
	case errors.Is(err, spool.ErrSessionExists):
		return errf(http.StatusConflict, CodeSessionExists, `a session with that "sessionId" exists; leave it out for a fresh id`)
	case errors.Is(err, store.ErrSessionExpired):
		return errf(http.StatusGone, CodeSessionExpired, "the session expired with an approval pending; the approval can no longer be answered")
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidKey):
		// An id no session can have is reported like an unknown one.
		return errf(http.StatusNotFound, CodeSessionNotFound, "no such session")
	case errors.Is(err, store.ErrInvalidCursor):
		return errf(http.StatusBadRequest, CodeInvalidCursor, "the cursor is not one this listing handed out")
	case errors.Is(err, spool.ErrNoUser):
		return errf(http.StatusForbidden, CodeUserRequired, "this agent is user-scoped: the request needs a user")
	case errors.Is(err, spool.ErrClosed), errors.Is(err, channel.ErrClosed):
		return stoppingError("the server is shutting down", 0)
	case errors.As(err, &te):
		return turnError(te.Status, &transcript.ErrorInfo{Code: te.Code, Message: te.Error()})
	case errors.Is(err, context.Canceled), errors.Is(err, channel.ErrGone):
		return errf(http.StatusServiceUnavailable, CodeCancelled, "the request was cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return errf(http.StatusServiceUnavailable, CodeUnavailable, "the request ran out of time")
	}
	return errf(http.StatusInternalServerError, CodeInternal, "internal error; the server log has the details under this request's id")
}

// turnError is the API error of a turn that ran and ended error or
// cancelled, info (nil for none) being its error as the transcript has it.
func turnError(status transcript.Status, info *transcript.ErrorInfo) *apiError {
	var code transcript.ErrorCode
	var msg string
	if info != nil {
		code, msg = info.Code, info.Message
	}
	switch {
	case status == transcript.StatusCancelled:
		return errf(http.StatusServiceUnavailable, CodeCancelled, "the turn was cancelled")
	case code == transcript.CodeRateLimited:
		return &apiError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: "the model provider is rate limiting requests; retry later", RetryAfter: 5}
	case code == transcript.CodeOverBudget:
		return &apiError{Status: http.StatusTooManyRequests, Code: CodeOverBudget, Message: "the token budget is used up: " + msg,
			Budget: info.Budget, BudgetScope: info.BudgetScope}
	case code == transcript.CodeContextTooLong:
		return errf(http.StatusUnprocessableEntity, CodeContextTooLong, "the conversation is longer than the model's context window: compact the session (POST /v1/sessions/{id}/compact) and send again")
	case code == transcript.CodeStoreError:
		return errf(http.StatusServiceUnavailable, CodeUnavailable, "the session store failed; the turn is recorded as failed")
	}
	if msg == "" {
		msg = "the turn ended with an error"
	}
	return errf(http.StatusBadGateway, CodeModelError, msg)
}

// resultError returns the API error of a result whose turn failed, or nil.
func resultError(res *spool.Result) *apiError {
	if res == nil || (res.Status != transcript.StatusError && res.Status != transcript.StatusCancelled) {
		return nil
	}
	return turnError(res.Status, res.Error)
}

// writeError writes err as a JSON error response and logs what the
// client is not told.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := apiErrorFor(err)
	if ae.Status >= 500 && ae.Code == CodeInternal {
		// Error texts of the runtime and stores name sessions and causes,
		// never content.
		s.log.ErrorContext(r.Context(), "request failed", "error", err)
	}
	writeAPIError(w, ae, errorBody{})
}

func writeAPIError(w http.ResponseWriter, ae *apiError, body errorBody) {
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="spool"`)
	}
	body.Error = ae
	writeJSON(w, ae.Status, body)
}

// writeJSON answers status with v as JSON and a newline, as json.Marshal
// encodes it, into a buffer kept across responses.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	buf.Reset()
	// Encode is Marshal and a newline.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"cannot encode the response"}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// jsonBuffers are writeJSON's buffers.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putJSONBuffer keeps buf for another response unless it grew past what
// most responses need (a long listing), so that one large answer does not
// stay in memory for good.
func putJSONBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		jsonBuffers.Put(buf)
	}
}
