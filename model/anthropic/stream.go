package anthropic

import (
	"errors"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/internal/provider"
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
	calls   []model.Event // finished tool calls, held until the stop reason is known
	usage   transcript.Usage
	cut     sdk.StopReason // the stop reason that cut tool calls short, if one did
	stopped bool           // message_stop arrived
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
		a.calls = append(a.calls, model.Event{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{
			ID: t.id, Name: t.name, Arguments: model.ToolArguments(args),
		}})
	case "message_delta":
		u := e.Usage
		a.usage.OutputTokens = u.OutputTokens
		if in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens; in > 0 {
			a.usage.InputTokens = in
		}
		out := []model.Event{{Kind: model.EventUsage, Usage: a.usage}}
		r := e.Delta.StopReason
		if stopReason(r) != "" && (len(a.calls) > 0 || len(a.tools) > 0) {
			a.cut, a.calls, a.tools = r, nil, nil
			return out
		}
		out = append(a.releaseCalls(), out...)
		if stop := stopReason(r); stop != "" {
			out = append(out, model.Event{Kind: model.EventStop, Stop: stop})
		}
		return out
	case "message_stop":
		a.stopped = true
		return a.releaseCalls()
	}
	return nil
}

// releaseCalls returns the held tool calls and forgets them. Calls wait
// for message_delta, whose stop reason says whether the last of them was
// finished or cut off.
func (a *accumulator) releaseCalls() []model.Event {
	out := a.calls
	a.calls = nil
	return out
}

// stopReason is the model.StopReason of an answer that stopped for
// reason, "" for one the model ended itself (end_turn, stop_sequence,
// tool_use, pause_turn). An answer stopped so while the model was still
// writing may have its last tool_use block cut short: the API closes
// such a block like any other, its input what was written so far (a
// fragment, or a prefix that is valid JSON without the fields the model
// had not reached).
func stopReason(reason sdk.StopReason) model.StopReason {
	switch reason {
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return model.StopLength
	case sdk.StopReasonRefusal:
		return model.StopFiltered
	}
	return ""
}

// err is the failure of a stream whose stop reason cut tool calls short.
// None of its calls is delivered: running one, or asking a person to
// approve it, would act on half a request.
func (a *accumulator) err() error {
	if a.cut == "" {
		return nil
	}
	return provider.CutCall(a.cut == sdk.StopReasonMaxTokens, "stop_reason", string(a.cut))
}

// apiError maps the SDK's error type: an HTTP error status, or an error
// event inside a stream that began with 200 OK.
func apiError(err error) error {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return nil
	}
	typ := string(apiErr.Type())
	if apiErr.StatusCode >= 400 {
		code := model.CodeForStatus(apiErr.StatusCode)
		if apiErr.StatusCode == http.StatusBadRequest && typ == "invalid_request_error" && contextTooLong(apiErr.Message) {
			code = transcript.CodeContextTooLong
		}
		return &model.Error{
			Code:       code,
			StatusCode: apiErr.StatusCode,
			Message:    provider.Describe(http.StatusText(apiErr.StatusCode), "type", typ),
			Err:        err,
		}
	}
	return &model.Error{Code: codeForType(typ), Message: provider.Describe("error event in the stream", "type", typ), Err: err}
}

// contextTooLong reports whether msg, an invalid_request_error's message,
// is the API's refusal of a request longer than the model's context
// window: "prompt is too long: 208432 tokens > 200000 maximum", or (the
// prompt fits, not with max_tokens on top) "input length and `max_tokens`
// exceed context limit: …". The API gives these no error code of their
// own, so the message is matched; it is not kept (Describe leaves free
// text out).
func contextTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.HasPrefix(msg, "prompt is too long") || strings.Contains(msg, "exceed context limit")
}

// codeForType maps the API's error types to codes.
func codeForType(typ string) transcript.ErrorCode {
	switch typ {
	case "rate_limit_error":
		return transcript.CodeRateLimited
	case "authentication_error", "permission_error":
		return transcript.CodeAuth
	default: // overloaded_error, api_error, ...
		return transcript.CodeProviderError
	}
}
