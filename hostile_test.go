package spool_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// hostileIDs are ids no session, agent or user may have: each must be
// refused before anything touches the store.
var hostileIDs = map[string]string{
	"parent folder":         "../x",
	"parent alone":          "..",
	"dot":                   ".",
	"slash":                 "a/b",
	"absolute":              "/etc/passwd",
	"backslash":             `a\b`,
	"windows parent":        `..\x`,
	"NUL":                   "a\x00b",
	"Cyrillic а":            "\u0430dmin",
	"fullwidth solidus":     "a\uff0fb",
	"fullwidth full stop":   "\uff0e\uff0e",
	"right-to-left mark":    "a\u200fb",
	"10 KB":                 strings.Repeat("a", 10<<10),
	"129 bytes":             strings.Repeat("a", 129),
	"empty":                 "",
	"colon (Windows)":       "c:x",
	"newline":               "a\nb",
	"percent-encoded slash": "a%2Fb",
}

func unchanged(t *testing.T, what, root string, before map[string]string) {
	t.Helper()
	if after := spooltest.FileTree(t, root); !maps.Equal(before, after) {
		t.Fatalf("%s changed the store (%d files before, %d after), want it untouched", what, len(before), len(after))
	}
}

// hostileWorld is a file store with one session of alice's, under a
// user-scoped agent and a project-scoped one. The sessions are written
// through a Store that is closed before the agents get theirs, so that
// nothing the first left to write later (the index records of a burst,
// written once its sessions are idle) changes the folder under a test
// that checks it is left untouched.
func hostileWorld(t *testing.T) (root string, user, project *spool.Agent, alice context.Context) {
	t.Helper()
	root = t.TempDir()
	alice = spool.ContextWithUser(t.Context(), "alice")
	agents := func() (user, project *spool.Agent, close func()) {
		st, err := filestore.New(t.Context(), root, filestore.WithRetention(store.Retention{}))
		if err != nil {
			t.Fatal(err)
		}
		user = newAgent(t, spool.Config{Name: "users", Store: st, Scope: spool.ScopeUser})
		project = newAgent(t, spool.Config{Name: "proj", Store: st})
		return user, project, func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	user, project, done := agents()
	for _, ctx := range []context.Context{alice, t.Context()} {
		a := project
		if ctx == alice {
			a = user
		}
		for _, id := range []string{"one", "two"} {
			s, err := a.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(ctx, "hello "+id); err != nil {
				t.Fatal(err)
			}
		}
	}
	done()
	user, project, done = agents()
	t.Cleanup(done)
	return root, user, project, alice
}

// TestHostileIDs: through the library, hostile session ids, user ids and
// agent names are refused with store.ErrInvalidKey by every call, and
// nothing in the store changes.
func TestHostileIDs(t *testing.T) {
	root, user, project, alice := hostileWorld(t)
	before := spooltest.FileTree(t, root)
	for name, id := range hostileIDs {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				a   *spool.Agent
				ctx context.Context
			}{{user, alice}, {project, t.Context()}} {
				calls := map[string]error{}
				_, calls["Session"] = c.a.Session(c.ctx, id)
				_, calls["OpenSession"] = c.a.OpenSession(c.ctx, id)
				_, calls["SessionInfo"] = c.a.SessionInfo(c.ctx, id)
				calls["DeleteSession"] = c.a.DeleteSession(c.ctx, id)
				for call, err := range calls {
					if !errors.Is(err, store.ErrInvalidKey) {
						t.Errorf("%s: %s(%.40q): %v; want store.ErrInvalidKey", name, call, id, err)
					}
				}
			}
			if id == "" {
				return // no user is its own error (spool.ErrNoUser)
			}
			// As a user id.
			ctx := spool.ContextWithUser(t.Context(), id)
			_, err := user.Session(ctx, "one")
			_, lerr := user.ListSessions(ctx, store.ListOptions{})
			if !errors.Is(err, store.ErrInvalidKey) || !errors.Is(lerr, store.ErrInvalidKey) {
				t.Errorf("%s as a user: Session %v, ListSessions %v; want store.ErrInvalidKey", name, err, lerr)
			}
			// As an agent name.
			if _, err := spool.New(spool.Config{Name: id, Model: scripted(), Store: project.Store()}); err == nil {
				t.Errorf("%s as an agent name: accepted, want an error", name)
			}
		})
	}
	unchanged(t, "hostile ids", root, before)
}

