// Package termmd renders Markdown for a terminal: ANSI styles (bold,
// italics, underlines, strikethrough and, when colour is on, colours),
// paragraphs wrapped to a width, lists, block quotes, code blocks and
// tables laid out in text. It is what `spool chat` prints an answer with.
//
// It parses with goldmark (CommonMark, with GitHub's tables,
// strikethrough and task lists) and writes the terminal's text itself,
// in one walk of the syntax tree. It replaces glamour, which did the same
// through chroma (code highlighting) and bluemonday (HTML sanitizing):
// glamour links both unconditionally, and their package init (chroma's
// lexers and styles above all) cost every spool process, `spool sessions
// ls` as much as `spool chat`, about 28 ms before main ran. A terminal
// answer needs neither: code blocks are shown as written, and no HTML is
// rendered (raw HTML is shown as its text).
//
// Render never writes a control sequence of the source: control
// characters (escape sequences included) are dropped before parsing
// (Printable), so the only escape sequences in the output are the SGR
// styles Render chose.
package termmd

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// md is built on first use, not at the start of every command.
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))
})

// Render returns src rendered for a terminal width columns wide (no
// wrapping when width is 0 or less), without a trailing newline. Without
// colour, the rendering keeps its bold, italics, underlines and
// strikethrough and uses no colour (NO_COLOR, https://no-color.org).
func Render(src string, width int, colour bool) string {
	if width <= 0 {
		width = int(^uint(0) >> 1)
	}
	source := []byte(Printable(src))
	doc := md().Parser().Parse(text.NewReader(source))
	r := renderer{src: source, colour: colour}
	return strings.Join(r.blocks(doc, width), "\n")
}

// attr is a set of inline styles.
type attr uint16

const (
	bold attr = 1 << iota
	italic
	underline
	strike
	faint
	code    // inline code: a colour
	link    // a link's text: underlined, and a colour
	heading // a heading's text: bold, and a colour
)

// norm returns the styles of a a terminal shows: without colour, a
// link is underlined, a heading bold, and code plain.
func (r *renderer) norm(a attr) attr {
	if r.colour {
		return a
	}
	n := a &^ (code | link | heading)
	if a&link != 0 {
		n |= underline
	}
	if a&heading != 0 {
		n |= bold
	}
	return n
}

// sgr returns the escape sequence that sets exactly a (resets, for 0).
func (r *renderer) sgr(a attr) string {
	if a = r.norm(a); a == 0 {
		return "\x1b[0m"
	}
	var b strings.Builder
	b.WriteString("\x1b[0")
	add := func(on bool, code string) {
		if on {
			b.WriteByte(';')
			b.WriteString(code)
		}
	}
	add(a&(bold|heading) != 0, "1")
	add(a&faint != 0, "2")
	add(a&italic != 0, "3")
	add(a&(underline|link) != 0, "4")
	add(a&strike != 0, "9")
	if r.colour {
		switch {
		case a&code != 0:
			b.WriteString(";38;5;203")
		case a&link != 0:
			b.WriteString(";38;5;39")
		case a&heading != 0:
			b.WriteString(";38;5;75")
		}
	}
	b.WriteByte('m')
	return b.String()
}

// A run is inline text in one style; brk is a hard line break.
type run struct {
	text string
	a    attr
	brk  bool
}

type renderer struct {
	src    []byte
	colour bool
}

// blocks renders the block children of n in width columns: their lines,
// a blank line between blocks.
func (r *renderer) blocks(n ast.Node, width int) []string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		lines := r.block(c, width)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return out
}

func (r *renderer) block(n ast.Node, width int) []string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.wrap(r.inlines(n, 0, nil), width)
	case *ast.Heading:
		runs := []run{{text: strings.Repeat("#", n.Level) + " ", a: heading}}
		return r.wrap(r.inlines(n, heading, runs), width)
	case *ast.ThematicBreak:
		return []string{r.styled(strings.Repeat("─", min(width, 40)), faint)}
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		var out []string
		for _, l := range r.lines(n) {
			out = append(out, "  "+r.styled(l, code))
		}
		return out
	case *ast.HTMLBlock:
		return r.lines(n)
	case *ast.Blockquote:
		bar := r.styled("│", faint) + " "
		return prefixed(r.blocks(n, max(width-2, 1)), bar, bar)
	case *ast.List:
		return r.list(n, width)
	case *east.Table:
		return r.table(n)
	}
	return r.blocks(n, width)
}

