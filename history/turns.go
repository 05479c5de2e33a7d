package history

import (
	"encoding/json"
	"iter"

	"github.com/spool-go/spool/transcript"
)

// turn is what the first pass learns about one turn without decoding any
// message: where its entries are and how it ended. Entry positions are
// int32 to keep the per-turn record small; transcripts longer than 2^31
// entries do not fit in memory anyway.
type turn struct {
	first, last int32 // positions of its first and last entries
	firstMsg    int32 // position of its first message entry, or -1
	lastUser    int32 // position of its last user.message, or -1
	lastAsst    int32 // position of its last assistant.message, or -1
	end         int32 // position of its last assistant.turn_end, or -1
	gap         bool  // entries of other turns lie between first and last
	asks        bool  // it holds an approval request
	waiting     bool  // it is open and holds an approval request with no decision
	kept        bool  // it is sent (rules 2 and 3 and the open-turn rule)
}

func (t *turn) ended() bool { return t.end >= 0 }

// onlyUser reports whether all the turn sends is user messages: its
// question and nothing after it, because its answer was blocked or has not
// started.
func (t *turn) onlyUser(entries []transcript.Entry) bool {
	return t.lastAsst < 0 || (t.ended() && entries[t.end].Status == transcript.StatusResponseBlocked)
}

// endsWithUser reports whether the last message the turn sends is a user
// message. Tool results follow the assistant step that made the call, so
// this holds exactly when a user.message comes after the last
// assistant.message.
func (t *turn) endsWithUser(entries []transcript.Entry) bool {
	return t.onlyUser(entries) || t.lastUser > t.lastAsst
}

// turnSet is the first pass over a transcript.
type turnSet struct {
	entries  []transcript.Entry
	turns    []turn
	newest   int // the newest kept turn, or -1
	waiting  int // how many kept turns wait on an approval
	messages int // how many message entries there are, kept or not
}

// scan groups entries into turns and decides which are kept. It decodes no
// entry data, except the approvalIds of markWaiting.
func scan(entries []transcript.Entry) turnSet {
	s := turnSet{entries: entries, newest: -1}
	if len(entries) == 0 {
		return s
	}
	// A plain turn is three entries; starting there saves the early
	// doublings without holding much more than needed.
	s.turns = make([]turn, 0, len(entries)/3+1)
	var (
		index map[string]int32 // turn ids seen, built only if they are not increasing
		maxID string           // the greatest turn id seen, while index is nil
		curID string
		cur   = -1
		asks  bool // some turn holds an approval request
	)
	for i := range entries {
		e := &entries[i]
		if cur < 0 || e.TurnID != curID {
			curID = e.TurnID
			// Spool's turn ids are ULIDs, so a new turn's id sorts after
			// every earlier one and needs no lookup. Other writers fall back
			// to a map from the first id that does not.
			if index == nil && (cur < 0 || curID > maxID) {
				maxID = curID
				cur = s.add(i)
			} else {
				if index == nil {
					index = make(map[string]int32, len(s.turns)+8)
					for k := range s.turns {
						index[entries[s.turns[k].first].TurnID] = int32(k)
					}
				}
				if k, ok := index[curID]; ok {
					cur = int(k)
				} else {
					cur = s.add(i)
					index[curID] = int32(cur)
				}
			}
		}
		t := &s.turns[cur]
		pos := int32(i)
		if t.last < pos-1 {
			t.gap = true
		}
		t.last = pos
		switch e.Type {
		case transcript.TypeUserMessage:
			t.lastUser = pos
		case transcript.TypeAssistantMessage:
			t.lastAsst = pos
		case transcript.TypeToolResult:
		case transcript.TypeTurnEnd:
			t.end = pos
			continue
		case transcript.TypeApprovalRequest:
			t.asks, asks = true, true
			continue
		default:
			continue
		}
		s.messages++
		if t.firstMsg < 0 {
			t.firstMsg = pos
		}
	}
	if asks {
		s.markWaiting()
	}
	s.keep(cur)
	return s
}

