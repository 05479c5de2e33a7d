// Package echo is an offline, deterministic model for tests and demos. It
// needs no network and no key, and the same request always gives the same
// response.
//
// Without options it answers like this (see Reply):
//
//   - It echoes the newest user message: the prompt "hello world" streams
//     the answer "echo: hello world" word by word ("echo: ", "hello ",
//     "world").
//   - A prompt line of the form "/call <tool> <json arguments>" makes it
//     call that tool instead, when the request offers a tool of that name;
//     every such line is one call, so several lines make parallel calls.
//     Missing arguments mean {}; arguments that are not JSON are passed on
//     as a JSON string, as a real model's malformed arguments would be. A
//     tool the request does not offer (for example because the session's
//     tool mode is off) gets a text answer saying so.
//   - When the newest messages are tool results, it answers in text with a
//     summary of them, one line per result: "tool <name> returned:
//     <result>". It never calls a tool in answer to a tool result, so a
//     turn always ends.
//   - A summary request (model.NewSummaryRequest with the default
//     instructions, as spool's compaction sends) is answered with a
//     deterministic summary (see Summary): the summary so far, then one
//     line per user message of the turns being folded in, abridged.
//   - Every response ends with an EventUsage counting about four bytes per
//     token, rounded up: InputTokens from the bytes of every message's
//     content and tool call arguments in the request, OutputTokens from the
//     bytes of the answer's text and tool call arguments.
//
// Options replace that behaviour for tests: WithScript computes the events
// from the request, WithResponses plays a fixed sequence of responses, one
// per call, WithError and WithErrorAfter fail, and WithDelay makes every
// event wait, so that sessions can be made slow and cancelled mid-answer.
//
// A Model is safe for concurrent use. Importing the package registers the
// provider "echo" with model.Open; the spec "echo:<name>" sets the name the
// model reports, and a query after the name sets options (see ParseSpec):
// "echo:?delay=50ms" is a slow echo model, as
// "spool serve --model 'echo:?delay=50ms'" serves it for trying resume.
package echo

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// DefaultName is the name of a Model made without WithName.
const DefaultName = "echo"

func init() {
	model.Register("echo", func(name string, _ model.Config) (model.Model, error) {
		opts, err := ParseSpec(name)
		if err != nil {
			return nil, err
		}
		return New(opts...), nil
	})
}

// ParseSpec reads the part of a model spec after "echo:", of the form
// NAME?delay=DURATION, where both parts are optional: "" is the default
// model, "parrot" one named parrot, "?delay=50ms" one that waits 50ms
// before each event (WithDelay), and "parrot?delay=1s" both. The delay is
// a time.ParseDuration string, not negative. Any other query key is an
// error, so that a misspelt option is not silently ignored.
func ParseSpec(spec string) ([]Option, error) {
	name, query, _ := strings.Cut(spec, "?")
	var opts []Option
	if name != "" {
		opts = append(opts, WithName(name))
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("echo: spec %q: bad options: %w", spec, err)
	}
	for key, vs := range values {
		if key != "delay" {
			return nil, fmt.Errorf("echo: spec %q: unknown option %q (known: delay)", spec, key)
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("echo: spec %q: delay given %d times", spec, len(vs))
		}
		d, err := time.ParseDuration(vs[0])
		if err != nil || d < 0 {
			return nil, fmt.Errorf("echo: spec %q: delay %q: want a duration such as 50ms, not negative", spec, vs[0])
		}
		opts = append(opts, WithDelay(d))
	}
	return opts, nil
}

// Model is the echo model. Make one with New.
type Model struct {
	name      string
	delay     time.Duration
	script    func(*model.Request) []model.Event
	err       error
	failAfter int

	mu        sync.Mutex
	responses [][]model.Event // remaining scripted responses, taken in order
}

// Option configures a Model.
type Option func(*Model)

// WithName sets the name the model reports through Name (default "echo").
func WithName(name string) Option {
	return func(m *Model) { m.name = name }
}

// WithScript makes the model answer each request with the events script
// returns for it. Events are streamed as given, except that a tool call
// without an id gets a deterministic one and its arguments are made valid
// JSON (see model.ToolArguments); a script that wants usage reported
// includes an EventUsage. Script is called once per Stream, possibly from
// several goroutines at once when the model is shared. WithResponses, when
// also given, is used first.
func WithScript(script func(*model.Request) []model.Event) Option {
	return func(m *Model) { m.script = script }
}

