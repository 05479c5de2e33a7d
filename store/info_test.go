package store_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spool-go/spool/store"
)

func TestTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{" \n\t ", ""},
		{"Where is order 1042?", "Where is order 1042?"},
		{"  Where\n\nis \t order  ", "Where is order"},
		{"a\x00b\x1fc\u0085d", "abc d"}, // control characters go; U+0085 is a space too
		{"a\xffb", "ab"},                // invalid UTF-8 goes
		{strings.Repeat("x", 80), strings.Repeat("x", 80)},
		{strings.Repeat("x", 81), strings.Repeat("x", 80)},
		{strings.Repeat("é", 100), strings.Repeat("é", 80)},       // runes, not bytes
		{strings.Repeat("x", 79) + " y", strings.Repeat("x", 79)}, // never a space at the end
		{strings.Repeat("x", 78) + " y", strings.Repeat("x", 78) + " y"},
		{strings.Repeat("x", 80) + " y", strings.Repeat("x", 80)},
		{"日本語の 質問", "日本語の 質問"},
		// Command lines are no title; the text after them is.
		{`/call save_note {"text":"milk"}`, ""},
		{"/call save_note {}\nPlease keep this", "Please keep this"},
		{"  /retry\n/call x {}\n  Then this", "Then this"},
		{"/etc/hosts is missing", "/etc/hosts is missing"},
		{"/ alone", "/ alone"},
		{"/Call with a capital", "/Call with a capital"},
		{"/2fa codes", "/2fa codes"},
	}
	for _, tt := range tests {
		got := store.Title(tt.in)
		if got != tt.want {
			t.Errorf("Title(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > store.TitleLength || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\t") || strings.TrimSpace(got) != got {
			t.Errorf("Title(%q) = %q: %d runes, must be at most %d of valid UTF-8 on one line, trimmed", tt.in, got, n, store.TitleLength)
		}
	}
}

// TestApplyAgreesWithInfo builds random transcripts entry by entry: the
// info kept with Apply equals Info over the prefix at every step.
