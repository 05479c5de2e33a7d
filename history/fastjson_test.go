package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/spool-go/spool/transcript"
)

// FuzzFastDecode holds the fast decoders to encoding/json: whenever one
// decodes, json.Unmarshal into the same shape succeeds with the same
// value.
func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"text":"Where is order 1042?"}`,
		`{"text":"a \"quoted\"\nline \u00e9 \u2028 \/ \\ \t","model":"m","usage":{"inputTokens":1,"outputTokens":2}}`,
		`{"text":"","toolCalls":[{"id":"c1","name":"lookup","arguments":{"order":1042,"f":[1,2.5e-3,-0,true,null]}},{"id":"c2","name":"x","arguments":"raw"}]}`,
		`{"callId":"c1","tool":"t","result":"ok","isError":true,"durationMs":40}`,
		`{"approvalId":"a1","callId":"c1","decision":"deny","scope":"once","reason":"no"}`,
		`{"Text":"other case"}`, `{"text":1}`, `{"text":null}`, `{"text":"a","text":"b"}`, `{"text":"\ud83d\ude00"}`,
		`{"toolCalls":null}`, `{"toolCalls":[{"arguments":null}]}`, `{"x":01}`, `{"text":"\xff"}`, ` { "text" : "s" } `, `{"a":{"b":[{}]}}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(name string, got any, ok bool, fresh func() any) {
			if !ok {
				return
			}
			want := fresh()
			if err := json.Unmarshal(b, want); err != nil {
				t.Fatalf("%s decoded %q, which encoding/json refuses: %v", name, b, err)
			}
			if w := reflect.ValueOf(want).Elem().Interface(); !reflect.DeepEqual(got, w) {
				t.Fatalf("%s of %q: %#v, encoding/json %#v", name, b, got, w)
			}
		}
		u, ok := fastUser(b)
		check("fastUser", u, ok, func() any { return new(transcript.UserMessage) })
		a, ok := fastAssistant(b)
		check("fastAssistant", a, ok, func() any { return new(assistantData) })
		r, ok := fastToolResult(b)
		check("fastToolResult", r, ok, func() any { return new(toolResultData) })
		d, ok := fastDecision(b)
		check("fastDecision", d, ok, func() any { return new(decisionData) })
		p, ok := fastApproval(b)
		check("fastApproval", p, ok, func() any { return new(approvalData) })
	})
}

// TestControlFree holds the word-at-a-time check to the byte-at-a-time
// one at every offset and length around a word.
func TestControlFree(t *testing.T) {
	slow := func(v []byte) bool {
		for _, c := range v {
			if c < 0x20 {
				return false
			}
		}
		return true
	}
	bytesToTry := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0x9f, 0xa0, 0xff, 'a'}
	for n := 0; n <= 19; n++ {
		for at := 0; at < n; at++ {
			for _, c := range bytesToTry {
				for _, fill := range []byte{'a', 0x20, 0xff, 0x80} {
					v := bytes.Repeat([]byte{fill}, n)
					v[at] = c
					if got, want := controlFree(v), slow(v); got != want {
						t.Fatalf("controlFree(%x) = %v, want %v", v, got, want)
					}
				}
			}
		}
	}
}
