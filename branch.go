package spool

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// A conversation is a tree in an append-only transcript. Regenerating the
// newest answer, editing an earlier question and switching back to a
// version made before each append a session.branch marker
// (transcript.Branch) naming the turns that leave the active branch and
// those that return; nothing is rewritten, and every store keeps markers
// like any entry. History rule 11 sends the model the active branch only;
// Messages and Page show it, and say which turns have other versions
// (Message.Branch).
//
// Approvals granted for the session stay granted when the turn that
// granted them is superseded: the grant is a person's decision about a
// tool in this session, not part of the answer being replaced, and
// withdrawing it would make a regenerated answer meet different rules than
// the first one did, silently. The transcript keeps when each grant was
// made; a fork at an earlier turn (Agent.Fork) starts without the grants
// made after it.

// Regenerate answers the newest turn of the active branch again: a marker
// takes it off the branch, and a new turn asks its question again in its
// place. The Result is Send's; Result.Supersedes names the replaced turn.
// It fails with ErrNoTurn on a session with no turn, ErrApprovalPending
// while a turn waits on an approval, and ErrTurnRunning while a turn is
// running on the session or waits to run in this process; a compaction,
// a rename or a mode change under way is waited for, as Send waits. It
// reads the session's transcript once, to find the turn.
func (s *Session) Regenerate(ctx context.Context) (*Result, error) {
	return Collect(s.RegenerateStream(ctx))
}

// RegenerateStream is Regenerate as a stream of events, like Stream.
func (s *Session) RegenerateStream(ctx context.Context) iter.Seq2[Event, error] {
	return s.replace(ctx, func(c *conversation, turnID string) (opening, error) {
		x := c.newest()
		if x == nil {
			return opening{}, fmt.Errorf("%w: session %s has no turn to regenerate", ErrNoTurn, s.key)
		}
		return opening{prompt: x.text, clientID: x.clientID, marker: &transcript.Branch{
			Kind:         transcript.BranchRegenerate,
			Supersedes:   []string{x.id},
			Alternatives: append(c.versions(x.id), turnID),
		}}, nil
	})
}

// Edit asks turn turnID's question again as text: a marker takes that turn
// and every later turn of the active branch off it, and a new turn asks
// text in its place. The Result is Send's; Result.Supersedes names the
// turns replaced, turnID first. Besides Regenerate's errors it fails with
// ErrEmptyPrompt for a blank text, ErrNoTurn for a turn id that is not one
// of the session's questions, and ErrNotOnBranch for a turn not on the
// active branch (switch to it first).
func (s *Session) Edit(ctx context.Context, turnID, text string) (*Result, error) {
	return Collect(s.EditStream(ctx, turnID, text))
}

// EditStream is Edit as a stream of events, like Stream.
func (s *Session) EditStream(ctx context.Context, turnID, text string) iter.Seq2[Event, error] {
	if strings.TrimSpace(text) == "" {
		return func(yield func(Event, error) bool) { yield(Event{}, ErrEmptyPrompt) }
	}
	return s.replace(ctx, func(c *conversation, newID string) (opening, error) {
		x, err := c.onBranch(s, turnID)
		if err != nil {
			return opening{}, err
		}
		return opening{prompt: text, clientID: x.clientID, marker: &transcript.Branch{
			Kind:         transcript.BranchEdit,
			Supersedes:   c.branchFrom(x),
			Alternatives: append(c.versions(x.id), newID),
		}}, nil
	})
}

// replace runs a turn that replaces others, as plan says from the session's
// conversation.
func (s *Session) replace(ctx context.Context, plan func(c *conversation, turnID string) (opening, error)) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if s.a.reg.turning(s.key) {
			yield(Event{}, fmt.Errorf("%w (session %s)", ErrTurnRunning, s.key))
			return
		}
		s.newTurn(ctx, yield, false, func(ctx context.Context, sl *slot, turnID string) (opening, error) {
			c, err := s.conversation(ctx, sl)
			if err != nil {
				return opening{}, err
			}
			return plan(c, turnID)
		})
	}
}

