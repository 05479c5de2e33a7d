package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// Control characters never reach the terminal; text stays as it is.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\twith a tab\nand a line": "plain text\twith a tab\nand a line",
		"abc\x1b[DX":                         "abcX",
		"\x1b]0;evil title\x07visible":       "visible",
		"bell\x07 and nul\x00":               "bell and nul",
		"\x1b[31mred\x1b[0m":                 "red",
		"ünïcödé ✓ 日本":                       "ünïcödé ✓ 日本",
		"line\u2028sep":                      "linesep",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("abc\x1b[DX")
	f.Add("\x1b]0;t\x1b\\x")
	f.Fuzz(func(t *testing.T, s string) {
		if p := printable(s); strings.ContainsFunc(p, isControl) || strings.Contains(p, "\x1b") {
			t.Fatalf("printable(%q) = %q keeps a control character", s, p)
		}
	})
}

// The renderer prints a block once it is complete, never twice, and
// shows text between angle brackets.
func TestMarkdownBlocks(t *testing.T) {
	var out bytes.Buffer
	md := newMarkdown(&out, false)
	md.Write("First para")
	md.Write("graph.\n")
	if out.Len() != 0 {
		t.Fatalf("printed an unfinished block: %q", out.String())
	}
	md.Write("\n```go\nx := 1\n\ny := 2\n")
	got := ansiStrip(out.String())
	if !strings.Contains(got, "First paragraph.") || strings.Contains(got, "x := 1") {
		t.Fatalf("after the first block: %q", got)
	}
	md.Write("```\n\na <T> type")
	md.Flush()
	got = ansiStrip(out.String())
	for _, want := range []string{"x := 1", "y := 2", "a <T> type"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "First paragraph.") != 1 {
		t.Errorf("a block printed twice:\n%s", got)
	}
}

func ansiStrip(s string) string { return sgrRE.ReplaceAllString(s, "") }

var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestPaint: the palette writes lipgloss's sequences for its styles (a
// line in bold cyan is "\x1b[1;36m…\x1b[m"), a line at a time, and the
// zero palette writes the text alone.
func TestPaint(t *testing.T) {
	p := newPalette(true)
	for _, c := range []struct {
		s          style
		text, want string
	}{
		{p.user, "> ", "\x1b[1;36m> \x1b[m"},
		{p.tool, "[calls f {}]", "\x1b[33m[calls f {}]\x1b[m"},
		{p.notice, "saved", "\x1b[35msaved\x1b[m"},
		{p.errorS, "error: x", "\x1b[1;31merror: x\x1b[m"},
		{p.dimmed, "", "\x1b[2m\x1b[m"},
		{p.notice, "two\nlines", "\x1b[35mtwo\x1b[m\n\x1b[35mlines\x1b[m"},
	} {
		if got := p.paint(c.s, c.text); got != c.want {
			t.Errorf("paint(%q, %q) = %q, want %q", c.s, c.text, got, c.want)
		}
	}
	var off palette
	if got := off.paint(off.user, "two\nlines"); got != "two\nlines" {
		t.Errorf("the zero palette painted %q", got)
	}
	if newPalette(false).on {
		t.Error("newPalette(false) paints")
	}
}

// An answer streams as it renders whole: a list item's indented
// paragraph or code block stays in its item. The blank line before it
// ended a block, and the code of "1. Install it:" was shown at the
// margin, out of its list.
func TestMarkdownStreamsAsWhole(t *testing.T) {
	for _, src := range []string{
		"1. Install it:\n\n   ```sh\n   go install example.com/x@latest\n   ```\n\n2. Run it:\n\n   ```sh\n   x --help\n   ```\n\nThat is all.\n",
		"- a\n\n  continued para\n\n- b\n",
		"para\n\n    indented code\n\n    more code\n\nafter\n",
		"1. one\n\n2. two\n",
		"> quote one\n\n> quote two\n",
		"| a | b |\n|---|---|\n| 1 | 2 |\n\nx\n",
		"```\ncode\n```\ntext right after\n\nend\n",
		// A code block inside a longer fence (how to write Markdown,
		// say): a fence closes only on a line of its own character, at
		// least as long as the one that opened it, with nothing after it
		// (CommonMark). The inner ``` closed the block, and the blank
		// line after it cut the outer one in two.
		"How to show code:\n\n````markdown\nSome text\n\n```go\nx := 1\n```\n\nmore text\n````\n\n" +
			"```\nprintf 'hi'\n```py\n\nsecond line\n```\n\nDone.\n",
	} {
		var whole, streamed bytes.Buffer
		md := newMarkdown(&whole, false)
		md.Write(src)
		md.Flush()
		md = newMarkdown(&streamed, false)
		for _, piece := range strings.SplitAfter(src, " ") {
			md.Write(piece)
		}
		md.Flush()
		if whole.String() != streamed.String() {
			t.Errorf("%q\nstreamed:\n%s\nwhole:\n%s", src, streamed.String(), whole.String())
		}
	}
}
