package spool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spool-go/spool"
)

// FuzzParseEventID gives ParseEventID arbitrary text, as a Last-Event-ID
// header or ?after= brings it: it never panics, fails only with
// ErrBadEventID without quoting more than a bounded prefix of the text, and
// what it accepts is two non-negative numbers that String writes back to
// text parsing to the same id.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{
		"0.0", "12.3", "9223372036854775807.9223372036854775807", "9223372036854775808.0",
		"1.-1", "-1.1", "+1.1", "1.+1", "1", ".", "1.", ".1", "1.2.3", " 1.2", "01.002",
		"-0.0", "1_000.2", "0x1.2", "", strings.Repeat("9", 100) + ".1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := spool.ParseEventID(s)
		if err != nil {
			if !errors.Is(err, spool.ErrBadEventID) || !id.IsZero() {
				t.Fatalf("ParseEventID(%q) = %v, %v; want the zero id and ErrBadEventID", s, id, err)
			}
			if len(err.Error()) > 400 { // 64 bytes of s, quoted: at most 4 characters each
				t.Fatalf("ParseEventID(%.40q…): an error of %d bytes, want the text truncated", s, len(err.Error()))
			}
			return
		}
		if id.Pos < 0 || id.N < 0 {
			t.Fatalf("ParseEventID(%q) = %+v, want non-negative numbers", s, id)
		}
		back, err := spool.ParseEventID(id.String())
		if err != nil || back != id {
			t.Fatalf("ParseEventID(%q) = %+v, but its String %q parses to %+v, %v", s, id, id.String(), back, err)
		}
	})
}
