package history

import (
	"maps"

	"github.com/spool-go/spool/transcript"
)

// forgetMin is the fewest entries Forget drops (tests lower it).
var forgetMin = 256

// Base returns the position in the transcript of the first entry the
// Builder holds: 0 until Forget drops older ones.
func (b *Builder) Base() int { return b.base }

// Forget drops the entries that the last window showed cannot change the
// history, so that a Builder kept for a long session holds about its
// window rather than its whole transcript. It keeps every turn from the
// oldest one the last Window looked at (the first turn that did not fit
// included), and every turn that is open with an approval request. It does
// nothing unless the last Window was full and at least half of the entries
// can go, so calling it after every Window costs little.
//
// After Forget the Builder holds a suffix of the transcript, which is
// enough for the window as new turns come: Window reports full=false
// whenever the history could reach before Base, and also once an entry of
// an earlier turn arrives (a turn id that does not sort after the others),
// which could be a forgotten one. A caller seeing full=false with Base() >
// 0 builds a new Builder from the whole transcript. Build's result and a
// Builder's full=true Window are the same with or without Forget.
func (b *Builder) Forget() {
	if !b.full || b.stale || b.lost || b.gaps || b.index != nil {
		return
	}
	cut := b.needFrom
	for _, k := range b.asking {
		cut = min(cut, int(b.turns[k].first))
	}
	// Every compaction is kept with the turns it covers: a marker may yet
	// make an older one the one that applies.
	for _, c := range b.compactions {
		cut = min(cut, int(b.turns[c.first].first))
	}
	if cut < forgetMin || 2*cut < len(b.entries) {
		return
	}
	b.decideAll() // decisions of dropped entries may answer kept requests
	decided := b.decided

	old := *b
	*b = Builder{opt: old.opt, final: -1, current: -1, newest: -1, activeFinal: -1, activeCurrent: -1, prev: -1,
		base: old.base + cut, maxID: old.maxID, fork: old.fork, decided: decided, carried: maps.Clone(decided), tick: old.tick,
		view: old.view} // its buffer, which the next View fills again
	// The kept entries, parts and turns move to the front of the arrays
	// they are in, which are the Builder's own (unless the entries are a
	// caller's, given to Build): a long session's Builder forgets every
	// few hundred entries, and allocating them anew each time was most of
	// what a turn allocated. The arrays have room for as many again.
	n := len(old.entries) - cut
	if old.shared {
		b.entries = append(make([]transcript.Entry, 0, 2*n), old.entries[cut:]...)
	} else {
		b.entries = old.entries[:copy(old.entries, old.entries[cut:])]
		clear(old.entries[n:]) // what they held is garbage now
	}
	b.parts = old.parts[:0]
	b.turns = old.turns[:0]
	for i := range n {
		p := old.parts[cut+i] // decoded data carries over; take writes at i < cut+i
		b.take(i, nil)
		b.parts[i] = p
	}
	clear(old.parts[n:])
	clear(old.turns[len(b.turns):])
	b.refresh()
}
