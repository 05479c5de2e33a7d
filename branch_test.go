package spool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// counting answers every prompt with its text and how many requests the
// model has had, so that a regenerated answer differs from the first.
func counting() *echo.Model {
	var n atomic.Int32
	return echoScript(func(req *model.Request) []model.Event {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			return []model.Event{text("tool said " + last.Content)}
		}
		if strings.HasPrefix(last.Content, "/call ") {
			name, args, _ := strings.Cut(strings.TrimPrefix(last.Content, "/call "), " ")
			return []model.Event{call(fmt.Sprintf("c%d", n.Add(1)), name, args)}
		}
		return []model.Event{text(fmt.Sprintf("%s #%d", last.Content, n.Add(1)))}
	})
}

func send(t *testing.T, s *spool.Session, ctx context.Context, prompt string) *spool.Result {
	t.Helper()
	res, err := s.Send(ctx, prompt)
	if err != nil {
		t.Fatalf("Send(%q) = %v", prompt, err)
	}
	return res
}

// dialogue returns the session's history without the system message, one
// "role: text" a message.
func dialogue(t *testing.T, s *spool.Session, ctx context.Context) []string {
	t.Helper()
	msgs, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role)+": "+m.Content)
	}
	return out
}

// shown returns what Messages shows: "role: text" and, for turns with
// versions, " (i/n)".
func shown(t *testing.T, s *spool.Session, ctx context.Context) []string {
	t.Helper()
	msgs, err := s.Messages(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		line := string(m.Role) + ": " + m.Text
		if m.Branch != nil {
			line += fmt.Sprintf(" (%d/%d)", m.Branch.Index, m.Branch.Count)
		}
		out = append(out, line)
	}
	return out
}

func wantLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestRegenerateThreeTimesThenSwitch: the newest answer regenerated three
// times, each a new version of the turn, and the first made active again;
// the history is always the active branch's, and nothing was rewritten.
func TestRegenerateThreeTimesThenSwitch(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	a := newAgent(t, spool.Config{Store: st, Model: counting()})
	s := session(t, a, ctx, "colours")
	send(t, s, ctx, "Name a colour.")
	first := send(t, s, ctx, "Another one?")
	turns := []string{first.TurnID}
	for i := range 3 {
		res, err := s.Regenerate(ctx)
		if err != nil {
			t.Fatalf("Regenerate %d: %v", i+1, err)
		}
		if want := []string{turns[len(turns)-1]}; !slices.Equal(res.Supersedes, want) {
			t.Fatalf("Regenerate %d superseded %v, want %v", i+1, res.Supersedes, want)
		}
		if res.Text != fmt.Sprintf("Another one? #%d", i+3) {
			t.Fatalf("Regenerate %d answered %q", i+1, res.Text)
		}
		turns = append(turns, res.TurnID)
	}
	wantLines(t, "history after three regenerates", dialogue(t, s, ctx),
		"user: Name a colour.", "assistant: Name a colour. #1", "user: Another one?", "assistant: Another one? #5")
	wantLines(t, "messages after three regenerates", shown(t, s, ctx),
		"user: Name a colour.", "assistant: Name a colour. #1", "user: Another one? (4/4)", "assistant: Another one? #5 (4/4)")

	if err := s.SwitchBranch(ctx, turns[0]); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "history after switching to the first", dialogue(t, s, ctx),
		"user: Name a colour.", "assistant: Name a colour. #1", "user: Another one?", "assistant: Another one? #2")
	wantLines(t, "messages after switching to the first", shown(t, s, ctx),
		"user: Name a colour.", "assistant: Name a colour. #1", "user: Another one? (1/4)", "assistant: Another one? #2 (1/4)")
	if err := s.SwitchBranch(ctx, turns[0]); err != nil {
		t.Fatalf("switching to the active version: %v, want nothing done", err)
	}
	// The next turn follows the active version.
	send(t, s, ctx, "And a third?")
	wantLines(t, "history of the next turn", dialogue(t, s, ctx),
		"user: Name a colour.", "assistant: Name a colour. #1", "user: Another one?", "assistant: Another one? #2",
		"user: And a third?", "assistant: And a third? #6")

	// Every answer is still in the transcript, in order, one chain.
	entries, err := st.Read(ctx, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
	var answers []string
	for _, e := range entries {
		if e.Type == transcript.TypeAssistantMessage {
			var m transcript.AssistantMessage
			e.DecodeData(&m)
			answers = append(answers, m.Text)
		}
	}
	wantLines(t, "every answer ever", answers, "Name a colour. #1", "Another one? #2", "Another one? #3", "Another one? #4", "Another one? #5", "And a third? #6")
	// The history is the history of the active branch as a plain
	// transcript.
	if got, want := history.Build(entries, history.Options{}), history.Build(activeBranch(entries), history.Options{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, the active branch's %v", got, want)
	}
}

// activeBranch returns the entries of the turns on the active branch,
// without markers: the linear transcript rule 11 makes the history of.
func activeBranch(entries []transcript.Entry) []transcript.Entry {
	br := history.ReadBranches(entries)
	var out []transcript.Entry
	for _, e := range entries {
		if e.Type != transcript.TypeBranch && br.Active(e.TurnID) {
			out = append(out, e)
		}
	}
	return out
}

// TestEditOfAnEdit: editing an earlier question supersedes it and every
// later turn; editing the edit makes a third version; switching goes back
// to any of them with what followed it.
func TestEditOfAnEdit(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Model: counting()})
	s := session(t, a, ctx, "order")
	send(t, s, ctx, "Where is order 1042?")
	broken := send(t, s, ctx, "It arrived broken.")
	refund := send(t, s, ctx, "Refund it.")

	late, err := s.Edit(ctx, broken.TurnID, "It arrived late.")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{broken.TurnID, refund.TurnID}; !slices.Equal(late.Supersedes, want) {
		t.Fatalf("the edit superseded %v, want %v", late.Supersedes, want)
	}
	lost, err := s.Edit(ctx, late.TurnID, "It never arrived.")
	if err != nil {
		t.Fatal(err)
	}
	send(t, s, ctx, "When will the new one come?")
	wantLines(t, "messages after an edit of an edit", shown(t, s, ctx),
		"user: Where is order 1042?", "assistant: Where is order 1042? #1",
		"user: It never arrived. (3/3)", "assistant: It never arrived. #5 (3/3)",
		"user: When will the new one come?", "assistant: When will the new one come? #6")

	// Back to the first version: the refund comes back with it.
	if err := s.SwitchBranch(ctx, broken.TurnID); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "history back on the first version", dialogue(t, s, ctx),
		"user: Where is order 1042?", "assistant: Where is order 1042? #1",
		"user: It arrived broken.", "assistant: It arrived broken. #2",
		"user: Refund it.", "assistant: Refund it. #3")
	// And to the third: what followed it comes back too.
	if err := s.SwitchBranch(ctx, lost.TurnID); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "history back on the third version", dialogue(t, s, ctx),
		"user: Where is order 1042?", "assistant: Where is order 1042? #1",
		"user: It never arrived.", "assistant: It never arrived. #5",
		"user: When will the new one come?", "assistant: When will the new one come? #6")

	// The refund is off the branch: it cannot be edited or regenerated
	// until its version is active again.
	if _, err := s.Edit(ctx, refund.TurnID, "No refund."); !errors.Is(err, spool.ErrNotOnBranch) {
		t.Fatalf("Edit of a superseded turn = %v, want ErrNotOnBranch", err)
	}
	if err := s.SwitchBranch(ctx, refund.TurnID); !errors.Is(err, spool.ErrNotOnBranch) {
		t.Fatalf("SwitchBranch to a turn whose place is off the branch = %v, want ErrNotOnBranch", err)
	}
}

