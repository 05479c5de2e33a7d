// Package markdown renders the Markdown that models write in the markup of
// a chat platform (Slack's mrkdwn, Telegram's HTML), through goldmark's
// CommonMark parser: one walk of the syntax tree, with the platform's
// markers and escaping given as a Style. Constructs a platform has no
// markup for are kept as plain text (images become their link, raw HTML
// is escaped).
//
// # Tables
//
// No chat platform renders a GitHub-style table, so a table becomes a
// code block (Style.Pre) of its cells' plain text in columns, padded to
// the display width of their widest cell (a wide character counts two),
// each as its delimiter row aligns it, the header above a rule of
// dashes. A table whose lines would be wider than MaxTableWidth columns,
// which a phone would wrap, is written row by row instead: each row a
// block of "header: value" lines, the header bold, the value in the
// platform's markup. Tables does the same to Markdown that a platform
// renders itself (Discord), changing nothing else.
package markdown

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/rivo/uniseg"
)

// Style is a platform's markup.
type Style struct {
	Escape func(string) string // escapes plain text
	Bold   [2]string           // opening and closing markers
	Italic [2]string
	Strike [2]string
	Code   [2]string                      // inline code; its text is escaped
	Pre    func(lang, code string) string // a code block; code is not escaped
	Link   func(url, text string) string  // text is rendered already; url is not escaped
	Quote  func(rendered string) string   // a block quote of rendered blocks
}

// md is built on first use, not in every process that links a driver.
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Strikethrough, extension.Table))
})

// Render renders src in style s.
func Render(src string, s Style) string {
	source := []byte(src)
	doc := md().Parser().Parse(text.NewReader(source))
	r := renderer{src: source, s: s}
	return strings.TrimRight(r.blocks(doc, ""), "\n")
}

type renderer struct {
	src []byte
	s   Style
}

// blocks renders the block children of n, separated by blank lines (a
// tight list's items by line breaks).
func (r *renderer) blocks(n ast.Node, indent string) string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if b := r.block(c, indent); b != "" {
			out = append(out, b)
		}
	}
	return strings.Join(out, "\n\n")
}

func (r *renderer) block(n ast.Node, indent string) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.inlines(n)
	case *ast.Heading:
		return r.s.Bold[0] + r.inlines(n) + r.s.Bold[1]
	case *ast.ThematicBreak:
		return "───"
	case *ast.FencedCodeBlock:
		return r.s.Pre(string(n.Language(r.src)), r.lines(n))
	case *ast.CodeBlock:
		return r.s.Pre("", r.lines(n))
	case *ast.HTMLBlock:
		return r.s.Escape(strings.TrimRight(r.lines(n), "\n"))
	case *ast.Blockquote:
		return r.s.Quote(r.blocks(n, ""))
	case *east.Table:
		return r.table(n)
	case *ast.List:
		var items []string
		num := n.Start
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			mark := "• "
			if n.IsOrdered() {
				mark = strconv.Itoa(num) + ". "
				num++
			}
			body := r.blocks(c, indent+"    ")
			body = strings.ReplaceAll(body, "\n", "\n"+indent+"    ")
			items = append(items, indent+mark+body)
		}
		sep := "\n"
		if !n.IsTight {
			sep = "\n\n"
		}
		return strings.Join(items, sep)
	}
	if n.Type() == ast.TypeInline {
		return r.inlines(n.Parent())
	}
	// Anything else: its text.
	return r.blocks(n, indent)
}

func (r *renderer) lines(n ast.Node) string {
	var b bytes.Buffer
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// inlines renders the inline children of n.
func (r *renderer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(r.inline(c))
	}
	return b.String()
}

