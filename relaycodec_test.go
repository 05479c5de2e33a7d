package spool

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/spool-go/spool/transcript"
)

// FuzzRelayMsgEncoding holds appendRelayMsg to json.Marshal, byte for
// byte: watchers in other processes decode what it writes, and control
// reads its first bytes.
func FuzzRelayMsgEncoding(f *testing.F) {
	f.Add("ev", "", int64(3), "3.1", "text", "t1", "hello", 0, false, uint8(0))
	f.Add("snap", "n<1>&", int64(0), "", "turn_start", "", "a\"b\\c\n\u2028\xff é", 2, true, uint8(1))
	f.Add("sync", "x", int64(-1), "", "", "", "", 0, false, uint8(2))
	f.Add("end", "", int64(1<<40), "1.2", "step_end", "t", "\x7f\x00", 3, true, uint8(3))
	f.Fuzz(func(t *testing.T, typ, nonce string, pos int64, id, kind, turn, text string, n int, open bool, extra uint8) {
		ev := Event{ID: id, Kind: EventKind(kind), TurnID: turn, Text: text}
		switch extra % 4 {
		case 1:
			ev.ToolCall = &transcript.ToolCall{ID: id, Name: text}
		case 2:
			ev.Result = &Result{TurnID: turn, Text: text}
		}
		m := relayMsg{T: typ, Nonce: nonce, Pos: pos, Open: open}
		switch {
		case n%3 == 1:
			m.Event = &ev
		case n%3 == 2:
			m.Events = []Event{ev, {Kind: EventText, Text: text + "<"}, ev}
		default:
			m.After = id // a sync's
		}
		want, werr := json.Marshal(m)
		got, gerr := appendRelayMsg(nil, &m)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ: json %v, append %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encoding differs:\n got %s\nwant %s", got, want)
		}
	})
}
