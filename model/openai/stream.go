package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/internal/provider"
	"github.com/spool-go/spool/transcript"
)

// pendingCall is a tool call whose fragments are still arriving.
type pendingCall struct {
	index int64
	seq   int // order of first appearance, to keep reused indexes apart
	id    string
	name  string
	args  strings.Builder
}

// accumulator turns chunks into events: text as it comes, tool calls once
// their choice finishes.
type accumulator struct {
	calls   []*pendingCall
	byIndex map[int64]*pendingCall
	cut     string // the finish_reason that cut calls short, if one did
	done    bool   // the choice's finish_reason arrived
}

func (a *accumulator) chunk(c oa.ChatCompletionChunk) []model.Event {
	var out []model.Event
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // requests ask for one choice; others are not ours
		}
		if ch.Delta.Content != "" {
			out = append(out, model.Event{Kind: model.EventText, Text: ch.Delta.Content})
		}
		if ch.Delta.Refusal != "" {
			// A refusal is the model's answer to this request.
			out = append(out, model.Event{Kind: model.EventText, Text: ch.Delta.Refusal})
		}
		for _, tc := range ch.Delta.ToolCalls {
			a.add(tc)
		}
		if ch.FinishReason != "" {
			a.done = true
			if len(a.calls) > 0 && stopReason(ch.FinishReason) != "" {
				a.cut = ch.FinishReason
				a.calls, a.byIndex = nil, nil
				continue
			}
			out = append(out, a.flush()...)
			if stop := stopReason(ch.FinishReason); stop != "" {
				out = append(out, model.Event{Kind: model.EventStop, Stop: stop})
			}
		}
	}
	if c.JSON.Usage.Valid() {
		out = append(out, model.Event{Kind: model.EventUsage, Usage: transcript.Usage{
			InputTokens:  c.Usage.PromptTokens,
			OutputTokens: c.Usage.CompletionTokens,
		}})
	}
	return out
}

func (a *accumulator) add(tc oa.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.byIndex == nil {
		a.byIndex = map[int64]*pendingCall{}
	}
	p := a.byIndex[tc.Index]
	// Some compatible servers number every call 0 and tell them apart only
	// by id: a new id at a known index starts a new call.
	if p == nil || (tc.ID != "" && p.id != "" && tc.ID != p.id) {
		p = &pendingCall{index: tc.Index, seq: len(a.calls)}
		a.calls = append(a.calls, p)
		a.byIndex[tc.Index] = p
	}
	if p.id == "" {
		p.id = tc.ID
	}
	if p.name == "" {
		p.name = tc.Function.Name
	}
	p.args.WriteString(tc.Function.Arguments)
}

// errNoFinish fails a stream that ended before its choice's finish_reason:
// a connection closed mid-answer, or a body with no stream in it (a server
// that ignored "stream": true and sent one JSON completion). Its text is
// cut, or missing, and its calls may be fragments, so none is delivered.
var errNoFinish = &model.Error{Code: transcript.CodeProviderError, Message: "the stream ended before its finish_reason"}

// stopReason is the model.StopReason of a choice that finished for
// reason, "" for one the model ended itself ("stop", "tool_calls"). A
// choice stopped so while the model was still writing calls holds
// fragments of them. ("stop" is not such a reason, since some compatible
// servers end a choice of complete calls with it.)
func stopReason(reason string) model.StopReason {
	switch reason {
	case "length":
		return model.StopLength
	case "content_filter":
		return model.StopFiltered
	}
	return ""
}

// err is the failure of a stream that ended without a finish_reason, or
// whose finish cut tool calls short. Those calls are not delivered: their arguments are a fragment (or, worse, a
// prefix that happens to be valid JSON), and running one, or asking a
// person to approve it, would act on half a request.
func (a *accumulator) err() error {
	switch {
	case a.cut != "":
		return provider.CutCall(a.cut == "length", "finish_reason", a.cut)
	case !a.done:
		return errNoFinish
	}
	return nil
}

