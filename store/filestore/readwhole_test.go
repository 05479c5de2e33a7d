package filestore

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// TestReadWholeAndStreamed: Read gives the same entries, and the same
// first failure (the lowest position, with its file and line), whether it
// reads the transcript whole and decodes its lines from several goroutines
// or streams it line by line: for a transcript long enough to be decoded in
// several parts, with blank lines, a corrupt line late in it, a broken link
// early in it, or both.
func TestReadWholeAndStreamed(t *testing.T) {
	const n = 3000 // well over readPart bytes: decoded in parts
	entries := storetest.Chain("", t0, n)
	var clean []byte
	for i, e := range entries {
		clean = append(clean, lines(t, e)...)
		if i%500 == 7 {
			clean = append(clean, " \n"...) // blank: a line, not an entry
		}
	}
	if len(clean) < 2*readPart {
		t.Fatalf("the transcript is %d bytes, too short for parts", len(clean))
	}
	// Entry late replaced by garbage; entry early replaced by an entry
	// whose parent is not the entry before it.
	late, early := n-10, 5
	stray := storetest.Chain("elsewhere", t0.Add(time.Hour), 1)[0]
	build := func(badLate, badEarly bool) []byte {
		var b []byte
		for i, e := range entries {
			switch {
			case badLate && i == late:
				b = append(b, "not json\n"...)
			case badEarly && i == early:
				b = append(b, lines(t, stray)...)
			default:
				b = append(b, lines(t, e)...)
			}
			if i%500 == 7 {
				b = append(b, " \n"...)
			}
		}
		return b
	}
	// Line numbers: one blank line after entries 7, 507, ...
	lineOf := func(pos int) int { return pos + 1 + (pos+492)/500 }
	cases := []struct {
		name              string
		badLate, badEarly bool
		pos               int
	}{
		{"clean", false, false, -1},
		{"corrupt late", true, false, late},
		{"broken link early", false, true, early},
		{"both", true, true, early},
	}
	for _, whole := range []bool{true, false} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("whole=%v/%s", whole, c.name), func(t *testing.T) {
				if !whole {
					defer func(w int64) { wholeRead = w }(wholeRead)
					wholeRead = 1024
				}
				root := t.TempDir()
				path := filepath.Join(root, "a", "s.jsonl")
				writeRaw(t, path, build(c.badLate, c.badEarly), 0)
				s := open(t, root)
				got, err := s.Read(t.Context(), store.Key{Agent: "a", ID: "s"})
				if c.pos < 0 {
					if err != nil {
						t.Fatal(err)
					}
					sameEntries(t, got, entries)
					return
				}
				var ce *store.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("Read: %v, want a *store.CorruptError", err)
				}
				if want := fmt.Sprintf("%s:%d", path, lineOf(c.pos)); ce.Position != c.pos || ce.Where != want {
					t.Fatalf("CorruptError at entry %d, %s; want entry %d, %s", ce.Position, ce.Where, c.pos, want)
				}
			})
		}
	}
}
