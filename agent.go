package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/filestore" // the default store, "file:"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// Scope says who an agent's sessions belong to.
type Scope string

// Scopes.
const (
	// ScopeProject: one shared set of sessions per agent.
	ScopeProject Scope = "project"
	// ScopeUser: each session belongs to the user who started it (see
	// ContextWithUser); another user's session id never reaches it.
	ScopeUser Scope = "user"
)

// PromptGuard checks a prompt before the model sees it. A non-nil error
// refuses the prompt: the turn ends prompt_blocked with a governance notice
// carrying the error's message. A guard that panics refuses too.
type PromptGuard func(ctx context.Context, prompt string) error

// AnswerGuard checks an answer as it streams: it is called with the
// step's text so far after every piece. A non-nil error stops the answer:
// the turn ends response_blocked with a governance notice carrying the
// error's message. Guards see text the consumer has already been sent up
// to that piece; they stop what follows. A guard that panics stops the
// answer too.
type AnswerGuard func(ctx context.Context, answer string) error

// Config configures an agent. Model is the only field without a default.
type Config struct {
	// Name is the agent's name, part of every session key. Default "default".
	Name string
	// Instructions go in front of every request as a system message. They
	// are never stored.
	Instructions string
	// Model answers. Required.
	Model model.Model
	// Tools the model may call.
	Tools []*tool.Tool
	// Store keeps the sessions. Default: the file store in the user's
	// data folder (store.Open(ctx, "file:"), which this package imports),
	// so that an agent keeps its sessions with no store configured.
	Store store.Store
	// Scope of the sessions: ScopeProject (default) or ScopeUser.
	Scope Scope
	// ToolMode of new sessions: ask (default), auto or off.
	ToolMode transcript.ToolMode

	// MaxMessages caps the history window (history rule 6); default 200,
	// negative for no cap.
	MaxMessages int
	// HistoryBudget caps the history in tokens (history rule 7); zero for
	// no budget.
	HistoryBudget int
	// Counter counts tokens for HistoryBudget; nil for the default.
	Counter history.Counter

	// SessionTokenBudget ends a turn with error over_budget once a
	// session's turns have used this many tokens (input + output); zero for
	// no limit.
	SessionTokenBudget int64
	// AgentTokenBudget does the same for all the turns this Agent value has
	// run since it was created; zero for no limit.
	AgentTokenBudget int64
	// MaxSteps bounds the model requests of one turn; default 16.
	MaxSteps int
	// ToolTimeout bounds a tool call whose tool has no timeout of its own;
	// default one minute.
	ToolTimeout time.Duration

	PromptGuards []PromptGuard
	AnswerGuards []AnswerGuard

	// Observers receive content-free events.
	Observers []Observer
	// Logger receives content-free log records; default slog.Default().
	Logger *slog.Logger

	// TTL expires sessions idle this long; zero keeps them until deleted,
	// unless the store expires sessions itself (store.Expiring, e.g. a
	// ttl= in its URL), whose TTL is then used.
	// Each turn written and each approval resolved resets the clock. An
	// expired session with no approval pending starts fresh under the same
	// id; one with an approval pending fails with store.ErrSessionExpired.
	TTL time.Duration
	// Retention, when not zero, is applied to the new session's namespace
	// (store.Prune) each time a session is created, on top of whatever the
	// store keeps by itself.
	Retention store.Retention

	// BusyTimeout is how long a turn waits for another process's
	// unfinished turn on the same session before failing with ErrBusy;
	// default 30 seconds. A turn left unfinished for longer than StaleTurn
	// (default 2 minutes) by a process that died is closed as cancelled.
	BusyTimeout time.Duration
	StaleTurn   time.Duration

	// MaxWatchers bounds the watchers (Session.Watch) of all the agent's
	// sessions at once, and MaxSessionWatchers those of one session;
	// a watch over either is ErrTooManyWatchers. Defaults 10000 and 100;
	// negative for no bound.
	MaxWatchers, MaxSessionWatchers int

	// Clock returns the time; default time.Now. Tests inject one.
	Clock func() time.Time

	// Compaction sets when sessions are compacted by themselves and how
	// (history rule 10); the zero value never compacts on its own, and
	// Session.Compact works either way.
	Compaction Compaction
}

