package history

import (
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// A Builder builds the history of a transcript that grows: it is given the
// entries one by one as they are appended, and Messages returns, at any
// point, exactly what Build returns for all the entries given so far. Build
// is a Builder given every entry at once, so the rules are written once.
//
// A Builder keeps what it learned between calls: the turns and how they
// ended, the data of the entries it has decoded (an entry's JSON is decoded
// at most once), and each window unit's messages and token count. So a
// runtime that keeps one Builder per session pays, per model request, for
// the entries added since the last one and for copying the window out, not
// for decoding the window again. Like Build it decodes only the turns the
// window can use.
//
// The rules look at whole turns, and a later entry can change an earlier
// turn: its end, a decision on its approval, a turn resumed after another
// began. A Builder tracks what each entry changes, so nothing it returns is
// ever stale; rules that look further back (which turns the history
// covers) plug into the same bookkeeping.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	opt     Options
	entries []transcript.Entry
	parts   []*part // decoded data by position; nil until needed
	turns   []turn

	index map[string]int32 // turn ids seen, built only once they stop increasing
	maxID string           // the greatest turn id seen, while index is nil
	fork  string           // the turn id of a fork's first entry (forkHead), outside that order

	final    int // the turn of the final entry (markers aside), or -1
	current  int // the newest turn with a message, or -1
	messages int // message entries, kept or not

	// Rule 11: the turns that session.branch markers took off the active
	// branch have superseded set. While one of them is the final entry's
	// or the newest with a message, the rules look at the newest turns on
	// the branch instead (activeFinal, activeCurrent, set by refresh).
	branched      bool // some marker superseded a turn
	activeFinal   int
	activeCurrent int

	// Rule 10: every session.compaction entry taken in, oldest first, and
	// the one the history uses (the newest that applies), or nil.
	compactions []*compaction
	sum         *compaction

	// Approval bookkeeping, decoded only while an open turn asks.
	asking    []int32             // open turns that hold an approval request
	decisions []int32             // positions of approval.decision entries
	decoded   int                 // how many of decisions are in decided
	decided   map[string]struct{} // approval ids with a decision
	// carried is the decided set of the entries Forget dropped; a marker
	// that changes the branch makes decided be made again from it and the
	// decisions held (redecide), since a decision in a superseded turn
	// answers nothing.
	carried  map[string]struct{}
	redecide bool

	keptOpen []int32 // open turns kept when last refreshed
	newest   int     // the newest kept turn, or -1
	waiting  int     // kept turns waiting on an approval
	stale    bool    // the keep flags of open turns need refreshing

	tick uint64 // counts changes; turn.changed and unit.stamp are ticks

	// What Forget needs: where the Builder's entries start in the
	// transcript, what the last window needed, and whether an entry came
	// whose turn may be one that was forgotten.
	base     int
	shared   bool  // entries is the caller's array (addAll), which Forget must not write over
	prev     int32 // the position of the last entry that is not a marker, or -1
	needFrom int   // the first position the last window looked at
	full     bool  // the last window was full
	gaps     bool  // some turn's entries are not next to each other
	lost     bool

	view view // the window View returned last

	// scratch space for rendering
	results []toolResult
	denials []denial
	chunks  []chunk
}

// turn is what the Builder knows about one turn. Entry positions are int32
// to keep the record small; transcripts longer than 2^31 entries do not fit
// in memory anyway.
type turn struct {
	first, last int32 // positions of its first and last entries
	firstMsg    int32 // position of its first message entry, or -1
	lastUser    int32 // position of its last user.message, or -1
	lastAsst    int32 // position of its last assistant.message, or -1
	end         int32 // position of its last assistant.turn_end, or -1
	gap         bool  // entries of other turns lie between first and last
	superseded  bool  // a session.branch marker took it off the active branch (rule 11)
	asks        bool  // it holds an approval request
	waiting     bool  // it is open and holds an approval request with no decision
	kept        bool  // it is sent (rules 2 and 3 and the open-turn rule)

	changed uint64 // the tick of its last change that can change a rendering
	unit    *unit  // its messages as the anchor of a unit, once rendered
}

func (t *turn) ended() bool { return t.end >= 0 }

// NewBuilder returns a Builder of histories shaped by opt, with no entries.
func NewBuilder(opt Options) *Builder {
	return &Builder{opt: opt, final: -1, current: -1, newest: -1, activeFinal: -1, activeCurrent: -1, prev: -1}
}

// Options returns the options the Builder shapes histories with.
func (b *Builder) Options() Options { return b.opt }

// Len returns how many entries the Builder was given.
func (b *Builder) Len() int { return len(b.entries) }

