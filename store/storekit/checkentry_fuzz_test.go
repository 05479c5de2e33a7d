package storekit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// FuzzCheckEntry holds CheckEntry to its promise: an entry it accepts
// reads back exactly as it was (transcript.Parse of the encoding it
// returns equals it), which is why no store parses what it appends again.
// ValidEntry and ValidBatch, which check without encoding, must agree
// with it. Strings, statuses, times and data come from the fuzzer.
func FuzzCheckEntry(f *testing.F) {
	f.Add("01JF", "01JE", "user.message", "t1", "", int64(1764410400123456789), `{"text":"hi"}`)
	f.Add("e", "", "assistant.turn_end", "t", "ok", int64(0), `{ "usage" : {"inputTokens": 1} }`)
	f.Add("e\u2028", "p", "x.y", "", "error", int64(-6795364578871345152), `{"a":"\u00e9\ud800","b":[1,2.5e3,null,true]}`)
	f.Add("e", "p", "t", "t", "bogus", int64(1), `[]`)
	f.Add("e\xff", "p", "t", "t", "", int64(1), `{}`)
	f.Add("e", "p", "t", "t", "", int64(1), " \n{\"a\" : 1}\t")
	f.Add("e", "p", "t", "t", "", int64(1), `{"a":1}{}`)
	f.Add("e", "p", "t", "t", "", int64(1), "   ")
	f.Add("e", "p", "t", "t", "", int64(1), `{"a":"\xff"}`)
	f.Fuzz(func(t *testing.T, id, parent, typ, turn, status string, nanos int64, data string) {
		k := store.Key{Agent: "a", ID: "s"}
		e := transcript.Entry{ID: id, ParentID: parent, Type: transcript.Type(typ), TurnID: turn,
			Status: transcript.Status(status), Timestamp: time.Unix(0, nanos), Data: json.RawMessage(data)}
		line, err := storekit.CheckEntry(k, e)
		verr := storekit.ValidEntry(k, e)
		if (err == nil) != (verr == nil) || err != nil && err.Error() != verr.Error() {
			t.Fatalf("CheckEntry says %v, ValidEntry says %v", err, verr)
		}
		if berr := storekit.ValidBatch(k, []transcript.Entry{e}); (err == nil) != (berr == nil) {
			t.Fatalf("CheckEntry says %v, ValidBatch says %v", err, berr)
		}
		if err != nil {
			if storekit.CheckAppend(k, parent, e) == nil {
				t.Fatalf("CheckEntry refused what CheckAppend takes: %v", err)
			}
			return
		}
		back, err := transcript.Parse(line)
		if err != nil {
			t.Fatalf("accepted %+v, but its line %q does not parse: %v", e, line, err)
		}
		if !back.Equal(e) {
			t.Fatalf("accepted %+v, but it reads back as %+v", e, back)
		}
		if err := storekit.CheckAppend(k, parent, e); err != nil {
			t.Fatalf("CheckAppend refused what CheckEntry takes: %v", err)
		}
	})
}
