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
	s := scan(entries)
	capN := opt.maxMessages()
	var system []model.Message
	var used window
	if opt.Instructions != "" {
		system = []model.Message{{Role: model.RoleSystem, Content: opt.Instructions}}
		if opt.Budget > 0 {
			used.tokens = opt.count(system[0])
		}
	}
	if s.newest < 0 {
		if system == nil {
			return []model.Message{}, false
		}
		return system, false
	}

	// Room for the window, which is all the messages when nothing limits
	// it; a budget stops at an unknown point, so start modestly then.
	size := s.messages + 1
	switch {
	case capN >= 0:
		size = min(size, capN+8)
	case opt.Budget > 0:
		size = min(size, 64)
	}
	b := builder{s: &s, acc: make([]model.Message, 0, size)}
	var stack [16]chunk
	chunks := stack[:0]

	// The units always sent come first, so that older units are added only
	// into the room they leave: the newest, and any waiting on an approval.
	for k := s.newest; k >= 0; {
		prev, waiting := s.unit(k)
		if k == s.newest || waiting {
			chunks = append(chunks, used.add(&b, &opt, k, prev))
		}
		if s.waiting == 0 {
			break // only the newest is always sent
		}
		k = prev
	}
	for k := s.newest; k >= 0; {
		prev, waiting := s.unit(k)
		if k != s.newest && !waiting {
			if capN >= 0 && used.messages >= capN {
				full = true
				break // a unit is at least one message
			}
			start := len(b.acc)
			n := b.render(k, prev)
			tokens := 0
			if opt.Budget > 0 {
				tokens = countAll(&opt, b.acc[start:])
			}
			if (capN >= 0 && used.messages+n > capN) || (opt.Budget > 0 && used.tokens+tokens > opt.Budget) {
				b.acc = b.acc[:start]
				full = true
				break // the window ends at the first turn that does not fit
			}
			used.messages += n
			used.tokens += tokens
			chunks = append(chunks, chunk{anchor: k, start: start, n: n})
		}
		k = prev
	}
	return assemble(b.acc, chunks, system), full
}

// window is what the units taken so far use.
type window struct {
	messages, tokens int
}

// add renders the unit anchored at k into b and counts it.
func (w *window) add(b *builder, opt *Options, k, prev int) chunk {
	start := len(b.acc)
	n := b.render(k, prev)
	w.messages += n
	if opt.Budget > 0 {
		w.tokens += countAll(opt, b.acc[start:])
	}
	return chunk{anchor: k, start: start, n: n}
}

func countAll(opt *Options, ms []model.Message) int {
	n := 0
	for i := range ms {
		n += opt.count(ms[i])
	}
	return n
}

// chunk is where a unit's messages are in the builder's buffer.
type chunk struct {
	anchor   int // the unit's anchor turn, which orders units in time
	start, n int
}

// assemble puts the system message and the chunks of acc in time order.
func assemble(acc []model.Message, chunks []chunk, system []model.Message) []model.Message {
	newestFirst := true
	for i := 1; i < len(chunks); i++ {
		if chunks[i].anchor > chunks[i-1].anchor {
			newestFirst = false
			break
		}
	}
	if newestFirst && (len(chunks) == 0 || chunks[len(chunks)-1].start+chunks[len(chunks)-1].n == len(acc)) {
		// The usual case: units were rendered newest first, one after the
		// other. Reversing the buffer and then each unit within it puts
		// them in time order without a second buffer.
		acc = append(acc, system...)
		slices.Reverse(acc)
		for _, c := range chunks {
			end := len(acc) - c.start
			slices.Reverse(acc[end-c.n : end])
		}
		return acc
	}
	// A unit waiting on an approval older than others that were rendered
	// after it: copy in time order.
	slices.SortFunc(chunks, func(a, b chunk) int { return a.anchor - b.anchor })
	total := len(system)
	for _, c := range chunks {
		total += c.n
	}
	out := make([]model.Message, 0, total)
	out = append(out, system...)
	for _, c := range chunks {
		out = append(out, acc[c.start:c.start+c.n]...)
	}
	return out
}
