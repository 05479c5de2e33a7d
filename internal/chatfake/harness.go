package chatfake

import (
	"context"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/apicontract"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// Harness is an agent served by server.New with one channel driver, as a
// driver's tests need it: the echo model, the tool save_note that needs
// approval, and the observations the agent received.
type Harness struct {
	Agent  *spool.Agent
	Server *server.Server
	URL    string // the server's base URL

	mu    sync.Mutex
	obs   []spool.Observation
	close func()
}

// HarnessOptions adjust a Harness; the zero value is a project-scoped
// agent on a memstore with the plain echo model.
type HarnessOptions struct {
	Store store.Store
	Model model.Model
	Scope spool.Scope
}

// NoteTool is save_note: it needs approval and returns "saved <text>".
func NoteTool() *tool.Tool {
	type args struct {
		Text string `json:"text"`
	}
	return tool.New("save_note", "Save a note.", func(ctx context.Context, a args) (string, error) {
		return "saved " + a.Text, nil
	}, tool.RequireApproval())
}

// Client is an HTTP client for a driver whose retries wait milliseconds,
// not seconds (a 429's Retry-After is still waited in full).
func Client() *http.Client {
	return &http.Client{Transport: &channel.Transport{Backoff: 10 * time.Millisecond}}
}

// Paused is a model whose answer is first, then, once Resume is called,
// rest: a test acts on the platform (deletes the message) between two
// updates of one streamed answer, whatever the timing.
type Paused struct {
	first, rest string
	resume      chan struct{}
	once        sync.Once
}

// NewPaused returns a model answering first and, after Resume, rest.
func NewPaused(first, rest string) *Paused {
	return &Paused{first: first, rest: rest, resume: make(chan struct{})}
}

// Resume lets the answers go on to their rest.
func (m *Paused) Resume() { m.once.Do(func() { close(m.resume) }) }

// Stream implements model.Model.
func (m *Paused) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if !yield(model.Event{Kind: model.EventText, Text: m.first}, nil) {
			return
		}
		select {
		case <-m.resume:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
			return
		}
		yield(model.Event{Kind: model.EventText, Text: m.rest}, nil)
	}
}

// NewHarness serves drv for a new agent; the test's end closes both.
func NewHarness(t testing.TB, o HarnessOptions, drv channel.Driver) *Harness {
	t.Helper()
	if o.Store == nil {
		o.Store = memstore.New()
	}
	if o.Model == nil {
		o.Model = echo.New()
	}
	h := &Harness{}
	agent, err := spool.New(spool.Config{
		Model: o.Model, Store: o.Store, Scope: o.Scope, Tools: []*tool.Tool{NoteTool()},
		Observers: []spool.Observer{spool.ObserverFunc(func(ctx context.Context, ob spool.Observation) {
			h.mu.Lock()
			h.obs = append(h.obs, ob)
			h.mu.Unlock()
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(agent, server.Options{Channels: []channel.Driver{drv}, Logger: slog.New(slog.DiscardHandler)})
	// The webhooks' responses are held to the OpenAPI document too.
	srv := httptest.NewServer(apicontract.Record(t, s))
	h.Agent, h.Server, h.URL = agent, s, srv.URL
	var once sync.Once
	h.close = func() { once.Do(func() { s.Close(); srv.Close() }) }
	t.Cleanup(h.close)
	return h
}

// Close stops the server and the driver at once: turns still running
// stop, as in a process killed.
func (h *Harness) Close() { h.close() }

// Stop stops the server as spool serve does on SIGTERM: the driver takes
// no more messages, running turns finish, then it closes.
func (h *Harness) Stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.close()
}

// Observed reports whether the agent received an observation of kind from
// channel with the error code.
func (h *Harness) Observed(kind spool.ObservationKind, channel, code string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.obs {
		if o.Kind == kind && o.Channel == channel && string(o.ErrorCode) == code {
			return true
		}
	}
	return false
}

// Turns counts the user messages of session id (of owner, for user
// scope).
func (h *Harness) Turns(t testing.TB, id, owner string) int {
	t.Helper()
	entries, err := h.Agent.Store().Read(context.Background(), store.Key{Agent: h.Agent.Name(), Owner: owner, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Type == transcript.TypeUserMessage {
			n++
		}
	}
	return n
}

// Untouched fails t if the agent's store holds any session or delivery:
// what a refused request must leave.
func (h *Harness) Untouched(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	page, _ := h.Agent.Store().List(ctx, store.Namespace{Agent: h.Agent.Name()}, store.ListOptions{})
	dl, _ := h.Agent.Store().List(ctx, store.Namespace{Agent: channel.LedgerAgent, Owner: h.Agent.Name()}, store.ListOptions{})
	if len(page.Sessions) != 0 || len(dl.Sessions) != 0 {
		t.Fatalf("a refused request touched the store: %v %v", page.Sessions, dl.Sessions)
	}
}
