package spool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/store/sqlitestore"
	"github.com/spool-go/spool/transcript"
)

func TestSendRecordsTheTurn(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Instructions: "You are terse."})
	s, err := a.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ID(), "ses_") || len(s.ID()) != 30 {
		t.Fatalf("generated id %q, want ses_<ulid>", s.ID())
	}
	res, err := s.Send(ctx, "hello there")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != transcript.StatusOK || res.Text != "echo: hello there" || res.SessionID != s.ID() {
		t.Fatalf("Send = %+v, want ok with the echo of the prompt in this session", res)
	}
	if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
		t.Fatalf("usage %+v, want tokens counted both ways", res.Usage)
	}
	entries, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []transcript.Type{transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeTurnEnd}
	if !slices.Equal(types(entries), want) {
		t.Fatalf("transcript %v, want %v", types(entries), want)
	}
	checkWellFormed(t, entries)
	if entries[2].Status != transcript.StatusOK {
		t.Fatalf("turn end status %q, want ok", entries[2].Status)
	}
	for _, e := range entries {
		if strings.Contains(string(e.Data), "terse") {
			t.Fatalf("instructions were stored: %s, want them never stored", e.Data)
		}
	}
	h, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Role != model.RoleSystem || h[0].Content != "You are terse." {
		t.Fatalf("History = %+v, want the instructions as a system message, then the turn", h)
	}
}

func TestRequestsCarryTheHistory(t *testing.T) {
	ctx := t.Context()
	var seen [][]model.Message
	m := scriptFunc(func(req *model.Request) []model.Event {
		seen = append(seen, slices.Clone(req.Messages))
		return []model.Event{text("ok")}
	})
	a := newAgent(t, spool.Config{Model: m, Instructions: "be kind", MaxMessages: 3})
	s := session(t, a, ctx, "h")
	for _, p := range []string{"one", "two", "three"} {
		if _, err := s.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	last := seen[len(seen)-1]
	// Window of 3 starting on a user message: "three" alone would be 1;
	// the turn before adds 2 ("two", "ok") → user two, ok, user three.
	got := []string{}
	for _, m := range last {
		got = append(got, string(m.Role)+":"+m.Content)
	}
	want := []string{"system:be kind", "user:two", "assistant:ok", "user:three"}
	if !slices.Equal(got, want) {
		t.Fatalf("request history %q, want %q", got, want)
	}
}

func TestOpenSession(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	a := newAgent(t, spool.Config{Store: st})
	if _, err := a.OpenSession(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OpenSession of an unknown id: %v, want ErrNotFound", err)
	}
	s, err := a.Session(ctx, "chosen-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeOff); err != nil {
		t.Fatal(err)
	}
	// A new agent on the same store: a restart.
	b := newAgent(t, spool.Config{Store: st})
	o, err := b.OpenSession(ctx, "chosen-1")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := o.ToolMode(ctx); err != nil || m != transcript.ToolModeOff {
		t.Fatalf("tool mode after reopen %q, %v; want off", m, err)
	}
	res, err := o.Send(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "echo: second" {
		t.Fatalf("text %q, want %q", res.Text, "echo: second")
	}
	page, err := b.ListSessions(ctx, store.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != "chosen-1" || page.Sessions[0].Title != "first" {
		t.Fatalf("ListSessions = %+v, %v; want the one session, titled by its first prompt", page, err)
	}
	if err := b.DeleteSession(ctx, "chosen-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenSession(ctx, "chosen-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OpenSession after DeleteSession = %v, want store.ErrNotFound", err)
	}
	if _, err := a.Session(ctx, "../etc"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Session(\"../etc\") = %v, want store.ErrInvalidKey", err)
	}
}

func TestUserScope(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Scope: spool.ScopeUser})
	if _, err := a.NewSession(ctx); !errors.Is(err, spool.ErrNoUser) {
		t.Fatalf("NewSession without a user = %v, want ErrNoUser", err)
	}
	if _, err := a.ListSessions(ctx, store.ListOptions{}); !errors.Is(err, spool.ErrNoUser) {
		t.Fatalf("ListSessions without a user = %v, want ErrNoUser", err)
	}
	alice := spool.ContextWithUser(ctx, "alice")
	bob := spool.ContextWithUser(ctx, "bob")
	s, err := a.Session(alice, "shared-id")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(alice, "alice's secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenSession(bob, "shared-id"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob's OpenSession of alice's session = %v, want store.ErrNotFound", err)
	}
	if _, err := a.SessionInfo(bob, "shared-id"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob's SessionInfo of alice's session = %v, want store.ErrNotFound", err)
	}
	page, err := a.ListSessions(bob, store.ListOptions{})
	if err != nil || len(page.Sessions) != 0 {
		t.Fatalf("bob's ListSessions = %+v, %v; want none", page.Sessions, err)
	}
	if err := a.DeleteSession(bob, "shared-id"); err != nil {
		t.Fatal(err)
	}
	// Bob's own session under the same id is his, and empty.
	bs := session(t, a, bob, "shared-id")
	msgs, err := bs.Messages(bob, 0)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("bob's Messages = %+v, %v; want none", msgs, err)
	}
	as, err := a.OpenSession(alice, "shared-id")
	if err != nil {
		t.Fatalf("alice's OpenSession after bob's delete: %v, want her session", err)
	}
	msgs, err = as.Messages(alice, 0)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("alice's Messages after bob's delete = %+v, %v; want her two", msgs, err)
	}
	if _, err := a.Session(spool.ContextWithUser(ctx, "../x"), "s"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Session with the user \"../x\" = %v, want store.ErrInvalidKey", err)
	}
}

