package main

import (
	"fmt"
	"time"
)

// progress reports long work on stderr, at most every half second, and
// only for work large enough to need it.
type progress struct {
	env   *environ
	what  string
	total int // 0 when unknown
	n     int
	last  time.Time
	shown bool
}

// progressThreshold is the amount of work from which progress is shown.
const progressThreshold = 1000

func newProgress(env *environ, what string, total int) *progress {
	return &progress{env: env, what: what, total: total, last: time.Now()}
}

func (p *progress) step() {
	p.n++
	if p.total > 0 && p.total < progressThreshold {
		return
	}
	if p.total == 0 && p.n < progressThreshold {
		return
	}
	if time.Since(p.last) < 500*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.shown = true
	if p.total > 0 {
		fmt.Fprintf(p.env.stderr, "\r%s: %d/%d", p.what, p.n, p.total)
	} else {
		fmt.Fprintf(p.env.stderr, "\r%s: %d", p.what, p.n)
	}
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprintf(p.env.stderr, "\r%s: %d done\n", p.what, p.n)
	}
}