// WithResponses makes the model answer its calls with the given responses,
// one per Stream call in order, across all goroutines. Once they are used
// up, the model answers with the script, if any, or else as Reply does.
func WithResponses(responses ...[]model.Event) Option {
	return func(m *Model) { m.responses = append(m.responses, responses...) }
}

// WithDelay makes the model wait d before each event it streams. A
// cancelled context ends the wait at once.
func WithDelay(d time.Duration) Option {
	return func(m *Model) { m.delay = d }
}

// WithError makes every Stream fail with err before any event. Pass an
// *model.Error to simulate a provider failure, for example
// &model.Error{Code: transcript.CodeRateLimited, StatusCode: 429, Message: "slow down"}.
func WithError(err error) Option {
	return WithErrorAfter(0, err)
}

// WithErrorAfter makes every Stream fail with err after it has streamed n
// events of its response (or all of them, if it has fewer).
func WithErrorAfter(n int, err error) Option {
	return func(m *Model) { m.err, m.failAfter = err, max(n, 0) }
}

// New returns an echo model configured by opts.
func New(opts ...Option) *Model {
	m := &Model{name: DefaultName}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// Name returns the model's name.
func (m *Model) Name() string { return m.name }

// Stream streams the response to req. Nothing is computed until the caller
// starts pulling events.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if req == nil {
			req = &model.Request{}
		}
		events := m.respond(req)
		for i, ev := range events {
			if m.err != nil && i == m.failAfter {
				yield(model.Event{}, m.err)
				return
			}
			if err := m.wait(ctx); err != nil {
				yield(model.Event{}, err)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
		if m.err != nil {
			yield(model.Event{}, m.err)
		}
	}
}

// respond picks the events for one call: the next scripted response, the
// script, or the default reply.
func (m *Model) respond(req *model.Request) []model.Event {
	m.mu.Lock()
	var events []model.Event
	scripted := len(m.responses) > 0
	if scripted {
		events = m.responses[0]
		m.responses = m.responses[1:]
	}
	m.mu.Unlock()
	switch {
	case scripted:
	case m.script != nil:
		events = m.script(req)
	default:
		return Reply(req)
	}
	return complete(req, events)
}

// complete gives scripted tool calls what the contract requires: an id and
// valid JSON arguments. It copies rather than edits the caller's slice,
// which may be shared between calls.
func complete(req *model.Request, events []model.Event) []model.Event {
	out := make([]model.Event, len(events))
	ids := callIDs(req)
	for i, ev := range events {
		if ev.Kind == model.EventToolCall {
			if ev.ToolCall.ID == "" {
				ev.ToolCall.ID = ids(i)
			}
			ev.ToolCall.Arguments = model.ToolArguments(string(ev.ToolCall.Arguments))
		}
		out[i] = ev
	}
	return out
}

func (m *Model) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.delay <= 0 {
		return nil
	}
	t := time.NewTimer(m.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Reply returns the default response to req, as described in the package
// documentation. Scripts can call it to keep the default behaviour while
// observing or altering requests.
func Reply(req *model.Request) []model.Event {
	msgs := req.Messages
	var (
		text  string
		calls []transcript.ToolCall
	)
	previous, users, isSummary := model.ReadSummaryRequest(req)
	switch {
	case isSummary:
		text = Summary(previous, users)
	case len(msgs) > 0 && msgs[len(msgs)-1].Role == model.RoleTool:
		text = summarize(msgs)
	default:
		prompt, ok := lastUser(msgs)
		switch {
		case !ok:
			text = "echo: (no message)"
		case hasCall(prompt):
			calls, text = parseCalls(prompt, req.Tools, callIDs(req))
		default:
			text = "echo: " + prompt
		}
	}
	pieces := words(text)
	events := make([]model.Event, 0, len(pieces)+len(calls)+1)
	out := len(text)
	for _, piece := range pieces {
		events = append(events, model.Event{Kind: model.EventText, Text: piece})
	}
	for _, c := range calls {
		out += len(c.Arguments)
		events = append(events, model.Event{Kind: model.EventToolCall, ToolCall: c})
	}
	return append(events, model.Event{Kind: model.EventUsage, Usage: transcript.Usage{
		InputTokens:  tokens(inputBytes(req)),
		OutputTokens: tokens(out),
	}})
}

func lastUser(msgs []model.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Content, true
		}
	}
	return "", false
}

