package history

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/spool-go/spool/transcript"
)

// Branches is what the session.branch markers of a transcript say about its
// turns, for the readers that show a conversation rather than send it
// (the runtime's Messages and Page, spool sessions show): which turns are
// on the active branch (rule 11), and which turns are versions of one
// another (a turn regenerated three times has four: "2 / 4").
//
// It takes entries in any order, each with its position in the
// transcript: every fact it keeps is the newest marker's, by position. So
// a reader going backwards from the end of a transcript can stop where it
// wants, and one that read a part before adds the part it had not. A turn
// is on the active branch unless the newest marker that names it, among
// the markers after the turn's first entry, supersedes it: what the
// history rules say, so that what a reader shows is what the model is sent.
//
// The zero Branches is empty and ready to use. It is not safe for
// concurrent use.
type Branches struct {
	marks map[string]mark // by turn id
	first map[string]int  // the position of each turn's first entry given
}

// mark is what the newest markers naming one turn say.
type mark struct {
	at         int      // position of the newest marker that supersedes or restores it; -1 for none
	superseded bool     // what that marker does
	left       []string // when it supersedes: the turns it took off the branch, from this one on
	altsAt     int      // position of the newest marker listing it among alternatives; -1 for none
	alts       []string
}

// ReadBranches returns the Branches of a whole transcript.
func ReadBranches(entries []transcript.Entry) *Branches {
	b := &Branches{}
	for i := range entries {
		b.Add(i, entries[i])
	}
	return b
}

// Add takes in e, the entry at position pos of the transcript. A marker
// adds what it says; any other entry tells where its turn begins (the
// lowest position given for it), which decides whether a marker names the
// turn at all: a marker names only turns that began before it.
func (b *Branches) Add(pos int, e transcript.Entry) {
	if e.Type != transcript.TypeBranch {
		if b.first == nil {
			b.first = map[string]int{}
		}
		if f, ok := b.first[e.TurnID]; !ok || pos < f {
			b.first[e.TurnID] = pos
		}
		return
	}
	// The names are read as Build reads them: a marker whose turns cannot
	// be read changes nothing.
	d := decodeBranch(e.Data)
	if d == nil {
		d = &transcript.Branch{}
	}
	var alts struct {
		Alternatives []string `json:"alternatives"`
	}
	if json.Unmarshal(e.Data, &alts) == nil {
		d.Alternatives = alts.Alternatives
	}
	if b.marks == nil {
		b.marks = map[string]mark{}
	}
	get := func(id string) mark {
		if m, ok := b.marks[id]; ok {
			return m
		}
		return mark{at: -1, altsAt: -1}
	}
	for i, id := range d.Supersedes {
		if m := get(id); pos > m.at {
			m.at, m.superseded, m.left = pos, true, d.Supersedes[i:]
			b.marks[id] = m
		}
	}
	for _, id := range d.Restores {
		// A turn a marker both supersedes and restores is restored, as
		// Build reads the lists in that order.
		if m := get(id); pos >= m.at {
			m.at, m.superseded, m.left = pos, false, nil
			b.marks[id] = m
		}
	}
	for _, id := range d.Alternatives {
		if m := get(id); pos > m.altsAt {
			m.altsAt, m.alts = pos, d.Alternatives
			b.marks[id] = m
		}
	}
}

// Active reports whether turn turnID is on the active branch. The turn
// begins at the lowest position Add was given an entry of it at; with
// none, every marker naming it counts.
func (b *Branches) Active(turnID string) bool {
	first, ok := b.first[turnID]
	if !ok {
		first = -1
	}
	return b.ActiveFrom(turnID, first)
}

// ActiveFrom is Active for a turn whose first entry is at position first,
// for a reader that knows it better than the entries it gave.
func (b *Branches) ActiveFrom(turnID string, first int) bool {
	m, ok := b.marks[turnID]
	return !ok || m.at <= first || !m.superseded
}

// Alternatives returns the versions of turn turnID, oldest first, the turn
// itself among them, as the newest marker that lists them says; nil when
// the turn has no other version.
func (b *Branches) Alternatives(turnID string) []string {
	m, ok := b.marks[turnID]
	if !ok || len(m.alts) < 2 || !slices.Contains(m.alts, turnID) {
		return nil
	}
	return m.alts
}

// Left returns the turns that left the active branch with turn turnID when
// the newest marker naming it superseded it, from it on: the branch that
// switching back to it restores. It is nil unless that marker superseded
// the turn.
func (b *Branches) Left(turnID string) []string {
	m, ok := b.marks[turnID]
	if !ok || !m.superseded {
		return nil
	}
	return m.left
}

// Empty reports whether b holds no marker.
func (b *Branches) Empty() bool { return len(b.marks) == 0 }

// Markers returns a copy of b with what its markers say and without the
// positions of the turns' first entries: a small value to keep for a
// reader that will give the entries of the turns it shows again.
func (b *Branches) Markers() *Branches {
	return &Branches{marks: maps.Clone(b.marks)}
}
