package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// DefaultKeepTurns is how many of the newest turns a compaction leaves as
// they are when neither CompactOptions nor Config.Compaction says.
const DefaultKeepTurns = 4

// DefaultSummaryTimeout bounds one summarizer call when
// Compaction.Timeout is zero.
const DefaultSummaryTimeout = 2 * time.Minute

// Compaction (Config.Compaction) says when an agent's sessions compact by
// themselves and how every compaction is made. A compaction appends a
// session.compaction entry whose summary stands, in every later model
// request, for the turns it covers (history rule 10); the turns stay in
// the transcript, and Messages, Page and every reader still show them.
//
// Automatic compaction runs after a turn ends, once a trigger holds:
// Tokens, the history the next request would carry, or Turns, the turns
// ended since the last compaction; and after a turn the model refused as
// longer than its context window (transcript.CodeContextTooLong, whose
// turn end says so), whatever Tokens and Turns say, so that the next
// turn fits (a turn that comes before that compaction ran compacts
// first). It runs in the background, after the
// turn's answer has gone to its consumer, and holds the session as a turn
// does: a turn that arrives meanwhile waits for it (or has gone first),
// and the two never interleave. A summarizer that fails never fails a
// turn: the history goes on with the window (rules 6 and 7), the failure
// is an ObserveCompaction with an ErrorCode and a governance.notice entry
// (kind compaction_failed), and the next trigger retries, after a backoff
// that doubles from a minute up to an hour.
type Compaction struct {
	// Tokens compacts once the history the next request would carry is
	// more than this many tokens (Config.Counter, or history.ApproxTokens);
	// zero for no token trigger.
	Tokens int
	// Turns compacts once this many turns have ended since the last
	// compaction (or the session's start); zero for no turn trigger.
	Turns int
	// KeepTurns is how many of the newest turns a compaction leaves as
	// they are; default DefaultKeepTurns, and never fewer than one.
	KeepTurns int
	// Summarizer writes the summaries; nil summarizes with the agent's own
	// model (ModelSummarizer(Config.Model, "")).
	Summarizer Summarizer
	// Timeout bounds one summarizer call; default DefaultSummaryTimeout.
	Timeout time.Duration
}

func (c Compaction) check() error {
	switch {
	case c.Tokens < 0:
		return fmt.Errorf("spool: Compaction.Tokens is %d; want 0 (off) or more", c.Tokens)
	case c.Turns < 0:
		return fmt.Errorf("spool: Compaction.Turns is %d; want 0 (off) or more", c.Turns)
	case c.KeepTurns < 0:
		return fmt.Errorf("spool: Compaction.KeepTurns is %d; want 0 (the default) or more", c.KeepTurns)
	}
	return nil
}

func (c Compaction) automatic() bool { return c.Tokens > 0 || c.Turns > 0 }

// Summarizer writes a compaction's summary: the summary so far with the
// newly covered turns folded in. It is given only those turns (an
// incremental summary), never the whole transcript again. An error, or a
// Summary with empty Text, fails the compaction, which then appends
// nothing.
type Summarizer func(ctx context.Context, in SummaryInput) (Summary, error)

// SummaryInput is what a Summarizer summarizes.
type SummaryInput struct {
	// Previous is the summary in use, which the new one extends; "" when
	// the session has none.
	Previous string
	// Messages are what the newly covered turns send by the history rules
	// (refused, failed and cancelled turns are not among them), oldest
	// first.
	Messages []model.Message
}

// Summary is what a Summarizer wrote.
type Summary struct {
	Text  string
	Model string           // the model that wrote it, for the record
	Usage transcript.Usage // what writing it used; counted in the session's budget
}

// ModelSummarizer returns a Summarizer that asks m (the agent's model, or a
// cheaper one) with model.NewSummaryRequest: instructions, or
// model.SummaryInstructions when "", which ask to keep facts, decisions,
// open questions, names and numbers, and the tool results later turns
// depend on. The echo model answers that request deterministically (see
// echo.Summary). A summary the provider stopped short (model.EventStop:
// the output token limit, a content filter) fails the compaction with a
// *model.Error of CodeModelError, and the session stays as it was.
func ModelSummarizer(m model.Model, instructions string) Summarizer {
	name := ""
	if n, ok := m.(model.Named); ok {
		name = n.Name()
	}
	return func(ctx context.Context, in SummaryInput) (Summary, error) {
		out := Summary{Model: name}
		var text []byte
		for ev, err := range m.Stream(ctx, model.NewSummaryRequest(instructions, in.Previous, in.Messages)) {
			if err != nil {
				return out, err
			}
			switch ev.Kind {
			case model.EventText:
				text = append(text, ev.Text...)
			case model.EventUsage:
				out.Usage = ev.Usage
			case model.EventStop:
				// A summary cut short would stand for the turns it covers
				// with part of what they said: no compaction rather than
				// a lossy one.
				_, msg := stopNotice(ev.Stop)
				return out, &model.Error{Code: transcript.CodeModelError, Message: "summary: " + msg}
			}
		}
		out.Text = string(text)
		return out, nil
	}
}

