package server

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"sync"

	"github.com/spool-go/spool/store"

	"github.com/spool-go/spool"
)

// A turn belongs to its session, not to the request that started it: with
// Options.OnDisconnect continue, a turn started over HTTP runs on its own
// goroutine (POST /invoke's, which only waits for the result, on the
// request's), under a context without the request's cancellation (its
// values kept: the request id, the user, the trace), bounded by
// Options.TurnTimeout and ended by Close. The request passes the turn's
// events on as they come; a request that goes away stops only its own
// reading.

// turnContext returns the context of a turn started by a request with
// context ctx, and the function that releases it once the turn ended.
func (s *Server) turnContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.OnDisconnect == DisconnectCancel {
		return context.WithCancel(ctx)
	}
	// A child of s.base, so that Close ends it, carrying the request's
	// values: one context and its timer, where the request's context
	// without its cancellation, a timeout under it and an AfterFunc on
	// s.base to cancel it were three, each allocating.
	tctx, cancel := context.WithTimeout(s.base, s.opts.TurnTimeout)
	return valuesOf{Context: tctx, values: ctx}, cancel
}

// valuesOf is the context Context (its deadline, its cancellation) with
// the values of values. Context's own chain carries no value but the
// context package's own (which is how a context made under a valuesOf
// finds the cancellation it depends on), so it is asked first.
type valuesOf struct {
	context.Context
	values context.Context
}

func (c valuesOf) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// detach runs the turn start returns (given the turn's context) and
// returns its events for the request whose context is ctx. With
// OnDisconnect cancel the turn runs inline, as the request reads it, and
// stops when the request does. With continue it runs to its end on a
// goroutine of its own; the events wait for the request in a buffer, so
// that a slow or gone client never holds the turn, and the buffer is
// dropped once the request stops reading.
func (s *Server) detach(ctx context.Context, start func(ctx context.Context) iter.Seq2[spool.Event, error]) iter.Seq2[spool.Event, error] {
	if s.opts.OnDisconnect == DisconnectCancel {
		return start(ctx)
	}
	tctx, release := s.turnContext(ctx)
	b := &eventBuffer{wake: make(chan struct{})}
	s.turns.Add(1)
	go func() {
		defer s.turns.Done()
		defer release()
		defer b.close()
		for ev, err := range start(tctx) {
			b.add(ev, err)
		}
	}()
	return b.read(ctx)
}

// eventBuffer holds a detached turn's events for the request reading
// them.
type eventBuffer struct {
	mu    sync.Mutex
	items []bufferedEvent
	done  bool
	gone  bool // the reader stopped: keep nothing more
	wake  chan struct{}
}

type bufferedEvent struct {
	ev  spool.Event
	err error
}

func (b *eventBuffer) add(ev spool.Event, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return
	}
	b.items = append(b.items, bufferedEvent{ev, err})
	close(b.wake)
	b.wake = make(chan struct{})
}

func (b *eventBuffer) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	close(b.wake)
	b.wake = make(chan struct{})
}

