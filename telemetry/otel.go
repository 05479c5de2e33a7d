// Package telemetry holds observers for the spool runtime. Its
// OpenTelemetry observer turns the runtime's content-free observations
// into spans and metrics that follow the OpenTelemetry semantic
// conventions for generative AI (gen_ai.*):
//
//   - a span "invoke_agent <agent>" per call that runs part of a turn
//     (gen_ai.operation.name invoke_agent, gen_ai.agent.name,
//     gen_ai.conversation.id = the session id, token usage, error.type);
//   - a child span "chat <model>" per model request (kind client,
//     gen_ai.request.model, token usage, error.type);
//   - a child span "execute_tool <tool>" per tool call (gen_ai.tool.name,
//     gen_ai.tool.call.id, spool.tool.outcome); a call naming no tool of
//     the agent is "execute_tool" without gen_ai.tool.name, its name being
//     the model's text;
//   - an event "spool.approval" on the turn span per approval decision;
//   - the histograms gen_ai.client.token.usage and
//     gen_ai.client.operation.duration (per model request), and spool's
//     spool.turn.duration (per call that ran a turn, by agent, status and
//     error.type) and spool.tool.duration (per tool call, by tool and
//     outcome): their counts are the turns by status and the tool calls
//     by outcome.
//
// Observations carry no content, so neither do spans: no prompts,
// answers, tool arguments or results are ever recorded.
//
// Start sets up a program's providers from the standard OTEL_* variables
// (the official SDK and its OTLP exporters, HTTP/protobuf or gRPC) and,
// when asked, a Prometheus handler of the same metrics; InstrumentStore
// measures a store's operations without hiding any of its capabilities.
// spool serve and spool chat use both.
package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/transcript"
)

const instrumentation = "github.com/spool-go/spool/telemetry"

// Attribute keys of the GenAI semantic conventions, and spool's own.
const (
	attrOperation   = attribute.Key("gen_ai.operation.name")
	attrAgent       = attribute.Key("gen_ai.agent.name")
	attrSession     = attribute.Key("gen_ai.conversation.id")
	attrModel       = attribute.Key("gen_ai.request.model")
	attrInput       = attribute.Key("gen_ai.usage.input_tokens")
	attrOutput      = attribute.Key("gen_ai.usage.output_tokens")
	attrTokenType   = attribute.Key("gen_ai.token.type")
	attrToolName    = attribute.Key("gen_ai.tool.name")
	attrToolCallID  = attribute.Key("gen_ai.tool.call.id")
	attrErrorType   = attribute.Key("error.type")
	attrTurn        = attribute.Key("spool.turn.id")
	attrStatus      = attribute.Key("spool.turn.status")
	attrOutcome     = attribute.Key("spool.tool.outcome")
	attrDecision    = attribute.Key("spool.approval.decision")
	attrApprovScope = attribute.Key("spool.approval.scope")
)

// Observer is a spool.Observer that records OpenTelemetry spans and
// metrics. Make one with NewObserver.
type Observer struct {
	tracer   trace.Tracer
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	turns    metric.Float64Histogram
	tools    metric.Float64Histogram

	mu    sync.Mutex
	spans map[string]openSpan // by turn id, turn id + model, turn id + call id
}

type openSpan struct {
	span trace.Span
	ctx  context.Context
}

// NewObserver returns an observer recording with tp and mp; nil means the
// global providers are used (otel.GetTracerProvider, otel.GetMeterProvider).
func NewObserver(tp trace.TracerProvider, mp metric.MeterProvider) (*Observer, error) {
	if tp == nil {
		tp = globalTracerProvider()
	}
	if mp == nil {
		mp = globalMeterProvider()
	}
	meter := mp.Meter(instrumentation)
	tokens, err := meter.Int64Histogram("gen_ai.client.token.usage",
		metric.WithUnit("{token}"), metric.WithDescription("Tokens used per model request"))
	if err != nil {
		return nil, err
	}
	duration, err := meter.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of model requests"))
	if err != nil {
		return nil, err
	}
	turns, err := meter.Float64Histogram("spool.turn.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of the calls that ran a turn (or part of one, up to an approval), by status"))
	if err != nil {
		return nil, err
	}
	tools, err := meter.Float64Histogram("spool.tool.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of tool calls, by tool and outcome"))
	if err != nil {
		return nil, err
	}
	return &Observer{
		tracer:   tp.Tracer(instrumentation),
		tokens:   tokens,
		duration: duration,
		turns:    turns,
		tools:    tools,
		spans:    map[string]openSpan{},
	}, nil
}

