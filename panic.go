package spool

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
)

// Code the agent is given (its model, its guards, its observers, its
// summarizer) runs in
// turns, and a turn may run on a goroutine of its own (a server's turn
// outlives its request, a channel's has none): a panic there would end
// the process, and every other session's turn with it. The runtime
// contains each such panic where it calls that code, as a tool's is
// (tool.Tool.Call):
//
//   - a model whose Stream panics ends the turn with model_error;
//   - a guard that panics refuses (it fails closed): the turn ends
//     prompt_blocked or response_blocked, its notice saying so;
//   - an observer that panics loses that observation; the turn goes on;
//   - a summarizer (or the model it asks) that panics fails the
//     compaction, as a summarizer's error does (ErrSummarizer).
//
// The log gets the panic's type (or a runtime error's text, which holds
// no data) and the stack, never its value, which may hold content. A
// panic of the code that consumes a turn's events (the body of a range
// over Stream) is the consumer's own, and goes on up to it; the turn is
// recorded cancelled, as when the consumer stops early.

// panicked logs p, a panic recovered from what, and returns the error
// that stands for it.
func (a *Agent) panicked(ctx context.Context, what string, p any) error {
	a.log.LogAttrs(ctx, slog.LevelError, "recovered a panic", slog.String("in", what),
		slog.String("panic", panicText(p)), slog.String("stack", string(debug.Stack())))
	return fmt.Errorf("spool: %s panicked (%s)", what, panicText(p))
}

// panicText describes a panic's value without its content.
func panicText(p any) string {
	if re, ok := p.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("a value of type %T", p)
}

// guard runs guard g on text, a panic in it the refusal that stands for
// it.
func guard[G ~func(context.Context, string) error](ctx context.Context, r *run, what string, g G, text string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.s.a.panicked(ctx, what, p)
		}
	}()
	return g(ctx, text)
}

// summarize runs a compaction's summarizer, a panic in it (or in the
// model it asks) its error.
func (a *Agent) summarize(ctx context.Context, fn Summarizer, in SummaryInput) (sum Summary, err error) {
	defer func() {
		if p := recover(); p != nil {
			sum, err = Summary{}, a.panicked(ctx, "the summarizer", p)
		}
	}()
	return fn(ctx, in)
}

// observe hands o to ob, dropping it when ob panics.
func (os observers) observe(ctx context.Context, ob Observer, o Observation) {
	defer func() {
		if p := recover(); p != nil && os.log != nil {
			os.once.Do(func() {
				os.log.LogAttrs(ctx, slog.LevelError, "recovered a panic; further panics of observers are not logged", slog.String("in", "an observer"),
					slog.String("panic", panicText(p)), slog.String("stack", string(debug.Stack())))
			})
		}
	}()
	ob.Observe(ctx, o)
}
