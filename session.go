package spool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Session is a handle on one conversation. It is cheap: the agent keeps
// the session's state, and every handle on the same key shares it. A
// Session is safe for concurrent use; its calls run one after the other.
type Session struct {
	a   *Agent
	key store.Key
}

// NewSession returns a session with a fresh id (NewSessionID). Nothing is
// stored until the first Send: a session exists once its first entry is
// appended. To choose the id, use Session.
func (a *Agent) NewSession(ctx context.Context) (*Session, error) {
	return a.Session(ctx, NewSessionID())
}

// Session returns a handle on session id, which may or may not exist yet:
// an id the store has never seen starts a new session under it, and an id
// it has continues that session. It is the form servers use, where a
// client chooses the id; OpenSession is the form that requires the session
// to exist.
func (a *Agent) Session(ctx context.Context, id string) (*Session, error) {
	k, err := a.key(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Session{a: a, key: k}, nil
}

// OpenSession returns the existing session id, restored as it was left: its
// tool mode, the tools approved for it, and its pending approvals. It fails
// with store.ErrNotFound for an id the store does not have (for a
// user-scoped agent: that the user does not have), and with
// store.ErrSessionExpired for a session that expired with an approval
// pending.
func (a *Agent) OpenSession(ctx context.Context, id string) (*Session, error) {
	s, err := a.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	var exists bool
	err = s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
		exists = sl.st.count > 0
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("spool: session %s: %w", s.key, store.ErrNotFound)
	}
	return s, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.key.ID }

// Key returns the session's store key.
func (s *Session) Key() store.Key { return s.key }

// Agent returns the agent the session belongs to.
func (s *Session) Agent() *Agent { return s.a }

// access says what a call does to a session, and so what it holds.
type access int

const (
	// reading: the session's place in this process's queue, not the
	// store's lock, so a read never waits for another process's turn;
	// nor for one of this process (readAside).
	reading access = iota
	// writing: the queue and, when the store has one, its lock across
	// processes, for as long as the call runs.
	writing
	// turning: writing, for a turn (a prompt's, or one resumed after an
	// approval): Regenerate and SwitchBranch refuse while one holds the
	// session or waits for it (registry.turning), where a compaction, a
	// rename or a mode change is only waited for.
	turning
)

