package memstore

import "github.com/spool-go/spool/transcript"

// A session's entries live in chunks that never move once allocated: an
// append copies no earlier entry. One slice that doubled as it grew would
// copy every entry of a long session each time it did, and hand the
// garbage collector the whole copy to scan (a tenth of a turn's CPU on a
// 30,000-entry session). Chunks start small, so that the many short
// sessions of a test or a demo cost little, and double up to maxChunk.
type chunks struct {
	full [][]transcript.Entry // every chunk but the last is full
	n    int
}

const (
	firstChunk = 4
	maxChunk   = 1024
)

// add appends e, which the chunks now own.
func (c *chunks) add(e transcript.Entry) {
	k := len(c.full)
	if k == 0 || len(c.full[k-1]) == cap(c.full[k-1]) {
		size := firstChunk
		if k > 0 {
			size = min(2*cap(c.full[k-1]), maxChunk)
		}
		c.full = append(c.full, make([]transcript.Entry, 0, size))
		k++
	}
	c.full[k-1] = append(c.full[k-1], e)
	c.n++
}

// last returns the newest entry; there is one.
func (c *chunks) last() *transcript.Entry {
	l := c.full[len(c.full)-1]
	return &l[len(l)-1]
}

// clones returns copies (clone) of the entries at positions [start, end),
// which the caller has clamped to [0, c.n].
func (c *chunks) clones(start, end int) []transcript.Entry {
	out := make([]transcript.Entry, 0, end-start)
	pos := 0
	for _, ch := range c.full {
		if pos >= end {
			break
		}
		lo, hi := max(start-pos, 0), min(end-pos, len(ch))
		for _, e := range ch[min(lo, hi):hi] {
			out = append(out, clone(e))
		}
		pos += len(ch)
	}
	return out
}
