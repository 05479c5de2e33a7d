package anthropic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// toolBlock is a tool_use content block whose input is still arriving.
type toolBlock struct {
	id, name string
	start    string // the input the block started with, used if no fragments follow
	input    strings.Builder
	deltas   int
}

// accumulator turns stream events into model events.
type accumulator struct {
	tools   map[int64]*toolBlock
	usage   transcript.Usage
	stopped bool // message_stop arrived
}

func (a *accumulator) event(e sdk.MessageStreamEventUnion) []model.Event {
	switch e.Type {
	case "message_start":
		u := e.Message.Usage
		a.usage = transcript.Usage{
			InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens: u.OutputTokens,
		}
		return []model.Event{{Kind: model.EventUsage, Usage: a.usage}}
	case "content_block_start":
		cb := e.ContentBlock
		switch cb.Type {
		case "tool_use":
			if a.tools == nil {
				a.tools = map[int64]*toolBlock{}
			}
			a.tools[e.Index] = &toolBlock{id: cb.ID, name: cb.Name, start: cb.JSON.Input.Raw()}
		case "text":
			if cb.Text != "" {
				return []model.Event{{Kind: model.EventText, Text: cb.Text}}
			}
		}
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			if e.Delta.Text != "" {
				return []model.Event{{Kind: model.EventText, Text: e.Delta.Text}}
			}
		case "input_json_delta":
			if t := a.tools[e.Index]; t != nil {
				t.input.WriteString(e.Delta.PartialJSON)
				t.deltas++
			}
		}
		// thinking and signature deltas are not part of the answer.
	case "content_block_stop":
		t := a.tools[e.Index]
		if t == nil {
			return nil
		}
		delete(a.tools, e.Index)
		args := t.input.String()
		if t.deltas == 0 {
			args = t.start
		}
		return []model.Event{{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{
			ID: t.id, Name: t.name, Arguments: model.ToolArguments(args),
		}}}
	case "message_delta":
		u := e.Usage
		a.usage.OutputTokens = u.OutputTokens
		if in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens; in > 0 {
			a.usage.InputTokens = in
		}
		return []model.Event{{Kind: model.EventUsage, Usage: a.usage}}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

// streamError classifies what ended a stream. A done context wins over
// whatever error its cancellation caused.
func streamError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		typ := string(apiErr.Type())
		if apiErr.StatusCode >= 400 {
			return &model.Error{
				Code:       model.CodeForStatus(apiErr.StatusCode),
				StatusCode: apiErr.StatusCode,
				Message:    describe(http.StatusText(apiErr.StatusCode), typ),
				Err:        err,
			}
		}
		// An error event inside a stream that began with 200 OK.
		return &model.Error{Code: codeForType(typ), Message: describe("error event in the stream", typ), Err: err}
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return &model.Error{Code: model.CodeBadResponse, Message: "a stream event is not valid JSON", Err: err}
	}
	if errors.Is(err, bufio.ErrTooLong) {
		return &model.Error{Code: model.CodeBadResponse, Message: "a stream line is too long", Err: err}
	}
	// Network failures: their text names addresses, not content.
	var urlErr *url.Error
	var netErr net.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &model.Error{Code: model.CodeProvider, Message: "connection failed: " + err.Error(), Err: err}
	}
	return &model.Error{Code: model.CodeProvider, Message: "the response stream failed", Err: err}
}

// codeForType maps the API's error types to codes.
func codeForType(typ string) string {
	switch typ {
	case "rate_limit_error":
		return model.CodeRateLimited
	case "authentication_error", "permission_error":
		return model.CodeAuth
	default: // overloaded_error, api_error, ...
		return model.CodeProvider
	}
}

// describe builds an error message from parts that carry no request
// content: a status or situation and the API's error type.
func describe(what, typ string) string {
	if identifier(typ) {
		return fmt.Sprintf("%s; type %s", what, typ)
	}
	return what
}

// identifier reports whether s looks like an error type
// ("overloaded_error") rather than free text, which a server could fill
// with anything.
func identifier(s string) bool {
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