// with runs fn holding the session: after the calls before it, with its
// state current (reloaded when another writer changed the transcript) and
// TTL applied. A read while this process writes the session runs beside
// the write instead (readAside).
func (s *Session) with(ctx context.Context, mode access, fn func(ctx context.Context, sl *slot) error) error {
	if s.a.closed.Load() {
		return ErrClosed
	}
	if mode == reading && s.a.reg.writing(s.key) {
		return s.readAside(ctx, fn)
	}
	sl, err := s.a.reg.acquire(ctx, s.key, mode)
	if err != nil {
		return err
	}
	defer s.a.reg.release(sl, mode)
	if mode != reading {
		unlock, err := s.a.lockStore(ctx, s.key)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if err := s.sync(ctx, sl); err != nil {
		sl.st = nil
		return err
	}
	if err := s.expire(ctx, sl, mode); err != nil {
		return err
	}
	return fn(ctx, sl)
}

// readAside runs a reading fn while a call of this process that writes
// (a turn) holds the session or waits for it: rather than wait the turn
// out, which takes as long as the model does, it reads the stored
// transcript into a state of its own, as another process would see the
// session. The cached state stays the writer's.
func (s *Session) readAside(ctx context.Context, fn func(ctx context.Context, sl *slot) error) error {
	sl := &slot{key: s.key}
	if err := s.sync(ctx, sl); err != nil {
		return err
	}
	if err := s.expire(ctx, sl, reading); err != nil {
		return err
	}
	return fn(ctx, sl)
}

// lockStore takes the store's lock on k for the call, when the store has
// one.
func (a *Agent) lockStore(ctx context.Context, k store.Key) (func(), error) {
	l, ok := a.cfg.Store.(store.Locker)
	if !ok {
		return func() {}, nil
	}
	unlock, err := l.Lock(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("spool: session %s: lock: %w", k, err)
	}
	return unlock, nil
}

// sync makes sl.st match the stored transcript. When nothing changed
// since this process last saw it, that costs a read of the newest entry;
// when another writer appended, only what it appended is read, in the
// same read on a store that reads ranges (one round trip, where a
// session that moves between replicas took two).
func (s *Session) sync(ctx context.Context, sl *slot) error {
	st := s.a.cfg.Store
	if sl.st != nil {
		_, ranged := st.(store.RangeReader)
		var (
			newer []transcript.Entry
			total int
			err   error
		)
		if ranged {
			// From the newest entry this process has to the end: that
			// entry alone when nothing changed.
			newer, total, err = store.ReadRange(ctx, st, s.key, max(sl.st.count-1, 0), math.MaxInt)
		} else {
			newer, total, err = store.ReadTail(ctx, st, s.key, 1)
		}
		if err != nil {
			return err
		}
		if total == sl.st.count && (total == 0 || newer[len(newer)-1].ID == sl.st.head) {
			return nil
		}
		if sl.st.count > 0 && total > sl.st.count {
			if !ranged {
				if newer, _, err = store.ReadRange(ctx, st, s.key, sl.st.count-1, total); err != nil {
					return err
				}
			}
			if len(newer) > 0 && newer[0].ID == sl.st.head {
				for _, e := range newer[1:] {
					sl.st.apply(e, nil)
				}
				return nil
			}
		}
	}
	entries, err := st.Read(ctx, s.key)
	if err != nil {
		return err
	}
	sl.st = loadState(entries, s.a.historyOptions())
	return nil
}

// expire applies the TTL: an idle session with no approval pending starts
// fresh (a read sees it empty; a write deletes it first); one with an
// approval pending is store.ErrSessionExpired.
func (s *Session) expire(ctx context.Context, sl *slot, mode access) error {
	ttl := s.a.cfg.TTL
	if ttl <= 0 || sl.st.count == 0 || s.a.now().Sub(sl.st.lastActivity) <= ttl {
		return nil
	}
	if len(sl.st.pending) > 0 {
		return &store.ExpiredError{Key: s.key}
	}
	if mode != reading {
		if err := s.a.cfg.Store.Delete(ctx, s.key); err != nil {
			return fmt.Errorf("spool: session %s: deleting the expired session: %w", s.key, err)
		}
	}
	sl.st = newState(s.a.historyOptions())
	return nil
}

// Transcript returns every entry of the session, in order.
func (s *Session) Transcript(ctx context.Context) ([]transcript.Entry, error) {
	return s.a.cfg.Store.Read(ctx, s.key)
}

// History returns what the next model request would carry: the
// instructions as a system message, then the window of the transcript that
// the history rules select (package history). It reads the transcript as
// stored: a session past its TTL still shows its history here until its
// next turn starts it fresh.
func (s *Session) History(ctx context.Context) ([]model.Message, error) {
	entries, err := s.a.cfg.Store.Read(ctx, s.key)
	if err != nil {
		return nil, err
	}
	return history.Build(entries, s.a.historyOptions()), nil
}

// PendingApprovals returns the tool calls waiting on a person, oldest
// first.
func (s *Session) PendingApprovals(ctx context.Context) ([]Approval, error) {
	var out []Approval
	err := s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
		out = append(out, sl.st.pending...)
		return nil
	})
	return out, err
}

// ToolMode returns the session's tool mode: the last one set with
// SetToolMode, or the agent's.
func (s *Session) ToolMode(ctx context.Context) (transcript.ToolMode, error) {
	var m transcript.ToolMode
	err := s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
		m = s.mode(sl.st)
		return nil
	})
	return m, err
}

func (s *Session) mode(st *state) transcript.ToolMode {
	if st.mode != "" {
		return st.mode
	}
	return s.a.cfg.ToolMode
}

// SetToolMode sets how the session treats tool calls from now on, and
// records it (a session.mode entry), so OpenSession restores it. It fails
// with ErrApprovalPending while a turn waits on an approval.
func (s *Session) SetToolMode(ctx context.Context, mode transcript.ToolMode) error {
	if !mode.Valid() {
		return fmt.Errorf("spool: unknown tool mode %q (ask, auto or off)", mode)
	}
	return s.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		if len(sl.st.pending) > 0 {
			// A mode entry inside a paused turn would split it in two.
			return fmt.Errorf("%w (session %s)", ErrApprovalPending, s.key)
		}
		w := s.writer(sl)
		_, err := w.append(ctx, transcript.TypeSessionMode, sl.st.newTurnID(s.a.now()), "", transcript.SessionMode{ToolMode: mode})
		return err
	})
}