// CompactOptions configures one Session.Compact.
type CompactOptions struct {
	// KeepTurns is how many of the newest turns stay as they are; zero for
	// the agent's (Compaction.KeepTurns).
	KeepTurns int
	// Summarizer, when not nil, writes this compaction's summary instead
	// of the agent's.
	Summarizer Summarizer
}

// CompactResult says what a compaction did.
type CompactResult struct {
	EntryID   string           `json:"entryId"`            // the session.compaction entry appended
	FirstTurn string           `json:"firstTurn"`          // the first turn it covers
	LastTurn  string           `json:"lastTurn"`           // the last turn it covers
	Turns     int              `json:"turns"`              // the turns with a message it covers, the earlier summary's included
	NewTurns  int              `json:"newTurns"`           // the turns it folded into the earlier summary
	Previous  string           `json:"previous,omitempty"` // the compaction entry it extends; "" for none
	Summary   string           `json:"summary"`
	Model     string           `json:"model,omitempty"`
	Usage     transcript.Usage `json:"usage"`
	Before    HistorySize      `json:"before"` // the history the next request carried before it
	After     HistorySize      `json:"after"`  // and after it
}

// HistorySize is the size of a history: its messages (the system message
// included) and their tokens (Config.Counter, or history.ApproxTokens).
type HistorySize struct {
	Messages int `json:"messages"`
	Tokens   int `json:"tokens"`
}

// Compact summarizes the session's turns up to its newest KeepTurns, the
// ones the summary in use does not cover yet, and appends the compaction
// (history rule 10): from then on the model is sent the summary in their
// place. Nothing is removed: the transcript keeps every turn, and Messages
// and Page show them all. A compaction never covers a turn that has not
// ended.
//
// It holds the session while the summarizer runs, as a turn would: turns
// sent meanwhile wait for it. It fails with ErrNothingToCompact when no
// turn can be covered, ErrSummarizer (wrapping the cause) when the
// summarizer fails, times out or writes nothing, ErrTurnRunning while
// another process runs a turn on the session, and ErrApprovalPending,
// naming the approval, while a turn waits on one: its entry would split
// that turn in two, as Rename's and SetToolMode's would, so the approval
// is decided first (Approve, Deny, Resolve), and the compaction then
// covers that turn too. A turn whose process stopped before it ended is
// closed as cancelled first, as the next turn closes it.
func (s *Session) Compact(ctx context.Context, opts CompactOptions) (*CompactResult, error) {
	if opts.KeepTurns < 0 {
		return nil, fmt.Errorf("spool: KeepTurns is %d; want 0 (the agent's) or more", opts.KeepTurns)
	}
	var res *CompactResult
	err := s.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		var err error
		res, err = s.compact(ctx, sl, opts)
		return err
	})
	return res, err
}