// markWaiting finds the open turns that wait on an approval. Only an open
// turn can wait, and the ended ones are almost all of a long session, so
// approval data is decoded only when an open turn asks for one.
func (s *turnSet) markWaiting() {
	var open []int
	for k := range s.turns {
		if t := &s.turns[k]; t.asks && !t.ended() {
			open = append(open, k)
		}
	}
	if len(open) == 0 {
		return
	}
	var decided []string
	for i := range s.entries {
		if s.entries[i].Type == transcript.TypeApprovalDecision {
			if id, ok := approvalID(s.entries[i].Data); ok {
				decided = append(decided, id)
			}
		}
	}
	isDecided := decidedSet(decided)
	for _, k := range open {
		for i := range s.positions(k) {
			if e := &s.entries[i]; e.Type == transcript.TypeApprovalRequest {
				if id, ok := approvalID(e.Data); ok && !isDecided(id) {
					s.turns[k].waiting = true
					break
				}
			}
		}
	}
}

func (s *turnSet) add(i int) int {
	p := int32(i)
	s.turns = append(s.turns, turn{first: p, last: p, firstMsg: -1, lastUser: -1, lastAsst: -1, end: -1})
	return len(s.turns) - 1
}

// keep marks the turns that are sent; final is the turn of the final entry.
func (s *turnSet) keep(final int) {
	current := -1 // the newest turn with a message
	for k := len(s.turns) - 1; k >= 0; k-- {
		if s.turns[k].firstMsg >= 0 {
			current = k
			break
		}
	}
	for k := range s.turns {
		t := &s.turns[k]
		if t.firstMsg < 0 || s.entries[t.firstMsg].Type != transcript.TypeUserMessage {
			continue // no question: nothing, or the tail of a turn cut off by a suffix
		}
		if t.ended() {
			st := s.entries[t.end].Status
			t.kept = st == transcript.StatusOK || st == transcript.StatusResponseBlocked
		} else {
			t.kept = t.waiting || k == current || k == final
		}
		if t.kept {
			s.newest = k
			if t.waiting {
				s.waiting++
			}
		}
	}
}

// prevKept returns the newest kept turn before k, or -1.
func (s *turnSet) prevKept(k int) int {
	for k--; k >= 0; k-- {
		if s.turns[k].kept {
			return k
		}
	}
	return -1
}

// positions yields the position of each entry of turn k, in order.
func (s *turnSet) positions(k int) iter.Seq[int] {
	return func(yield func(int) bool) {
		t := &s.turns[k]
		id := s.entries[t.first].TurnID
		for i := int(t.first); i <= int(t.last); i++ {
			// Turns interleaved with others are rare (a turn resumed after
			// another began); only they pay for the id comparison.
			if t.gap && s.entries[i].TurnID != id {
				continue
			}
			if !yield(i) {
				return
			}
		}
	}
}

// approvalID returns the approvalId of an approval entry's data, and false
// when there is none: such an entry answers or asks nothing Build or
// PendingApprovals can match.
func approvalID(data json.RawMessage) (string, bool) {
	var a struct {
		ApprovalID string `json:"approvalId"`
	}
	if json.Unmarshal(data, &a) != nil || a.ApprovalID == "" {
		return "", false
	}
	return a.ApprovalID, true
}

// decidedSet returns a membership test for ids: a scan for the few
// decisions of a usual session, a map when there are many.
func decidedSet(ids []string) func(string) bool {
	if len(ids) <= 16 {
		return func(id string) bool {
			for _, d := range ids {
				if d == id {
					return true
				}
			}
			return false
		}
	}
	m := make(map[string]struct{}, len(ids))
	for _, d := range ids {
		m[d] = struct{}{}
	}
	return func(id string) bool {
		_, ok := m[id]
		return ok
	}
}
