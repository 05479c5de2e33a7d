package termmd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rivo/uniseg"
)

var (
	sgrRE    = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	colourRE = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|38;5;[0-9]+|9[0-7])m`)
)

func plain(s string) string { return sgrRE.ReplaceAllString(s, "") }

// Each construct a model writes reads as text, in its style.
func TestRender(t *testing.T) {
	for _, c := range []struct {
		name, src string
		colour    bool
		want      []string // in the output, escapes included
		plain     string   // the output without escapes, when not ""
	}{
		{name: "bold", src: "some **bold** text", want: []string{"\x1b[0;1mbold\x1b[0m"}, plain: "some bold text"},
		{name: "italic", src: "an *italic* word", want: []string{"\x1b[0;3mitalic\x1b[0m"}, plain: "an italic word"},
		{name: "nested", src: "***both***", want: []string{"\x1b[0;1;3mboth"}},
		{name: "strike", src: "~~gone~~", want: []string{"\x1b[0;9mgone"}},
		{name: "code span, no colour", src: "run `go test` now", plain: "run go test now"},
		{name: "code span, colour", src: "run `go test` now", colour: true, want: []string{"\x1b[0;38;5;203mgo test\x1b[0m"}},
		{name: "heading", src: "## Steps", want: []string{"\x1b[0;1m## Steps\x1b[0m"}},
		{name: "heading, colour", src: "# Title", colour: true, want: []string{"\x1b[0;1;38;5;75m# Title"}},
		{name: "link", src: "see [the docs](https://example.com/docs)", want: []string{"\x1b[0;4mthe docs\x1b[0;2m (https://example.com/docs)\x1b[0m"}, plain: "see the docs (https://example.com/docs)"},
		{name: "autolink", src: "<https://example.com>", plain: "https://example.com"},
		{name: "link whose text is its url", src: "[https://a.example](https://a.example)", plain: "https://a.example"},
		{name: "image", src: "![a cat](cat.png)", plain: "image: a cat (cat.png)"},
		{name: "bullets", src: "- one\n- two\n  - nested", plain: "• one\n• two\n  • nested"},
		{name: "ordered", src: "3. three\n4. four", plain: "3. three\n4. four"},
		{name: "loose list", src: "- one\n\n- two", plain: "• one\n\n• two"},
		{name: "tasks", src: "- [x] done\n- [ ] to do", plain: "• [x] done\n• [ ] to do"},
		{name: "code block", src: "```go\nx := 1\n\n\ty := 2\n```", plain: "  x := 1\n  \n  \ty := 2"},
		{name: "indented code", src: "    a  b", plain: "  a  b"},
		{name: "quote", src: "> said\n> so", plain: "│ said so"},
		{name: "rule", src: "a\n\n---\n\nb", plain: "a\n\n" + strings.Repeat("─", 40) + "\n\nb"},
		{name: "paragraphs", src: "one\ntwo\n\nthree", plain: "one two\n\nthree"},
		{name: "hard break", src: "one  \ntwo", plain: "one\ntwo"},
		{name: "angle brackets", src: "a <T> type", plain: "a <T> type"},
		{name: "html block", src: "<div>\nhi\n</div>", plain: "<div>\nhi\n</div>"},
		{name: "table", src: "| a | bb |\n|---|---|\n| ccc | d |", plain: "a   │ bb\n────┼───\nccc │ d"},
		{name: "escapes and references", src: `a \*b\* &amp; &#x41; &#155;x`, plain: "a *b* & A x"},
		{name: "bytes that are not UTF-8", src: "\xc2`\x00\x9a`0", plain: "\ufffd\ufffd0"},
		{name: "escape sequences dropped", src: "x\x1b]0;title\x07y \x1b[31mred", plain: "xy red"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Render(c.src, 80, c.colour)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("Render(%q) = %q, lacks %q", c.src, got, w)
				}
			}
			if c.plain != "" && plain(got) != c.plain {
				t.Errorf("Render(%q) reads %q, want %q", c.src, plain(got), c.plain)
			}
			if !c.colour && colourRE.MatchString(got) {
				t.Errorf("Render(%q) without colour has colour: %q", c.src, got)
			}
		})
	}
}

// Paragraphs, list items and quotes wrap at the width, at spaces, and
// keep their indentation; styles do not spill onto the next line.
func TestRenderWraps(t *testing.T) {
	words := strings.Repeat("lorem **ipsum** dolor ", 12)
	for _, src := range []string{words, "- " + words, "> " + words, "1. " + words} {
		out := Render(src, 30, true)
		lines := strings.Split(out, "\n")
		if len(lines) < 5 {
			t.Errorf("%q at 30 columns: %d lines, want it wrapped:\n%s", src, len(lines), out)
		}
		for _, l := range lines {
			if w := uniseg.StringWidth(plain(l)); w > 30 {
				t.Errorf("line %q is %d columns wide, past 30", plain(l), w)
			}
			if seqs := sgrRE.FindAllString(l, -1); len(seqs) > 0 && seqs[len(seqs)-1] != "\x1b[0m" {
				t.Errorf("line %q leaves a style on", l)
			}
			if p := plain(l); strings.HasPrefix(src, "- ") && !strings.HasPrefix(p, "• ") && !strings.HasPrefix(p, "  lorem") && !strings.HasPrefix(p, "  ipsum") && !strings.HasPrefix(p, "  dolor") {
				t.Errorf("list line %q is not under its marker", p)
			}
		}
	}
	// A word wider than the line has a line of its own, unbroken.
	long := strings.Repeat("x", 50)
	if got := plain(Render("a "+long+" b", 20, false)); got != "a\n"+long+"\nb" {
		t.Errorf("a long word: %q", got)
	}
	// No width: no wrapping.
	if got := Render(words, 0, false); strings.Contains(got, "\n") {
		t.Errorf("width 0 wrapped: %q", got)
	}
}

// Wide characters count as two columns.
func TestRenderWideCharacters(t *testing.T) {
	out := plain(Render(strings.Repeat("日本語 ", 10), 12, false))
	for _, l := range strings.Split(out, "\n") {
		if uniseg.StringWidth(l) > 12 {
			t.Errorf("line %q past 12 columns", l)
		}
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c`", "- [x] a\n  1. b\n\n> c", "| a |\n|---|\n| b |", "```\n\x1b[31m\n```", "<b>x</b>", "[a](b \"t\")"} {
		f.Add(s, 20, true)
	}
	f.Fuzz(func(t *testing.T, src string, width int, colour bool) {
		out := Render(src, width%200, colour)
		rest := sgrRE.ReplaceAllString(out, "")
		if strings.ContainsFunc(rest, IsControl) || strings.Contains(rest, "\x1b") {
			t.Fatalf("Render(%q) = %q writes a control sequence of its own", src, out)
		}
		if !colour && colourRE.MatchString(out) {
			t.Fatalf("Render(%q) without colour has colour: %q", src, out)
		}
	})
}