// SwitchBranch makes turn turnID, a version of a turn on the active branch
// made before (a regenerated answer, an edited question), active again,
// with the turns that followed it when it was left: a marker takes the
// version now active and everything after it off the branch and brings
// those back. Nothing is moved or copied. Switching to a turn already
// active does nothing. It fails with ErrNoTurn for a turn id that is not
// one of the session's questions, ErrNotOnBranch for a version whose place
// is not on the active branch (switch at the earlier turn first), and like
// Regenerate while a turn runs or waits on an approval.
func (s *Session) SwitchBranch(ctx context.Context, turnID string) error {
	if s.a.reg.turning(s.key) {
		return fmt.Errorf("%w (session %s)", ErrTurnRunning, s.key)
	}
	return s.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		if len(sl.st.pending) > 0 {
			return fmt.Errorf("%w (session %s)", ErrApprovalPending, s.key)
		}
		if err := s.settleOpenTurn(ctx, sl, false); err != nil {
			return err
		}
		c, err := s.conversation(ctx, sl)
		if err != nil {
			return err
		}
		a, ok := c.byID[turnID]
		if !ok {
			return fmt.Errorf("%w: %q in session %s", ErrNoTurn, turnID, s.key)
		}
		if c.active(a) {
			return nil
		}
		versions := c.br.Alternatives(turnID)
		var now *convTurn
		for _, v := range versions {
			if t, ok := c.byID[v]; ok && c.active(t) {
				now = t
			}
		}
		if now == nil {
			return fmt.Errorf("%w: turn %s of session %s, and no version of it is (switch at an earlier turn first)", ErrNotOnBranch, turnID, s.key)
		}
		restores := c.br.Left(turnID)
		if len(restores) == 0 {
			restores = []string{turnID}
		}
		w := s.writer(sl)
		_, err = w.append(ctx, transcript.TypeBranch, sl.st.newTurnID(s.a.now()), "", transcript.Branch{
			Kind:         transcript.BranchSwitch,
			Supersedes:   c.branchFrom(now),
			Restores:     restores,
			Alternatives: versions,
		})
		return err
	})
}

// conversation reads the session's transcript, held in sl, as the turns
// of its conversation. The transcript is read whole: it is what the
// markers need, and what branching costs once per call.
func (s *Session) conversation(ctx context.Context, sl *slot) (*conversation, error) {
	entries, err := s.a.cfg.Store.Read(ctx, s.key)
	if err != nil {
		return nil, err
	}
	if len(entries) != sl.st.count || (len(entries) > 0 && entries[len(entries)-1].ID != sl.st.head) {
		// Another writer appended since the state was current: appending
		// after the head the state knows would fail anyway.
		sl.st = nil
		return nil, fmt.Errorf("%w: %w: session %s changed meanwhile", ErrBusy, store.ErrConflict, s.key)
	}
	return readConversation(entries), nil
}

// conversation is the turns of a transcript that ask something (whose
// first message is a user.message), in transcript order, with what the
// markers say of them.
type conversation struct {
	turns []*convTurn
	byID  map[string]*convTurn
	br    *history.Branches
}

// convTurn is one turn of a conversation.
type convTurn struct {
	id    string
	first int    // position of its first entry that is not a marker
	last  int    // position of its last entry
	text  string // its question: its user messages, joined by a blank line
	// clientID is the id the client gave its question (UserMessage.ClientID),
	// which a version of the turn made here keeps: the client knows the
	// question by it, whichever version is active.
	clientID string
	ended    bool
}

func readConversation(entries []transcript.Entry) *conversation {
	c := &conversation{byID: map[string]*convTurn{}, br: history.ReadBranches(entries)}
	type scan struct {
		t       *convTurn
		decided bool // its first message was seen
	}
	seen := map[string]*scan{} // every turn, asking or not
	for i, e := range entries {
		if e.Type == transcript.TypeBranch || e.Type == transcript.TypeCompaction {
			continue
		}
		sc := seen[e.TurnID]
		if sc == nil {
			sc = &scan{t: &convTurn{id: e.TurnID, first: i}}
			seen[e.TurnID] = sc
		}
		t := sc.t
		t.last = i
		if e.Type.IsMessage() && !sc.decided {
			sc.decided = true
			if e.Type == transcript.TypeUserMessage {
				c.turns = append(c.turns, t)
				c.byID[t.id] = t
			}
		}
		switch {
		case e.Type == transcript.TypeUserMessage && c.byID[t.id] == t:
			var u transcript.UserMessage
			_ = e.DecodeData(&u)
			if t.text != "" {
				t.text += "\n\n"
			}
			t.text += u.Text
			if t.clientID == "" {
				t.clientID = u.ClientID
			}
		case e.Type == transcript.TypeTurnEnd:
			t.ended = true
		}
	}
	return c
}

func (c *conversation) active(t *convTurn) bool { return c.br.Active(t.id) }

// newest returns the newest turn of the active branch, or nil.
func (c *conversation) newest() *convTurn {
	for i := len(c.turns) - 1; i >= 0; i-- {
		if c.active(c.turns[i]) {
			return c.turns[i]
		}
	}
	return nil
}

// onBranch returns the turn id names, which must be on the active branch.
func (c *conversation) onBranch(s *Session, id string) (*convTurn, error) {
	t, ok := c.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q in session %s", ErrNoTurn, id, s.key)
	}
	if !c.active(t) {
		return nil, fmt.Errorf("%w: turn %s of session %s (switch to it first)", ErrNotOnBranch, id, s.key)
	}
	return t, nil
}

// branchFrom returns x and every later turn of the active branch.
func (c *conversation) branchFrom(x *convTurn) []string {
	var out []string
	for _, t := range c.turns {
		if t.first >= x.first && c.active(t) {
			out = append(out, t.id)
		}
	}
	return out
}

// versions returns the versions of turn id so far, itself included.
func (c *conversation) versions(id string) []string {
	if v := c.br.Alternatives(id); v != nil {
		return slices.Clone(v)
	}
	return []string{id}
}