func (r *renderer) inline(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Text:
		s := r.s.Escape(string(n.Value(r.src)))
		if n.SoftLineBreak() || n.HardLineBreak() {
			s += "\n"
		}
		return s
	case *ast.String:
		return r.s.Escape(string(n.Value))
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Value(r.src))
			} else if s, ok := c.(*ast.String); ok {
				b.Write(s.Value)
			}
		}
		return r.s.Code[0] + r.s.Escape(b.String()) + r.s.Code[1]
	case *ast.Emphasis:
		m := r.s.Italic
		if n.Level >= 2 {
			m = r.s.Bold
		}
		return m[0] + r.inlines(n) + m[1]
	case *east.Strikethrough:
		return r.s.Strike[0] + r.inlines(n) + r.s.Strike[1]
	case *ast.Link:
		return r.s.Link(string(n.Destination), r.inlines(n))
	case *ast.Image:
		return r.s.Link(string(n.Destination), r.inlines(n))
	case *ast.AutoLink:
		u := string(n.URL(r.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(u, "mailto:") {
			return r.s.Link("mailto:"+u, r.s.Escape(u))
		}
		return r.s.Link(u, r.s.Escape(u))
	case *ast.RawHTML:
		var b strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
		return r.s.Escape(b.String())
	}
	return r.inlines(n)
}

// MaxTableWidth is the widest, in display columns, that a table is laid
// out in columns; a wider one is written row by row.
const MaxTableWidth = 60

// table renders t as a code block of columns, or row by row.
func (r *renderer) table(t *east.Table) string {
	if g, ok := grid(t, r.plain); ok {
		return r.s.Pre("", g)
	}
	return records(t, r.plain, r.s.Escape, func(label string) string {
		return r.s.Bold[0] + r.s.Escape(label) + ":" + r.s.Bold[1]
	}, func(cell ast.Node) string { return r.inlines(cell) })
}

// plain is the text of the inlines of n, without markup: what a table's
// cell shows in a code block.
func (r *renderer) plain(n ast.Node) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Value(r.src))
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.URL(r.src))
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				b.Write(seg.Value(r.src))
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// cells returns the plain text of t's rows, the header first, each with
// as many cells as t has columns.
func cells(t *east.Table, plain func(ast.Node) string) [][]string {
	var rows [][]string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cs []string
		for c := row.FirstChild(); c != nil && len(cs) < len(t.Alignments); c = c.NextSibling() {
			cs = append(cs, strings.TrimSpace(plain(c)))
		}
		for len(cs) < len(t.Alignments) {
			cs = append(cs, "")
		}
		rows = append(rows, cs)
	}
	return rows
}