// TestBranchRefusals: what regenerate, edit and switch refuse, and that
// each refusal writes nothing.
func TestBranchRefusals(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	a := newAgent(t, spool.Config{Store: st, Tools: approvalTools(nil)})
	s := session(t, a, ctx, "s")
	if _, err := s.Regenerate(ctx); !errors.Is(err, spool.ErrNoTurn) {
		t.Fatalf("Regenerate of an empty session = %v, want ErrNoTurn", err)
	}
	res := send(t, s, ctx, "hello")
	for name, err := range map[string]error{
		"edit of an unknown turn":   errOf(s.Edit(ctx, "nope", "x")),
		"switch to an unknown turn": s.SwitchBranch(ctx, "nope"),
		"edit to a blank text":      errOf(s.Edit(ctx, res.TurnID, "  ")),
	} {
		want := spool.ErrNoTurn
		if strings.Contains(name, "blank") {
			want = spool.ErrEmptyPrompt
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
	}
	// An approval pending: 409-like, nothing written.
	paused := send(t, s, ctx, `/call delete_order {"order":1}`)
	if paused.Status != spool.StatusAwaitingApproval {
		t.Fatalf("status %s, want a pause", paused.Status)
	}
	before, _ := st.Read(ctx, s.Key())
	for name, err := range map[string]error{
		"regenerate": errOf(s.Regenerate(ctx)),
		"edit":       errOf(s.Edit(ctx, res.TurnID, "hi")),
		"switch":     s.SwitchBranch(ctx, res.TurnID),
	} {
		if !errors.Is(err, spool.ErrApprovalPending) {
			t.Fatalf("%s with an approval pending = %v, want ErrApprovalPending", name, err)
		}
	}
	after, _ := st.Read(ctx, s.Key())
	if len(after) != len(before) {
		t.Fatalf("a refusal wrote %d entries", len(after)-len(before))
	}
	if _, err := s.Deny(ctx, paused.Pending[0].ID, "no"); err != nil {
		t.Fatal(err)
	}

	// A turn running in this process.
	slow := newAgent(t, spool.Config{Store: memstore.New(), Model: echo.New(echo.WithDelay(50 * time.Millisecond))})
	ss := session(t, slow, ctx, "slow")
	send(t, ss, ctx, "one two")
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for ev, err := range ss.Stream(ctx, "three four five six") {
			if err != nil {
				done <- err
				return
			}
			if ev.Kind == spool.EventText {
				select {
				case <-started:
				default:
					close(started)
				}
			}
		}
		done <- nil
	}()
	<-started
	if _, err := ss.Regenerate(ctx); !errors.Is(err, spool.ErrTurnRunning) {
		t.Fatalf("Regenerate while a turn runs = %v, want ErrTurnRunning", err)
	}
	if err := ss.SwitchBranch(ctx, "x"); !errors.Is(err, spool.ErrTurnRunning) {
		t.Fatalf("SwitchBranch while a turn runs = %v, want ErrTurnRunning", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Regenerate(ctx); err != nil {
		t.Fatalf("Regenerate once the turn ended: %v", err)
	}
}

func errOf(_ *spool.Result, err error) error { return err }

// TestBranchUserScope: a user reaches only the turns of their own
// sessions; another user's turn id is as unknown as any.
func TestBranchUserScope(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Scope: spool.ScopeUser})
	alice, bob := spool.ContextWithUser(ctx, "alice"), spool.ContextWithUser(ctx, "bob")
	as := session(t, a, alice, "chat")
	res := send(t, as, alice, "alice's secret")
	bs := session(t, a, bob, "chat")
	send(t, bs, bob, "bob's question")
	if _, err := bs.Edit(bob, res.TurnID, "mine now"); !errors.Is(err, spool.ErrNoTurn) {
		t.Fatalf("bob editing alice's turn = %v, want ErrNoTurn", err)
	}
	if err := bs.SwitchBranch(bob, res.TurnID); !errors.Is(err, spool.ErrNoTurn) {
		t.Fatalf("bob switching to alice's turn = %v, want ErrNoTurn", err)
	}
	if _, err := a.Fork(bob, "chat", res.TurnID); !errors.Is(err, spool.ErrNoTurn) {
		t.Fatalf("bob forking at alice's turn = %v, want ErrNoTurn", err)
	}
	wantLines(t, "alice's session", shown(t, as, alice), "user: alice's secret", "assistant: echo: alice's secret")
}

// TestSessionApprovalsStayGranted: a tool approved for the session in a
// turn that a regenerate supersedes stays approved (see the package's
// branch.go for why).
func TestSessionApprovalsStayGranted(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s := session(t, a, ctx, "s")
	res := send(t, s, ctx, `/call delete_order {"order":1}`)
	if _, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeSession); err != nil {
		t.Fatal(err)
	}
	again, err := s.Regenerate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != transcript.StatusOK || calls.Load() != 2 {
		t.Fatalf("the regenerated turn: status %s, %d calls; want ok without asking, 2 calls", again.Status, calls.Load())
	}
}

