package model

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/spool-go/spool/transcript"
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
// answered with: 429 is transcript.CodeRateLimited, 401 and 403 are
// transcript.CodeAuth, and every other failure is
// transcript.CodeProviderError.
func CodeForStatus(status int) transcript.ErrorCode {
	switch status {
	case http.StatusTooManyRequests:
		return transcript.CodeRateLimited
	case http.StatusUnauthorized, http.StatusForbidden:
		return transcript.CodeAuth
	default:
		return transcript.CodeProviderError
	}
}
