package spool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Send sends prompt and runs the turn to its end, or until it pauses on
// approvals (Result.Status is StatusAwaitingApproval and Result.Pending
// lists them). The turn is recorded however it ends. The error is nil for
// ok, prompt_blocked, response_blocked and paused turns; a *TurnError for
// turns that ended error or cancelled (the Result says how, too); and
// another error when the turn could not run or be recorded, such as
// ErrApprovalPending, ErrBusy or a store failure.
func (s *Session) Send(ctx context.Context, prompt string) (*Result, error) {
	return Collect(s.Stream(ctx, prompt))
}

// Stream sends prompt and returns the turn as a sequence of events, ending
// with EventTurnEnd. Nothing is read from the model ahead of the consumer:
// each event is produced when the consumer asks for the next. The turn is
// persisted as it goes and ended once the stream is consumed; a consumer
// that stops early leaves the turn recorded as cancelled. An error the
// turn could not record (see Send) is yielded last, with a zero Event.
func (s *Session) Stream(ctx context.Context, prompt string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if strings.TrimSpace(prompt) == "" {
			yield(Event{}, ErrEmptyPrompt)
			return
		}
		s.newTurn(ctx, yield, true, func(context.Context, *slot, string) (opening, error) {
			return opening{prompt: prompt}, nil
		})
	}
}

type clientMessageKey struct{}

// ContextWithClientMessageID returns a context that names the user message
// of the turn a call with it starts (Send, Stream, Edit, Regenerate and
// their streams) with id, the client's own id for it: the transcript keeps
// id with the message (transcript.UserMessage.ClientID), so that a client
// that names its messages, as the AI SDK's useChat does, finds the message
// under the same id when it loads the conversation again. Only that turn's
// message gets it: what the turn runs (a delegated agent's turn) does not
// inherit it. Without it, Edit and Regenerate give the new version of a
// question the id of the one it replaces.
func ContextWithClientMessageID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientMessageKey{}, id)
}

// takeClientMessageID returns the id ContextWithClientMessageID put in
// ctx, and ctx without it, for the turn's tools and the agents they call.
func takeClientMessageID(ctx context.Context) (string, context.Context) {
	id, _ := ctx.Value(clientMessageKey{}).(string)
	if id == "" {
		return "", ctx
	}
	return id, context.WithValue(ctx, clientMessageKey{}, "")
}

// opening is how a new turn begins: its prompt, after a marker when the
// turn replaces others (a regenerate or an edit).
type opening struct {
	prompt string
	marker *transcript.Branch
	// clientID is the client's id for the prompt when the call's context
	// gives none (ContextWithClientMessageID): a new version of a question
	// keeps the id of the one it replaces.
	clientID string
}