// TestFork: a fork's history is the source's history as it was when the
// turn ended, its first entry names the source and turn, and it has the
// tool mode and approvals of then.
func TestFork(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	a := newAgent(t, spool.Config{Store: st, Model: counting(), Tools: approvalTools(nil)})
	s := session(t, a, ctx, "source")
	one := send(t, s, ctx, "one")
	two := send(t, s, ctx, "two")
	if _, err := s.Regenerate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeAuto); err != nil {
		t.Fatal(err)
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeAsk); err != nil {
		t.Fatal(err)
	}
	grant := send(t, s, ctx, `/call delete_order {"order":7}`)
	approved, err := s.Approve(ctx, grant.Pending[0].ID, transcript.ApprovalScopeSession)
	if err != nil {
		t.Fatal(err)
	}
	send(t, s, ctx, "after")
	entries, err := st.Read(ctx, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	end := func(turn string) int {
		last := -1
		for i, e := range entries {
			if e.TurnID == turn {
				last = i
			}
		}
		return last
	}
	for _, c := range []struct {
		name, turn string
		approved   bool
	}{
		{"at the first turn", one.TurnID, false},
		{"at the granting turn", approved.TurnID, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := a.Fork(ctx, "source", c.turn)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.History(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := history.Build(entries[:end(c.turn)+1], history.Options{}); !reflect.DeepEqual(got, want) {
				t.Fatalf("the fork's history\n%v\nthe source's when the turn ended\n%v", got, want)
			}
			copied, err := st.Read(ctx, f.Key())
			if err != nil {
				t.Fatal(err)
			}
			checkWellFormed(t, copied)
			var head transcript.Fork
			if copied[0].Type != transcript.TypeFork || copied[0].DecodeData(&head) != nil || head.Source != "source" || head.TurnID != c.turn {
				t.Fatalf("first entry %s %s, want a session.fork naming source and %s", copied[0].Type, copied[0].Data, c.turn)
			}
			for _, e := range copied {
				if e.Type == transcript.TypeBranch || e.TurnID == two.TurnID {
					t.Fatalf("the fork copied %s of turn %s: markers and superseded turns stay behind", e.Type, e.TurnID)
				}
			}
			reopened, err := a.OpenSession(ctx, f.ID())
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := reopened.ToolMode(ctx); m != transcript.ToolModeAsk {
				t.Fatalf("tool mode %s, want ask", m)
			}
			res := send(t, reopened, ctx, `/call delete_order {"order":8}`)
			if asked := res.Status == spool.StatusAwaitingApproval; asked == c.approved {
				t.Fatalf("status %s in a fork %s: the session's approvals are not those of then", res.Status, c.name)
			}
		})
	}
	// Errors: the id taken, an unknown turn, an open turn, an unknown
	// source.
	if _, err := a.Fork(ctx, "source", one.TurnID, spool.WithForkID("source")); !errors.Is(err, spool.ErrSessionExists) {
		t.Fatalf("Fork into an existing session = %v, want ErrSessionExists", err)
	}
	if _, err := a.Fork(ctx, "source", "nope"); !errors.Is(err, spool.ErrNoTurn) {
		t.Fatalf("Fork at an unknown turn = %v, want ErrNoTurn", err)
	}
	if _, err := a.Fork(ctx, "nobody", one.TurnID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Fork of an unknown session = %v, want store.ErrNotFound", err)
	}
	paused := send(t, s, ctx, `/call lookup_order {"order":1}`) // runs: no approval needed
	f, err := a.Fork(ctx, "source", paused.TurnID, spool.WithForkID("copy"))
	if err != nil || f.ID() != "copy" {
		t.Fatalf("Fork with an id = %v, %v", f, err)
	}
}

