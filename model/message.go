package model

import "github.com/spool-go/spool/transcript"

// Role is who a message is from.
type Role string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a model request: what package history builds
// from a transcript and what a provider translates for its API. Its JSON
// shape is {"role","content","toolCalls"?,"toolCallId"?}.
type Message struct {
	Role       Role                  `json:"role"`
	Content    string                `json:"content"`
	ToolCalls  []transcript.ToolCall `json:"toolCalls,omitempty"`  // assistant messages: the calls it asks for
	ToolCallID string                `json:"toolCallId,omitempty"` // tool messages: the call this answers
}
