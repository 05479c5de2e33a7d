package history

import (
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// Summary is the compaction a history uses (rule 10): the newest one that
// applies.
type Summary struct {
	ID        string // the session.compaction entry's id
	FirstTurn string // the first turn it covers
	LastTurn  string // the last turn it covers
	Text      string // the summary
}

// Summary returns the compaction the history of the entries given so far
// uses, and false when none applies.
func (b *Builder) Summary() (Summary, bool) {
	s := b.sum
	if s == nil {
		return Summary{}, false
	}
	return Summary{
		ID:        b.entries[s.pos].ID,
		FirstTurn: b.entries[b.turns[s.first].first].TurnID,
		LastTurn:  b.entries[b.turns[s.last].first].TurnID,
		Text:      b.part(int(s.pos)).summary.text,
	}, true
}

// CompactionPlan is what a compaction written now would cover: the range
// it names, and what its summarizer is given, the turns that the summary
// in use (if any) does not cover yet. A compaction made by the plan
// extends the summary in use: it covers the same turns and the new ones
// (a rolling summary), so its summary is the previous one with the new
// turns folded in.
type CompactionPlan struct {
	FirstTurn, LastTurn string // the range the compaction names
	Turns               int    // the turns with a message it covers, on the active branch
	New                 []string
	Previous            *Summary        // the summary in use, which the new one extends; nil for none
	Messages            []model.Message // what the turns in New send by the rules: the summarizer's input
}

// PlanCompaction returns what a compaction of the whole transcript entries
// covers when it leaves the newest keep turns (at least one) as they are,
// and false when it would cover no turn the summary in use does not. The
// turns are those of the active branch that have a message; the range
// ends before the first of them that has not ended (one running, waiting
// on an approval, or left with a call unanswered), so a compaction made by
// the plan always applies when it is appended right after entries.
func PlanCompaction(entries []transcript.Entry, keep int) (CompactionPlan, bool) {
	b := NewBuilder(Options{MaxMessages: NoLimit})
	b.addAll(entries)
	return b.PlanCompaction(keep)
}

// PlanCompaction is PlanCompaction of the entries given so far, which
// must be the whole transcript (Base 0). Its cost is a pass over the
// turns and the decoding of the turns it adds, not of the transcript.
func (b *Builder) PlanCompaction(keep int) (CompactionPlan, bool) {
	keep = max(keep, 1)
	var said []int // the turns of the active branch with a message
	for k := range b.turns {
		if t := &b.turns[k]; !t.superseded && t.firstMsg >= 0 {
			said = append(said, k)
		}
	}
	if len(said) <= keep {
		return CompactionPlan{}, false
	}
	var p CompactionPlan
	after, first := -1, -1
	if s, ok := b.Summary(); ok {
		p.Previous = &s
		after, first = int(b.sum.last), int(b.sum.first)
	}
	last := -1
	var fresh []int
	for _, k := range said[:len(said)-keep] {
		if k <= after {
			continue
		}
		if !b.turns[k].ended() {
			break
		}
		p.New = append(p.New, b.entries[b.turns[k].first].TurnID)
		fresh = append(fresh, k)
		last = k
		if first < 0 {
			first = k
		}
	}
	if last < 0 {
		return CompactionPlan{}, false
	}
	for _, k := range said {
		if first <= k && k <= last {
			if !b.turns[k].ended() {
				// A turn the summary in use covered before it had a
				// message (another writer's transcript): a new
				// compaction could not cover it.
				return CompactionPlan{}, false
			}
			p.Turns++
		}
	}
	p.FirstTurn = b.entries[b.turns[first].first].TurnID
	p.LastTurn = b.entries[b.turns[last].first].TurnID
	var covered []transcript.Entry
	for _, k := range fresh {
		for i := range b.positions(k) {
			if e := b.entries[i]; e.Type != transcript.TypeBranch && e.Type != transcript.TypeCompaction {
				covered = append(covered, e)
			}
		}
	}
	p.Messages = Build(covered, Options{MaxMessages: NoLimit})
	return p, true
}

// SummaryOf returns the compaction the history of the whole transcript
// entries uses, and false when none applies.
func SummaryOf(entries []transcript.Entry) (Summary, bool) {
	b := NewBuilder(Options{MaxMessages: NoLimit})
	b.addAll(entries)
	return b.Summary()
}