// flush emits the assembled calls in index order and forgets them.
func (a *accumulator) flush() []model.Event {
	slices.SortStableFunc(a.calls, func(x, y *pendingCall) int {
		return cmp.Or(cmp.Compare(x.index, y.index), cmp.Compare(x.seq, y.seq))
	})
	out := make([]model.Event, 0, len(a.calls))
	for _, p := range a.calls {
		if p.id == "" {
			p.id = model.NewCallID()
		}
		out = append(out, model.Event{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{
			ID:        p.id,
			Name:      p.name,
			Arguments: model.ToolArguments(p.args.String()),
		}})
	}
	a.calls, a.byIndex = nil, nil
	return out
}

// apiError maps the SDK's error types: an HTTP error status, or an error
// object inside a stream that began with 200 OK.
func apiError(err error) error {
	var apiErr *oa.Error
	if errors.As(err, &apiErr) {
		code := model.CodeForStatus(apiErr.StatusCode)
		switch {
		case contextTooLong(apiErr):
			code = transcript.CodeContextTooLong
		case apiErr.Type == insufficientQuota || apiErr.Code == insufficientQuota:
			// A 429 that waiting does not end: the account has no credit
			// left or is over its spend limit.
			code = transcript.CodeProviderError
		}
		return &model.Error{
			Code:       code,
			StatusCode: apiErr.StatusCode,
			Message:    provider.Describe(http.StatusText(apiErr.StatusCode), "type", apiErr.Type, "code", apiErr.Code),
			Err:        err,
		}
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return midStreamError(streamErr)
	}
	return nil
}

// contextLengthExceeded is the error code OpenAI answers a request longer
// than the model's context window with (HTTP 400).
const contextLengthExceeded = "context_length_exceeded"

// insufficientQuota is the error type (and, from older deployments, the
// code) of OpenAI's 429 for an account with no credit left or over its
// spend limit; its code names the cause (credit_balance_exhausted,
// project_spend_limit_exceeded, ...).
const insufficientQuota = "insufficient_quota"

// contextTooLong reports whether an HTTP error is the endpoint's refusal of
// a request longer than the model's context window. Compatible servers
// say so without OpenAI's code: the llama.cpp server with the type
// exceed_context_size_error, vLLM with a 400 whose message reads "This
// model's maximum context length is N tokens…" (OpenAI's own wording). The
// message is matched, not kept: Describe leaves free text out.
func contextTooLong(e *oa.Error) bool {
	return e.Code == contextLengthExceeded || e.Type == "exceed_context_size_error" ||
		e.StatusCode == http.StatusBadRequest && strings.Contains(strings.ToLower(e.Message), "maximum context length")
}

// midStreamError maps an error object a server sent inside a stream that
// had started with 200 OK.
func midStreamError(se *ssestream.StreamError) error {
	var body struct {
		Error struct {
			Type string          `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &body) // a body we cannot read still is an error
	code := strings.Trim(string(body.Error.Code), `"`)
	if code == "null" {
		code = ""
	}
	// Gateways name the kind in other spellings ("RateLimitError") or give
	// an HTTP status as the code ("429", 429): both are read.
	kind := strings.ReplaceAll(strings.ToLower(body.Error.Type+" "+code), "_", "")
	c := transcript.CodeProviderError
	if status, err := strconv.Atoi(code); err == nil {
		c = model.CodeForStatus(status)
	}
	switch {
	case strings.Contains(kind, "ratelimit"):
		c = transcript.CodeRateLimited
	case strings.Contains(kind, "auth") || strings.Contains(kind, "apikey"):
		c = transcript.CodeAuth
	case strings.Contains(kind, "contextlengthexceeded"):
		c = transcript.CodeContextTooLong
	}
	return &model.Error{Code: c, Message: provider.Describe("error inside the stream", "type", body.Error.Type, "code", code), Err: se}
}

// quotaIsFinal tells the SDK not to retry a 429 that says the account
// has no quota left (insufficient_quota): the SDK retries every 429, and
// a quota does not come back in the seconds its retries wait. The body's
// first 64 KiB are read to tell, and handed back whole.
func quotaIsFinal(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode != http.StatusTooManyRequests || res.Body == nil {
		return res, err
	}
	head, rerr := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), res.Body), res.Body}
	if rerr == nil && bytes.Contains(head, []byte(`"`+insufficientQuota+`"`)) {
		res.Header.Set("X-Should-Retry", "false")
	}
	return res, nil
}