// Add gives the Builder the next entry of the transcript (appended after
// every entry given before). The Builder keeps e, and never changes it.
func (b *Builder) Add(e transcript.Entry) { b.add(e, nil) }

// AddDecoded is Add for a caller that holds e's data decoded already, as a
// writer that made e with transcript.New does: data is the value e.Data
// was made from (a transcript.UserMessage, AssistantMessage, ToolResult,
// ApprovalRequest or ApprovalDecision, or a pointer to one), and the
// Builder takes what it needs from it instead of decoding e.Data. Any
// other data is ignored, and e.Data decoded when needed.
func (b *Builder) AddDecoded(e transcript.Entry, data any) { b.add(e, data) }

func (b *Builder) add(e transcript.Entry, data any) {
	if b.entries == nil {
		// Room for a first turn (a prompt, an answer, its end) and one
		// more: a session a server makes per request has that many, and a
		// long one grows as it goes.
		b.entries = make([]transcript.Entry, 0, 4)
	}
	if len(b.entries) == cap(b.entries) {
		b.shared = false // append moves the entries to an array of the Builder's own
	}
	b.entries = append(b.entries, e)
	b.take(len(b.entries)-1, data)
}

// take does the bookkeeping of entry i, just added, whose data was made
// from data (nil when unknown).
func (b *Builder) take(i int, data any) {
	e := &b.entries[i]
	b.parts = append(b.parts, partFromData(e.Type, data))
	if e.Type == transcript.TypeBranch {
		// A marker belongs to no turn: it neither places nor changes the
		// turn whose id it has, only the turns it names.
		b.mark(i)
		return
	}
	if e.Type == transcript.TypeCompaction {
		// Like a marker, a compaction belongs to no turn.
		b.compact(i)
		return
	}
	if b.turns == nil {
		// A plain turn is three entries.
		b.turns = make([]turn, 0, cap(b.entries)/3+1)
	}
	k := b.turnOf(i)
	b.tick++
	t := &b.turns[k]
	pos := int32(i)
	if t.last != pos && t.last != b.prev {
		// A marker between two entries of a turn makes no gap: it belongs
		// to no turn, and renders as nothing.
		t.gap, b.gaps = true, true
	}
	t.last, b.prev = pos, pos
	t.changed = b.tick
	b.final = k
	b.stale = true
	wasOpen := !t.ended()
	switch e.Type {
	case transcript.TypeUserMessage:
		t.lastUser = pos
		b.message(k, pos)
	case transcript.TypeAssistantMessage:
		t.lastAsst = pos
		b.message(k, pos)
	case transcript.TypeToolResult:
		b.message(k, pos)
	case transcript.TypeTurnEnd:
		t.end = pos
	case transcript.TypeApprovalRequest:
		if !t.asks && !t.ended() {
			b.asking = append(b.asking, int32(k))
		}
		t.asks = true
	case transcript.TypeApprovalDecision:
		b.decisions = append(b.decisions, pos)
	}
	if t.ended() {
		if wasOpen {
			t.waiting = false
			b.asking = remove(b.asking, int32(k))
		}
		b.setKept(k, b.keptEnded(t))
	}
}

// keptEnded reports whether ended turn t is sent (rules 2, 3 and 11).
func (b *Builder) keptEnded(t *turn) bool {
	return !t.superseded && t.userFirst(b.entries) && keptStatus(b.entries[t.end].Status)
}

// mark applies the session.branch marker at position i (rule 11): the
// turns it supersedes leave the active branch, those it restores come
// back. It names turns by id, and only turns that began before it: an id
// the Builder has not seen names nothing, and neither does the id of a
// turn Forget dropped (such a turn is older than anything the window
// holds, and a window that reaches back to it is not full).
func (b *Builder) mark(i int) {
	br := b.part(i).branch
	if br == nil {
		return
	}
	b.tick++
	for _, id := range br.Supersedes {
		b.setSuperseded(id, true)
	}
	for _, id := range br.Restores {
		b.setSuperseded(id, false)
	}
	if len(b.compactions) > 0 {
		b.pick()
	}
}

func (b *Builder) setSuperseded(id string, superseded bool) {
	k, ok := b.lookup(id)
	if !ok {
		return
	}
	t := &b.turns[k]
	if t.superseded == superseded {
		return
	}
	t.superseded = superseded
	t.changed = b.tick
	b.flipped(k)
	b.branched, b.stale, b.redecide = true, true, true
	if t.ended() {
		b.setKept(k, b.keptEnded(t))
	}
	// An open turn's keep flag is refresh's: it is among the turns refresh
	// looks at whenever it can be kept.
}