// newTurn runs a new turn to its end (or pause), passing its events to
// yield: open says, holding the session, how the turn begins, given its
// id. A turn of this process or another still running on the session is
// waited for when wait is set, and is ErrTurnRunning otherwise.
func (s *Session) newTurn(ctx context.Context, yield func(Event, error) bool, wait bool, open func(ctx context.Context, sl *slot, turnID string) (opening, error)) {
	clientID, ctx := takeClientMessageID(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Without a store lock, another process may append first; until
	// this turn has written anything, that only means starting over
	// from the new head.
	deadline := time.Now().Add(s.a.cfg.BusyTimeout)
	for attempt := 1; ; attempt++ {
		var r *run
		err := s.with(ctx, turning, func(ctx context.Context, sl *slot) error {
			if len(sl.st.pending) > 0 {
				return fmt.Errorf("%w (session %s)", ErrApprovalPending, s.key)
			}
			if err := s.settleOpenTurn(ctx, sl, wait); err != nil {
				return err
			}
			if sl.overflowed && s.a.cfg.Compaction.automatic() {
				s.compactIfDue(ctx, sl)
			}
			created := sl.st.count == 0
			turnID := sl.st.newTurnID(s.a.now())
			o, err := open(ctx, sl, turnID)
			if err != nil {
				return err
			}
			r = s.newRun(sl, yield, cancel, turnID)
			defer r.done()
			defer r.endIfConsumerPanicked(ctx)
			r.marker, r.clientID = o.marker, cmp.Or(clientID, o.clientID)
			if err := r.settle(ctx, r.begin(ctx, o.prompt)); err != nil {
				return err
			}
			if created && !s.a.cfg.Retention.Unlimited() {
				s.a.prune(ctx)
			}
			return nil
		})
		if err != nil && errors.Is(err, store.ErrConflict) && (r == nil || !r.wrote) && time.Now().Before(deadline) {
			if sleepCtx(ctx, backoff(attempt)) == nil {
				continue
			}
		}
		if err == nil {
			s.afterTurn(ctx)
		}
		yieldError(yield, r, err)
		return
	}
}

// yieldError passes err, what kept a call from running or recording its
// turn, to the consumer, unless the consumer has already stopped: a range
// loop must not be resumed after its body returned false.
func yieldError(yield func(Event, error) bool, r *run, err error) {
	if err != nil && (r == nil || !r.stopped) {
		yield(Event{}, err)
	}
}

// backoff is the wait before retry attempt n: growing, with jitter so
// that competing writers spread out.
func backoff(n int) time.Duration {
	d := time.Duration(min(n, 8)) * 10 * time.Millisecond
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// settleOpenTurn deals with a turn that started and never ended before
// this one: a process that died mid-turn, or one still running elsewhere.
// Holding the store's lock (or with no other writer), a dead turn is
// closed as cancelled. Without a lock, a turn still recently active may be
// running in another process: with wait, wait for it up to BusyTimeout,
// then ErrBusy; without, ErrTurnRunning at once.
func (s *Session) settleOpenTurn(ctx context.Context, sl *slot, wait bool) error {
	_, locked := s.a.cfg.Store.(store.Locker)
	deadline := time.Now().Add(s.a.cfg.BusyTimeout)
	for sl.st.open != nil {
		idle := s.a.now().Sub(sl.st.lastActivity)
		if locked || idle > s.a.cfg.StaleTurn || sl.abandoned == sl.st.open.id {
			w := s.writer(sl)
			_, err := w.append(ctx, transcript.TypeTurnEnd, sl.st.open.id, transcript.StatusCancelled, transcript.TurnEnd{
				Usage: sl.st.open.usage,
				Error: &transcript.ErrorInfo{Code: transcript.CodeInterrupted, Message: "the turn never finished (its process stopped, or its store failed)"},
			})
			if err == nil {
				sl.abandoned = ""
			}
			return err
		}
		if !wait {
			return fmt.Errorf("%w (session %s, in another process)", ErrTurnRunning, s.key)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (session %s)", ErrBusy, s.key)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
		if err := s.sync(ctx, sl); err != nil {
			return err
		}
	}
	return nil
}

// Collect runs a turn's events (from Stream or Resolve) to the end and
// returns its Result with Send's errors: a *TurnError, with the Result,
// for a turn that ended error or cancelled; the stream's own error for a
// call that could not run or record its turn.
func Collect(seq iter.Seq2[Event, error]) (*Result, error) {
	var res *Result
	for ev, err := range seq {
		if err != nil {
			return res, err
		}
		if ev.Kind == EventTurnEnd {
			res = ev.Result
		}
	}
	if res == nil {
		return nil, errors.New("spool: the turn ended without a result")
	}
	if res.Status == transcript.StatusError || res.Status == transcript.StatusCancelled {
		te := &TurnError{SessionID: res.SessionID, TurnID: res.TurnID, Status: res.Status}
		if res.Error != nil {
			te.Code = res.Error.Code
		}
		te.Err = res.cause
		if te.Err == nil && res.Error != nil {
			te.Err = errors.New(res.Error.Message)
		}
		return res, te
	}
	return res, nil
}
