// Package tool turns typed Go functions into tools a model can call.
//
// A tool's argument schema is derived from its argument struct (with
// github.com/google/jsonschema-go: exported fields, `json` tags for names,
// fields without omitempty required, a `jsonschema:"…"` tag for a
// description). Arguments a model sends are checked against the schema and
// decoded into the struct before the function runs.
//
//	type lookupArgs struct {
//		Order int `json:"order" jsonschema:"the order number"`
//	}
//	lookup := tool.New("lookup_order", "Find an order by number.",
//		func(ctx context.Context, a lookupArgs) (string, error) { … },
//		tool.WithTimeout(5*time.Second), tool.RequireApproval())
//
// The runtime gives each call a context carrying the tool's timeout and the
// caller's cancellation. A call that times out is reported to the model as
// an error result and is not retried; cancellation is cooperative, so a
// function should return when its context is done.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/spool-go/spool/model"
)

// Tool is a function a model can call. Create one with New or NewRaw.
type Tool struct {
	name        string
	description string
	schema      json.RawMessage
	timeout     time.Duration
	approval    bool
	call        func(ctx context.Context, args json.RawMessage) (string, error)
}

// Option configures a tool.
type Option func(*Tool)

// WithTimeout bounds each call; zero means the agent's default.
func WithTimeout(d time.Duration) Option { return func(t *Tool) { t.timeout = d } }

// RequireApproval makes calls wait for a person in tool mode ask.
func RequireApproval() Option { return func(t *Tool) { t.approval = true } }

// ErrInvalidArguments is wrapped by the error of a call whose arguments do
// not fit the tool's schema.
var ErrInvalidArguments = errors.New("tool: invalid arguments")

// nameRE is compiled on first use: a bounded repetition compiles to one
// copy per count, work every process that links the package would do at start.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// New returns a tool named name that calls fn with its arguments decoded
// into A, a struct whose JSON schema is offered to the model. fn's result
// is given to the model as text: a string as it is, anything else as JSON.
// New panics if name is not 1-64 of A-Z a-z 0-9 _ - (what providers accept)
// or A has no JSON schema; both are programming errors.
func New[A, R any](name, description string, fn func(ctx context.Context, args A) (R, error), opts ...Option) *Tool {
	s, err := jsonschema.For[A](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: argument schema: %v", name, err))
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: argument schema: %v", name, err))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool %s: argument schema: %v", name, err))
	}
	call := func(ctx context.Context, args json.RawMessage) (string, error) {
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		var generic any
		if err := json.Unmarshal(args, &generic); err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		if err := resolved.Validate(generic); err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		var a A
		if err := json.Unmarshal(args, &a); err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		r, err := fn(ctx, a)
		if err != nil {
			return "", err
		}
		return render(r)
	}
	return newTool(name, description, raw, call, opts)
}

// NewRaw returns a tool with a hand-written JSON schema whose function
// receives the arguments as JSON text, for tools whose arguments are not
// a Go struct (for example tools forwarded from an MCP server).
func NewRaw(name, description string, schema json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error), opts ...Option) *Tool {
	if !json.Valid(schema) {
		panic(fmt.Sprintf("tool %s: schema is not JSON", name))
	}
	return newTool(name, description, schema, fn, opts)
}

func newTool(name, description string, schema json.RawMessage, call func(context.Context, json.RawMessage) (string, error), opts []Option) *Tool {
	if !nameRE().MatchString(name) {
		panic(fmt.Sprintf("tool name %q: use 1-64 of A-Z a-z 0-9 _ -", name))
	}
	t := &Tool{name: name, description: description, schema: schema, call: call}
	for _, o := range opts {
		o(t)
	}
	return t
}

func render(r any) (string, error) {
	switch v := r.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case json.RawMessage:
		return string(v), nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("tool: result: %w", err)
	}
	return string(b), nil
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Description returns what the tool does, as the model is told.
func (t *Tool) Description() string { return t.description }

// Schema returns the JSON schema of the tool's arguments.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Timeout returns the tool's own timeout, zero when it has none.
func (t *Tool) Timeout() time.Duration { return t.timeout }

// RequiresApproval reports whether calls wait for a person in tool mode ask.
func (t *Tool) RequiresApproval() bool { return t.approval }

// Spec describes the tool to a model.
func (t *Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: t.name, Description: t.description, Parameters: t.schema}
}

// Call runs the tool with args (JSON text) under ctx. It converts a panic
// in the tool's function into an error, so one broken tool cannot take the
// process down. Callers that want the tool's timeout use Run.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (result string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool: %s panicked: %v", t.name, p)
		}
	}()
	return t.call(ctx, args)
}

// ErrTimeout is wrapped by the error of a call that ran out of time.
var ErrTimeout = errors.New("tool: timed out")

// Run calls the tool with its timeout (or def when it has none) combined
// with ctx. A call that runs out of time returns an error wrapping
// ErrTimeout, even if the function ignores its context and returns later;
// it is not retried.
func (t *Tool) Run(ctx context.Context, args json.RawMessage, def time.Duration) (string, error) {
	if err := context.Cause(ctx); err != nil {
		return "", err // never start a call whose caller has gone
	}
	d := t.timeout
	if d <= 0 {
		d = def
	}
	if d <= 0 {
		return t.Call(ctx, args)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, ErrTimeout)
	defer cancel()
	type outcome struct {
		result string
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := t.Call(ctx, args)
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		if o.err != nil && errors.Is(context.Cause(ctx), ErrTimeout) {
			return "", fmt.Errorf("%w (%s, after %v)", ErrTimeout, t.name, d)
		}
		return o.result, o.err
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), ErrTimeout) {
			return "", fmt.Errorf("%w (%s, after %v)", ErrTimeout, t.name, d)
		}
		return "", context.Cause(ctx)
	}
}