const callPrefix = "/call"

// isCallLine reports whether a prompt line asks for a tool call.
func isCallLine(line string) bool {
	line = strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(line, callPrefix)
	return ok && (rest == "" || unicode.IsSpace(rune(rest[0])))
}

func hasCall(prompt string) bool {
	for line := range strings.Lines(prompt) {
		if isCallLine(line) {
			return true
		}
	}
	return false
}

// parseCalls turns the prompt's /call lines into tool calls. When one of
// them names no tool or a tool the request does not offer, it makes no
// calls and returns a text answer saying why.
func parseCalls(prompt string, tools []model.ToolSpec, id func(int) string) ([]transcript.ToolCall, string) {
	var calls []transcript.ToolCall
	for line := range strings.Lines(prompt) {
		if !isCallLine(line) {
			continue
		}
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), callPrefix))
		name, args, _ := strings.Cut(rest, " ")
		if name == "" {
			return nil, "echo: /call needs a tool name: /call <tool> <json arguments>"
		}
		if !offered(tools, name) {
			return nil, fmt.Sprintf("echo: tool %q is not available", name)
		}
		calls = append(calls, transcript.ToolCall{
			ID:        id(len(calls)),
			Name:      name,
			Arguments: model.ToolArguments(args),
		})
	}
	return calls, ""
}

func offered(tools []model.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// summarize describes the tool results at the end of msgs, naming each
// tool from the assistant message that asked for the call.
func summarize(msgs []model.Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == model.RoleTool {
		start--
	}
	names := map[string]string{}
	for i := start - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			for _, c := range msgs[i].ToolCalls {
				names[c.ID] = c.Name
			}
			break
		}
	}
	lines := make([]string, 0, len(msgs)-start)
	for _, m := range msgs[start:] {
		who := "call " + m.ToolCallID
		if name, ok := names[m.ToolCallID]; ok {
			who = name
		}
		lines = append(lines, fmt.Sprintf("tool %s returned: %s", who, m.Content))
	}
	return strings.Join(lines, "\n")
}

// words splits text into pieces that each end after a run of white space,
// so that concatenating them gives text back exactly.
func words(text string) []string {
	var out []string
	start, inSpace := 0, false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if inSpace && !space {
			out = append(out, text[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// callIDs returns a function that makes the id of the i-th call of a
// response to req. The ids derive from a hash of the whole request, so the
// same request gets the same ids and a later turn (whose history is longer)
// gets new ones.
func callIDs(req *model.Request) func(int) string {
	h := fnv.New64a()
	for _, m := range req.Messages {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", m.Role, m.Content, m.ToolCallID)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.ID, c.Name, c.Arguments)
		}
	}
	sum := h.Sum64()
	return func(i int) string { return fmt.Sprintf("call_%012x_%d", sum&(1<<48-1), i+1) }
}

func inputBytes(req *model.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}

// tokens converts a byte count to tokens at four bytes a token, rounded up.
func tokens(bytes int) int64 { return int64((bytes + 3) / 4) }

// SummaryLine is the most runes of a user message a summary of the echo
// model keeps.
const SummaryLine = 60

// Summary is the echo model's answer to a summary request: previous (the
// summary so far), when not empty, followed by a line "- " and the user
// message for each of users, its runs of white space made one space and
// abridged to SummaryLine runes ("…" marks the cut). It is a pure function
// of its input, so tests can assert exact histories.
func Summary(previous string, users []string) string {
	lines := []string{}
	if previous != "" {
		lines = append(lines, previous)
	}
	for _, u := range users {
		r := []rune(strings.Join(strings.Fields(u), " "))
		if len(r) > SummaryLine {
			r = append(r[:SummaryLine-1], '…')
		}
		lines = append(lines, "- "+string(r))
	}
	return strings.Join(lines, "\n")
}
