package channel

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spool-go/spool/server/channel/internal/markdown"
)

// Split cuts Markdown text into the messages a platform takes: format
// renders each part for the platform (nil keeps it as is), and no
// rendered part is longer than limit as measure counts (nil counts
// runes). Parts end at a paragraph break, else a line break, else a
// space, else anywhere between two characters; a fenced code block cut in
// two is closed at the end of one part and opened again, with its
// language, at the start of the next, where its next line keeps its
// indentation. A table cut in two (at the top level) has its header
// and delimiter rows opened again at the start of the next part, so that
// its other rows are a table there too, laid out on their own (see
// package internal/markdown; a header longer than a quarter of limit
// gives way to one of empty cells, and the part shows none). Empty text
// has no parts. Cutting
// only ever looks at the start of the text, so the parts of a text that
// grows keep their cuts: a reply streamed by editing edits its last part
// and adds parts after it.
func Split(text string, limit int, measure func(string) int, format func(string) string) []string {
	if measure == nil {
		measure = utf8.RuneCountInString
	}
	if format == nil {
		format = func(s string) string { return s }
	}
	if limit < 16 {
		limit = 16
	}
	var parts []string
	reopen := ""
	rest := strings.TrimRight(text, " \n")
	for strings.TrimSpace(rest) != "" {
		src := reopen + rest
		runes := min(limit, utf8.RuneCountInString(src))
		for {
			end := cutPoint(src, runeOffset(src, runes), len(reopen))
			body, fence := closeFence(src[:end])
			out := format(body)
			over := measure(out) - limit
			if over <= 0 || runes <= 1 {
				if strings.TrimSpace(out) != "" {
					// A piece that renders to nothing (only
					// reference-link definitions) is no message: the
					// platforms refuse an empty one.
					parts = append(parts, out)
				}
				reopen = fence
				if len(reopen) > limit/8 {
					// A fence line that long would crowd out the code.
					reopen = "```\n"
				}
				if fence == "" && strings.Contains(body, "|") && !strings.HasPrefix(src[end:], "\n\n") {
					reopen = markdown.OpenTable(body, limit/4)
				}
				rest = src[end:]
				switch {
				case fence == "":
					rest = strings.TrimLeft(rest, " \n")
				case strings.HasPrefix(rest, "\n"):
					// Inside a code block the next line's leading
					// spaces are code: only the line breaks the cut
					// fell on go.
					rest = strings.TrimLeft(rest, "\n")
				default:
					rest = strings.TrimLeft(rest, " ")
				}
				break
			}
			runes -= max(over, runes/16, 1)
			if runes < 1 {
				runes = 1
			}
		}
	}
	return parts
}

// runeOffset returns the byte offset of the n-th rune of s (len(s) when s
// is shorter).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// cutPoint returns where to end a part of src that may run to n bytes: the
// last paragraph break, line break or space before n in the second half,
// else n. The part always keeps more than floor bytes (a reopened fence),
// so every part makes progress.
func cutPoint(src string, n, floor int) int {
	if n >= len(src) {
		return len(src)
	}
	head := src[:n]
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(head, sep); i > floor && i >= n/2 {
			return i
		}
	}
	if n <= floor {
		_, size := utf8.DecodeRuneInString(src[floor:])
		return floor + size
	}
	return n
}

// closeFence closes a code fence that part leaves open, and returns the
// fence line to open the next part with ("" when none is open).
func closeFence(part string) (string, string) {
	open := ""
	for line := range strings.Lines(part) {
		l := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(l, "```") {
			continue
		}
		if open == "" {
			open = strings.TrimRight(l, "\n")
		} else {
			open = ""
		}
	}
	if open == "" {
		return part, ""
	}
	return part + "\n```", open + "\n"
}

// UTF16Len counts s in UTF-16 code units, as Telegram counts message
// lengths.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