// Agent runs sessions of one configuration. It is safe for concurrent
// use: calls on one session run one after the other, in arrival order;
// calls on different sessions run concurrently.
type Agent struct {
	cfg       Config
	tools     map[string]*tool.Tool
	specs     []model.ToolSpec
	modelName string
	obs       observers
	log       *slog.Logger
	reg       *registry
	views     *pageViews
	live      *liveHub
	used      atomic.Int64 // tokens used by this agent's turns
	closed    atomic.Bool
	bg        background // automatic compactions
}

// New returns an agent for cfg.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("spool: Config.Model is required")
	}
	if cfg.Name == "" {
		cfg.Name = "default"
	}
	if err := store.ValidateNamespace(store.Namespace{Agent: cfg.Name}); err != nil {
		return nil, fmt.Errorf("spool: agent name: %w", err)
	}
	switch cfg.Scope {
	case "":
		cfg.Scope = ScopeProject
	case ScopeProject, ScopeUser:
	default:
		return nil, fmt.Errorf("spool: unknown scope %q (project or user)", cfg.Scope)
	}
	if cfg.ToolMode == "" {
		cfg.ToolMode = transcript.ToolModeAsk
	}
	if !cfg.ToolMode.Valid() {
		return nil, fmt.Errorf("spool: unknown tool mode %q (ask, auto or off)", cfg.ToolMode)
	}
	if cfg.MaxMessages == 0 {
		cfg.MaxMessages = 200
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 16
	}
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = time.Minute
	}
	if cfg.BusyTimeout <= 0 {
		cfg.BusyTimeout = 30 * time.Second
	}
	if cfg.StaleTurn <= 0 {
		cfg.StaleTurn = 2 * time.Minute
	}
	if cfg.MaxWatchers == 0 {
		cfg.MaxWatchers = 10000
	}
	if cfg.MaxSessionWatchers == 0 {
		cfg.MaxSessionWatchers = 100
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Compaction.check(); err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		s, err := store.Open(context.Background(), "file:")
		if err != nil {
			return nil, fmt.Errorf("spool: default store: %w", err)
		}
		cfg.Store = s
	}
	if e, ok := cfg.Store.(store.Expiring); ok && cfg.TTL == 0 {
		cfg.TTL = e.TTL()
	}
	log := cfg.Logger.With("agent", cfg.Name)
	a := &Agent{
		cfg:   cfg,
		tools: map[string]*tool.Tool{},
		obs:   observers{list: cfg.Observers, log: log, once: new(sync.Once)},
		log:   log,
		reg:   newRegistry(1024),
		views: newPageViews(1024),
		live:  newLiveHub(cfg.MaxSessionWatchers, cfg.MaxWatchers),
	}
	for _, t := range cfg.Tools {
		if _, dup := a.tools[t.Name()]; dup {
			return nil, fmt.Errorf("spool: two tools named %q", t.Name())
		}
		a.tools[t.Name()] = t
		a.specs = append(a.specs, t.Spec())
	}
	if n, ok := cfg.Model.(model.Named); ok {
		a.modelName = n.Name()
	}
	return a, nil
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.cfg.Name }

// Scope returns the agent's scope.
func (a *Agent) Scope() Scope { return a.cfg.Scope }

// Store returns the agent's store.
func (a *Agent) Store() store.Store { return a.cfg.Store }

// Close closes the agent's store if it holds resources. Turns still
// running finish first only if their callers wait for them; Close does not.
// An automatic compaction in progress is stopped (its summarizer's context
// is cancelled; nothing half-done is appended) and waited for.
func (a *Agent) Close() error {
	a.closed.Store(true)
	a.bg.stop()
	return store.Close(a.cfg.Store)
}