// compact is Compact holding the session.
func (s *Session) compact(ctx context.Context, sl *slot, opts CompactOptions) (*CompactResult, error) {
	a := s.a
	if len(sl.st.pending) > 0 {
		// The compaction entry would land inside the waiting turn, whose
		// decision and what follows it come after: a turn split in two.
		p := sl.st.pending[0]
		return nil, fmt.Errorf("%w (session %s: the call %s of turn %s waits on approval %s)", ErrApprovalPending, s.key, p.Tool, p.TurnID, p.ID)
	}
	if sl.st.open != nil {
		// A turn that never ended and waits on no one runs in another
		// process, or its process stopped: the dead one is closed as
		// cancelled, as the next turn would, rather than waited for.
		if err := s.settleOpenTurn(ctx, sl, false); err != nil {
			return nil, err
		}
	}
	keep := opts.KeepTurns
	if keep == 0 {
		keep = a.cfg.Compaction.KeepTurns
	}
	if keep == 0 {
		keep = DefaultKeepTurns
	}
	summarize := opts.Summarizer
	if summarize == nil {
		summarize = a.cfg.Compaction.Summarizer
	}
	if summarize == nil {
		summarize = ModelSummarizer(a.cfg.Model, "")
	}
	plan, ok, err := s.plan(ctx, sl, keep)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: session %s has no ended turn before its newest %d that the summary in use does not cover", ErrNothingToCompact, s.key, keep)
	}
	res := &CompactResult{FirstTurn: plan.FirstTurn, LastTurn: plan.LastTurn, Turns: plan.Turns, NewTurns: len(plan.New),
		Before: a.historySize(sl.st.hist.Messages())}
	in := SummaryInput{Messages: plan.Messages}
	if plan.Previous != nil {
		in.Previous, res.Previous = plan.Previous.Text, plan.Previous.ID
	}
	entryTurn := sl.st.newTurnID(a.now())
	timeout := a.cfg.Compaction.Timeout
	if timeout <= 0 {
		timeout = DefaultSummaryTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	start := time.Now()
	sum, err := a.summarize(sctx, summarize, in)
	cancel()
	if err == nil && sum.Text == "" {
		err = errors.New("it wrote no text")
	}
	o := Observation{Kind: ObserveCompaction, SessionID: s.key.ID, TurnID: entryTurn, Model: sum.Model, Usage: sum.Usage, Duration: time.Since(start)}
	a.used.Add(sum.Usage.InputTokens + sum.Usage.OutputTokens)
	if err != nil {
		o.ErrorCode = errorCode(err)
		a.Observe(ctx, o)
		return nil, fmt.Errorf("%w: session %s: %w", ErrSummarizer, s.key, err)
	}
	data := transcript.Compaction{Summary: sum.Text, FirstTurn: plan.FirstTurn, LastTurn: plan.LastTurn, Turns: plan.Turns,
		Previous: res.Previous, Model: sum.Model}
	if sum.Usage != (transcript.Usage{}) {
		data.Usage = &sum.Usage
	}
	e, err := s.writer(sl).append(ctx, transcript.TypeCompaction, entryTurn, "", data)
	if err != nil {
		o.ErrorCode = transcript.CodeStoreError
		a.Observe(ctx, o)
		return nil, err
	}
	a.Observe(ctx, o)
	sl.overflowed = false
	res.EntryID, res.Summary, res.Model, res.Usage = e.ID, sum.Text, sum.Model, sum.Usage
	msgs, full := sl.st.hist.Window()
	if !full && sl.st.hist.Base() > 0 {
		// The compaction names a turn the state's history forgot.
		if entries, err := a.cfg.Store.Read(ctx, s.key); err == nil {
			msgs = history.Build(entries, a.historyOptions())
		}
	}
	res.After = a.historySize(msgs)
	// Ids and counts only: content never reaches the log.
	a.log.LogAttrs(ctx, slog.LevelDebug, "session compacted",
		slog.String("session", s.key.ID), slog.String("first", plan.FirstTurn), slog.String("last", plan.LastTurn),
		slog.Int("turns", plan.Turns), slog.Int("tokensBefore", res.Before.Tokens), slog.Int("tokensAfter", res.After.Tokens))
	return res, nil
}

// plan returns what a compaction of the session in sl covers: from the
// state's history, which has every entry unless it forgot the oldest
// (history.Builder.Forget), and from the transcript then.
func (s *Session) plan(ctx context.Context, sl *slot, keep int) (history.CompactionPlan, bool, error) {
	if sl.st.hist.Base() == 0 {
		plan, ok := sl.st.hist.PlanCompaction(keep)
		return plan, ok, nil
	}
	entries, err := s.a.cfg.Store.Read(ctx, s.key)
	if err != nil {
		return history.CompactionPlan{}, false, err
	}
	if len(entries) != sl.st.count || entries[len(entries)-1].ID != sl.st.head {
		return history.CompactionPlan{}, false, fmt.Errorf("%w: session %s changed meanwhile", ErrBusy, s.key)
	}
	plan, ok := history.PlanCompaction(entries, keep)
	return plan, ok, nil
}

// historySize measures msgs as the agent counts tokens.
func (a *Agent) historySize(msgs []model.Message) HistorySize {
	n := HistorySize{Messages: len(msgs)}
	for _, m := range msgs {
		if a.cfg.Counter != nil {
			n.Tokens += max(a.cfg.Counter(m), 0)
		} else {
			n.Tokens += history.ApproxTokens(m)
		}
	}
	return n
}
