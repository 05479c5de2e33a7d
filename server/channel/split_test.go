package channel_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spool-go/spool/server/channel"
)

func TestSplit(t *testing.T) {
	if parts := channel.Split("", 100, nil, nil); len(parts) != 0 {
		t.Fatalf("empty text: %q", parts)
	}
	if parts := channel.Split("short answer", 100, nil, nil); len(parts) != 1 || parts[0] != "short answer" {
		t.Fatalf("%q", parts)
	}
	// Paragraph breaks first, then lines, then spaces.
	text := strings.Repeat("a", 60) + "\n\n" + strings.Repeat("b", 30) + " " + strings.Repeat("c", 30)
	parts := channel.Split(text, 80, nil, nil)
	if len(parts) != 2 || parts[0] != strings.Repeat("a", 60) {
		t.Fatalf("%q", parts)
	}
	// A word longer than the limit is cut between characters, never
	// inside one.
	parts = channel.Split(strings.Repeat("é", 50), 16, nil, nil)
	for _, p := range parts {
		if !utf8.ValidString(p) || utf8.RuneCountInString(p) > 16 {
			t.Fatalf("%q", parts)
		}
	}
	// A code block cut in two is closed and reopened with its language.
	code := "```go\n" + strings.Repeat("x := 1\n", 30) + "```\nafter"
	parts = channel.Split(code, 100, nil, nil)
	if len(parts) < 2 || !strings.HasSuffix(parts[0], "\n```") || !strings.HasPrefix(parts[1], "```go\n") {
		t.Fatalf("%q", parts)
	}
	// The rendered length counts: escaping that grows the text makes
	// smaller parts.
	grow := func(s string) string { return strings.ReplaceAll(s, "&", "&amp;") }
	for _, p := range channel.Split(strings.Repeat("& ", 200), 50, nil, grow) {
		if utf8.RuneCountInString(p) > 50 {
			t.Fatalf("rendered part of %d", utf8.RuneCountInString(p))
		}
	}
	// A growing text keeps the cuts of its earlier parts.
	long := strings.Repeat("word ", 100)
	a := channel.Split(long, 64, nil, nil)
	b := channel.Split(long+"more words here", 64, nil, nil)
	for i := range len(a) - 1 {
		if a[i] != b[i] {
			t.Fatalf("part %d changed: %q → %q", i, a[i], b[i])
		}
	}
	if channel.UTF16Len("a😀") != 3 {
		t.Fatal("UTF16Len")
	}
}

// TestSplitKeepsIndentation: a cut at a line break inside a code block
// keeps the next line's leading spaces, which are code there. (Outside a
// fence they are trimmed: a part beginning with four spaces would render
// as a code block.)
func TestSplitKeepsIndentation(t *testing.T) {
	var b strings.Builder
	b.WriteString("```python\n")
	for range 20 {
		b.WriteString("def f():\n    if x:\n        return 1\n")
	}
	b.WriteString("```")
	text := b.String()
	want := map[string]bool{}
	for line := range strings.Lines(text) {
		want[strings.TrimRight(line, "\n")] = true
	}
	parts := channel.Split(text, 100, nil, nil)
	if len(parts) < 2 {
		t.Fatalf("not cut: %q", parts)
	}
	for i, p := range parts {
		for line := range strings.Lines(p) {
			line = strings.TrimRight(line, "\n")
			if !want[line] {
				t.Fatalf("part %d has the line %q, which the text does not: %q", i, line, p)
			}
		}
	}
}

// A table cut in two opens again in the next part: its header and
// delimiter rows, so that the rest of its rows are a table there too; or,
// when those are long, a header of empty cells.
func TestSplitTable(t *testing.T) {
	head := "| Item | Qty |\n|:--|--:|\n"
	var rows strings.Builder
	for i := range 30 {
		rows.WriteString("| item " + strings.Repeat("x", i%7) + " | 1 |\n")
	}
	text := "Stock:\n\n" + head + rows.String() + "\nThe end."
	parts := channel.Split(text, 200, nil, nil)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	n := 0
	for i, p := range parts[1:] {
		n += strings.Count(p, "| item")
		if i < len(parts)-2 && !strings.HasPrefix(p, head) {
			t.Fatalf("part %d does not open the table again: %q", i+1, p)
		}
	}
	if n += strings.Count(parts[0], "| item"); n != 30 || !strings.HasSuffix(parts[len(parts)-1], "The end.") {
		t.Fatalf("%d rows in %q", n, parts)
	}
	long := "| " + strings.Repeat("Item ", 12) + "| Qty |\n|:--|--:|\n"
	parts = channel.Split(long+rows.String(), 200, nil, nil)
	if len(parts) < 2 || !strings.HasPrefix(parts[1], "| | |\n|:-|-:|\n| item") {
		t.Fatalf("a long header: %q", parts)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"hello world", "```\ncode\n```", "a\n\nb\nc d", strings.Repeat("x", 300), "```" + strings.Repeat("l", 100) + "\n" + strings.Repeat("y\n", 100),
		"| a | b |\n|--|--|\n" + strings.Repeat("| x | y |\n", 20)} {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 16 || limit > 500 || !utf8.ValidString(text) {
			return
		}
		parts := channel.Split(text, limit, nil, nil)
		var got strings.Builder
		for _, p := range parts {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Fatalf("part of %d runes over %d: %q", n, limit, p)
			}
			got.WriteString(p + " ")
		}
		// A cut code block or table opens again: its fence or header is
		// in the parts twice.
		if !strings.ContainsAny(text, "`|") && strings.Join(strings.Fields(got.String()), "") != strings.Join(strings.Fields(text), "") {
			t.Fatalf("parts %q do not make %q", parts, text)
		}
	})
}
