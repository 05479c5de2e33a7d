package transfer

import (
	"encoding/json"
	"testing"
)

// FuzzParseRecord: parseRecord decodes every line as json.Unmarshal
// does, or fails (where it fails, and where a line names no owner).
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		`{"agent":"a","owner":"","session":"s1","entry":{"id":"01J","parentId":"01I","timestamp":"2026-11-29T10:00:00.123Z","type":"user.message","turnId":"t","data":{"text":"hi"}}}`,
		`{"agent":"a","owner":"alice","session":"s1","entry":{"id":"01J","timestamp":"2026-11-29T10:00:00Z","type":"assistant.turn_end","turnId":"t","status":"ok","data":{}}}` + "\n",
		`{"agent":"a","owner":"","session":"s1","entry":{"id":"01J","timestamp":"2026-11-29T10:00:00Z","type":"x","data":{}}, "extra":1}`,
		`{"agent":"a\u0041","owner":"","session":"s","entry":{"id":"1","timestamp":"2026-11-29T10:00:00Z","type":"x","data":{}}}`,
		`{"owner":"","agent":"a","session":"s","entry":{"id":"1","timestamp":"2026-11-29T10:00:00Z","type":"x","data":{}}}`,
		`{"agent":"a","owner":"","session":"s","entry":{"id":"1","timestamp":"2026-11-29T10:00:00Z","type":"x","data":{}}}}`,
		`{"agent":"a","owner":"","session":"s","entry":null}`,
		`{"agent":"a","owner":"","session":"s","entry":{"id":"1","timestamp":"bad","type":"x","data":{}}}`,
		`{"agent":"a","user":"bob","session":"s","entry":{"id":"1","timestamp":"2026-11-29T10:00:00Z","type":"x","data":{}}}`,
		`{"Agent":"a","OWNER":"bob","session":"s","entry":{"id":"1","timestamp":"2026-11-29T10:00:00Z","type":"x","data":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseRecordFast(b)
		if !ok {
			// What the slow path takes, encoding/json takes the same.
			var err error
			if got, err = parseRecord(b); err != nil {
				return
			}
		}
		var want Record
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast path decoded %q, json.Unmarshal failed: %v", b, err)
		}
		if got.Agent != want.Agent || got.Owner != want.Owner || got.Session != want.Session || !got.Entry.Equal(want.Entry) {
			t.Fatalf("%q: fast %+v, json.Unmarshal %+v", b, got, want)
		}
	})
}