// list renders a list: each item's blocks after its marker, indented
// under it; a loose list has a blank line between items.
func (r *renderer) list(n *ast.List, width int) []string {
	var out []string
	num := n.Start
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		mark := "• "
		if n.IsOrdered() {
			mark = strconv.Itoa(num) + ". "
			num++
		}
		w := uniseg.StringWidth(mark)
		var body []string
		if n.IsTight {
			// A tight item's blocks go line after line.
			for c := item.FirstChild(); c != nil; c = c.NextSibling() {
				body = append(body, r.block(c, max(width-w, 1))...)
			}
		} else {
			body = r.blocks(item, max(width-w, 1))
		}
		if len(out) > 0 && !n.IsTight {
			out = append(out, "")
		}
		if len(body) == 0 {
			body = []string{""}
		}
		out = append(out, prefixed(body, r.styled(mark, faint), strings.Repeat(" ", w))...)
	}
	return out
}

// table lays a table out in columns as wide as their widest cell, the
// header bold; cells are not wrapped.
func (r *renderer) table(n *east.Table) []string {
	var rows [][]string
	var widths []int
	header := -1
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		if _, ok := row.(*east.TableHeader); ok {
			header = len(rows)
		}
		var cells []string
		for i, cell := 0, row.FirstChild(); cell != nil; i, cell = i+1, cell.NextSibling() {
			runs := r.inlines(cell, 0, nil)
			var plain strings.Builder
			for _, ru := range runs {
				plain.WriteString(ru.text)
			}
			cells = append(cells, plain.String())
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], uniseg.StringWidth(plain.String()))
		}
		rows = append(rows, cells)
	}
	var out []string
	for k, cells := range rows {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString(" │ ")
			}
			cell := c + strings.Repeat(" ", widths[i]-uniseg.StringWidth(c))
			if k == header {
				cell = r.styled(cell, bold)
			}
			b.WriteString(cell)
		}
		out = append(out, strings.TrimRight(b.String(), " "))
		if k == header {
			rule := make([]string, len(widths))
			for i, w := range widths {
				rule[i] = strings.Repeat("─", w)
			}
			out = append(out, strings.Join(rule, "─┼─"))
		}
	}
	return out
}

// lines returns the source lines of a code or HTML block, as written.
func (r *renderer) lines(n ast.Node) []string {
	var out []string
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		out = append(out, strings.TrimRight(string(seg.Value(r.src)), "\r\n"))
	}
	return out
}

// prefixed puts first before the first line and rest before the others.
func prefixed(lines []string, first, rest string) []string {
	for i := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		lines[i] = p + lines[i]
	}
	return lines
}

// styled returns s in style a, reset after it.
func (r *renderer) styled(s string, a attr) string {
	if s == "" || r.norm(a) == 0 {
		return s
	}
	return r.sgr(a) + s + r.sgr(0)
}

// inlines appends the runs of the inline children of n, in style a, to
// runs.
func (r *renderer) inlines(n ast.Node, a attr, runs []run) []run {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		runs = r.inline(c, a, runs)
	}
	return runs
}

