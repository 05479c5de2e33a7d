// Package provider holds what the SDK-backed model providers (openai,
// anthropic) share: driving an SDK's server-sent-event stream as a
// model.Event sequence with backpressure, and classifying what ended it
// into a *model.Error that carries no request content.
package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// Stream is the part of an SDK's event stream the providers use; both
// official SDKs' ssestream.Stream[T] have it.
type Stream[T any] interface {
	Next() bool
	Current() T
	Err() error
	Close() error
}

// Drive yields the events chunk makes of each of s's chunks, reading the
// next chunk only when the consumer has taken the events of the one
// before. It closes s when done. It reports whether the stream ended
// cleanly with the consumer still taking events; when it returns false
// the sequence is over (the consumer stopped, or an error was yielded).
func Drive[T any](ctx context.Context, s Stream[T], yield func(model.Event, error) bool,
	chunk func(T) []model.Event, classify func(error) error) bool {
	defer s.Close()
	for s.Next() {
		if err := ctx.Err(); err != nil {
			yield(model.Event{}, err)
			return false
		}
		for _, ev := range chunk(s.Current()) {
			if !yield(ev, nil) {
				return false
			}
		}
	}
	if err := Classify(ctx, s.Err(), classify); err != nil {
		yield(model.Event{}, err)
		return false
	}
	return true
}

// Classify turns what ended a stream into the error a model yields: nil
// for a clean end; the context's error when the context is done (it wins
// over whatever its cancellation caused); api's answer for the SDK's own
// error types (api returns nil for errors it does not know); bad_response
// for chunks that are not JSON or too long; provider_error for network
// failures and anything else.
func Classify(ctx context.Context, err error, api func(error) error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if api != nil {
		if e := api(err); e != nil {
			return e
		}
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return &model.Error{Code: transcript.CodeBadResponse, Message: "a stream event is not valid JSON", Err: err}
	}
	if errors.Is(err, bufio.ErrTooLong) {
		return &model.Error{Code: transcript.CodeBadResponse, Message: "a stream line is too long", Err: err}
	}
	// Network failures: their text names addresses, not content.
	var urlErr *url.Error
	var netErr net.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &model.Error{Code: transcript.CodeProviderError, Message: "connection failed: " + err.Error(), Err: err}
	}
	return &model.Error{Code: transcript.CodeProviderError, Message: "the response stream failed", Err: err}
}

// Describe builds an error message from parts that carry no request
// content: what happened, then each labelled part ("type", "code") that
// looks like an identifier. Free text a server sent is left out, since a
// server could echo anything into it.
func Describe(what string, labelled ...string) string {
	var b strings.Builder
	if what == "" {
		what = "error"
	}
	b.WriteString(what)
	for i := 0; i+1 < len(labelled); i += 2 {
		if Identifier(labelled[i+1]) {
			fmt.Fprintf(&b, "; %s %s", labelled[i], labelled[i+1])
		}
	}
	return b.String()
}

// CutCall is the error of an answer that stopped while it was writing a
// tool call, whose calls are not delivered: field is the API's name for
// why it stopped ("finish_reason", "stop_reason"), reason its value, and
// limit says it was the output token limit (the one cause the caller can
// act on).
func CutCall(limit bool, field, reason string) error {
	if limit {
		return &model.Error{Code: transcript.CodeModelError,
			Message: "the answer reached its output token limit (max_tokens) in the middle of a tool call; raise the limit"}
	}
	return &model.Error{Code: transcript.CodeModelError,
		Message: Describe("the answer was stopped in the middle of a tool call", field, reason)}
}

// Identifier reports whether s looks like an error type or code
// ("overloaded_error", "rate_limit_exceeded", "500") rather than free text.
func Identifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