// read yields the events as they come, until the turn's last or until
// ctx ends. A reader that stops at the turn's end waits until the turn
// is over: the end is out before the turn lets the session go (a new
// session's retention pass, say, comes after it), and a client that
// sends its next request as soon as it has the answer (a regenerate, an
// edit) would find the turn still running.
func (b *eventBuffer) read(ctx context.Context) iter.Seq2[spool.Event, error] {
	return func(yield func(spool.Event, error) bool) {
		defer func() {
			b.mu.Lock()
			b.gone, b.items = true, nil
			b.mu.Unlock()
		}()
		for {
			b.mu.Lock()
			items, done, wake := b.items, b.done, b.wake
			b.items = nil
			b.mu.Unlock()
			for _, it := range items {
				if !yield(it.ev, it.err) {
					if it.err == nil && it.ev.Kind == spool.EventTurnEnd {
						b.wait(ctx)
					}
					return
				}
			}
			if done && len(items) == 0 {
				return
			}
			if len(items) > 0 {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}
}

// wait waits until the turn is over, or ctx ends.
func (b *eventBuffer) wait(ctx context.Context) {
	for {
		b.mu.Lock()
		done, wake := b.done, b.wake
		b.mu.Unlock()
		if done {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// stopResponse is the answer of POST /v1/sessions/{id}/stop.
type stopResponse struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
}

// handleStop is POST /v1/sessions/{id}/stop: the turn running on the
// session ends, recorded cancelled; the answer comes once that is
// recorded. No turn running is 404 not_running.
func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existingNoBody(w, r)
	if !ok {
		return
	}
	turnID, err := sess.Stop(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, stopResponse{SessionID: sess.ID(), TurnID: turnID})
}

// handleEvents is GET /v1/sessions/{id}/events: the session's live
// events as SSE, each with its id. With Last-Event-ID (or ?after=; the
// header wins, since a reconnecting EventSource sends it with the URL it
// first opened) the stream replays every event after that one, else it
// starts at the running turn's beginning; it ends with the turn (at once,
// empty, when none runs) unless ?follow=1, which keeps it open for the
// next turns. A malformed id, or one past the session's transcript, is
// 400 bad_event_id.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var opt spool.WatchOptions
	switch q.Get("follow") {
	case "", "0", "false":
	case "1", "true":
		opt.Follow = true
	default:
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"follow" must be 1 or 0 (true or false)`))
		return
	}
	raw := q.Get("after")
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		raw = h
	}
	if raw != "" {
		id, err := spool.ParseEventID(raw)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		opt.After = id
	}
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	if opt.Follow {
		// A follower has no end of its own: Shutdown does not wait for
		// it (it would hold every restart for the whole grace period),
		// and Close, once every turn has ended, ends it.
		s.inflight.done()
		defer s.inflight.start() // for the middleware's done
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(s.following, stop)()
	}
	var sse *sseWriter
	opt.Ready = func() { sse = startSSE(w, s.opts.KeepAlive, nil) }
	defer func() {
		if sse != nil {
			sse.close()
		}
	}()
	for ev, err := range sess.Watch(ctx, opt) {
		if err != nil {
			if sse == nil {
				s.writeError(w, r, err)
			} else {
				sse.event("error", errorBody{Error: s.streamError(r, err)})
			}
			return
		}
		if sse.eventID(string(ev.Kind), ev.ID, ev) != nil {
			return // the client went away; the turn goes on
		}
	}
}

// handleAIStream is GET /api/chat/{id}/stream, the AI SDK's resume
// route (useChat({resume: true}), chat.resumeStream()): 204 when no turn
// runs on the chat's session, else the running turn's UI message stream
// from the start of its assistant message (the client replaces what it
// had of that message with it), live until the turn ends. A run that an
// approval's answer began continues a message earlier runs of its turn
// started: what they stored is sent first (earlierParts).
func (s *Server) handleAIStream(w http.ResponseWriter, r *http.Request) {
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	sess, err := s.agent.Session(ctx, r.PathValue("id"))
	if errors.Is(err, store.ErrInvalidKey) {
		w.WriteHeader(http.StatusNoContent) // no session has that id: nothing runs
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, running, err := sess.OpenTurn(ctx); err != nil || !running {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	aw := s.newAIWriter(w, r)
	aw.earlier = func(ev spool.Event) ([]aiUIPart, error) { return earlierParts(ctx, sess, ev) }
	aw.run(sess.Watch(ctx, spool.WatchOptions{}))
	if aw.sse == nil && !aw.refused {
		// The turn ended in between.
		w.WriteHeader(http.StatusNoContent)
	}
}

// earlierParts is what the assistant message of ev's turn had when the
// run that produced ev began (none for a run that begins its turn), as
// GET /api/chat/{id} builds it from the transcript up to the run.
func earlierParts(ctx context.Context, sess *spool.Session, ev spool.Event) ([]aiUIPart, error) {
	id, err := spool.ParseEventID(ev.ID)
	if err != nil || id.Pos == 0 {
		return nil, nil // the first run of a session begins its turn
	}
	entries, err := sess.Transcript(ctx)
	if err != nil {
		return nil, err
	}
	msgs := uiMessages(entries[:min(int(id.Pos), len(entries))])
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" && msgs[i].ID == ev.TurnID {
			return msgs[i].Parts, nil
		}
	}
	return nil, nil
}
