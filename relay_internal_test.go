package spool

import (
	"encoding/json"
	"testing"
)

// snapFor reads the nonce of a snap as json.Marshal encodes relayMsg,
// and nothing from any other message: if the field order changed, every
// watcher would decode every other watcher's snap again (O(W²)).
func TestSnapFor(t *testing.T) {
	b, err := json.Marshal(relayMsg{T: "snap", Nonce: "n1", Pos: 3, Events: []Event{{ID: "3.1", Kind: EventText, Text: `"nonce":"x"`}}, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := snapFor(b); !ok || n != "n1" {
		t.Fatalf("snapFor(%s) = %q, %v", b, n, ok)
	}
	for _, m := range []relayMsg{{T: "sync", Nonce: "n1"}, {T: "ev", Pos: 1, Event: &Event{ID: "1.1"}}, {T: "end", Pos: 1}, {T: "stop"}} {
		b, _ := json.Marshal(m)
		if n, ok := snapFor(b); ok {
			t.Fatalf("snapFor(%s) = %q, true", b, n)
		}
	}
}

// Whatever the bytes, snapFor never claims a nonce that decoding the
// message as a snap would not give.
func FuzzSnapFor(f *testing.F) {
	for _, s := range []string{`{"t":"snap","nonce":"a","pos":1}`, `{"t":"snap","nonce":"`, `{"t":"ev"}`, `{"t":"snap","nonce":"a\"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := snapFor(b)
		if !ok {
			return
		}
		var m relayMsg
		if json.Unmarshal(b, &m) == nil && (m.T != "snap" || m.Nonce != n) {
			t.Fatalf("snapFor(%q) = %q; decoded %q %q", b, n, m.T, m.Nonce)
		}
	})
}
