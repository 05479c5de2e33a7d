package spool

import (
	"encoding/json"
	"time"

	"github.com/spool-go/spool/transcript"
)

// EventKind says what an Event carries.
type EventKind string

// Event kinds, in the order a turn produces them.
const (
	EventTurnStart       EventKind = "turn_start"       // TurnID
	EventStepStart       EventKind = "step_start"       // a model request begins
	EventText            EventKind = "text"             // Text: a piece of the answer
	EventToolCall        EventKind = "tool_call"        // ToolCall: the model asked for a call
	EventApprovalRequest EventKind = "approval_request" // Approval: a call waits on a person
	EventToolResult      EventKind = "tool_result"      // ToolResult: what a call returned
	EventStepEnd         EventKind = "step_end"         // a model request ended
	EventDelegate        EventKind = "delegate"         // Delegate: activity of a delegated agent
	EventTurnEnd         EventKind = "turn_end"         // Result: the turn ended or paused
)

// Event is one thing that happened in a turn, as Stream yields it.
type Event struct {
	// ID identifies the event in its session (an EventID, "P.N"): the
	// same for every consumer and watcher of the turn.
	ID         string                 `json:"id,omitempty"`
	Kind       EventKind              `json:"kind"`
	TurnID     string                 `json:"turnId,omitempty"`
	Text       string                 `json:"text,omitempty"`
	ToolCall   *transcript.ToolCall   `json:"toolCall,omitempty"`
	ToolResult *transcript.ToolResult `json:"toolResult,omitempty"`
	Approval   *Approval              `json:"approval,omitempty"`
	Delegate   *DelegateEvent         `json:"delegate,omitempty"`
	Result     *Result                `json:"result,omitempty"`
}

// DelegateEvent is an event of an agent used as a tool (delegation),
// passed up into the caller's stream.
type DelegateEvent struct {
	Agent     string `json:"agent"`
	SessionID string `json:"sessionId"`
	CallID    string `json:"callId"` // the caller's tool call that delegated
	Event     *Event `json:"event"`
}

// StatusAwaitingApproval is the status of a Result whose turn paused on
// approvals. It is never stored: the turn's end is written when it ends.
const StatusAwaitingApproval transcript.Status = "awaiting_approval"

// Result is how a turn ended, or that it paused for approvals.
type Result struct {
	SessionID string                `json:"sessionId"`
	TurnID    string                `json:"turnId"`
	Status    transcript.Status     `json:"status"`
	Text      string                `json:"text"` // the answer: the text of the turn's assistant messages in this call
	Usage     transcript.Usage      `json:"usage"`
	Pending   []Approval            `json:"pendingApprovals,omitempty"` // when Status is StatusAwaitingApproval
	Error     *transcript.ErrorInfo `json:"error,omitempty"`            // when Status is error or cancelled
	Notice    string                `json:"notice,omitempty"`           // why a guard or limit stopped the turn; with StatusOK, why the provider stopped the answer short (it is incomplete)
	// NoticeKind is the kind of Notice's governance notice (one of
	// transcript's Notice kinds, such as NoticeOutputLimit); "" without
	// one.
	NoticeKind string `json:"noticeKind,omitempty"`
	// Model names the model that answered (the agent's model; empty when
	// it has no name).
	Model string `json:"model,omitempty"`
	// DurationMs is how long the turn ran, as its stored end says; zero
	// while the turn is paused on approvals.
	DurationMs int64 `json:"durationMs,omitempty"`
	// Supersedes lists the turns a regenerate or an edit took off the
	// active branch for this one, the replaced turn first.
	Supersedes []string `json:"supersedes,omitempty"`

	cause error // what ended the turn with error or cancelled, for TurnError
}

// Approval is a tool call waiting on a person.
type Approval struct {
	ID        string          `json:"id"`
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	TurnID    string          `json:"turnId"`
	Requested time.Time       `json:"requested"`
}