// TestBranchesProperty drives random regenerates, edits and switches and
// holds every reading face to one model of the conversation: the history
// is the history of the active branch as a linear transcript, Messages
// shows the model's questions with their versions, and every Page, in
// both orders and any size, with or without the other branches, is a
// piece of what Messages shows.
func TestBranchesProperty(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 8
	}
	for seed := range n {
		ctx := t.Context()
		st := memstore.New()
		a := newAgent(t, spool.Config{Store: st, Model: counting(), MaxMessages: 7})
		s := session(t, a, ctx, fmt.Sprintf("p%d", seed))
		r := rand.New(rand.NewPCG(uint64(seed), 15))
		m := &branchModel{}
		for step := range 25 {
			switch op := r.IntN(10); {
			case op < 4 || len(m.active) == 0:
				res := send(t, s, ctx, fmt.Sprintf("q%d", step))
				m.send(res.TurnID, fmt.Sprintf("q%d", step))
			case op < 6:
				res, err := s.Regenerate(ctx)
				if err != nil {
					t.Fatal(err)
				}
				m.replace(len(m.active)-1, res.TurnID, m.text[m.active[len(m.active)-1]])
			case op < 8:
				k := r.IntN(len(m.active))
				res, err := s.Edit(ctx, m.active[k], fmt.Sprintf("e%d", step))
				if err != nil {
					t.Fatal(err)
				}
				m.replace(k, res.TurnID, fmt.Sprintf("e%d", step))
			default:
				k := r.IntN(len(m.active))
				vs := m.versions(m.active[k])
				to := vs[r.IntN(len(vs))]
				if err := s.SwitchBranch(ctx, to); err != nil {
					t.Fatal(err)
				}
				m.switchTo(k, to)
			}
			checkBranchModel(t, a, s, st, m)
		}
	}
}

// branchModel is what a conversation tree is, written the plainest way:
// the active branch, each place's versions, and the continuation each
// version had when it was left.
type branchModel struct {
	active []string            // turn ids, oldest first
	text   map[string]string   // each turn's question
	slot   map[string][]string // each turn's versions (shared by the versions)
	tail   map[string][]string // a version's branch when it was left, itself first
}

func (m *branchModel) send(id, text string) {
	if m.text == nil {
		m.text, m.slot, m.tail = map[string]string{}, map[string][]string{}, map[string][]string{}
	}
	m.active = append(m.active, id)
	m.text[id] = text
}

func (m *branchModel) versions(id string) []string {
	if v := m.slot[id]; v != nil {
		return v
	}
	return []string{id}
}

func (m *branchModel) replace(k int, id, text string) {
	old := m.active[k]
	m.tail[old] = slices.Clone(m.active[k:])
	vs := append(slices.Clone(m.versions(old)), id)
	for _, v := range vs {
		m.slot[v] = vs
	}
	m.active = append(m.active[:k], id)
	m.text[id] = text
}

func (m *branchModel) switchTo(k int, id string) {
	if m.active[k] == id {
		return
	}
	m.tail[m.active[k]] = slices.Clone(m.active[k:])
	m.active = append(m.active[:k], m.tail[id]...)
}

