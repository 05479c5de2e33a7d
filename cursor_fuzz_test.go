package spool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// cursorWorld is a user-scoped agent where alice and bob each have a
// session called "chat" (same id, different owners) and alice has a
// second one, with enough messages for several pages.
type cursorWorld struct {
	agent      *spool.Agent
	alice, bob context.Context
	messages   map[string]map[string]bool // user → message ids of the "chat" session
}

var (
	worldOnce sync.Once
	world     *cursorWorld
)

func cursorWorldFor(t testing.TB) *cursorWorld {
	worldOnce.Do(func() {
		a, err := spool.New(spool.Config{Store: memstore.New(), Model: echo.New(), Scope: spool.ScopeUser})
		if err != nil {
			panic(err)
		}
		// The world outlives the test that makes it (every fuzz input uses
		// it), so its contexts cannot be that test's.
		bg := context.Background()
		w := &cursorWorld{agent: a, alice: spool.ContextWithUser(bg, "alice"), bob: spool.ContextWithUser(bg, "bob"), messages: map[string]map[string]bool{}}
		for user, ctx := range map[string]context.Context{"alice": w.alice, "bob": w.bob} {
			s, err := a.Session(ctx, "chat")
			if err != nil {
				panic(err)
			}
			for i := range 12 {
				if _, err := s.Send(ctx, fmt.Sprintf("%s says %d", user, i)); err != nil {
					panic(err)
				}
			}
			msgs, err := s.Messages(ctx, 0)
			if err != nil {
				panic(err)
			}
			w.messages[user] = map[string]bool{}
			for _, m := range msgs {
				w.messages[user][m.ID] = true
			}
		}
		s := session(t, a, w.alice, "other")
		s.Send(w.alice, "alice's other session")
		world = w
	})
	return world
}

// pageCursors returns the cursors alice's "chat" session hands out.
func pageCursors(t testing.TB, w *cursorWorld) []string {
	var out []string
	s := session(t, w.agent, w.alice, "chat")
	for _, o := range []spool.Order{spool.OrderAsc, spool.OrderDesc} {
		p, err := s.Page(w.alice, spool.PageOptions{Limit: 5, Order: o})
		if err != nil || p.NextCursor == "" {
			t.Fatalf("Page = %+v, %v; want a page and a next cursor", p, err)
		}
		out = append(out, p.NextCursor)
	}
	return out
}

// TestPageCursorBoundToSession: a cursor from alice's session is refused on
// bob's session of the same id, on alice's other session, and in the other
// order; a list cursor of alice's is refused in bob's listing.
func TestPageCursorBoundToSession(t *testing.T) {
	w := cursorWorldFor(t)
	cursors := pageCursors(t, w)
	bobChat := session(t, w.agent, w.bob, "chat")
	aliceOther := session(t, w.agent, w.alice, "other")
	aliceChat := session(t, w.agent, w.alice, "chat")
	for i, c := range cursors {
		own := spool.OrderAsc
		other := spool.OrderDesc
		if i == 1 {
			own, other = other, own
		}
		for name, try := range map[string]func() (spool.MessagePage, error){
			"bob's session": func() (spool.MessagePage, error) {
				return bobChat.Page(w.bob, spool.PageOptions{Cursor: c, Order: own})
			},
			"alice's other": func() (spool.MessagePage, error) {
				return aliceOther.Page(w.alice, spool.PageOptions{Cursor: c, Order: own})
			},
			"the other order": func() (spool.MessagePage, error) {
				return aliceChat.Page(w.alice, spool.PageOptions{Cursor: c, Order: other})
			},
			"cut short": func() (spool.MessagePage, error) {
				return aliceChat.Page(w.alice, spool.PageOptions{Cursor: c[:len(c)-2], Order: own})
			},
			"one character wrong": func() (spool.MessagePage, error) {
				return aliceChat.Page(w.alice, spool.PageOptions{Cursor: flip(c), Order: own})
			},
		} {
			p, err := try()
			if !errors.Is(err, store.ErrInvalidCursor) || len(p.Messages) != 0 {
				t.Fatalf("%s's cursor %d on %s: %d messages, %v; want store.ErrInvalidCursor", "alice", i, name, len(p.Messages), err)
			}
		}
		if p, err := aliceChat.Page(w.alice, spool.PageOptions{Cursor: c, Order: own}); err != nil || len(p.Messages) == 0 {
			t.Fatalf("the cursor on its own session = %v, want the next page", err)
		}
	}
	page, err := w.agent.ListSessions(w.alice, store.ListOptions{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("alice's first page = %+v, %v; want a page and a next cursor", page, err)
	}
	got, err := w.agent.ListSessions(w.bob, store.ListOptions{Cursor: page.NextCursor})
	if !errors.Is(err, store.ErrInvalidCursor) || len(got.Sessions) != 0 {
		t.Fatalf("bob with alice's list cursor: %+v, %v; want store.ErrInvalidCursor", got, err)
	}
}

// flip changes the cursor's middle character to another valid one.
func flip(c string) string {
	b := []byte(c)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// FuzzPageCursor gives Session.Page arbitrary cursors: it never panics,
// fails only with store.ErrInvalidCursor, and returns only messages of the
// session it was called on, never another user's.
func FuzzPageCursor(f *testing.F) {
	w := cursorWorldFor(f)
	for _, c := range pageCursors(f, w) {
		f.Add(c, true, int16(5))
		f.Add(c, false, int16(3))
		f.Add(c[:len(c)-1], true, int16(1))
	}
	f.Add("", false, int16(0))
	f.Add("AQ", true, int16(-1))
	f.Add(strings.Repeat("A", 23), true, int16(1000))
	f.Add("AQAAAAAAAAAA__________", false, int16(2))
	f.Fuzz(func(t *testing.T, cursor string, asc bool, limit int16) {
		order := spool.OrderDesc
		if asc {
			order = spool.OrderAsc
		}
		for user, ctx := range map[string]context.Context{"alice": w.alice, "bob": w.bob} {
			s, err := w.agent.Session(ctx, "chat")
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Page(ctx, spool.PageOptions{Cursor: cursor, Order: order, Limit: int(limit)})
			if err != nil {
				if !errors.Is(err, store.ErrInvalidCursor) {
					t.Fatalf("Page(%q): %v, want store.ErrInvalidCursor", cursor, err)
				}
				continue
			}
			for _, m := range p.Messages {
				if !w.messages[user][m.ID] {
					t.Fatalf("%s's page holds message %s of another session, want only its own", user, m.ID)
				}
			}
		}
		// A list cursor: bob's listing never shows alice's sessions.
		page, err := w.agent.ListSessions(w.bob, store.ListOptions{Cursor: cursor})
		if err != nil && !errors.Is(err, store.ErrInvalidCursor) {
			t.Fatalf("ListSessions(%q) = %v, want a page or store.ErrInvalidCursor", cursor, err)
		}
		for _, info := range page.Sessions {
			if info.Owner != "bob" || info.ID != "chat" {
				t.Fatalf("bob's listing shows %s/%s, want only bob/chat", info.Owner, info.ID)
			}
		}
	})
}