// lookup returns the turn whose id is id.
func (b *Builder) lookup(id string) (int, bool) {
	if b.index != nil {
		k, ok := b.index[id]
		return int(k), ok
	}
	// Without an index the turn ids increase with the turns, but for a
	// fork's first turn while the Builder holds it.
	turns, skip := b.turns, 0
	if b.fork != "" && b.base == 0 && len(turns) > 0 {
		if id == b.fork {
			return 0, true
		}
		turns, skip = turns[1:], 1
	}
	k, found := slices.BinarySearchFunc(turns, id, func(t turn, id string) int {
		return strings.Compare(b.entries[t.first].TurnID, id)
	})
	return k + skip, found
}

// forkHead reports whether entry i is the first of a fork (session.fork,
// Fork), at the start of the transcript. Its turn id is from when the
// fork was made, and the copied turns after it keep theirs, older: it
// stands outside the order of turn ids, so that a fork's turns are told
// apart, and forgotten, as any session's.
func (b *Builder) forkHead(i int) bool {
	return i == 0 && b.base == 0 && b.entries[i].Type == transcript.TypeFork
}

// keptStatus reports whether a turn that ended with s is sent (rules 2, 3).
func keptStatus(s transcript.Status) bool {
	return s == transcript.StatusOK || s == transcript.StatusResponseBlocked
}

// message notes a message entry at pos of turn k.
func (b *Builder) message(k int, pos int32) {
	b.messages++
	t := &b.turns[k]
	if t.firstMsg < 0 {
		t.firstMsg = pos
	}
	b.current = max(b.current, k)
}

// turnOf returns the turn of entry i, making it when i is its first.
func (b *Builder) turnOf(i int) int {
	id := b.entries[i].TurnID
	if n := len(b.turns); n > 0 && b.entries[b.turns[n-1].first].TurnID == id {
		return n - 1
	}
	// Spool's turn ids are ULIDs, so a new turn's id sorts after every
	// earlier one and needs no lookup. Other writers fall back to a map
	// from the first id that does not. The first entry of a fork is the
	// one exception spool makes (forkHead).
	if b.index == nil {
		if b.forkHead(i) {
			b.fork = id
			return b.newTurn(i)
		}
		if len(b.turns) == 0 || (id > b.maxID && id != b.fork) {
			b.maxID = id
			return b.newTurn(i)
		}
		b.index = make(map[string]int32, len(b.turns)+8)
		for k := range b.turns {
			b.index[b.entries[b.turns[k].first].TurnID] = int32(k)
		}
	}
	if k, ok := b.index[id]; ok {
		return int(k)
	}
	if b.base > 0 {
		// An earlier turn's id: it may be one of the forgotten turns.
		b.lost = true
	}
	k := b.newTurn(i)
	b.index[id] = int32(k)
	return k
}

func (b *Builder) newTurn(i int) int {
	p := int32(i)
	b.turns = append(b.turns, turn{first: p, last: p, firstMsg: -1, lastUser: -1, lastAsst: -1, end: -1})
	return len(b.turns) - 1
}

// setKept sets turn k's kept flag, noting a change.
func (b *Builder) setKept(k int, kept bool) {
	if t := &b.turns[k]; t.kept != kept {
		t.kept = kept
		t.changed = b.tick
	}
}

// userFirst reports whether the turn's first message is its user.message:
// only such a turn is sent, so a suffix that cut a turn's question off
// never sends its answer alone.
func (t *turn) userFirst(entries []transcript.Entry) bool {
	return t.firstMsg >= 0 && entries[t.firstMsg].Type == transcript.TypeUserMessage
}

// refresh brings the keep flags of open turns, the newest kept turn and
// the waiting count up to date. An ended turn's flag is set as its entries
// come; an open turn is kept while it is current, the final entry's, or
// waiting on an approval (rules 2 and 8), which entries of other turns
// change.
func (b *Builder) refresh() {
	if !b.stale {
		return
	}
	b.stale = false
	b.tick++
	candidates := b.keptOpen
	b.keptOpen = nil
	b.waiting = 0
	if len(b.asking) > 0 {
		b.decideAll()
	}
	current, final := b.current, b.final
	if b.branched {
		current, final = b.activeTurns()
	}
	if b.sum != nil && current < int(b.sum.last) {
		// The summary is a turn with messages, ended: an open turn before
		// it is not the current one.
		current = int(b.sum.last)
	}
	b.activeCurrent, b.activeFinal = current, final
	consider := func(k int) {
		t := &b.turns[k]
		if t.ended() {
			return
		}
		if t.asks {
			t.waiting = b.waitsOnApproval(k)
		}
		kept := !t.superseded && t.userFirst(b.entries) && (t.waiting || k == current || k == final)
		b.setKept(k, kept)
		if kept && !contains(b.keptOpen, int32(k)) {
			b.keptOpen = append(b.keptOpen, int32(k))
			if t.waiting {
				b.waiting++
			}
		}
	}
	for _, k := range candidates {
		consider(int(k))
	}
	for _, k := range b.asking {
		consider(int(k))
	}
	if current >= 0 {
		consider(current)
	}
	if final >= 0 {
		consider(final)
	}
	b.newest = -1
	for k := len(b.turns) - 1; k >= 0; k-- {
		if b.keptAt(k) {
			b.newest = k
			break
		}
	}
}

