package history

import (
	"slices"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// Build returns the messages the next model request carries for a session
// whose transcript is entries (all of it, or a suffix that starts at or
// before the current turn's user.message), by the rules in the package
// documentation. It never fails: entries it cannot use are left out. The
// result is empty, not nil, when there is nothing to send.
//
// Build is a Builder given every entry: a caller that builds the history
// of a growing transcript again and again keeps a Builder instead.
func Build(entries []transcript.Entry, opt Options) []model.Message {
	msgs, _ := Window(entries, opt)
	return msgs
}

// Window is Build for callers that read a transcript from its newest end:
// full reports that the cap or the budget already left out an older turn
// of entries, so that no entry older than entries could change the
// result. When full is false and entries is only a suffix, the caller
// needs more of the transcript for an exact history.
func Window(entries []transcript.Entry, opt Options) (msgs []model.Message, full bool) {
	b := NewBuilder(opt)
	b.addAll(entries)
	return b.Window()
}

// addAll gives the Builder entries, the whole transcript, sharing their
// array: the Builder never writes to it, and an Add after it copies it
// first (the slice is capped at its length).
func (b *Builder) addAll(entries []transcript.Entry) {
	n := len(entries)
	b.entries = entries[:n:n]
	b.shared = true
	b.parts = make([]*part, 0, n)
	b.turns = make([]turn, 0, n/3+1)
	for i := range entries {
		b.take(i, nil)
	}
}

// Window is Messages with Window's report: full says that the cap or the
// budget left out an older turn. The slice is the caller's.
func (b *Builder) Window() (msgs []model.Message, full bool) { return b.window(false) }

// View is Window for a caller that only reads the messages, and only
// until its next call of View: the slice is the Builder's, and the next
// View may write over it. The Builder keeps the window it returned and
// makes the next one from what changed (the units that came, were made
// again or left), so that a long session's model request copies the
// messages of its newest turn, not the whole window.
func (b *Builder) View() (msgs []model.Message, full bool) { return b.window(true) }

func (b *Builder) window(shared bool) (msgs []model.Message, full bool) {
	b.refresh()
	opt := &b.opt
	capN := opt.maxMessages()
	var system []model.Message
	var used window
	if opt.Instructions != "" {
		system = []model.Message{{Role: model.RoleSystem, Content: opt.Instructions}}
		if opt.Budget > 0 {
			used.tokens = opt.count(system[0])
		}
	}
	if b.newest < 0 {
		if system == nil {
			return []model.Message{}, false
		}
		return system, false
	}

	chunks := b.chunks[:0]
	b.needFrom = len(b.entries)
	// The units always sent come first, so that older units are added only
	// into the room they leave: the newest, and any waiting on an approval.
	for k := b.newest; k >= 0; {
		prev, waiting := b.unitOf(k)
		if k == b.newest || waiting {
			b.need(prev, k)
			u := b.render(k, prev)
			used.messages += len(u.msgs)
			used.tokens += u.tokens
			chunks = append(chunks, chunk{anchor: k, u: u})
		}
		if b.waiting == 0 {
			break // only the newest is always sent
		}
		k = prev
	}
	for k := b.newest; k >= 0; {
		prev, waiting := b.unitOf(k)
		if k != b.newest && !waiting {
			if capN >= 0 && used.messages >= capN {
				b.need(k, k)
				full = true
				break // a unit is at least one message
			}
			b.need(prev, k)
			u := b.render(k, prev)
			n := len(u.msgs)
			if (capN >= 0 && used.messages+n > capN) || (opt.Budget > 0 && used.tokens+u.tokens > opt.Budget) {
				full = true
				break // the window ends at the first turn that does not fit
			}
			used.messages += n
			used.tokens += u.tokens
			chunks = append(chunks, chunk{anchor: k, u: u})
		}
		k = prev
	}
	b.chunks = chunks[:0]
	b.full = full
	if b.lost {
		full = false
	}
	inTime(chunks)
	if shared {
		return b.view.assemble(chunks, system, used.messages), full
	}
	return assemble(chunks, system, used.messages), full
}

// need notes that the window looked at the unit anchored at k whose
// previous anchor is prev.
func (b *Builder) need(prev, k int) {
	from := 0 // a unit with no anchor before it holds every turn before it
	if prev >= 0 {
		from = int(b.turns[prev].first)
	}
	b.needFrom = min(b.needFrom, from)
}

// window is what the units taken so far use.
type window struct {
	messages, tokens int
}

// chunk is a unit taken into the window.
type chunk struct {
	anchor int // the unit's anchor turn, which orders units in time
	u      *unit
}

// inTime orders chunks newest first. They are, but for a unit waiting on
// an approval older than others taken after it.
func inTime(chunks []chunk) {
	for i := 1; i < len(chunks); i++ {
		if chunks[i].anchor > chunks[i-1].anchor {
			slices.SortFunc(chunks, func(a, b chunk) int { return b.anchor - a.anchor })
			return
		}
	}
}

// assemble puts the system message and the chunks' messages (newest
// first) in time order, in a slice of the caller's.
func assemble(chunks []chunk, system []model.Message, n int) []model.Message {
	out := make([]model.Message, 0, len(system)+n)
	out = append(out, system...)
	for i := len(chunks) - 1; i >= 0; i-- {
		out = append(out, chunks[i].u.msgs...)
	}
	return out
}

// A view is the window View returned last, kept in buf with room after
// it, and where each of its units is in buf: from one window to the next
// the units it keeps stay where they are, the oldest that left are
// stepped over, and only the units after them are written, so the window
// slides along buf and is moved back to its start only when it reaches
// the end.
type view struct {
	buf    []model.Message
	placed []placed // the last window's units, oldest first
	spare  []placed
}

// placed is a unit of a view's window, as it was rendered (gen), and
// where buf holds its messages.
type placed struct {
	u   *unit
	gen uint64
	off int
}

// assemble is the package's assemble into v's buffer.
func (v *view) assemble(chunks []chunk, system []model.Message, n int) []model.Message {
	oldest := len(chunks) - 1
	// The units kept in place: the run of the last window's units, from
	// the one that is the oldest now, that the new window has next to
	// each other, rendered as they were.
	from, same := -1, 0
	if oldest >= 0 {
		for i, p := range v.placed {
			if p.u == chunks[oldest].u {
				from = i
				break
			}
		}
	}
	if from >= 0 && v.placed[from].off >= len(system) {
		for same <= oldest && from+same < len(v.placed) {
			p, u := v.placed[from+same], chunks[oldest-same].u
			if p.u != u || p.gen != u.gen {
				break
			}
			same++
		}
	}
	start, at := 0, len(system)
	if same > 0 {
		last := v.placed[from+same-1]
		start, at = v.placed[from].off-len(system), last.off+len(last.u.msgs)
	}
	rest := 0
	for i := oldest - same; i >= 0; i-- {
		rest += len(chunks[i].u.msgs)
	}
	if same == 0 || at+rest > len(v.buf) {
		// Back to the start of buf, with room for the window to slide.
		if need := len(system) + n; len(v.buf) < need {
			v.buf = make([]model.Message, 2*need)
		}
		start, at, same = 0, len(system), 0
	}
	copy(v.buf[start:], system)
	now := v.spare[:0]
	for i := oldest; i >= 0; i-- {
		u := chunks[i].u
		if oldest-i < same {
			now = append(now, v.placed[from+oldest-i])
			continue
		}
		at += copy(v.buf[at:], u.msgs)
		now = append(now, placed{u: u, gen: u.gen, off: at - len(u.msgs)})
	}
	v.placed, v.spare = now, v.placed
	return v.buf[start:at:at]
}