type userKey struct{}

// ContextWithUser returns a context that carries the signed-in user's id. A
// user-scoped agent keys every session by it; a project-scoped agent
// ignores it.
func ContextWithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFromContext returns the user ContextWithUser put in ctx.
func UserFromContext(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok && u != ""
}

// namespace returns the store namespace a call with ctx reaches.
func (a *Agent) namespace(ctx context.Context) (store.Namespace, error) {
	s := store.Namespace{Agent: a.cfg.Name}
	if a.cfg.Scope == ScopeUser {
		u, ok := UserFromContext(ctx)
		if !ok {
			return s, ErrNoUser
		}
		s.Owner = u
		if err := store.ValidateNamespace(s); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (a *Agent) key(ctx context.Context, id string) (store.Key, error) {
	s, err := a.namespace(ctx)
	if err != nil {
		return store.Key{}, err
	}
	k := s.Key(id)
	return k, store.ValidateKey(k)
}

// ListSessions returns a page of the caller's sessions (the project's, or
// the user's for a user-scoped agent), newest activity first.
func (a *Agent) ListSessions(ctx context.Context, opt store.ListOptions) (store.SessionPage, error) {
	s, err := a.namespace(ctx)
	if err != nil {
		return store.SessionPage{}, err
	}
	return a.cfg.Store.List(ctx, s, opt)
}

// SessionInfo returns one session's info, or store.ErrNotFound.
func (a *Agent) SessionInfo(ctx context.Context, id string) (store.SessionInfo, error) {
	k, err := a.key(ctx, id)
	if err != nil {
		return store.SessionInfo{}, err
	}
	return store.Stat(ctx, a.cfg.Store, k)
}

// DeleteSession deletes a session and everything in it, pending approvals
// included; the same id then starts empty. It waits for a running turn on
// the session to finish, in this process and (with a store that locks) in
// others. Deleting an unknown session is not an error.
func (a *Agent) DeleteSession(ctx context.Context, id string) error {
	k, err := a.key(ctx, id)
	if err != nil {
		return err
	}
	sl, err := a.reg.acquire(ctx, k, writing)
	if err != nil {
		return err
	}
	defer a.reg.release(sl, writing)
	// The store's lock too: a delete waits for a turn running on the
	// session in another process instead of cutting into it.
	unlock, err := a.lockStore(ctx, k)
	if err != nil {
		return err
	}
	defer unlock()
	sl.st = nil
	a.views.drop(k)
	return a.cfg.Store.Delete(ctx, k)
}

// Search finds entries of the caller's sessions whose text contains every
// word of q (store.Search: natively where the store can, by a scan
// elsewhere).
func (a *Agent) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	s, err := a.namespace(ctx)
	if err != nil {
		return nil, err
	}
	return store.Search(ctx, a.cfg.Store, s, q)
}

// Invoke sends prompt to session id, creating it if the store has never
// seen it; an empty id means "default". It is the one-call form of
// Session + Send.
func (a *Agent) Invoke(ctx context.Context, prompt, sessionID string) (*Result, error) {
	if sessionID == "" {
		sessionID = "default"
	}
	s, err := a.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return s.Send(ctx, prompt)
}

func (a *Agent) now() time.Time { return a.cfg.Clock().UTC() }

// historyOptions returns the history options of a model request.
func (a *Agent) historyOptions() history.Options {
	return history.Options{
		Instructions: a.cfg.Instructions,
		MaxMessages:  a.cfg.MaxMessages,
		Budget:       a.cfg.HistoryBudget,
		Counter:      a.cfg.Counter,
	}
}

// NewSessionID returns a fresh session id: "ses_" and a ULID.
func NewSessionID() string {
	return "ses_" + transcript.NewID(time.Now())
}