// activeTurns returns the newest turn with a message and the turn of the
// final entry, among the turns on the active branch: what the open-turn
// rule looks at once markers have superseded turns, so that a transcript
// with markers gives the history of the transcript without them and
// without the turns they superseded.
func (b *Builder) activeTurns() (current, final int) {
	current, final = b.current, b.final
	for current >= 0 && (b.turns[current].superseded || b.turns[current].firstMsg < 0) {
		current--
	}
	if final >= 0 && b.turns[final].superseded {
		final = -1
		for k := len(b.turns) - 1; k >= 0; k-- {
			t := &b.turns[k]
			if !t.superseded && (final < 0 || t.last > b.turns[final].last) {
				final = k
				if !b.gaps {
					break // without gaps, the later turn ends later
				}
			}
		}
	}
	return current, final
}

// decideAll takes in the decisions not yet decoded: every decision of a
// turn on the active branch.
func (b *Builder) decideAll() {
	if b.redecide {
		b.redecide = false
		b.decided = maps.Clone(b.carried)
		b.decoded = 0
	}
	for ; b.decoded < len(b.decisions); b.decoded++ {
		pos := int(b.decisions[b.decoded])
		if b.branched {
			if k, ok := b.lookup(b.entries[pos].TurnID); ok && b.turns[k].superseded {
				continue
			}
		}
		if id, ok := b.approvalID(pos); ok {
			if b.decided == nil {
				b.decided = map[string]struct{}{}
			}
			b.decided[id] = struct{}{}
		}
	}
}

// waitsOnApproval reports whether open turn k holds a request with no
// decision anywhere in the transcript.
func (b *Builder) waitsOnApproval(k int) bool {
	for i := range b.positions(k) {
		if b.entries[i].Type != transcript.TypeApprovalRequest {
			continue
		}
		if id, ok := b.approvalID(i); ok {
			if _, done := b.decided[id]; !done {
				return true
			}
		}
	}
	return false
}

// prevKept returns the newest kept turn before k, or -1. The turns a
// summary covers are stepped over at once, not one by one: a compacted
// session's window costs what it sends, however many turns it covers.
func (b *Builder) prevKept(k int) int {
	for k--; k >= 0; k-- {
		if b.covered(k) {
			k = int(b.sum.first)
			continue
		}
		if b.keptAt(k) {
			return k
		}
	}
	return -1
}

// positions yields the position of each entry of turn k, in order.
func (b *Builder) positions(k int) iter.Seq[int] {
	return func(yield func(int) bool) {
		t := &b.turns[k]
		id := b.entries[t.first].TurnID
		for i := int(t.first); i <= int(t.last); i++ {
			// Turns interleaved with others are rare (a turn resumed after
			// another began); only they pay for the id comparison.
			if t.gap && b.entries[i].TurnID != id {
				continue
			}
			if !yield(i) {
				return
			}
		}
	}
}

// onlyUser reports whether all the turn sends is user messages: its
// question and nothing after it, because its answer was blocked or has not
// started.
func (b *Builder) onlyUser(t *turn) bool {
	return t.lastAsst < 0 || (t.ended() && b.entries[t.end].Status == transcript.StatusResponseBlocked)
}

// onlyUserAt is onlyUser for turn k, which may be the summary's anchor: a
// summary ends with its answer.
func (b *Builder) onlyUserAt(k int) bool { return !b.isSummary(k) && b.onlyUser(&b.turns[k]) }

// endsWithUserAt is endsWithUser for turn k, which may be the summary's
// anchor.
func (b *Builder) endsWithUserAt(k int) bool { return !b.isSummary(k) && b.endsWithUser(&b.turns[k]) }

// endsWithUser reports whether the last message the turn sends is a user
// message. Tool results follow the assistant step that made the call, so
// this holds exactly when a user.message comes after the last
// assistant.message.
func (b *Builder) endsWithUser(t *turn) bool {
	return b.onlyUser(t) || t.lastUser > t.lastAsst
}

// Messages returns what the next model request carries: Build over every
// entry given so far. The slice is the caller's.
func (b *Builder) Messages() []model.Message {
	msgs, _ := b.Window()
	return msgs
}

func remove(s []int32, v int32) []int32 {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
