package spool_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// newAgent returns an agent on st (a new memstore when nil) with the echo
// model unless cfg says otherwise.
func newAgent(t *testing.T, cfg spool.Config) *spool.Agent {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = echo.New()
	}
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	a, err := spool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// plainStore hides every optional capability of a store: only the four
// required methods remain, as with a user's minimal store.
type plainStore struct{ s store.Store }

func (p plainStore) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	return p.s.Append(ctx, k, e)
}
func (p plainStore) Read(ctx context.Context, k store.Key) ([]transcript.Entry, error) {
	return p.s.Read(ctx, k)
}
func (p plainStore) List(ctx context.Context, s store.Namespace, o store.ListOptions) (store.SessionPage, error) {
	return p.s.List(ctx, s, o)
}
func (p plainStore) Delete(ctx context.Context, k store.Key) error { return p.s.Delete(ctx, k) }

// failingStore fails every append once armed.
type failingStore struct {
	plainStore
	fail atomic.Bool
}

var errDisk = errors.New("disk on fire")

func (f *failingStore) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	if f.fail.Load() {
		return errDisk
	}
	return f.plainStore.Append(ctx, k, e)
}

// types returns the entry types of a transcript, in order.
func types(entries []transcript.Entry) []transcript.Type {
	out := make([]transcript.Type, len(entries))
	for i, e := range entries {
		out[i] = e.Type
	}
	return out
}

// checkWellFormed checks that a transcript is one chain and that its turns
// never interleave: each turn's entries are contiguous, start with a user
// message (or a session.mode, session.title, session.branch or session.fork entry of its
// own; a regenerate's or an edit's marker, before its user message) and
// end with at most one turn end.
// checkEnded fails t when a turn of entries has no end: a transcript
// that a failure left behind, once the next turn ran, has none open.
func checkEnded(t *testing.T, entries []transcript.Entry) {
	t.Helper()
	ends := map[string]bool{}
	for _, e := range entries {
		if e.Type == transcript.TypeTurnEnd {
			ends[e.TurnID] = true
		}
	}
	for _, e := range entries {
		if !ends[e.TurnID] {
			t.Fatalf("turn %s (%s) left without an end: %v", e.TurnID, e.Type, types(entries))
		}
	}
}

func checkWellFormed(t *testing.T, entries []transcript.Entry) {
	t.Helper()
	seen := map[string]bool{}
	ended := map[string]bool{}
	prevTurn := ""
	for i, e := range entries {
		want := ""
		if i > 0 {
			want = entries[i-1].ID
		}
		if e.ParentID != want {
			t.Fatalf("entry %d: parent %q, want %q: not a chain", i, e.ParentID, want)
		}
		if e.TurnID != prevTurn {
			if seen[e.TurnID] {
				t.Fatalf("entry %d: turn %s resumes after another turn: turns interleave", i, e.TurnID)
			}
			switch e.Type {
			case transcript.TypeUserMessage, transcript.TypeSessionMode, transcript.TypeSessionTitle, transcript.TypeBranch, transcript.TypeFork,
				transcript.TypeCompaction, transcript.TypeGovernanceNotice:
			default:
				t.Fatalf("entry %d: turn %s starts with %s", i, e.TurnID, e.Type)
			}
			seen[e.TurnID] = true
			prevTurn = e.TurnID
		}
		if ended[e.TurnID] {
			t.Fatalf("entry %d: %s after the end of turn %s", i, e.Type, e.TurnID)
		}
		if e.Type == transcript.TypeTurnEnd {
			ended[e.TurnID] = true
		}
	}
}

// scripted returns a model that plays the given responses in order.
func scripted(responses ...[]model.Event) *echo.Model {
	return echo.New(echo.WithResponses(responses...))
}

func text(s string) model.Event { return model.Event{Kind: model.EventText, Text: s} }

func call(id, name, args string) model.Event {
	return model.Event{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{ID: id, Name: name, Arguments: []byte(args)}}
}

func echoScript(script func(*model.Request) []model.Event) *echo.Model {
	return echo.New(echo.WithScript(script))
}

type storeT = store.Store

// session returns a's session id for ctx, failing the test when a refuses
// it.
func session(t testing.TB, a *spool.Agent, ctx context.Context, id string) *spool.Session {
	t.Helper()
	s, err := a.Session(ctx, id)
	if err != nil {
		t.Fatalf("Session(%q) = %v, want a session", id, err)
	}
	return s
}
