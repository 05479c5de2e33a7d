package main

import (
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/spool-go/spool/internal/termmd"
)

// What the terminal gets (README "spool chat"):
//
//   - Colour only on a terminal, and never with NO_COLOR set (to anything
//     but the empty string, https://no-color.org) or TERM=dumb; stdout and
//     stderr are decided on their own, so `spool chat 2>log` keeps colour
//     on the screen and none in the log.
//   - The assistant's Markdown rendered (internal/termmd) when stdout is
//     a terminal, in colour or, with NO_COLOR, with its bold, italics and
//     underlines only; as the model wrote it when piped or TERM=dumb.
//   - Nothing a model or a pasted text says is written to a terminal as a
//     control sequence: text is stripped of control characters first
//     (printable, see below), so an answer cannot move the cursor, retitle
//     the window or hide what it says.

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colourAllowed reports whether the environment lets a terminal have
// colour.
func colourAllowed(env *environ) bool {
	return env.getenv("NO_COLOR") == "" && env.getenv("TERM") != "dumb"
}

// palette paints the kinds of line chat and the commands print. It
// writes its SGR sequences itself: lipgloss, which it used before for
// these five styles, linked a dozen packages whose package init every
// spool process paid, `spool sessions ls` as much as `spool chat`. The
// zero palette paints nothing.
type palette struct {
	on                                 bool
	user, tool, notice, errorS, dimmed style
}

// style is the parameters of an SGR sequence: "1;36" is bold cyan.
type style string

func newPalette(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{on: true, user: "1;36", tool: "33", notice: "35", errorS: "1;31", dimmed: "2"}
}

// paint returns text in style s, each line styled and reset on its own,
// as lipgloss did, so that a pager or a terminal that resets at a line's
// end keeps the colour of the next.
func (p palette) paint(s style, text string) string {
	if !p.on {
		return text
	}
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("\x1b[")
		b.WriteString(string(s))
		b.WriteByte('m')
		b.WriteString(line)
		b.WriteString("\x1b[m")
	}
	return b.String()
}

// outputFor returns the palette for w.
func outputFor(env *environ, w io.Writer) palette {
	return newPalette(isTerminal(w) && colourAllowed(env))
}

// printable returns s without control characters (escape sequences
// included), keeping newlines and tabs: what reaches a terminal, or a
// transcript from one (termmd.Printable).
func printable(s string) string { return termmd.Printable(s) }

func isControl(r rune) bool { return termmd.IsControl(r) }

// markdown renders the assistant's Markdown for a terminal (termmd), a
// block at a time: text is held until a block (a paragraph, a list, a
// fenced code block) is complete, then printed rendered, so that what
// streams in is never shown twice. Flush prints what is left at the end
// of a step.
type markdown struct {
	w      io.Writer
	width  func() int // the columns to wrap at, asked at each block
	colour bool
	buf    strings.Builder
	wrote  bool
}

// newMarkdown returns a renderer to the terminal w, wrapping at its width
// less two columns (at most 100 columns). The width is asked again at each block, as the
// line editor asks it at each line, so that a terminal resized while chat
// runs gets answers that fit it. Without colour, the rendering keeps its
// bold, italics and underlines and loses its colours.
func newMarkdown(w io.Writer, colour bool) *markdown {
	width := func() int { return 100 }
	if f, ok := w.(*os.File); ok {
		width = func() int {
			// Two columns spare, as on a wide terminal, down to one:
			// a narrow one needs its words kept whole the most.
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return max(min(cols-2, 100), 1)
			}
			return 100
		}
	}
	return &markdown{w: w, width: width, colour: colour}
}

// Write takes the next piece of the answer.
func (m *markdown) Write(text string) {
	m.buf.WriteString(text)
	s := m.buf.String()
	if cut := blockEnd(s); cut > 0 {
		m.render(s[:cut])
		rest := s[cut:]
		m.buf.Reset()
		m.buf.WriteString(rest)
	}
}

// Flush prints what is held.
func (m *markdown) Flush() {
	if s := m.buf.String(); strings.TrimSpace(s) != "" {
		m.render(s)
	}
	m.buf.Reset()
	m.wrote = false
}

func (m *markdown) render(src string) {
	out := termmd.Render(src, m.width(), m.colour)
	if out == "" {
		return
	}
	if m.wrote {
		io.WriteString(m.w, "\n")
	}
	io.WriteString(m.w, out+"\n")
	m.wrote = true
}

// blockEnd returns the end of the complete blocks at the start of s, or 0
// when no block is complete yet. A block is complete once a line after a
// blank line starts at the margin (a list item's next paragraph or code
// block is indented, and belongs to the item: cut at the blank line, it
// was shown out of its list), or once an unindented fenced code block
// closes. A fence closes as CommonMark has it: on a line of its
// character alone, at least as long as the opening one, so that a ```
// inside a ```` block (an answer showing how to write Markdown) does not
// end it.
func blockEnd(s string) int {
	end, pos := 0, 0
	fence := ""         // the open fence's opening run: ``` or ````, ~~~, …
	afterBlank := false // the line before was blank, outside a fence
	margin := func(line string) bool { return line != "" && line[0] != ' ' && line[0] != '\t' }
	for pos < len(s) {
		start := pos
		line := s[pos:]
		nl := strings.IndexByte(line, '\n')
		if nl >= 0 {
			line = line[:nl]
		}
		if fence == "" && afterBlank && margin(line) {
			end = start
		}
		if nl < 0 {
			break // the last line is not complete
		}
		pos += nl + 1
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
				if margin(line) {
					end = pos // a closed code block is complete
				}
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:len(t)-len(strings.TrimLeft(t, t[:1]))]
		}
		afterBlank = fence == "" && t == ""
	}
	return end
}
