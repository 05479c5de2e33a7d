package transcript

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// FuzzParserMatchesSlow holds a Parser to encoding/json: the lines of the
// input, parsed one after the other by one Parser (so that each may share
// the text of the one before), give what parseSlow gives for each, and
// fail where it fails; and an entry stays the same after the Parser goes
// on to others.
func FuzzParserMatchesSlow(f *testing.F) {
	f.Add([]byte(`{"id":"01JF","timestamp":"2026-11-29T10:00:00.123Z","type":"user.message","turnId":"01JF","data":{"text":"Where is order 1042?"}}` + "\n" +
		`{"id":"01JG","parentId":"01JF","timestamp":"2026-11-29T10:00:00.124Z","type":"assistant.message","turnId":"01JF","data":{"text":"Shipped."}}` + "\n" +
		`{"id":"01JH","parentId":"01JG","timestamp":"2026-11-29T10:00:01Z","type":"assistant.turn_end","turnId":"01JF","status":"ok"}`))
	f.Add([]byte(`{"id":"a","timestamp":"2026-11-29T10:00:00+05:00","type":"x.custom","turnId":"t","data":{ "a" : [1, {"b":"}"}] }}` + "\n" +
		`{"id":"b","parentId":"a","timestamp":"2026-02-29T10:00:00Z","type":"x.custom","turnId":"t","data":{}}` + "\n" +
		`{"id":"c","parentId":"b","timestamp":"2028-02-29T23:59:59.123456789Z","type":"user.message","turnId":"c","status":"","data":{"s":"\u00e9\\"}}`))
	f.Add([]byte(`{"id":"é","timestamp":"2026-11-29T10:00:00.1234567891Z","type":"t","turnId":"é"}` + "\n" + `{"id":"x","id":"y"}` + "\n" + `{"id":"a\u0041","timestamp":"2026-11-29T10:00:00Z","type":"x","turnId":"t","data":{"s":"\\"}"}}`))
	f.Add([]byte(`{"id":"a","timestamp":"2026-11-29t10:00:00z","type":"x","turnId":"t","data":{"k":"` + strings.Repeat("v", 20000) + `"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var p Parser
		var got, want []Entry
		for line := range bytes.SplitSeq(in, []byte("\n")) {
			e, err := p.Parse(line)
			w, werr := parseSlow(line)
			if (err == nil) != (werr == nil) {
				t.Fatalf("Parser: %v; encoding/json: %v\nin %q", err, werr, line)
			}
			if err != nil {
				continue
			}
			if !same(e, w) {
				t.Fatalf("Parser %+v\nencoding/json %+v\nin %q", e, w, line)
			}
			got, want = append(got, e), append(want, w)
		}
		for i := range got {
			if !same(got[i], want[i]) {
				t.Fatalf("entry %d changed after the Parser went on: %+v, want %+v", i, got[i], want[i])
			}
			if cap(got[i].Data) != len(got[i].Data) && string(got[i].Data) != "{}" {
				t.Fatalf("entry %d's data has spare capacity", i)
			}
		}
	})
}

// same is Equal with the data's bytes and the timestamp's location too.
func same(a, b Entry) bool {
	return a.Equal(b) && string(a.Data) == string(b.Data) && a.Timestamp.Location() == b.Timestamp.Location()
}

// FuzzParseTime holds parseTime to time.Parse.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-29T10:00:00.123Z", "2026-11-29T10:00:00Z", "2024-02-29T23:59:59.999999999Z",
		"2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T10:60:00Z", "2026-11-29T10:00:60Z",
		"2026-11-29T10:00:00.Z", "2026-11-29T10:00:00.1234567891Z", "2026-11-29T10:00:00,5Z", "0000-01-01T00:00:00Z",
		"2026-11-29T10:00:00+01:00", "2026-11-29 10:00:00Z", "+026-11-29T10:00:00Z", "2026-04-31T10:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTime([]byte(s))
		want, err := time.Parse(time.RFC3339Nano, s)
		want = want.UTC()
		valid := err == nil && want.Year() >= 0 && want.Year() <= 9999
		if ok != valid {
			t.Fatalf("parseTime(%q) = %v, %v; time.Parse: %v, %v", s, got, ok, want, err)
		}
		if ok && (!got.Equal(want) || got.Location() != want.Location()) {
			t.Fatalf("parseTime(%q) = %v; time.Parse: %v", s, got, want)
		}
	})
}

// TestParserShares checks what a Parser saves: the entries of a chain
// share their parent's and turn's text, and a read allocates a few blocks,
// not several times an entry.
func TestParserShares(t *testing.T) {
	var lines [][]byte
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	parent, turn := "", ""
	for i := range 300 {
		e, err := New(now.Add(time.Duration(i)*time.Millisecond), TypeUserMessage, turn, UserMessage{Text: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			turn = e.ID
			e.TurnID = turn
		}
		e.ParentID, parent = parent, e.ID
		line, _ := AppendJSON(nil, e)
		lines = append(lines, line)
	}
	entries := make([]Entry, len(lines))
	allocs := testing.AllocsPerRun(5, func() {
		var p Parser
		for i, line := range lines {
			e, err := p.Parse(line)
			if err != nil {
				t.Fatal(err)
			}
			entries[i] = e
		}
	})
	if allocs > 20 {
		t.Errorf("%v allocations for %d entries", allocs, len(lines))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].ParentID != entries[i-1].ID || !sameText(entries[i].ParentID, entries[i-1].ID) {
			t.Fatalf("entry %d's parent is not the text of the id before it", i)
		}
	}
}

// sameText reports whether a and b are the same bytes in memory.
func sameText(a, b string) bool {
	return a == b && unsafe.StringData(a) == unsafe.StringData(b)
}
