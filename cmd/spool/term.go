package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"golang.org/x/term"
)

// What the terminal gets (README "spool chat"):
//
//   - Colour only on a terminal, and never with NO_COLOR set (to anything
//     but the empty string, https://no-color.org) or TERM=dumb; stdout and
//     stderr are decided on their own, so `spool chat 2>log` keeps colour
//     on the screen and none in the log.
//   - The assistant's Markdown rendered (glamour) when stdout is a
//     terminal, in colour or, with NO_COLOR, in glamour's plain "notty"
//     style; as the model wrote it when piped.
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

// palette paints the kinds of line chat and the commands print. The zero
// palette paints nothing.
type palette struct {
	on                                 bool
	user, tool, notice, errorS, dimmed lipgloss.Style
}

func newPalette(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{
		on:     true,
		user:   lipgloss.NewStyle().Foreground(lipgloss.Cyan).Bold(true),
		tool:   lipgloss.NewStyle().Foreground(lipgloss.Yellow),
		notice: lipgloss.NewStyle().Foreground(lipgloss.Magenta),
		errorS: lipgloss.NewStyle().Foreground(lipgloss.Red).Bold(true),
		dimmed: lipgloss.NewStyle().Faint(true),
	}
}

func (p palette) paint(s lipgloss.Style, text string) string {
	if !p.on {
		return text
	}
	return s.Render(text)
}

// outputFor returns the palette for w.
func outputFor(env *environ, w io.Writer) palette {
	return newPalette(isTerminal(w) && colourAllowed(env))
}

// printable returns s without control characters (escape sequences
// included), keeping newlines and tabs: what reaches a terminal, or a
// transcript from one.
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\x1b' {
			i += escapeLen(s[i:])
			continue
		}
		if !isControl(r) {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029')
}

// escapeLen is the length of the escape sequence s starts with: ESC and,
// for CSI (ESC [) and OSC (ESC ]), the rest of the sequence, so that its
// parameters do not survive as text.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then one final byte
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']': // OSC: up to BEL or ESC \
		for i := 2; i < len(s); i++ {
			if s[i] == '\a' {
				return i + 1
			}
			if s[i] == '\x1b' && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2
}

// markdown renders the assistant's Markdown for a terminal, a block at a
// time: text is held until a block (a paragraph, a list, a fenced code
// block) is complete, then printed rendered, so that what streams in is
// never shown twice. Flush prints what is left at the end of a step.
type markdown struct {
	w     io.Writer
	r     *glamour.TermRenderer
	buf   strings.Builder
	wrote bool
}

// newMarkdown returns a renderer to the terminal w. Without colour, the
// rendering keeps its bold, italics and underlines and loses its colours.
func newMarkdown(w io.Writer, colour bool) (*markdown, error) {
	profile := colorprofile.ANSI256
	if !colour {
		profile = colorprofile.ASCII
	}
	out := &colorprofile.Writer{Forward: w, Profile: profile}
	width := 100
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			width = min(cols-2, 100)
		}
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(width))
	if err != nil {
		return nil, err
	}
	return &markdown{w: out, r: r}, nil
}

// Write takes the next piece of the answer.
func (m *markdown) Write(text string) {
	m.buf.WriteString(printable(text))
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
	out, err := m.r.Render(escapeHTML(src))
	if err != nil {
		out = src // as written, rather than nothing
	}
	// glamour pads every line to the wrap width, each space in its own
	// style: drop the padding, so that a narrower window does not wrap it.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if t := trailingPad.FindStringIndex(l); t != nil {
			l = l[:t[0]] + "\x1b[m"
		}
		lines[i] = l
	}
	out = strings.Trim(strings.Join(lines, "\n"), "\n")
	if out == "" {
		return
	}
	if m.wrote {
		io.WriteString(m.w, "\n")
	}
	io.WriteString(m.w, out+"\n")
	m.wrote = true
}

// escapeHTML escapes each < outside code, so that text the model wrote
// between angle brackets ("a <T> type") is shown, not taken for HTML and
// dropped by the renderer.
func escapeHTML(src string) string {
	if !strings.Contains(src, "<") {
		return src
	}
	var b strings.Builder
	fence := ""
	for line := range strings.SplitAfterSeq(src, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			b.WriteString(line)
			continue
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			b.WriteString(line)
			continue
		}
		inCode := false
		for _, r := range line {
			switch {
			case r == '`':
				inCode = !inCode
			case r == '<' && !inCode:
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// trailingPad is spaces at the end of a line, with the styles around them.
var trailingPad = regexp.MustCompile(`(?:\x1b\[[0-9;]*m| )+$`)

// blockEnd returns the end of the complete blocks at the start of s: the
// position after the last blank line that is outside a fenced code block,
// or 0 when no block is complete yet.
func blockEnd(s string) int {
	end, pos := 0, 0
	fence := ""
	prevBlank := false
	for pos < len(s) {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			break // the last line is not complete
		}
		line := s[pos : pos+nl]
		pos += nl + 1
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
				end = pos // a closed code block is complete
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case t == "" && !prevBlank && pos > 1:
			end = pos
		}
		prevBlank = t == ""
	}
	return end
}
