package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows long work (export, import, migrate, prune, keys rotate)
// on stderr, only when stderr is a terminal: a bar with the count, the
// total, the rate and the time left when the total is known, a counter
// with the rate when it is not. The count is set, not stepped, so what it
// shows is what was done. Every command prints its exact totals itself
// when it ends.
type progress struct {
	bar *progressbar.ProgressBar // nil when stderr is not a terminal
}

// newProgress starts the progress of what, out of total items (-1 when
// the total is not known).
func newProgress(env *environ, what string, total int) *progress {
	if !isTerminal(env.stderr) {
		return &progress{}
	}
	return &progress{bar: newBar(env.stderr, what, int64(total), false)}
}

// newByteProgress starts the progress of reading size bytes.
func newByteProgress(env *environ, what string, size int64) *progress {
	if !isTerminal(env.stderr) {
		return &progress{}
	}
	return &progress{bar: newBar(env.stderr, what, size, true)}
}

func newBar(w io.Writer, what string, total int64, bytes bool) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionUseANSICodes(true),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("sessions"))
	}
	return progressbar.NewOptions64(total, opts...)
}

// set shows that n items (or bytes) are done.
func (p *progress) set(n int64) {
	if p.bar != nil {
		p.bar.Set64(n)
	}
}

// describe changes what the bar says it does.
func (p *progress) describe(what string) {
	if p.bar != nil {
		p.bar.Describe(what)
	}
}

// done ends the progress at its last count.
func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.p.set(c.n)
	return n, err
}