// TestHostileCursors: bogus cursors and another user's cursors are
// store.ErrInvalidCursor, reveal nothing, and change nothing.
func TestHostileCursors(t *testing.T) {
	root, user, _, alice := hostileWorld(t)
	bob := spool.ContextWithUser(t.Context(), "bob")
	bs := session(t, user, bob, "one")
	if _, err := bs.Send(bob, "bob's own"); err != nil {
		t.Fatal(err)
	}
	page, err := user.ListSessions(alice, store.ListOptions{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("alice's ListSessions = %+v, %v; want a page and a next cursor", page, err)
	}
	as := session(t, user, alice, "one")
	mp, err := as.Page(alice, spool.PageOptions{Limit: 1})
	if err != nil || mp.NextCursor == "" {
		t.Fatalf("alice's Page = %+v, %v; want a page and a next cursor", mp, err)
	}
	before := spooltest.FileTree(t, root)
	for _, c := range []struct{ name, cursor string }{
		{"a word", "bogus"}, {"not base64", "!!!"}, {"NUL", "\x00"}, {"10 KB", strings.Repeat("A", 10<<10)},
		{"cut short", "AQ"}, {"altered", page.NextCursor + "A"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := user.ListSessions(alice, store.ListOptions{Cursor: c.cursor}); !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("ListSessions with cursor %.20q = %v, want store.ErrInvalidCursor", c.cursor, err)
			}
			if _, err := as.Page(alice, spool.PageOptions{Cursor: c.cursor}); !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("Page with cursor %.20q = %v, want store.ErrInvalidCursor", c.cursor, err)
			}
		})
	}
	got, err := user.ListSessions(bob, store.ListOptions{Cursor: page.NextCursor})
	if !errors.Is(err, store.ErrInvalidCursor) || len(got.Sessions) != 0 {
		t.Errorf("bob with alice's list cursor: %+v, %v; want nothing and store.ErrInvalidCursor", got, err)
	}
	gp, err := bs.Page(bob, spool.PageOptions{Cursor: mp.NextCursor})
	if !errors.Is(err, store.ErrInvalidCursor) || len(gp.Messages) != 0 {
		t.Errorf("bob with alice's page cursor on his session of the same id: %+v, %v; want nothing and store.ErrInvalidCursor", gp, err)
	}
	unchanged(t, "hostile cursors", root, before)
}

// TestHugePrompt: a prompt of 4 MiB is stored and read back whole (one
// over the limit of a line is hugeprompt_test.go's).
func TestHugePrompt(t *testing.T) {
	_, _, project, _ := hostileWorld(t)
	ctx := t.Context()
	s := session(t, project, ctx, "one")
	big := strings.Repeat("0123456789abcdef", 4<<20/16)
	if _, err := s.Send(ctx, big); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, 2)
	if err != nil || len(msgs) != 2 || msgs[0].Text != big {
		t.Fatalf("Messages after a 4 MiB prompt: %d messages, %v; want the prompt back whole", len(msgs), err)
	}
}

// TestDeepToolArguments: a model that calls a tool with arguments nested
// 10,000 levels deep (deeper than a transcript line may nest) gets them
// kept as text, as malformed arguments are: the call fails as invalid
// arguments, the turn ends ok, the session stays readable and the next
// turn works.
func TestDeepToolArguments(t *testing.T) {
	root := t.TempDir()
	st, err := filestore.New(t.Context(), root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	calls := 0
	m := echoScript(func(r *model.Request) []model.Event {
		calls++
		if calls == 1 {
			return []model.Event{call("c1", "get_time", deep)}
		}
		return []model.Event{text("fine")}
	})
	clock := tool.New("get_time", "Tell the time.", func(ctx context.Context, _ struct{}) (string, error) { return "noon", nil })
	a := newAgent(t, spool.Config{Store: st, Model: m, Tools: []*tool.Tool{clock}, ToolMode: transcript.ToolModeAuto})
	ctx := t.Context()
	s := session(t, a, ctx, "s")
	res, err := s.Send(ctx, "what time is it")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send with 10,000-deep tool arguments = %+v, %v; want ok", res, err)
	}
	pre, _ := st.Read(ctx, s.Key())
	for _, e := range pre {
		if e.Type == transcript.TypeToolResult {
			var r transcript.ToolResult
			if e.DecodeData(&r); !r.IsError || !strings.Contains(r.Result, "invalid arguments") {
				t.Fatalf("the call's result = %+v, want an error of invalid arguments", r)
			}
		}
	}
	if _, err := s.Send(ctx, "again"); err != nil {
		t.Fatalf("the next turn = %v, want it to run", err)
	}
	entries, err := st.Read(ctx, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
}