func TestInvokeDefaultsToDefaultSession(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{})
	res, err := a.Invoke(ctx, "hi", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "default" || res.Text != "echo: hi" {
		t.Fatalf("Invoke = %+v, want the answer in session default", res)
	}
	if _, err := a.Invoke(ctx, "  ", ""); !errors.Is(err, spool.ErrEmptyPrompt) {
		t.Fatalf("Invoke of a blank prompt = %v, want ErrEmptyPrompt", err)
	}
}

func TestPaging(t *testing.T) {
	for _, c := range []struct {
		name string
		st   store.Store
	}{{"ranges", memstore.New()}, {"four methods only", plainStore{memstore.New()}}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			st := c.st
			a := newAgent(t, spool.Config{Store: st})
			s := session(t, a, ctx, "long")
			for i := range 30 {
				if _, err := s.Send(ctx, "message "+string(rune('A'+i%26))); err != nil {
					t.Fatal(err)
				}
			}
			all, err := s.Messages(ctx, 0)
			if err != nil || len(all) != 60 {
				t.Fatalf("Messages = %d, %v; want 60", len(all), err)
			}
			for _, order := range []spool.Order{spool.OrderDesc, spool.OrderAsc} {
				var got []spool.Message
				cursor := ""
				pages := 0
				for {
					p, err := s.Page(ctx, spool.PageOptions{Limit: 7, Order: order, Cursor: cursor})
					if err != nil {
						t.Fatal(err)
					}
					pages++
					if len(p.Messages) > 7 {
						t.Fatalf("a page of %d messages, want at most 7", len(p.Messages))
					}
					got = append(got, p.Messages...)
					if p.NextCursor == "" {
						break
					}
					cursor = p.NextCursor
				}
				if order == spool.OrderDesc {
					slices.Reverse(got)
				}
				if len(got) != 60 || pages != 9 {
					t.Fatalf("%s: %d messages in %d pages, want 60 in 9", order, len(got), pages)
				}
				for i := range got {
					if got[i].ID != all[i].ID {
						t.Fatalf("%s: message %d is %s, want %s (overlap or gap)", order, i, got[i].ID, all[i].ID)
					}
				}
			}
			last, err := s.Messages(ctx, 3)
			if err != nil || len(last) != 3 || last[2].ID != all[59].ID || last[0].ID != all[57].ID {
				t.Fatalf("Messages(3) = %+v, %v; want the newest three, oldest first", last, err)
			}
			// A cursor of another session, or of the other order, is refused.
			p, _ := s.Page(ctx, spool.PageOptions{Limit: 2})
			other := session(t, a, ctx, "other")
			for _, c := range []struct {
				name  string
				s     *spool.Session
				order spool.Order
				c     string
			}{
				{"another session's", other, spool.OrderDesc, p.NextCursor},
				{"the other order's", s, spool.OrderAsc, p.NextCursor},
				{"not base64", s, spool.OrderDesc, "garbage!"},
				{"too short", s, spool.OrderDesc, "AAAA"},
			} {
				t.Run(c.name, func(t *testing.T) {
					if _, err := c.s.Page(ctx, spool.PageOptions{Order: c.order, Cursor: c.c}); !errors.Is(err, store.ErrInvalidCursor) {
						t.Fatalf("Page with %s cursor %q = %v, want store.ErrInvalidCursor", c.name, c.c, err)
					}
				})
			}
		})
	}
}

// TestTTL checks expiry by the runtime's clock on every store: the
// runtime applies the TTL itself wherever the store does not.
func TestTTL(t *testing.T) {
	for _, name := range teststores.Names {
		t.Run(name, func(t *testing.T) { testTTL(t, teststores.All()[name](t)) })
	}
}

