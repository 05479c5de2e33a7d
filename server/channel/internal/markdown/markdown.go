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
