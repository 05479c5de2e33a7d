package spool

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/spool-go/spool/transcript"
)

// Observer receives content-free events about what an agent does, in the
// manner of slog.Handler: one small interface, many implementations
// (package telemetry has an OpenTelemetry observer). An Observation never
// holds content: no prompts, answers, tool arguments or tool results; only
// names, ids, statuses, counts and durations.
//
// Observations come in pairs: every ObserveTurnEnd, ObserveModelEnd and
// ObserveToolEnd follows the matching start (the same TurnID, and for tools
// the same CallID), also for a tool call that never ran because it was
// denied, named no tool, or came while tools were off (its end's Outcome
// says which). A turn resumed after an approval starts again with
// ObserveTurnStart. ObserveApproval and ObserveCompaction stand alone.
//
// Observe is called synchronously on the turn's goroutine; it must be safe
// for concurrent use and should return quickly. An Observer that panics
// loses that observation, and the turn goes on (the first such panic is
// logged).
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
	ObserveApproval   ObservationKind = "approval"    // Tool, CallID, Verdict, ApprovalScope
	// A compaction (Session.Compact, or automatic after a turn), with the
	// model that summarized and what it used; ErrorCode says why it
	// failed, when it did. TurnID is the compaction entry's.
	ObserveCompaction ObservationKind = "compaction" // Model, Usage, Duration, ErrorCode

	// A channel driver's posts to a chat platform (see Agent.Observe):
	// one sent or failed for every message posted or edited.
	ObserveMessageSent   ObservationKind = "message.sent"   // Channel, Duration
	ObserveMessageFailed ObservationKind = "message.failed" // Channel, Duration, ErrorCode
)

// Outcome is how a tool call ended, as ObserveToolEnd reports it.
type Outcome string

// Tool call outcomes.
const (
	OutcomeOK      Outcome = "ok"      // the tool returned a result
	OutcomeError   Outcome = "error"   // the tool failed, or the call could not run (unknown tool, tools off)
	OutcomeTimeout Outcome = "timeout" // the tool ran past its timeout
	OutcomeDenied  Outcome = "denied"  // a person denied the call
)

// Observation is one content-free event.
type Observation struct {
	Kind          ObservationKind
	Time          time.Time
	Agent         string
	SessionID     string
	TurnID        string
	Model         string                   // model.start, model.end
	Status        transcript.Status        // turn.end
	Usage         transcript.Usage         // turn.end, model.end
	Duration      time.Duration            // *.end
	ErrorCode     transcript.ErrorCode     // turn.end, model.end: why it failed, when it did
	Tool          string                   // tool.*, approval: the tool's name; empty for a call naming no tool of the agent
	CallID        string                   // tool.*
	Outcome       Outcome                  // tool.end
	Verdict       transcript.Verdict       // approval
	ApprovalScope transcript.ApprovalScope // approval
	Channel       string                   // message.*: the channel's name (slack, telegram, discord)
}

// observers are an agent's observers, and where a panic of one is
// logged (the first only: an observer that panics does so for every
// observation).
type observers struct {
	list []Observer
	log  *slog.Logger
	once *sync.Once
}

func (os observers) emit(ctx context.Context, o Observation) {
	for _, ob := range os.list {
		os.observe(ctx, ob, o)
	}
}

// Observe hands o to the agent's observers, with the agent's name and,
// when o has none, the time: the way code that acts for the agent outside
// a turn reports what it did (a channel driver posting an answer to a chat
// platform sends ObserveMessageSent and ObserveMessageFailed). Like every
// Observation, o must not hold content.
func (a *Agent) Observe(ctx context.Context, o Observation) {
	o.Agent = a.cfg.Name
	if o.Time.IsZero() {
		o.Time = a.now()
	}
	a.obs.emit(ctx, o)
}
