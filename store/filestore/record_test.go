package filestore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

func testIndex(sealed bool) *index {
	s := &Store{}
	if sealed {
		s.cfg.protector = newTestProtector(1)
	}
	return newIndex(s, store.Namespace{Agent: "a", Owner: "o"}, "/nowhere")
}

func TestRecordRoundTrip(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		ix := testIndex(sealed)
		for _, r := range []*rec{
			{info: store.SessionInfo{ID: "s", Title: "Where is order 1042?", Entries: 7, MessageCount: 5, PendingApprovals: 1, Compactions: 2,
				Started: t0, LastActivity: t0.Add(1500 * time.Millisecond)}, fileState: fileState{size: 1234, mtime: 1 << 60, ino: 1<<64 - 1}, head: "01JF"},
			{info: store.SessionInfo{ID: "odd", Title: "\"quoted\" start\twith tab", Started: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
				LastActivity: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}, head: "id\twith\ttabs\nand lines", badTail: true},
			{info: store.SessionInfo{ID: "empty-title"}, head: `"`},
		} {
			r.info.Agent, r.info.Owner, r.titleOK = "a", "o", true
			if sealed {
				r.sealedTitle = "c2VhbGVk"
			}
			line := appendRecord(nil, r, sealed)
			if strings.Count(string(line), "\n") != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("record is not one line: %q", line)
			}
			id, got, err := ix.parseRecord(string(line[:len(line)-1]))
			if err != nil || id != r.info.ID {
				t.Fatalf("parse %q: %q %v", line, id, err)
			}
			want := *r
			if sealed {
				want.info.Title, want.titleOK = "", false
			}
			if got.info != want.info || got.fileState != want.fileState || got.head != want.head ||
				got.badTail != want.badTail || got.sealedTitle != want.sealedTitle || got.titleOK != want.titleOK {
				t.Fatalf("round trip:\n got %+v\nwant %+v", *got, want)
			}
			// Any change to the line is noticed.
			for i := 11; i < len(line)-1; i++ {
				bad := []byte(string(line[:len(line)-1]))
				bad[i] ^= 1
				if _, _, err := ix.parseRecord(string(bad)); err == nil {
					t.Fatalf("flipped byte %d of %q accepted", i, line)
				}
			}
		}
		line := appendDelete(nil, "gone")
		if id, r, err := ix.parseRecord(string(line[:len(line)-1])); id != "gone" || r != nil || err != nil {
			t.Fatalf("delete record: %q %v %v", id, r, err)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	r := &rec{info: store.SessionInfo{ID: "s", Title: "t"}, head: "h"}
	f.Add(string(appendRecord(nil, r, false)))
	f.Add(string(appendDelete(nil, "x")))
	f.Add("S\t00000000\t")
	ix := testIndex(false)
	f.Fuzz(func(t *testing.T, line string) {
		id, r, err := ix.parseRecord(line)
		if err != nil {
			return
		}
		if !store.ValidID(id) {
			t.Fatalf("invalid id %q accepted", id)
		}
		if r != nil {
			back := appendRecord(nil, r, false)
			if _, r2, err := ix.parseRecord(string(back[:len(back)-1])); err != nil || r2.info != r.info || r2.head != r.head {
				t.Fatalf("re-encoded record differs: %v", err)
			}
		}
	})
}

// FuzzParseInt holds the records' number parsers to strconv's.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "42", "-7", "+3", "9223372036854775807", "9223372036854775808", "18446744073709551615", "1844674407370955161599", "", "1x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseInt(s)
		w, werr := strconv.ParseInt(s, 10, 64)
		if v != w || (err == nil) != (werr == nil) {
			t.Fatalf("parseInt(%q) = %d, %v; strconv: %d, %v", s, v, err, w, werr)
		}
		u, err := parseUint(s)
		x, xerr := strconv.ParseUint(s, 10, 64)
		if u != x || (err == nil) != (xerr == nil) {
			t.Fatalf("parseUint(%q) = %d, %v; strconv: %d, %v", s, u, err, x, xerr)
		}
	})
}