// writer appends entries to the session in sl, keeping its state.
type writer struct {
	s  *Session
	sl *slot
}

func (s *Session) writer(sl *slot) writer { return writer{s: s, sl: sl} }

// appendTimeout bounds one append; appends run without the caller's
// cancellation so a stopped turn is still recorded.
const appendTimeout = 30 * time.Second

// appendContext is the context of one append: the caller's values
// without its cancellation (context.WithoutCancel), ending appendTimeout
// after it was made (context.WithTimeout). Unlike WithTimeout it starts
// its timer only when a store asks for Done: a store that only checks
// Err (the memory store) costs no timer to start and stop per append.
type appendContext struct {
	context.Context // the caller's, without cancellation: its values
	deadline        time.Time
	mu              sync.Mutex
	done            chan struct{} // made by the first Done or an Err past the deadline
	expired         bool          // done is closed
	timer           *time.Timer
}

func newAppendContext(ctx context.Context) *appendContext {
	return &appendContext{Context: context.WithoutCancel(ctx), deadline: time.Now().Add(appendTimeout)}
}

// Deadline implements context.Context.
func (c *appendContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context: closed once the deadline passes.
func (c *appendContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if d := time.Until(c.deadline); d > 0 {
			c.timer = time.AfterFunc(d, c.expire)
		} else {
			c.expireLocked()
		}
	}
	return c.done
}

// Err implements context.Context: context.DeadlineExceeded once the
// deadline passed (Done is then closed), else nil.
func (c *appendContext) Err() error {
	if time.Now().Before(c.deadline) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.expired {
			return nil
		}
		return context.DeadlineExceeded
	}
	c.expire()
	return context.DeadlineExceeded
}

func (c *appendContext) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
}

func (c *appendContext) expireLocked() {
	if c.expired {
		return
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	close(c.done)
	c.expired = true
}

// stop releases the timer, if Done started one: the append is over.
func (c *appendContext) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// String names the context as context.WithTimeout's do.
func (c *appendContext) String() string { return "spool.appendContext" }

// append writes one entry after the session's head. A conflict means
// another writer appended meanwhile: the cached state is dropped and the
// error wraps ErrBusy and store.ErrConflict.
func (w writer) append(ctx context.Context, typ transcript.Type, turnID string, status transcript.Status, data any) (transcript.Entry, error) {
	entries, err := w.appendAll(ctx, []item{{typ, turnID, status, data}})
	if len(entries) == 0 {
		return transcript.Entry{}, err
	}
	return entries[0], err
}

// item is an entry to be made and appended.
type item struct {
	typ    transcript.Type
	turnID string
	status transcript.Status
	data   any
}

// appendAll writes entries made of items after the session's head, in one
// durable write when the store can (store.AppendBatch): what is ready
// together is synced together. Errors are append's.
func (w writer) appendAll(ctx context.Context, items []item) ([]transcript.Entry, error) {
	entries := make([]transcript.Entry, len(items))
	data := make([]any, len(items))
	for i, it := range items {
		e, err := transcript.New(w.s.a.now(), it.typ, it.turnID, it.data)
		if err != nil {
			return nil, err
		}
		e.Status = it.status
		entries[i], data[i] = e, it.data
	}
	return entries, w.appendEntries(ctx, entries, data)
}

// appendEntries appends entries after the session's head, chaining their
// parentIds, in one durable write when the store can. data[i], when data
// is not nil, is the value entries[i]'s data was made from. Errors are
// append's.
func (w writer) appendEntries(ctx context.Context, entries []transcript.Entry, data []any) error {
	a := w.s.a
	head := w.sl.st.head
	for i := range entries {
		entries[i].ParentID = head
		head = entries[i].ID
	}
	actx := newAppendContext(ctx)
	defer actx.stop()
	var err error
	if len(entries) == 1 {
		err = a.cfg.Store.Append(actx, w.s.key, entries[0])
	} else {
		err = store.AppendBatch(actx, a.cfg.Store, w.s.key, entries)
	}
	if err != nil {
		w.sl.st = nil
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%w: %w", ErrBusy, err)
		}
		return fmt.Errorf("spool: session %s: %w", w.s.key, err)
	}
	for i, e := range entries {
		var d any
		if data != nil {
			d = data[i]
		}
		w.sl.st.apply(e, d)
	}
	return nil
}
