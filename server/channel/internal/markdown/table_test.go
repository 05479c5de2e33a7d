package markdown

import (
	"strings"
	"testing"
)

var plainStyle = Style{
	Escape: func(s string) string { return strings.NewReplacer("<", "&lt;", "&", "&amp;").Replace(s) },
	Bold:   [2]string{"<b>", "</b>"}, Italic: [2]string{"<i>", "</i>"}, Strike: [2]string{"<s>", "</s>"},
	Code: [2]string{"<code>", "</code>"},
	Pre: func(_, code string) string {
		return "<pre>" + strings.NewReplacer("<", "&lt;", "&", "&amp;").Replace(code) + "</pre>"
	},
	Link:  func(url, text string) string { return text + " (" + url + ")" },
	Quote: func(s string) string { return "> " + s },
}

func TestTableRendering(t *testing.T) {
	for _, c := range []struct{ name, md, want string }{
		{"columns", "Prices:\n\n| Fruit | Qty | Price |\n|:--|:-:|--:|\n| apple | 3 | 1.20 |\n| **kiwi** & co | 12 | 0.5 |\n",
			"Prices:\n\n<pre>Fruit      Qty  Price\n---------  ---  -----\napple       3    1.20\nkiwi &amp; co  12     0.5</pre>"},
		{"wide characters", "| 名前 | n |\n|---|---|\n| 東京 | 1 |\n| Oslo | 22 |",
			"<pre>名前  n\n----  --\n東京  1\nOslo  22</pre>"},
		{"escaped pipe and code", "| a | b |\n|---|---|\n| `x\\|y` | [link](https://e.x) |",
			"<pre>a    b\n---  ----\nx|y  link</pre>"},
		{"too wide", "| Name | Note |\n|---|---|\n| apple | " + strings.Repeat("long ", 12) + "|\n| kiwi | *green* |",
			"<b>Name:</b> apple\n<b>Note:</b> " + strings.TrimSpace(strings.Repeat("long ", 12)) + "\n\n<b>Name:</b> kiwi\n<b>Note:</b> <i>green</i>"},
		{"continued", "| | |\n|-|-:|\n| apple | 3 |", "<pre>apple  3</pre>"},
	} {
		if got := Render(c.md, plainStyle); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

func TestTables(t *testing.T) {
	for _, c := range []struct{ name, md, want string }{
		{"table among Markdown", "# Sums\nSee:\n| a | b |\n|--|--:|\n| x | 10 |\n| yy | 2 |\n\n**done** | not a table",
			"# Sums\nSee:\n```\na    b\n--  --\nx   10\nyy   2\n```\n\n**done** | not a table"},
		{"in code", "```\n| a | b |\n|--|--|\n```", "```\n| a | b |\n|--|--|\n```"},
		{"too wide", "| k | v |\n|--|--|\n| a | **" + strings.Repeat("w", 70) + "** |",
			"**k:** a\n**v:** **" + strings.Repeat("w", 70) + "**"},
		{"fence in a cell", "| a |\n|--|\n| ``` |", "```\na\n---\n'''\n```"},
	} {
		if got := Tables(c.md); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

func TestOpenTable(t *testing.T) {
	head := "| Fruit | Qty |\n|:--|--:|\n"
	for _, c := range []struct {
		name, src string
		most      int
		want      string
	}{
		{"inside", "Text\n\n" + head + "| apple | 3 |", 100, head},
		{"header too long", head + "| apple | 3 |", 10, "| | |\n|:-|-:|\n"},
		{"after", head + "| apple | 3 |\n\nmore", 100, ""},
		{"no table", "just | text", 100, ""},
		{"in a fence", "```\n" + head + "| a | 1 |", 100, ""},
	} {
		if got := OpenTable(c.src, c.most); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// Tables and OpenTable take any text; text without a pipe is no table
// and comes back as it is.
func FuzzTables(f *testing.F) {
	f.Add("| a | b |\n|--|--|\n| x | y |", 20)
	f.Add("x\n|a|\n|-|\n|", 4)
	f.Add("> | a |\n> |---|\n> | b |", 8)
	f.Fuzz(func(t *testing.T, src string, most int) {
		got := Tables(src)
		OpenTable(src, most)
		Render(src, plainStyle)
		if !strings.Contains(src, "|") && got != src {
			t.Fatalf("%q became %q", src, got)
		}
	})
}
