package spool

import (
	"context"
	"time"

	"github.com/spool-go/spool/transcript"
)

// Observer receives content-free events about what an agent does, in the
// manner of slog.Handler: one small interface, many implementations
// (package telemetry has an OpenTelemetry observer). An Observation never
// holds content: no prompts, answers, tool arguments or tool results; only
// names, ids, statuses, counts and durations.
//
// Observe is called synchronously on the turn's goroutine; it must be safe
// for concurrent use and should return quickly.
type Observer interface {
	Observe(ctx context.Context, o Observation)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, o Observation)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, o Observation) { f(ctx, o) }

// ObservationKind says what an Observation reports.
type ObservationKind string

// Observation kinds.
const (
	ObserveTurnStart  ObservationKind = "turn.start"
	ObserveTurnEnd    ObservationKind = "turn.end"    // Status, Usage, Duration, ErrorCode
	ObserveModelStart ObservationKind = "model.start" // Model
	ObserveModelEnd   ObservationKind = "model.end"   // Model, Usage, Duration, ErrorCode
	ObserveToolStart  ObservationKind = "tool.start"  // Tool, CallID
	ObserveToolEnd    ObservationKind = "tool.end"    // Tool, CallID, Duration, Outcome
	ObserveApproval   ObservationKind = "approval"    // Tool, Decision, Scope
)

// Tool outcomes.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeTimeout = "timeout"
	OutcomeDenied  = "denied"
)

// Observation is one content-free event.
type Observation struct {
	Kind      ObservationKind
	Time      time.Time
	Agent     string
	SessionID string
	TurnID    string
	Model     string              // model.start, model.end
	Status    transcript.Status   // turn.end
	Usage     transcript.Usage    // turn.end, model.end
	Duration  time.Duration       // *.end
	ErrorCode string              // turn.end, model.end: the error code, when it failed
	Tool      string              // tool.*, approval: the tool's name
	CallID    string              // tool.*
	Outcome   string              // tool.end: ok, error, timeout, denied
	Decision  transcript.Decision // approval
	Scope     transcript.Scope    // approval
}

type observers []Observer

func (os observers) emit(ctx context.Context, o Observation) {
	for _, ob := range os {
		ob.Observe(ctx, o)
	}
}
