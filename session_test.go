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
	ctx := context.Background()
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
		t.Fatalf("result %+v", res)
	}
	if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
		t.Fatalf("usage %+v", res.Usage)
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
		t.Fatalf("turn end status %q", entries[2].Status)
	}
	for _, e := range entries {
		if strings.Contains(string(e.Data), "terse") {
			t.Fatalf("instructions were stored: %s", e.Data)
		}
	}
	h, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Role != model.RoleSystem || h[0].Content != "You are terse." {
		t.Fatalf("history %+v", h)
	}
}

func TestRequestsCarryTheHistory(t *testing.T) {
	ctx := context.Background()
	var seen [][]model.Message
	m := scriptFunc(func(req *model.Request) []model.Event {
		seen = append(seen, slices.Clone(req.Messages))
		return []model.Event{text("ok")}
	})
	a := newAgent(t, spool.Config{Model: m, Instructions: "be kind", MaxMessages: 3})
	s, _ := a.Session(ctx, "h")
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
	ctx := context.Background()
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
	if m, _ := o.ToolMode(ctx); m != transcript.ToolModeOff {
		t.Fatalf("tool mode after reopen %q, want off", m)
	}
	res, err := o.Send(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "echo: second" {
		t.Fatalf("text %q", res.Text)
	}
	page, err := b.ListSessions(ctx, store.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != "chosen-1" || page.Sessions[0].Title != "first" {
		t.Fatalf("list %+v, %v", page, err)
	}
	if err := b.DeleteSession(ctx, "chosen-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenSession(ctx, "chosen-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := a.Session(ctx, "../etc"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("bad id: %v", err)
	}
}

func TestUserScope(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, spool.Config{Scope: spool.ScopeUser})
	if _, err := a.NewSession(ctx); !errors.Is(err, spool.ErrNoUser) {
		t.Fatalf("no user: %v", err)
	}
	if _, err := a.ListSessions(ctx, store.ListOptions{}); !errors.Is(err, spool.ErrNoUser) {
		t.Fatalf("no user list: %v", err)
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
		t.Fatalf("bob opened alice's session: %v", err)
	}
	if _, err := a.SessionInfo(bob, "shared-id"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob got alice's info: %v", err)
	}
	page, _ := a.ListSessions(bob, store.ListOptions{})
	if len(page.Sessions) != 0 {
		t.Fatalf("bob lists %+v", page.Sessions)
	}
	if err := a.DeleteSession(bob, "shared-id"); err != nil {
		t.Fatal(err)
	}
	// Bob's own session under the same id is his, and empty.
	bs, _ := a.Session(bob, "shared-id")
	msgs, _ := bs.Messages(bob, 0)
	if len(msgs) != 0 {
		t.Fatalf("bob sees %+v", msgs)
	}
	as, _ := a.OpenSession(alice, "shared-id")
	msgs, _ = as.Messages(alice, 0)
	if len(msgs) != 2 {
		t.Fatalf("alice's session after bob's delete: %+v", msgs)
	}
	if _, err := a.Session(spool.ContextWithUser(ctx, "../x"), "s"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("bad user: %v", err)
	}
}

func TestInvokeDefaultsToDefaultSession(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, spool.Config{})
	res, err := a.Invoke(ctx, "hi", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "default" || res.Text != "echo: hi" {
		t.Fatalf("%+v", res)
	}
	if _, err := a.Invoke(ctx, "  ", ""); !errors.Is(err, spool.ErrEmptyPrompt) {
		t.Fatalf("blank prompt: %v", err)
	}
}

func TestPaging(t *testing.T) {
	ctx := context.Background()
	for _, st := range []store.Store{memstore.New(), plainStore{memstore.New()}} {
		a := newAgent(t, spool.Config{Store: st})
		s, _ := a.Session(ctx, "long")
		for i := range 30 {
			if _, err := s.Send(ctx, "message "+string(rune('A'+i%26))); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.Messages(ctx, 0)
		if err != nil || len(all) != 60 {
			t.Fatalf("all messages: %d, %v", len(all), err)
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
					t.Fatalf("page of %d", len(p.Messages))
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
				t.Fatalf("%s: %d messages in %d pages", order, len(got), pages)
			}
			for i := range got {
				if got[i].ID != all[i].ID {
					t.Fatalf("%s: message %d is %s, want %s (overlap or gap)", order, i, got[i].ID, all[i].ID)
				}
			}
		}
		last, _ := s.Messages(ctx, 3)
		if len(last) != 3 || last[2].ID != all[59].ID || last[0].ID != all[57].ID {
			t.Fatalf("Messages(3) = %+v", last)
		}
		// A cursor of another session, or of the other order, is refused.
		p, _ := s.Page(ctx, spool.PageOptions{Limit: 2})
		other, _ := a.Session(ctx, "other")
		for _, c := range []struct {
			s     *spool.Session
			order spool.Order
			c     string
		}{{other, spool.OrderDesc, p.NextCursor}, {s, spool.OrderAsc, p.NextCursor}, {s, spool.OrderDesc, "garbage!"}, {s, spool.OrderDesc, "AAAA"}} {
			if _, err := c.s.Page(ctx, spool.PageOptions{Order: c.order, Cursor: c.c}); !errors.Is(err, store.ErrInvalidCursor) {
				t.Fatalf("cursor %q: %v, want ErrInvalidCursor", c.c, err)
			}
		}
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
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	a := newAgent(t, spool.Config{Store: st, TTL: time.Hour, Clock: clock, Tools: approvalTools(nil)})
	s, _ := a.Session(ctx, "idle")
	if _, err := s.Send(ctx, "remember me"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Minute)
	if _, err := s.Send(ctx, "still here"); err != nil {
		t.Fatal(err)
	}
	// Each turn resets the clock: 59 more minutes is fine.
	now = now.Add(59 * time.Minute)
	msgs, _ := s.Messages(ctx, 0)
	if len(msgs) != 4 {
		t.Fatalf("%d messages before expiry", len(msgs))
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.Send(ctx, "fresh start"); err != nil {
		t.Fatal(err)
	}
	msgs, _ = s.Messages(ctx, 0)
	if len(msgs) != 2 || msgs[0].Text != "fresh start" {
		t.Fatalf("expired session did not start fresh: %+v", msgs)
	}

	// With an approval pending, expiry is an error naming the session.
	p, _ := a.Session(ctx, "waiting")
	res, err := p.Send(ctx, `/call delete_order {"order":7}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	now = now.Add(2 * time.Hour)
	_, err = p.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	if !errors.Is(err, store.ErrSessionExpired) || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("late approval: %v, want ErrSessionExpired naming the session", err)
	}
	if _, err := a.OpenSession(ctx, "waiting"); !errors.Is(err, store.ErrSessionExpired) {
		t.Fatalf("open expired: %v", err)
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
	ctx := context.Background()
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
		s, _ := a.Session(ctx, "long")
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
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	st, err := sqlitestore.New(ctx, t.TempDir()+"/ttl.db", sqlitestore.WithTTL(time.Hour), sqlitestore.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := newAgent(t, spool.Config{Store: st, Clock: clock, Tools: approvalTools(nil)})
	s, _ := a.Session(ctx, "late")
	res, err := s.Send(ctx, `/call delete_order {"order":1}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce); !errors.Is(err, store.ErrSessionExpired) {
		t.Fatalf("late approval with the store's TTL: %v, want ErrSessionExpired", err)
	}
	other, _ := a.Session(ctx, "idle")
	if _, err := other.Send(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := other.Send(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	msgs, _ := other.Messages(ctx, 0)
	if len(msgs) != 2 || msgs[0].Text != "fresh" {
		t.Fatalf("expired session did not start fresh: %+v", msgs)
	}
}
