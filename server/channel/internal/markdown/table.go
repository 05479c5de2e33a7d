package markdown

import (
	"bytes"
	"strings"

	"github.com/rivo/uniseg"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

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
