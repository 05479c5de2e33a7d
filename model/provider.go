package model

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Helpers shared by provider implementations.

// ToolArguments turns the arguments text a provider streamed for a tool call
// into the valid JSON that transcript.ToolCall requires: empty (or blank)
// arguments become {}, valid JSON is kept as it is (surrounding space
// trimmed), and anything else is recorded as a JSON string holding the text,
// so nothing the model produced is lost and the tool can report the
// mistake back to it.
func ToolArguments(text string) json.RawMessage {
	text = strings.TrimSpace(text)
	if text == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	quoted, _ := json.Marshal(text) // a string always marshals
	return quoted
}

// CodeForStatus returns the Error code for an HTTP status a provider
// answered with: 429 is CodeRateLimited, 401 and 403 are CodeAuth, and every
// other failure is CodeProvider.
func CodeForStatus(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusUnauthorized, http.StatusForbidden:
		return CodeAuth
	default:
		return CodeProvider
	}
}
