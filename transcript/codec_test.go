package transcript

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

func TestWireShape(t *testing.T) {
	ts := time.Date(2026, 11, 29, 10, 0, 0, 123e6, time.UTC)
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{
			name: "first entry omits parentId and status",
			e:    Entry{ID: "01JF", Timestamp: ts, Type: TypeUserMessage, TurnID: "T1", Data: json.RawMessage(`{ "text" : "Where is <order> 1042?" }`)},
			want: `{"id":"01JF","timestamp":"2026-11-29T10:00:00.123Z","type":"user.message","turnId":"T1","data":{"text":"Where is <order> 1042?"}}`,
		},
		{
			name: "turn end carries status",
			e:    Entry{ID: "01JG", ParentID: "01JF", Timestamp: ts, Type: TypeTurnEnd, TurnID: "T1", Status: StatusOK},
			want: `{"id":"01JG","parentId":"01JF","timestamp":"2026-11-29T10:00:00.123Z","type":"assistant.turn_end","turnId":"T1","status":"ok","data":{}}`,
		},
		{
			name: "nanosecond timestamps keep their digits; strings are escaped",
			e:    Entry{ID: "a\"b\\c\n\x01\u2028", Timestamp: ts.Add(5), Type: "x.custom", TurnID: "T"},
			want: `{"id":"a\"b\\c\n\u0001\u2028","timestamp":"2026-11-29T10:00:00.123000005Z","type":"x.custom","turnId":"T","data":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendJSON(nil, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("encoded\n got %s\nwant %s", got, tt.want)
			}
			back, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Equal(tt.e) {
				t.Fatalf("round trip: got %+v want %+v", back, tt.e)
			}
			// encoding/json's own view agrees with ours.
			var generic map[string]any
			if err := json.Unmarshal(got, &generic); err != nil {
				t.Fatal(err)
			}
			if generic["id"] != tt.e.ID {
				t.Fatalf("encoding/json reads id %q, want %q", generic["id"], tt.e.ID)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	bad := map[string]string{
		"not json":           `{"id":`,
		"array":              `[1]`,
		"missing id":         `{"timestamp":"2026-11-29T10:00:00Z","type":"user.message","turnId":"t","data":{}}`,
		"empty type":         `{"id":"a","timestamp":"2026-11-29T10:00:00Z","type":"","turnId":"t","data":{}}`,
		"missing timestamp":  `{"id":"a","type":"user.message","turnId":"t","data":{}}`,
		"bad timestamp":      `{"id":"a","timestamp":"yesterday","type":"user.message","turnId":"t","data":{}}`,
		"year past 9999":     `{"id":"a","timestamp":"9999-12-31T23:59:59-23:00","type":"user.message","turnId":"t","data":{}}`,
		"unknown status":     `{"id":"a","timestamp":"2026-11-29T10:00:00Z","type":"assistant.turn_end","turnId":"t","status":"great","data":{}}`,
		"data not an object": `{"id":"a","timestamp":"2026-11-29T10:00:00Z","type":"user.message","turnId":"t","data":"hi"}`,
		"id not a string":    `{"id":7,"timestamp":"2026-11-29T10:00:00Z","type":"user.message","turnId":"t","data":{}}`,
	}
	for name, in := range bad {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: Parse(%s) = %v, want ErrSyntax", name, in, err)
		}
	}
}

func TestParseAcceptsForeignWriters(t *testing.T) {
	// Another program's line: offset timestamp, no data, extra fields.
	in := `{"extra":true,"type":"user.message","id":"x","turnId":"t","timestamp":"2026-11-29T11:00:00+01:00"}`
	e, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !e.Timestamp.Equal(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)) || e.Timestamp.Location() != time.UTC {
		t.Fatalf("timestamp %v", e.Timestamp)
	}
	if string(e.Data) != "{}" {
		t.Fatalf("data %s", e.Data)
	}
}

func TestDecoder(t *testing.T) {
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	now := time.Now()
	var want []Entry
	for i := range 3 {
		e, err := New(now, TypeUserMessage, "t", UserMessage{Text: "<b>" + strings.Repeat("x", i*70000)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("\n") // blank lines are skipped
	}
	buf.WriteString(`{"id":"torn","timest`)
	dec := NewDecoder(&buf)
	for i, w := range want {
		got, err := dec.Decode()
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !got.Equal(w) {
			t.Fatalf("entry %d differs", i)
		}
		if !bytes.Contains(got.Data, []byte("<b>")) {
			t.Fatalf("data is HTML-escaped: %.40s", got.Data)
		}
	}
	if _, err := dec.Decode(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("torn tail: got %v, want io.ErrUnexpectedEOF", err)
	}
	if dec.Line() != 7 {
		t.Fatalf("line %d, want 7", dec.Line())
	}
}

func TestNewIDSortsByCreation(t *testing.T) {
	now := time.Now()
	prev := ""
	for range 10000 {
		id := NewID(now)
		if len(id) != 26 || id <= prev {
			t.Fatalf("id %q after %q", id, prev)
		}
		prev = id
	}
}

// TestNewIDSortsAcrossMilliseconds: ids made by callers whose clock
// readings come out of order (one read the time, another made an id in
// the next millisecond, then the first made its id) still sort in the
// order they were made; two turns of a session are made this way on a
// busy server.
func TestNewIDSortsAcrossMilliseconds(t *testing.T) {
	now := time.Now()
	prev := NewID(now)
	for i := range 64 {
		for _, at := range []time.Time{now.Add(-time.Millisecond), now, now.Add(time.Millisecond), now} {
			id := NewID(at)
			if id <= prev {
				t.Fatalf("round %d: id %q made after %q sorts before it", i, id, prev)
			}
			prev = id
		}
		now = now.Add(time.Millisecond)
	}
}

// TestNewIDAfter: an id made after one from a clock an hour ahead sorts
// after it; an id that is not a ULID, or one from the past, changes
// nothing.
func TestNewIDAfter(t *testing.T) {
	now := time.Now()
	for _, after := range []string{"", "turn-9", "01ARZ3NDEKTSV4RRFFQ69G5FAV"} {
		prev := NewID(now)
		if id := NewIDAfter(now, after); id <= prev || id[:10] != prev[:10] {
			t.Fatalf("after %q: id %q made after %q has another millisecond", after, id, prev)
		}
	}
	// Last: ids made after this one are an hour ahead in this process.
	ahead := ulid.MustNew(ulid.Timestamp(now.Add(time.Hour)), rand.Reader).String()
	for range 100 {
		if id := NewIDAfter(now, ahead); id <= ahead {
			t.Fatalf("id %q made after %q sorts before it", id, ahead)
		}
	}
	// Another process's id in a millisecond still to come here: the new
	// id is in that millisecond when it sorts after it there, else in the
	// next.
	ms := ulid.Timestamp(now.Add(2 * time.Hour))
	low, high := ulid.ULID{}, ulid.ULID{}
	for i := range 10 {
		high[6+i] = 0xff
	}
	low.SetTime(ms)
	high.SetTime(ms)
	for _, c := range []struct {
		after ulid.ULID
		ms    uint64
	}{{low, ms}, {high, ms + 1}} {
		id := NewIDAfter(now, c.after.String())
		if u := ulid.MustParse(id); id <= c.after.String() || u.Time() != c.ms {
			t.Fatalf("after %s: id %s, in millisecond %d, want after it in %d", c.after, id, u.Time(), c.ms)
		}
	}
}

// A session's turns, each made after the one before, as fast as they
// come: the ids keep to the clock (to the last id's millisecond, when
// that is ahead), a millisecond apart at most for each millisecond that
// passed, and never carry every id the process makes ahead of it.
func TestNewIDAfterKeepsToTheClock(t *testing.T) {
	first := NewID(time.Now())
	start := time.Now()
	last := first
	for range 5000 {
		id := NewIDAfter(time.Now(), last)
		if id <= last {
			t.Fatalf("id %s made after %s sorts before it", id, last)
		}
		last = id
	}
	took := uint64(time.Since(start).Milliseconds())
	a, b := ulid.MustParse(first).Time(), ulid.MustParse(last).Time()
	if b > a+took+2 {
		t.Fatalf("5,000 ids made one after another in %d ms span %d ms", took, b-a)
	}
}

func TestTypedData(t *testing.T) {
	e, err := New(time.Now(), TypeAssistantMessage, "t", AssistantMessage{
		Text:      "ok",
		ToolCalls: []ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"order": 1042}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var m AssistantMessage
	if err := e.DecodeData(&m); err != nil {
		t.Fatal(err)
	}
	if m.ToolCalls[0].Name != "lookup" || string(m.ToolCalls[0].Arguments) != `{"order":1042}` {
		t.Fatalf("got %+v", m)
	}
	if _, err := New(time.Now(), TypeUserMessage, "t", json.RawMessage(`[1]`)); err == nil {
		t.Fatal("array data accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"01JF","parentId":"01JE","timestamp":"2026-11-29T10:00:00.123Z","type":"user.message","turnId":"01JF","data":{"text":"Where is order 1042?"}}`))
	f.Add([]byte(`{"id":"a","timestamp":"2026-11-29T10:00:00+05:00","type":"assistant.turn_end","turnId":"t","status":"ok"}`))
	f.Add([]byte(`{"id":"\ud800","timestamp":"0001-01-01T00:00:00Z","type":"\u2028","turnId":"","data":{"a":[1,2,{"b":null}]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := Parse(in)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		out, err := AppendJSON(nil, e)
		if err != nil {
			t.Fatalf("decoded entry does not encode: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("re-encoded entry does not parse: %v\n%s", err, out)
		}
		if !back.Equal(e) {
			t.Fatalf("round trip changed the entry:\n in  %+v\n out %+v", e, back)
		}
		again, _ := AppendJSON(nil, back)
		if !bytes.Equal(again, out) {
			t.Fatalf("encoding is not stable:\n%s\n%s", out, again)
		}
	})
}

// FuzzParseFastMatchesSlow holds the fast path to the general one: for any
// input where it answers, it answers exactly what encoding/json gives.
func FuzzParseFastMatchesSlow(f *testing.F) {
	f.Add([]byte(`{"id":"01JF","parentId":"01JE","timestamp":"2026-11-29T10:00:00.123Z","type":"user.message","turnId":"01JF","data":{"text":"Where is order 1042?"}}`))
	f.Add([]byte(` { "id" : "a" , "timestamp":"2026-11-29T10:00:00+05:00","type":"assistant.turn_end","turnId":"t","status":"ok", "data" : { "a" : [1, {"b":"}"}] } } `))
	f.Add([]byte(`{"ID":"a","timestamp":"2026-11-29T10:00:00Z","type":"x","turnId":"t"}`))
	f.Add([]byte(`{"id":"a","id":"b","timestamp":"2026-11-29T10:00:00Z","type":"x","turnId":"t"}`))
	f.Add([]byte(`{"id":"a\u0041","timestamp":"2026-11-29T10:00:00Z","type":"x","turnId":"t","data":{"s":"\\"}"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := parseFast(&Parser{oneOff: true}, in)
		if !ok {
			return
		}
		slow, err := parseSlow(in)
		if err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, in)
		}
		if !fast.Equal(slow) || string(fast.Data) != string(slow.Data) || fast.Timestamp.Location() != slow.Timestamp.Location() {
			t.Fatalf("fast %+v\nslow %+v\nin %q", fast, slow, in)
		}
	})
}

func TestFastPathTakesWhatAppendJSONWrites(t *testing.T) {
	e, err := New(time.Now(), TypeAssistantMessage, "turn", AssistantMessage{Text: "héllo <b>", ToolCalls: []ToolCall{{ID: "c", Name: "n", Arguments: []byte(`{"a":[1,2]}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	e.ParentID = "p"
	line, _ := AppendJSON(nil, e)
	got, ok := parseFast(&Parser{oneOff: true}, line)
	if !ok || !got.Equal(e) {
		t.Fatalf("fast path refused or changed a line AppendJSON wrote: %v %+v", ok, got)
	}
}

func BenchmarkParse(b *testing.B) {
	e, _ := New(time.Now(), TypeUserMessage, "01JF00000000000000000000000", UserMessage{Text: strings.Repeat("where is my order please ", 9)})
	e.ParentID = "01JE00000000000000000000000"
	line, _ := AppendJSON(nil, e)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseSlow(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParser parses the lines of a 1,000-entry chain with one
// Parser, as a store's read does, and reports the cost an entry.
func BenchmarkParser(b *testing.B) {
	var lines [][]byte
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	parent, turn := "", ""
	for i := range 1000 {
		typ := TypeAssistantMessage
		if i%2 == 0 {
			typ = TypeUserMessage
		}
		e, _ := New(now.Add(time.Duration(i)*time.Millisecond), typ, turn, UserMessage{Text: strings.Repeat("where is my order please ", 9)})
		if i%2 == 0 {
			turn = e.ID
			e.TurnID = turn
		}
		e.ParentID = parent
		parent = e.ID
		line, _ := AppendJSON(nil, e)
		lines = append(lines, line)
	}
	b.ReportAllocs()
	for b.Loop() {
		var p Parser
		for _, line := range lines {
			if _, err := p.Parse(line); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(lines)), "ns/entry")
}

// An id for a time before 1970, which a ULID cannot hold, is made for the
// earliest it can (or the last id's millisecond), and the ids after it are
// as ever: the time once wrapped around past every ULID's, and every id
// the process made after it panicked.
func TestNewIDBefore1970(t *testing.T) {
	before := NewID(time.Now())
	old := NewID(time.Date(1677, 9, 21, 0, 0, 0, 0, time.UTC))
	after := NewID(time.Now())
	if !(before < old && old < after) {
		t.Fatalf("ids %s, %s (for 1677), %s are not in the order they were made", before, old, after)
	}
}