// grid lays t out in columns; false when a line would be wider than
// MaxTableWidth. A header of empty cells (a table continued from the
// message before, see channel.Split) has no header line nor rule.
func grid(t *east.Table, plain func(ast.Node) string) (string, bool) {
	rows := cells(t, plain)
	if len(rows) == 0 {
		return "", false
	}
	widths := make([]int, len(t.Alignments))
	for _, cs := range rows {
		for i, c := range cs {
			widths[i] = max(widths[i], uniseg.StringWidth(c))
		}
	}
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	if total > MaxTableWidth {
		return "", false
	}
	line := func(cs []string) string {
		var b strings.Builder
		for i, c := range cs {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := widths[i] - uniseg.StringWidth(c)
			switch t.Alignments[i] {
			case east.AlignRight:
				b.WriteString(strings.Repeat(" ", pad) + c)
			case east.AlignCenter:
				b.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
			default:
				b.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	var out []string
	if strings.Join(rows[0], "") != "" {
		rule := make([]string, len(widths))
		for i, w := range widths {
			rule[i] = strings.Repeat("-", max(w, 1))
		}
		out = append(out, line(rows[0]), strings.Join(rule, "  "))
	}
	for _, cs := range rows[1:] {
		out = append(out, line(cs))
	}
	return strings.Join(out, "\n"), true
}

// records writes t row by row: each row a block of label(header) value
// lines, its empty cells left out; a row without cells is left out.
func records(t *east.Table, plain func(ast.Node) string, esc, label func(string) string, value func(ast.Node) string) string {
	head := cells(t, plain)[0]
	var out []string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		if _, ok := row.(*east.TableHeader); ok {
			continue
		}
		var lines []string
		i := 0
		for c := row.FirstChild(); c != nil && i < len(head); c, i = c.NextSibling(), i+1 {
			v := strings.TrimSpace(value(c))
			switch {
			case v == "":
			case head[i] == "":
				lines = append(lines, v)
			default:
				lines = append(lines, label(head[i])+" "+v)
			}
		}
		if len(lines) > 0 {
			out = append(out, strings.Join(lines, "\n"))
		}
	}
	if len(out) == 0 {
		// Only a header: its names.
		return esc(strings.Join(head, " · "))
	}
	return strings.Join(out, "\n\n")
}

// Tables rewrites the top-level tables of src, Markdown that a platform
// renders itself but without tables (Discord), as the package's rule
// says: a fenced code block, or row by row with **bold** labels and the
// cells' Markdown as written. The rest of src is left as it is, byte for
// byte. (A table in a list or a quote is left too: its lines carry the
// list's indentation or the quote's markers.)
func Tables(src string) string {
	source := []byte(src)
	doc := md().Parser().Parse(text.NewReader(source))
	r := renderer{src: source}
	var b strings.Builder
	last := 0
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		t, ok := c.(*east.Table)
		if !ok {
			continue
		}
		start, end := span(t, source)
		if start < last {
			continue
		}
		b.WriteString(src[last:start])
		if g, ok := grid(t, r.plain); ok {
			// A fence in a cell would end the block early.
			b.WriteString("```\n" + strings.ReplaceAll(g, "```", "'''") + "\n```")
		} else {
			b.WriteString(records(t, r.plain, func(s string) string { return s }, func(label string) string {
				return "**" + label + ":**"
			}, func(cell ast.Node) string { return r.lines(cell) }))
		}
		last = end
	}
	b.WriteString(src[last:])
	return b.String()
}

// span returns where table t is in source: from the start of its header
// line to the end of its last row's line (before the line break).
func span(t *east.Table, source []byte) (int, int) {
	start := t.FirstChild().Pos()
	for start > 0 && source[start-1] != '\n' {
		start--
	}
	end := t.LastChild().Pos()
	if i := bytes.IndexByte(source[end:], '\n'); i >= 0 {
		end += i
	} else {
		end = len(source)
	}
	return start, end
}

// OpenTable returns, when src ends inside a table at the top level (its
// last block is a table that runs to src's end), the lines that open the
// next part of the text so that the rest of the table's rows are a table
// again: its header and delimiter rows as written when they take at most
// most bytes, else a header of empty cells (laid out with no header line
// nor rule). Else "".
func OpenTable(src string, most int) string {
	source := []byte(src)
	doc := md().Parser().Parse(text.NewReader(source))
	t, ok := doc.LastChild().(*east.Table)
	if !ok {
		return ""
	}
	start, end := span(t, source)
	if strings.TrimSpace(src[end:]) != "" {
		return ""
	}
	stop := len(source)
	if row := t.FirstChild().NextSibling(); row != nil {
		stop = row.Pos()
	}
	lines := strings.SplitN(src[start:stop], "\n", 3)
	if len(lines) >= 2 && len(lines[0])+len(lines[1])+2 <= most {
		return lines[0] + "\n" + lines[1] + "\n"
	}
	var h, d strings.Builder
	h.WriteString("|")
	d.WriteString("|")
	for _, a := range t.Alignments {
		h.WriteString(" |")
		switch a {
		case east.AlignLeft:
			d.WriteString(":-|")
		case east.AlignRight:
			d.WriteString("-:|")
		case east.AlignCenter:
			d.WriteString(":-:|")
		default:
			d.WriteString("-|")
		}
	}
	return h.String() + "\n" + d.String() + "\n"
}
