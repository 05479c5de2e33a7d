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
	// ErrApprovalPending: Send on a session whose turn waits on an approval,
	// or a call that would append inside that turn (Compact, Rename,
	// SetToolMode, a regenerate, edit or switch). Answer it with Approve or
	// Deny first.
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
	// ErrNoTurn: Edit, SwitchBranch or Fork with a turn id that is not one
	// of the session's turns (for a user-scoped agent: of the user's
	// session), or Regenerate on a session with no turn yet.
	ErrNoTurn = errors.New("spool: no such turn")
	// ErrTurnRunning: Regenerate, Edit or SwitchBranch while a turn is
	// running on the session, or Fork at a turn that has not ended. Wait
	// for it to end, or stop it.
	ErrTurnRunning = errors.New("spool: a turn is running on the session")
	// ErrNotOnBranch: Edit of a turn that is not on the active branch, or
	// SwitchBranch to a version whose place is not on it (switch at the
	// earlier turn first).
	ErrNotOnBranch = errors.New("spool: the turn is not on the active branch")
	// ErrSessionExists: Fork into a session id that already has a
	// transcript.
	ErrSessionExists = errors.New("spool: a session with that id exists")
	// ErrNothingToCompact: Compact of a session with no turn it may cover
	// (every turn is among the newest KeepTurns, or the next one has not
	// ended, or the summary in use covers them all).
	ErrNothingToCompact = errors.New("spool: nothing to compact")
	// ErrSummarizer: a compaction's summarizer failed, timed out or wrote
	// no text; nothing was appended. The error wraps the summarizer's.
	ErrSummarizer = errors.New("spool: the summarizer failed")
	// ErrEndNotRecorded: Stop ended the turn, but the store did not record
	// its end (it failed); the session's next call records it.
	ErrEndNotRecorded = errors.New("spool: the turn stopped, but its end is not recorded")
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