func checkBranchModel(t *testing.T, a *spool.Agent, s *spool.Session, st store.Store, m *branchModel) {
	t.Helper()
	ctx := t.Context()
	entries, err := st.Read(ctx, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
	opt := history.Options{MaxMessages: 7}
	got, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := history.Build(activeBranch(entries), opt); !reflect.DeepEqual(got, want) {
		t.Fatalf("history\n%v\nthe active branch's\n%v", got, want)
	}
	all, err := s.Messages(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var questions []string
	for _, msg := range all {
		if msg.Role != model.RoleUser {
			continue
		}
		questions = append(questions, msg.TurnID)
		vs := m.versions(msg.TurnID)
		if len(vs) == 1 && msg.Branch != nil || len(vs) > 1 && (msg.Branch == nil || !slices.Equal(msg.Branch.Turns, vs) || msg.Branch.Turns[msg.Branch.Index-1] != msg.TurnID) {
			t.Fatalf("turn %s: branch %+v, want versions %v", msg.TurnID, msg.Branch, vs)
		}
		if msg.Text != m.text[msg.TurnID] {
			t.Fatalf("turn %s asks %q, want %q", msg.TurnID, msg.Text, m.text[msg.TurnID])
		}
	}
	if !slices.Equal(questions, m.active) {
		t.Fatalf("Messages shows turns %v, the active branch is %v", questions, m.active)
	}
	// Pages, from this agent (which keeps what pages saw) and from a new
	// one (which does not), in both orders and with every branch.
	fresh := newAgent(t, spool.Config{Store: st})
	for _, ag := range []*spool.Agent{a, fresh} {
		sess := session(t, ag, ctx, s.ID())
		for _, every := range []bool{false, true} {
			var want []spool.Message
			if every {
				want = everyMessage(t, entries)
			} else {
				want = all
			}
			for _, order := range []spool.Order{spool.OrderDesc, spool.OrderAsc} {
				for _, limit := range []int{1, 3, 50} {
					var paged []spool.Message
					cursor := ""
					for {
						p, err := sess.Page(ctx, spool.PageOptions{Limit: limit, Order: order, Cursor: cursor, AllBranches: every})
						if err != nil {
							t.Fatal(err)
						}
						paged = append(paged, p.Messages...)
						if cursor = p.NextCursor; cursor == "" {
							break
						}
					}
					if order == spool.OrderDesc {
						slices.Reverse(paged)
					}
					if !reflect.DeepEqual(paged, want) {
						t.Fatalf("pages of %d %s (all branches %v):\n%s\nwant\n%s", limit, order, every, brief(paged), brief(want))
					}
				}
			}
		}
	}
}

// everyMessage is every message of every branch, as AllBranches pages
// show them.
func everyMessage(t *testing.T, entries []transcript.Entry) []spool.Message {
	br := history.ReadBranches(entries)
	var out []spool.Message
	for _, e := range entries {
		var m spool.Message
		switch e.Type {
		case transcript.TypeUserMessage:
			var d transcript.UserMessage
			e.DecodeData(&d)
			m = spool.Message{Role: model.RoleUser, Text: d.Text}
		case transcript.TypeAssistantMessage:
			var d transcript.AssistantMessage
			e.DecodeData(&d)
			m = spool.Message{Role: model.RoleAssistant, Text: d.Text, ToolCalls: d.ToolCalls}
		default:
			continue
		}
		m.ID, m.TurnID, m.Time, m.Superseded = e.ID, e.TurnID, e.Timestamp, !br.Active(e.TurnID)
		if vs := br.Alternatives(e.TurnID); vs != nil {
			m.Branch = &spool.BranchInfo{Index: slices.Index(vs, e.TurnID) + 1, Count: len(vs), Turns: vs}
		}
		out = append(out, m)
	}
	return out
}

func brief(ms []spool.Message) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "  %s %s %q superseded=%v branch=%+v\n", m.TurnID, m.Role, m.Text, m.Superseded, m.Branch)
	}
	return b.String()
}

// TestBranchesOnEveryStore runs a regenerate, an edit, a switch and a fork
// on every store, and reads them back through a new agent: markers are
// entries like any other, kept by every store without a new capability.
func TestBranchesOnEveryStore(t *testing.T) {
	for name, open := range teststores.All() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st := open(t)
			a := newAgent(t, spool.Config{Store: st, Model: counting()})
			s := session(t, a, ctx, "tree")
			one := send(t, s, ctx, "one")
			send(t, s, ctx, "two")
			if _, err := s.Regenerate(ctx); err != nil {
				t.Fatal(err)
			}
			edit, err := s.Edit(ctx, one.TurnID, "uno")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SwitchBranch(ctx, one.TurnID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Fork(ctx, "tree", edit.TurnID, spool.WithForkID("tree-fork")); err != nil {
				t.Fatal(err)
			}
			b := newAgent(t, spool.Config{Store: st})
			wantLines(t, name+": history from a new agent", dialogue(t, session(t, b, ctx, "tree"), ctx),
				"user: one", "assistant: one #1", "user: two", "assistant: two #3")
			wantLines(t, name+": the fork", dialogue(t, session(t, b, ctx, "tree-fork"), ctx),
				"user: uno", "assistant: uno #4")
			wantLines(t, name+": messages from a new agent", shown(t, session(t, b, ctx, "tree"), ctx),
				"user: one (1/2)", "assistant: one #1 (1/2)", "user: two (2/2)", "assistant: two #3 (2/2)")
		})
	}
}

