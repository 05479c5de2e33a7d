package rules

import "testing"

// FuzzPlainText checks plainText's word-at-a-time path against the rune
// by rune definition.
func FuzzPlainText(f *testing.F) {
	for _, s := range []string{"", "01JF0000000000000000000000", "user.message", "a\x00b", "a\x1fb", "\x7f", "é", "a\u0085b", "\u009f", "\xff", "ok\xc3", "日本", "a\u2028b",
		"01JF000000000\x7f000000000000", "abcdefgh\x01", "abcdefghijklmnop\x1f", "abcdefghijklmno\u0080", "abcdefg\u00e9xyz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := plainText(s), plainRunes(s); got != want {
			t.Fatalf("plainText(%q) = %v, want %v", s, got, want)
		}
	})
}