func testTTL(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	a := newAgent(t, spool.Config{Store: st, TTL: time.Hour, Clock: clock, Tools: approvalTools(nil)})
	s := session(t, a, ctx, "idle")
	if _, err := s.Send(ctx, "remember me"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Minute)
	if _, err := s.Send(ctx, "still here"); err != nil {
		t.Fatal(err)
	}
	// Each turn resets the clock: 59 more minutes is fine.
	now = now.Add(59 * time.Minute)
	msgs, err := s.Messages(ctx, 0)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("Messages before expiry: %d, %v; want 4", len(msgs), err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.Send(ctx, "fresh start"); err != nil {
		t.Fatal(err)
	}
	msgs, err = s.Messages(ctx, 0)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "fresh start" {
		t.Fatalf("Messages after expiry = %+v, %v; want the fresh start only", msgs, err)
	}

	// With an approval pending, expiry is an error naming the session.
	p := session(t, a, ctx, "waiting")
	res, err := p.Send(ctx, `/call delete_order {"order":7}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("Send = %+v, %v; want it awaiting approval", res, err)
	}
	now = now.Add(2 * time.Hour)
	_, err = p.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	if !errors.Is(err, store.ErrSessionExpired) || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("late approval: %v, want ErrSessionExpired naming the session", err)
	}
	if _, err := a.OpenSession(ctx, "waiting"); !errors.Is(err, store.ErrSessionExpired) {
		t.Fatalf("OpenSession of a session expired with an approval pending = %v, want store.ErrSessionExpired", err)
	}
}

// scriptFunc returns an echo model answering with script.
func scriptFunc(script func(*model.Request) []model.Event) model.Model {
	return echoScript(script)
}

// TestLongSessionHistoryIsExact checks that reading only the newest part
// of a long transcript gives exactly the history of the whole, with a
// turn of many tool steps and blocked questions at the window's edge.
func TestLongSessionHistoryIsExact(t *testing.T) {
	ctx := t.Context()
	for _, cfg := range []spool.Config{{MaxMessages: 5}, {MaxMessages: 200}, {MaxMessages: 7, HistoryBudget: 60}, {MaxMessages: -1, HistoryBudget: 300}} {
		var last []model.Message
		cfg.Model = scriptFunc(func(req *model.Request) []model.Event {
			last = slices.Clone(req.Messages)
			return []model.Event{text("ok")}
		})
		cfg.PromptGuards = []spool.PromptGuard{func(ctx context.Context, p string) error {
			if strings.HasPrefix(p, "refuse") {
				return errors.New("no")
			}
			return nil
		}}
		a := newAgent(t, cfg)
		s := session(t, a, ctx, "long")
		for i := range 700 {
			p := fmt.Sprintf("prompt %d", i)
			if i%7 == 3 {
				p = "refuse " + p
			}
			if _, err := s.Send(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Send(ctx, "the last one"); err != nil {
			t.Fatal(err)
		}
		entries, _ := s.Transcript(ctx)
		// The request was built before its answer: drop the answer and end.
		want := history.Build(entries[:len(entries)-2], history.Options{MaxMessages: cfg.MaxMessages, Budget: cfg.HistoryBudget})
		if fmt.Sprint(last) != fmt.Sprint(want) {
			t.Fatalf("%+v: request history\n%v\nwant\n%v", cfg.MaxMessages, last, want)
		}
	}
}

// TestStoreTTLIsAdopted: a store that expires sessions itself (a ttl in
// its URL) gives the runtime its TTL, so an approval left pending past it
// is ErrSessionExpired rather than a session that silently vanished.
func TestStoreTTLIsAdopted(t *testing.T) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	st, err := sqlitestore.New(ctx, t.TempDir()+"/ttl.db", sqlitestore.WithTTL(time.Hour), sqlitestore.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := newAgent(t, spool.Config{Store: st, Clock: clock, Tools: approvalTools(nil)})
	s := session(t, a, ctx, "late")
	res, err := s.Send(ctx, `/call delete_order {"order":1}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("Send = %+v, %v; want it awaiting approval", res, err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce); !errors.Is(err, store.ErrSessionExpired) {
		t.Fatalf("late approval with the store's TTL: %v, want ErrSessionExpired", err)
	}
	other := session(t, a, ctx, "idle")
	if _, err := other.Send(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := other.Send(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	msgs, err := other.Messages(ctx, 0)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "fresh" {
		t.Fatalf("Messages after expiry = %+v, %v; want the fresh turn only", msgs, err)
	}
}