// TestBranchWhileAnotherProcessRuns: a turn another process is running
// (open, recently active, on a store without a lock) makes regenerate,
// edit and switch fail at once with ErrTurnRunning, rather than wait, and
// a fork at it fail too.
func TestBranchWhileAnotherProcessRuns(t *testing.T) {
	ctx := t.Context()
	st := plainStore{memstore.New()}
	a := newAgent(t, spool.Config{Store: st, BusyTimeout: time.Minute})
	s := session(t, a, ctx, "s")
	done := send(t, s, ctx, "hello")
	entries, _ := st.Read(ctx, s.Key())
	e, err := transcript.New(time.Now(), transcript.TypeUserMessage, transcript.NewID(time.Now()), transcript.UserMessage{Text: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	e.ParentID = entries[len(entries)-1].ID
	if err := st.Append(ctx, s.Key(), e); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for name, err := range map[string]error{
		"regenerate": errOf(s.Regenerate(ctx)),
		"edit":       errOf(s.Edit(ctx, done.TurnID, "hi")),
		"switch":     s.SwitchBranch(ctx, done.TurnID),
	} {
		if !errors.Is(err, spool.ErrTurnRunning) {
			t.Fatalf("%s while another process runs a turn = %v, want ErrTurnRunning", name, err)
		}
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("the refusals took %v: they waited for the other turn", time.Since(start))
	}
	if _, err := a.Fork(ctx, "s", e.TurnID); !errors.Is(err, spool.ErrTurnRunning) {
		t.Fatalf("Fork at a turn that has not ended = %v, want ErrTurnRunning", err)
	}
	if _, err := a.Fork(ctx, "s", done.TurnID); err != nil {
		t.Fatalf("Fork at the turn before it: %v", err)
	}
}

// Regenerate while only a compaction holds the session (here the
// automatic one after a turn, its summarizer still working) waits for it,
// as Send does: a compaction, a rename or a mode change is no turn, and
// ErrTurnRunning would be false.
func TestRegenerateWaitsForCompaction(t *testing.T) {
	ctx := t.Context()
	started, release := make(chan struct{}, 1), make(chan struct{})
	sum := func(ctx context.Context, in spool.SummaryInput) (spool.Summary, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return spool.Summary{Text: "sum"}, nil
	}
	a := newAgent(t, spool.Config{Compaction: spool.Compaction{Turns: 2, KeepTurns: 1, Summarizer: sum}})
	s := session(t, a, ctx, "s")
	for _, p := range []string{"one", "two"} {
		if _, err := s.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	<-started // the compaction runs; no turn does
	done := make(chan error, 1)
	go func() {
		_, err := s.Regenerate(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Regenerate while a compaction ran returned at once: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Regenerate after the compaction: %v", err)
	}
}

// A fork at a session's last turn carries the compaction made after it
// even when a rename came between: the fork's history is the source's.
func TestForkKeepsCompactionAfterRename(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{})
	s := session(t, a, ctx, "s")
	var last string
	for _, p := range []string{"one", "two", "three"} {
		r, err := s.Send(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		last = r.TurnID
	}
	if err := s.Rename(ctx, "title"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1}); err != nil {
		t.Fatal(err)
	}
	want, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.Fork(ctx, "s", last)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the fork's history\n%v\nthe source's\n%v", got, want)
	}
}

// TestClientMessageID: the client's id for a question is kept with it, for
// a new turn and for an edit, and only on the message of the turn started
// with the context.
func TestClientMessageID(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Model: counting()})
	s := session(t, a, ctx, "named")
	first, err := s.Send(spool.ContextWithClientMessageID(ctx, "c1"), "one")
	if err != nil {
		t.Fatal(err)
	}
	send(t, s, ctx, "two")
	if _, err := s.Edit(spool.ContextWithClientMessageID(ctx, "c1"), first.TurnID, "uno"); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		var d transcript.UserMessage
		if e.Type == transcript.TypeUserMessage && e.DecodeData(&d) == nil {
			got = append(got, d.Text+":"+d.ClientID)
		}
	}
	if strings.Join(got, " ") != "one:c1 two: uno:c1" {
		t.Fatalf("user messages %v", got)
	}
}
