package spool

import (
	"errors"
	"fmt"

	"github.com/spool-go/spool/transcript"
)

// Errors of the runtime. Errors of the store (store.ErrNotFound,
// store.ErrInvalidKey, store.ErrSessionExpired, store.ErrInvalidCursor, …)
// pass through wrapped, under their own names only: test them with
// errors.Is and the store package's sentinels.
var (
	// ErrApprovalPending: Send on a session whose turn waits on an approval.
	// Answer it with Approve or Deny first.
	ErrApprovalPending = errors.New("spool: an approval is pending; approve or deny it first")
	// ErrNoUser: a user-scoped agent was called without a user (ContextWithUser).
	ErrNoUser = errors.New("spool: this agent is user-scoped; the call needs a user")
	// ErrBusy: another process is running a turn on the session and did
	// not finish in time.
	ErrBusy = errors.New("spool: session busy: another writer is running a turn")
	// ErrEmptyPrompt: Send with a prompt that is empty or only white space.
	ErrEmptyPrompt = errors.New("spool: empty prompt")
	// ErrNoApproval: Approve or Deny with an id that is not pending.
	ErrNoApproval = errors.New("spool: no such pending approval")
	// ErrClosed: the agent was closed.
	ErrClosed = errors.New("spool: agent closed")
)

// TurnError is returned by Send when a turn ended with status error or
// cancelled; the turn is recorded either way. It wraps the cause (a
// *model.Error, context.Canceled, tool.ErrTimeout, …).
type TurnError struct {
	SessionID string
	TurnID    string
	Status    transcript.Status
	Code      transcript.ErrorCode
	Err       error
}

func (e *TurnError) Error() string {
	msg := fmt.Sprintf("spool: session %s: turn %s ended %s", e.SessionID, e.TurnID, e.Status)
	if e.Code != "" {
		msg += " (" + string(e.Code) + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *TurnError) Unwrap() error { return e.Err }
