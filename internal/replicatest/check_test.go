package replicatest

import (
	"fmt"
	"strings"

	"github.com/spool-go/spool/transcript"
)

// turn is one turn as the transcript records it.
type turn struct {
	id     string
	prompt string
	status transcript.Status // of its turn end; empty while open
	text   string            // the texts of its assistant messages, joined as a Result joins them
	first  int               // position of its user message
	ended  bool
}

// expect is what the transcript must hold for one prompt: the turn the
// client was answered with.
type expect struct {
	status transcript.Status
	turnID string // empty: not known (no answer reached a client)
	text   string
	answer bool // text is the answer a client got, to compare
}

// turnsOf reads a session's transcript as turns and says what is wrong
// with it as a transcript: a broken chain, a repeated id, an entry
// outside a turn, turns interleaved, a turn without its user message
// first, a tool result without its call, a second turn end, or a turn
// never ended.
func turnsOf(entries []transcript.Entry) ([]turn, []string) {
	var (
		problems []string
		turns    []turn
		cur      *turn
		calls    map[string]bool // tool calls of the open turn without a result yet
		ids      = map[string]int{}
		seen     = map[string]bool{} // turn ids started
	)
	bad := func(i int, format string, args ...any) {
		e := entries[i]
		problems = append(problems, fmt.Sprintf("entry %d (%s %s, turn %s): ", i, e.Type, e.ID, e.TurnID)+fmt.Sprintf(format, args...))
	}
	for i, e := range entries {
		switch {
		case i == 0 && e.ParentID != "":
			bad(i, "the first entry has parent %s", e.ParentID)
		case i > 0 && e.ParentID != entries[i-1].ID:
			bad(i, "parent %s, but the entry before it is %s: the chain is broken", e.ParentID, entries[i-1].ID)
		}
		if j, dup := ids[e.ID]; dup {
			bad(i, "the same id as entry %d", j)
		}
		ids[e.ID] = i

		if cur == nil {
			if e.Type != transcript.TypeUserMessage {
				if seen[e.TurnID] {
					bad(i, "after its turn ended: turns interleave")
				} else {
					bad(i, "outside any turn: a turn starts with its user message")
				}
				continue
			}
			if e.TurnID == "" || seen[e.TurnID] {
				bad(i, "starts a turn whose id is empty or was used before")
			}
			var m transcript.UserMessage
			if err := e.DecodeData(&m); err != nil {
				bad(i, "data: %v", err)
			}
			seen[e.TurnID] = true
			turns = append(turns, turn{id: e.TurnID, prompt: m.Text, first: i})
			cur, calls = &turns[len(turns)-1], map[string]bool{}
			continue
		}
		if e.TurnID != cur.id {
			bad(i, "inside turn %s (from entry %d), which has not ended: turns interleave", cur.id, cur.first)
			continue
		}
		switch e.Type {
		case transcript.TypeAssistantMessage:
			var m transcript.AssistantMessage
			if err := e.DecodeData(&m); err != nil {
				bad(i, "data: %v", err)
			}
			if m.Text != "" {
				if cur.text != "" {
					cur.text += "\n\n"
				}
				cur.text += m.Text
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
		case transcript.TypeToolResult:
			var r transcript.ToolResult
			if err := e.DecodeData(&r); err != nil {
				bad(i, "data: %v", err)
			}
			if !calls[r.CallID] {
				bad(i, "the result of call %q, which no assistant message of the turn asked for (or that has a result already)", r.CallID)
			}
			delete(calls, r.CallID)
		case transcript.TypeTurnEnd:
			if len(calls) > 0 && e.Status == transcript.StatusOK {
				bad(i, "the turn ended ok with %d tool calls unanswered", len(calls))
			}
			cur.status, cur.ended = e.Status, true
			cur = nil
		default:
			bad(i, "a second user message, or an entry this test never causes, inside the turn")
		}
	}
	if cur != nil {
		problems = append(problems, fmt.Sprintf("turn %s (from entry %d) never ended", cur.id, cur.first))
	}
	return turns, problems
}

// checkSession checks a session's transcript against what its clients
// were answered: one well-formed chain (turnsOf), every expected prompt
// in exactly one turn, with the expected end status, the turn id and text
// the client was answered with, and no other prompt.
func checkSession(entries []transcript.Entry, want map[string]expect) ([]turn, []string) {
	turns, problems := turnsOf(entries)
	count := map[string]int{}
	for _, t := range turns {
		count[t.prompt]++
		w, ok := want[t.prompt]
		if !ok {
			problems = append(problems, fmt.Sprintf("turn %s (from entry %d): a prompt no request sent: %q", t.id, t.first, t.prompt))
			continue
		}
		if t.status != w.status {
			problems = append(problems, fmt.Sprintf("turn %s (prompt %q) ended %q, want %q", t.id, t.prompt, t.status, w.status))
		}
		if w.turnID != "" && t.id != w.turnID {
			problems = append(problems, fmt.Sprintf("prompt %q is in turn %s, but its client was answered with turn %s", t.prompt, t.id, w.turnID))
		}
		if w.answer && t.text != w.text {
			problems = append(problems, fmt.Sprintf("turn %s (prompt %q) recorded the answer %q, but its client got %q", t.id, t.prompt, t.text, w.text))
		}
	}
	for p := range want {
		if count[p] != 1 {
			problems = append(problems, fmt.Sprintf("prompt %q is in %d turns, want exactly 1", p, count[p]))
		}
	}
	return turns, problems
}

// handoffs counts the places where consecutive turns of a session came
// from different replicas (the text before the first "-" of the prompt's
// last line names the replica that was sent it).
func handoffs(turns []turn) int {
	n := 0
	for i := 1; i < len(turns); i++ {
		if sender(turns[i].prompt) != sender(turns[i-1].prompt) {
			n++
		}
	}
	return n
}

func sender(prompt string) string {
	lines := strings.Split(prompt, "\n")
	s, _, _ := strings.Cut(lines[len(lines)-1], "-")
	return s
}