func (r *renderer) inline(n ast.Node, a attr, runs []run) []run {
	switch n := n.(type) {
	case *ast.Text:
		runs = append(runs, run{text: r.text(n), a: a})
		switch {
		case n.HardLineBreak():
			runs = append(runs, run{brk: true})
		case n.SoftLineBreak():
			runs = append(runs, run{text: " ", a: a})
		}
		return runs
	case *ast.String:
		return append(runs, run{text: Printable(string(n.Value)), a: a})
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				b.Write(t.Value(r.src))
			case *ast.String:
				b.Write(t.Value)
			}
		}
		return append(runs, run{text: Printable(b.String()), a: a | code})
	case *ast.Emphasis:
		if n.Level >= 2 {
			return r.inlines(n, a|bold, runs)
		}
		return r.inlines(n, a|italic, runs)
	case *east.Strikethrough:
		return r.inlines(n, a|strike, runs)
	case *east.TaskCheckBox:
		box := "[ ] "
		if n.IsChecked {
			box = "[x] "
		}
		return append(runs, run{text: box, a: a})
	case *ast.Link:
		start := len(runs)
		runs = r.inlines(n, a|link, runs)
		return r.destination(runs, start, string(n.Destination), a)
	case *ast.Image:
		runs = append(runs, run{text: "image: ", a: a | faint})
		start := len(runs)
		runs = r.inlines(n, a|link, runs)
		return r.destination(runs, start, string(n.Destination), a)
	case *ast.AutoLink:
		u := string(n.URL(r.src))
		return append(runs, run{text: u, a: a | link})
	case *ast.RawHTML:
		var b strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
		return append(runs, run{text: b.String(), a: a})
	}
	return r.inlines(n, a, runs)
}

// text returns what a text node shows: its backslash escapes and
// character references resolved (as an HTML renderer does), and no
// control character they may have made.
func (r *renderer) text(n *ast.Text) string {
	v := n.Value(r.src)
	if !n.IsRaw() {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
	}
	return Printable(string(v))
}

// destination appends a link's destination after its text (the runs
// from start), unless the text says it already.
func (r *renderer) destination(runs []run, start int, dest string, a attr) []run {
	var shown strings.Builder
	for _, ru := range runs[start:] {
		shown.WriteString(ru.text)
	}
	if dest == "" || dest == shown.String() {
		return runs
	}
	return append(runs, run{text: " (" + dest + ")", a: a | faint})
}

// A piece is a run's part of one word.
type piece struct {
	text string
	a    attr
}

// wrap lays runs out in lines of at most width columns, breaking at
// spaces; a word wider than the line has a line of its own.
func (r *renderer) wrap(runs []run, width int) []string {
	var lines []string
	var line strings.Builder
	lineW := 0
	cur := attr(0) // the style in effect on line
	var word []piece
	wordW := 0
	pendingSpace := false
	var spaceA attr

	set := func(a attr) {
		if a = r.norm(a); a != cur {
			line.WriteString(r.sgr(a))
			cur = a
		}
	}
	endLine := func() {
		if cur != 0 {
			line.WriteString(r.sgr(0))
			cur = 0
		}
		lines = append(lines, line.String())
		line.Reset()
		lineW = 0
	}
	flush := func() {
		if len(word) == 0 {
			return
		}
		if pendingSpace && lineW > 0 {
			if lineW+1+wordW > width {
				endLine()
			} else {
				set(spaceA)
				line.WriteByte(' ')
				lineW++
			}
		}
		for _, p := range word {
			set(p.a)
			line.WriteString(p.text)
		}
		lineW += wordW
		word, wordW, pendingSpace = word[:0], 0, false
	}
	for _, ru := range runs {
		if ru.brk {
			flush()
			endLine()
			pendingSpace = false
			continue
		}
		s := ru.text
		for s != "" {
			i := strings.IndexFunc(s, unicode.IsSpace)
			if i < 0 {
				word = append(word, piece{s, ru.a})
				wordW += uniseg.StringWidth(s)
				break
			}
			if i > 0 {
				word = append(word, piece{s[:i], ru.a})
				wordW += uniseg.StringWidth(s[:i])
			}
			flush()
			if lineW > 0 {
				pendingSpace, spaceA = true, ru.a
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			s = s[i+size:]
		}
	}
	flush()
	if lineW > 0 || len(lines) == 0 {
		endLine()
	}
	return lines
}

// Printable returns s without control characters (escape sequences
// included), keeping newlines and tabs, and with each byte that is not
// UTF-8 replaced by U+FFFD (so that no two of them can meet as a control
// character once text between them is taken out): what may reach a
// terminal.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, IsControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\x1b' {
			i += escapeLen(s[i:])
			continue
		}
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case !IsControl(r):
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// IsControl reports whether Printable drops r: control characters but
// newline and tab, and the Unicode line and paragraph separators.
func IsControl(r rune) bool {
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
