package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// FuzzParseMember gives parseMember arbitrary index members (what a Redis
// holds may have been written by anyone): it never panics; a member it
// takes names a valid session id and is the member of what it returns
// (its hex, case aside); and the member of any time and valid id parses
// back to them.
func FuzzParseMember(f *testing.F) {
	good := member(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "abc")
	for _, m := range []string{good, strings.ToUpper(good[:tsHexLen]) + good[tsHexLen:], "", "~", good[:len(good)-1], "zz" + good[2:],
		good[:tsHexLen] + "~", good[:tsHexLen] + "\x01~a", good[:tsHexLen] + "FF~ab", good[:tsHexLen] + "F~a:", member(time.Unix(0, 0), "x@y.z-_")} {
		f.Add(m, int64(1767225600123456789), "abc")
	}
	f.Fuzz(func(t *testing.T, m string, nanos int64, id string) {
		if pos, err := parseMember(m); err == nil {
			if !store.ValidID(pos.ID) {
				t.Fatalf("parseMember(%q) = invalid id %q", m, pos.ID)
			}
			if again := member(pos.LastActivity, pos.ID); again != strings.ToLower(m[:tsHexLen])+m[tsHexLen:] {
				t.Fatalf("parseMember(%q) = %+v, whose member is %q", m, pos, again)
			}
		}
		if !store.ValidID(id) {
			return
		}
		at := time.Unix(0, nanos).UTC()
		pos, err := parseMember(member(at, id))
		if err != nil || !pos.LastActivity.Equal(at) || pos.ID != id {
			t.Fatalf("member(%v, %q) parses as %+v, %v", at, id, pos, err)
		}
	})
}
