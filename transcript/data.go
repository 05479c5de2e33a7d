package transcript

import "encoding/json"

// The data of each known entry type. Field names are wire-stable.

// UserMessage is the data of a TypeUserMessage entry. ClientID, when
// set, is the id the client that sent the message gave it (the AI SDK's
// UIMessage id): a client that reloads the conversation gets its message
// back under that id, and addresses edits and regenerates by it. Entries
// written without it read as before.
type UserMessage struct {
	Text     string `json:"text"`
	ClientID string `json:"clientId,omitempty"`
}

// ToolCall is one call the model asked for. Arguments is the call's
// arguments as JSON text; it must be valid JSON (a model that produced
// something else has it recorded as a JSON string).
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// AssistantMessage is the data of a TypeAssistantMessage entry: one step of
// the model's answer, with the tool calls it asked for in that step. Usage,
// when set, is what the step's model request used; the turn's end sums its
// steps, so a turn paused for an approval keeps counting what it used
// before the pause.
type AssistantMessage struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	Model     string     `json:"model,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
}

// Verdict answers an approval request.
type Verdict string

// Approval decisions.
const (
	VerdictAllow Verdict = "allow"
	VerdictDeny  Verdict = "deny"
)

// ApprovalScope says how far an approval decision reaches.
type ApprovalScope string

// Approval scopes.
const (
	ApprovalScopeOnce    ApprovalScope = "once"    // this call only
	ApprovalScopeSession ApprovalScope = "session" // this tool, for the rest of the session
)

// ApprovalRequest is the data of a TypeApprovalRequest entry: a tool call
// that waits on a person.
type ApprovalRequest struct {
	ApprovalID string          `json:"approvalId"`
	CallID     string          `json:"callId"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
}

// ApprovalDecision is the data of a TypeApprovalDecision entry.
type ApprovalDecision struct {
	ApprovalID string        `json:"approvalId"`
	CallID     string        `json:"callId"`
	Decision   Verdict       `json:"decision"`
	Scope      ApprovalScope `json:"scope"`
	Reason     string        `json:"reason,omitempty"`
}

// ToolResult is the data of a TypeToolResult entry: what a tool call
// returned, or the error it ended with (IsError).
type ToolResult struct {
	CallID     string `json:"callId"`
	Tool       string `json:"tool"`
	Result     string `json:"result"`
	IsError    bool   `json:"isError"`
	DurationMs int64  `json:"durationMs"`
}

// Governance notice kinds. Others may appear; they are kept as written.
const (
	NoticePromptRefused   = "prompt_refused"
	NoticeResponseStopped = "response_stopped"
	NoticeRateLimited     = "rate_limited"
	NoticeOverBudget      = "over_budget"
	NoticeContextTooLong  = "context_too_long"
	// An answer the provider stopped before the model ended it, kept as
	// the turn's answer (the turn ends ok): at its output token limit,
	// or by the provider's content filter or refusal classifier.
	NoticeOutputLimit    = "output_limit"
	NoticeAnswerFiltered = "answer_filtered"
)

// GovernanceNotice is the data of a TypeGovernanceNotice entry: why a guard,
// a limit or a provider stopped something.
type GovernanceNotice struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ToolMode is how a session treats tool calls.
type ToolMode string

// Tool modes.
const (
	ToolModeAsk  ToolMode = "ask"  // calls that need approval wait for a person
	ToolModeAuto ToolMode = "auto" // every call runs
	ToolModeOff  ToolMode = "off"  // no tools are offered to the model
)

// Valid reports whether m is a known tool mode.
func (m ToolMode) Valid() bool {
	return m == ToolModeAsk || m == ToolModeAuto || m == ToolModeOff
}

// SessionMode is the data of a TypeSessionMode entry.
type SessionMode struct {
	ToolMode ToolMode `json:"toolMode"`
}

// Usage counts the tokens of a turn.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens}
}

// ErrorInfo says why a turn ended with StatusError or StatusCancelled: a
// code for programs and a message for people. The message may be
// reworded in any release, so what a program needs to say more than the
// code is a field of its own: on CodeOverBudget, which budget ran out
// (BudgetScope) and its size (Budget), for a client to word the refusal
// and say what to do (a new session has a budget of its own; the agent's
// is the operator's to raise). Turns recorded before these fields, or by
// other programs, have them zero.
type ErrorInfo struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Budget is the token budget that ran out (CodeOverBudget), 0 when
	// not known.
	Budget int64 `json:"budget,omitempty"`
	// BudgetScope says whose budget ran out (CodeOverBudget): "session"
	// (Config.SessionTokenBudget) or "agent" (Config.AgentTokenBudget,
	// shared by every session), "" when not known.
	BudgetScope string `json:"budgetScope,omitempty"`
}

// ErrorCode names why a turn failed. It is stored in the turn's end
// (ErrorInfo.Code), reported to observers, and carried by the errors of the
// runtime (spool.TurnError) and of model providers (model.Error); the HTTP
// server maps it to its own response codes. Transcripts written by other
// programs may hold other codes; they are kept as written.
type ErrorCode string

// Error codes of the runtime.
const (
	CodeCancelled        ErrorCode = "cancelled"         // the caller stopped the turn (or went away)
	CodeDeadlineExceeded ErrorCode = "deadline_exceeded" // the caller's deadline passed mid-turn
	CodeInterrupted      ErrorCode = "interrupted"       // the turn never ended (its process stopped, or its store failed) and the next call closed it
	CodeMaxSteps         ErrorCode = "max_steps"         // the turn used its model requests without a final answer
	CodeOverBudget       ErrorCode = "over_budget"       // the session's or the agent's token budget is used up
	CodeStoreError       ErrorCode = "store_error"       // the store failed mid-turn
	CodeModelError       ErrorCode = "model_error"       // the model failed in a way no other code names
)

// Error codes of model providers (model.Error).
const (
	CodeRateLimited   ErrorCode = "rate_limited"   // HTTP 429: the provider asks to slow down (not a 429 for an account out of credit, a CodeProviderError)
	CodeAuth          ErrorCode = "auth"           // HTTP 401 or 403: the key is missing or wrong
	CodeProviderError ErrorCode = "provider_error" // the provider failed (5xx) or refused the request (4xx)
	CodeBadResponse   ErrorCode = "bad_response"   // the provider sent something that is not its protocol
	// CodeContextTooLong: the provider refused the request as longer than
	// the model's context window (HTTP 400 saying so). Sending it again
	// fails again: the session's history must shrink first (a
	// compaction, a smaller Config.HistoryTokens).
	CodeContextTooLong ErrorCode = "context_too_long"
)

// TurnEnd is the data of a TypeTurnEnd entry. The turn's status is the
// entry's Status field.
type TurnEnd struct {
	Usage      Usage      `json:"usage"`
	DurationMs int64      `json:"durationMs"`
	Error      *ErrorInfo `json:"error,omitempty"`
}
