// Package model is the contract between the runtime and a language model:
// a request built from a session's history, and a response that streams.
//
// A Model turns a Request into a stream of Events. Providers live in
// subpackages: openai (any OpenAI-compatible chat completions endpoint),
// anthropic (the Messages API) and echo (offline and deterministic, for
// tests and demos).
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/spool-go/spool/transcript"
)

// Model streams a response to a request.
type Model interface {
	// Stream returns the response as a sequence of events. It reads from
	// the provider only as the caller pulls the next event (backpressure),
	// and stops reading when the caller stops or ctx is done. Failures are
	// yielded as a non-nil error, after which the sequence ends; an error
	// the provider reports is an *Error.
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// Named is implemented by models that know the name of the model they
// call; the runtime records it on each assistant message.
type Named interface {
	Name() string
}

// Request is what a model is asked.
type Request struct {
	// Messages is the history, the system message first when the agent has
	// instructions. It is the model's to read during its Stream: the
	// runtime reuses its memory for the next request, so a model that
	// keeps a request past its Stream copies Messages.
	Messages []Message
	// Tools are the tools the model may call. Empty when the session's
	// tool mode is off.
	Tools []ToolSpec
	// MaxOutputTokens caps the answer when more than zero.
	MaxOutputTokens int64
}

// ToolSpec describes a tool to a model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON schema of the arguments object
}

// EventKind says what an Event carries.
type EventKind int

// Event kinds.
const (
	// EventText carries a piece of the answer's text in Text.
	EventText EventKind = iota + 1
	// EventToolCall carries one complete tool call in ToolCall, its
	// arguments assembled from however many chunks the provider sent. A
	// call without an ID is given one by the runtime before it is
	// streamed on or recorded.
	EventToolCall
	// EventUsage carries token counts in Usage. Providers may send it more
	// than once; the counts are totals for the response so far, and the
	// last one wins.
	EventUsage
	// EventStop says, in Stop, that the provider stopped the answer
	// before the model ended it: the text so far is all there is. A
	// model sends it at most once, after the answer's text, and only for
	// an answer without tool calls (one cut in the middle of a call
	// fails with an *Error of CodeModelError instead). An answer the
	// model ended itself has none.
	EventStop
)

// StopReason is why a provider stopped an answer the model had not ended.
type StopReason string

// Stop reasons.
const (
	// StopLength: the answer reached its output token limit (or filled
	// the model's context window).
	StopLength StopReason = "length"
	// StopFiltered: the provider's content filter, or its refusal
	// classifier, stopped the answer.
	StopFiltered StopReason = "filtered"
)

// Event is one piece of a streamed response.
type Event struct {
	Kind     EventKind
	Text     string
	ToolCall transcript.ToolCall
	Usage    transcript.Usage
	Stop     StopReason
}

// ErrRateLimited is matched by an *Error with code
// transcript.CodeRateLimited.
var ErrRateLimited = errors.New("model: rate limited")

// ErrContextTooLong is matched by an *Error with code
// transcript.CodeContextTooLong: the request is longer than the model's
// context window.
var ErrContextTooLong = errors.New("model: the request is longer than the model's context window")

// Error is a failure the provider reported or caused. Its Message never
// contains request content.
type Error struct {
	// Code is one of the provider codes of package transcript
	// (CodeRateLimited, CodeAuth, CodeProviderError, CodeBadResponse,
	// CodeContextTooLong), or CodeModelError for an answer the model
	// itself left unusable (cut at its output token limit in the middle
	// of a tool call): the turn that the failure ends records it.
	Code       transcript.ErrorCode
	StatusCode int    // the HTTP status, when there was one
	Message    string // what went wrong, for people
	Err        error  // the underlying error, if any
}

func (e *Error) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("model: %s (HTTP %d): %s", e.Code, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("model: %s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrRateLimited) true for rate limits, and
// errors.Is(err, ErrContextTooLong) for a request over the context window.
func (e *Error) Is(target error) bool {
	return target == ErrRateLimited && e.Code == transcript.CodeRateLimited ||
		target == ErrContextTooLong && e.Code == transcript.CodeContextTooLong
}
