package history

import (
	"encoding/json"

	"github.com/spool-go/spool/model"
)

// The two messages a compaction's summary is sent as (rule 10), in place
// of the turns it covers: a question and the summary as its answer. As a
// pair they keep every provider's rules: the history still starts with a
// user message, roles still alternate (Anthropic refuses two user messages
// in a row; a stopped answer's question before it merges into the
// request, rule 5), and no tool call or result is left without the other.
const (
	// SummaryRequest is the user message of a summary.
	SummaryRequest = "Summarize the earlier part of our conversation."
	// SummaryPrefix begins the assistant message of a summary; the
	// compaction's summary text follows it.
	SummaryPrefix = "Summary of the earlier part of our conversation:\n\n"
)

// SummaryMessages returns the two messages that stand for the turns a
// compaction with summary covers.
func SummaryMessages(summary string) []model.Message {
	return []model.Message{
		{Role: model.RoleUser, Content: SummaryRequest},
		{Role: model.RoleAssistant, Content: SummaryPrefix + summary},
	}
}

// compaction is what the Builder knows of one session.compaction entry
// (rule 10). first and last are the turns it covers, by index; the turns
// it covers are those between them that were on the active branch when it
// was written. It applies while that is still so: diff holds the turns of
// the range whose superseded flag has changed since, so it applies while
// diff is empty.
type compaction struct {
	pos         int32
	first, last int32
	valid       bool // it named turns it can cover (see compact)
	diff        map[int32]struct{}
}

func (c *compaction) applies() bool { return c.valid && len(c.diff) == 0 }

func (c *compaction) holds(k int) bool { return int(c.first) <= k && k <= int(c.last) }

// summaryPart is the part of a compaction's data the rules use.
type summaryPart struct {
	text        string
	first, last string
}

// decodeCompaction returns the parts of a compaction's data, or nil when
// it names no turns (or does not decode: such a compaction covers
// nothing).
func decodeCompaction(data []byte) *summaryPart {
	var d struct {
		Summary   string `json:"summary"`
		FirstTurn string `json:"firstTurn"`
		LastTurn  string `json:"lastTurn"`
	}
	if json.Unmarshal(data, &d) != nil || d.FirstTurn == "" || d.LastTurn == "" {
		return nil
	}
	return &summaryPart{text: d.Summary, first: d.FirstTurn, last: d.LastTurn}
}

// compact takes in the compaction at position i. It can cover its turns
// when both are turns that began before it, the first not after the last,
// both on the active branch, and every turn of the active branch between
// them that has a message ended: a compaction never covers a turn still
// running, waiting on an approval or with a call unanswered. (A turn with
// no message, such as a session.mode entry's, sends nothing either way.) Otherwise it covers nothing,
// ever. Being the newest, it wins if it can.
func (b *Builder) compact(i int) {
	p := b.part(i).summary
	if p == nil {
		return
	}
	fk, okF := b.lookup(p.first)
	lk, okL := b.lookup(p.last)
	if !okF || !okL {
		if b.base > 0 {
			b.lost = true // it may name a turn Forget dropped
		}
		return
	}
	c := &compaction{pos: int32(i), first: int32(fk), last: int32(lk)}
	c.valid = fk <= lk && !b.turns[fk].superseded && !b.turns[lk].superseded
	for k := fk; c.valid && k <= lk; k++ {
		if t := &b.turns[k]; !t.superseded && !t.ended() && t.firstMsg >= 0 {
			c.valid = false
		}
	}
	b.compactions = append(b.compactions, c)
	b.tick++
	b.pick()
}

// flipped notes that turn k's superseded flag changed: each compaction
// whose range holds it stops applying, or applies again once every turn
// of its range is back as it was.
func (b *Builder) flipped(k int) {
	for _, c := range b.compactions {
		if !c.valid || !c.holds(k) {
			continue
		}
		if _, ok := c.diff[int32(k)]; ok {
			delete(c.diff, int32(k))
			continue
		}
		if c.diff == nil {
			c.diff = map[int32]struct{}{}
		}
		c.diff[int32(k)] = struct{}{}
	}
}

// pick makes the newest compaction that applies the one the history
// uses, noting the change on the anchors of the old and the new one.
func (b *Builder) pick() {
	var win *compaction
	for j := len(b.compactions) - 1; j >= 0; j-- {
		if c := b.compactions[j]; c.applies() {
			win = c
			break
		}
	}
	if win == b.sum {
		return
	}
	for _, c := range []*compaction{b.sum, win} {
		if c != nil {
			b.turns[c.last].changed = b.tick
		}
	}
	b.sum = win
	b.stale = true
}

// covered reports whether turn k is one the compaction in use stands for
// and not its anchor: such a turn sends nothing of its own.
func (b *Builder) covered(k int) bool {
	s := b.sum
	return s != nil && int(s.first) <= k && k < int(s.last)
}

// isSummary reports whether turn k is the anchor of the summary: the last
// turn the compaction in use covers, whose unit sends the summary.
func (b *Builder) isSummary(k int) bool { return b.sum != nil && k == int(b.sum.last) }

// keptAt reports whether turn k sends something: a kept turn the summary
// does not cover, or the summary's anchor.
func (b *Builder) keptAt(k int) bool {
	if b.covered(k) {
		return false
	}
	return b.isSummary(k) || b.turns[k].kept
}

// renderSummary renders the summary's unit, anchored at k, whose previous
// anchor is prev: the questions that merge into it (rule 5) and the
// summary. The covered turns are neither looked at nor rendered.
func (b *Builder) renderSummary(u *unit, k, prev int, newest bool) *unit {
	first := int(b.sum.first)
	if u.ok && u.prev == prev && u.newest == newest && b.turns[k].changed <= u.stamp &&
		!b.changedSince(max(prev, 0), first-1, u.stamp) {
		return u
	}
	r := renderer{b: b, acc: u.msgs[:0]}
	r.merged(prev, first)
	msgs := SummaryMessages(b.part(int(b.sum.pos)).summary.text)
	r.user(msgs[0].Content)
	r.acc = append(r.acc, msgs[1])
	return b.finish(u, prev, newest, r.acc)
}