// Observe implements spool.Observer.
func (o *Observer) Observe(ctx context.Context, ob spool.Observation) {
	switch ob.Kind {
	case spool.ObserveTurnStart:
		o.start(ctx, ob.TurnID, "", "invoke_agent "+ob.Agent, trace.SpanKindInternal, ob.Time,
			attrOperation.String("invoke_agent"), attrAgent.String(ob.Agent),
			attrSession.String(ob.SessionID), attrTurn.String(ob.TurnID))
	case spool.ObserveTurnEnd:
		o.end(ob.TurnID, ob.Time, string(ob.ErrorCode), attrStatus.String(string(ob.Status)),
			attrInput.Int64(ob.Usage.InputTokens), attrOutput.Int64(ob.Usage.OutputTokens))
		ta := []attribute.KeyValue{attrAgent.String(ob.Agent), attrStatus.String(string(ob.Status))}
		if ob.ErrorCode != "" {
			ta = append(ta, attrErrorType.String(string(ob.ErrorCode)))
		}
		o.turns.Record(ctx, ob.Duration.Seconds(), metric.WithAttributes(ta...))
	case spool.ObserveModelStart:
		o.start(ctx, ob.TurnID+"/model", ob.TurnID, "chat "+ob.Model, trace.SpanKindClient, ob.Time,
			attrOperation.String("chat"), attrModel.String(ob.Model), attrSession.String(ob.SessionID))
	case spool.ObserveModelEnd:
		o.end(ob.TurnID+"/model", ob.Time, string(ob.ErrorCode),
			attrInput.Int64(ob.Usage.InputTokens), attrOutput.Int64(ob.Usage.OutputTokens))
		o.recordModel(ctx, "chat", ob)
	case spool.ObserveToolStart:
		// A call naming no tool of the agent has no name (Observation.Tool).
		name, attrs := "execute_tool", []attribute.KeyValue{attrOperation.String("execute_tool"), attrToolCallID.String(ob.CallID)}
		if ob.Tool != "" {
			name, attrs = name+" "+ob.Tool, append(attrs, attrToolName.String(ob.Tool))
		}
		o.start(ctx, ob.TurnID+"/tool/"+ob.CallID, ob.TurnID, name, trace.SpanKindInternal, ob.Time, attrs...)
	case spool.ObserveToolEnd:
		code := ""
		if ob.Outcome != spool.OutcomeOK {
			code = string(ob.Outcome)
		}
		o.end(ob.TurnID+"/tool/"+ob.CallID, ob.Time, code, attrOutcome.String(string(ob.Outcome)))
		ta := []attribute.KeyValue{attrOutcome.String(string(ob.Outcome))}
		if ob.Tool != "" {
			ta = append(ta, attrToolName.String(ob.Tool))
		}
		o.tools.Record(ctx, ob.Duration.Seconds(), metric.WithAttributes(ta...))
	case spool.ObserveCompaction:
		// A summarizer's request: counted with the model requests, so the
		// tokens a session's compactions use are in the same metrics.
		o.recordModel(ctx, "compaction", ob)
	case spool.ObserveApproval:
		o.mu.Lock()
		turn, ok := o.spans[ob.TurnID]
		o.mu.Unlock()
		if ok {
			turn.span.AddEvent("spool.approval", trace.WithTimestamp(ob.Time), trace.WithAttributes(
				attrToolName.String(ob.Tool), attrToolCallID.String(ob.CallID),
				attrDecision.String(string(ob.Verdict)), attrApprovScope.String(string(ob.ApprovalScope))))
		}
	}
}

// recordModel records the duration and the tokens of a model request
// (operation chat) or a summarizer's (compaction) that ob reports.
func (o *Observer) recordModel(ctx context.Context, operation string, ob spool.Observation) {
	common := []attribute.KeyValue{attrOperation.String(operation), attrModel.String(ob.Model)}
	if ob.ErrorCode != "" {
		common = append(common, attrErrorType.String(string(ob.ErrorCode)))
	}
	o.duration.Record(ctx, ob.Duration.Seconds(), metric.WithAttributes(common...))
	if ob.ErrorCode == "" {
		o.tokens.Record(ctx, ob.Usage.InputTokens, metric.WithAttributes(append(common, attrTokenType.String("input"))...))
		o.tokens.Record(ctx, ob.Usage.OutputTokens, metric.WithAttributes(append(common, attrTokenType.String("output"))...))
	}
}

// start opens a span under key, as a child of the span under parent when
// there is one, else of ctx.
func (o *Observer) start(ctx context.Context, key, parent, name string, kind trace.SpanKind, at time.Time, attrs ...attribute.KeyValue) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := o.spans[parent]; ok && parent != "" {
		ctx = p.ctx
	}
	sctx, span := o.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	if old, ok := o.spans[key]; ok {
		old.span.End() // never leak a span whose end was not observed
	}
	o.spans[key] = openSpan{span: span, ctx: sctx}
}

// end closes the span under key, marking it failed when code is set.
func (o *Observer) end(key string, at time.Time, code string, attrs ...attribute.KeyValue) {
	o.mu.Lock()
	s, ok := o.spans[key]
	delete(o.spans, key)
	o.mu.Unlock()
	if !ok {
		return
	}
	s.span.SetAttributes(attrs...)
	if code != "" && code != string(transcript.StatusCancelled) {
		s.span.SetAttributes(attrErrorType.String(code))
		s.span.SetStatus(codes.Error, code)
	}
	s.span.End(trace.WithTimestamp(at))
}
