package spool

import (
	"encoding/json"
	"strconv"
)

// appendRelayMsg appends m as json.Marshal encodes it, byte for byte
// (FuzzRelayMsgEncoding holds it to that), without reflection for the
// shape nearly every notification has: an event whose only fields are
// strings. An event with more (a tool call, a result) is encoded by
// encoding/json.
func appendRelayMsg(b []byte, m *relayMsg) ([]byte, error) {
	b = append(b, `{"t":`...)
	b = appendJSONString(b, m.T)
	if m.Nonce != "" {
		b = append(b, `,"nonce":`...)
		b = appendJSONString(b, m.Nonce)
	}
	if m.Pos != 0 {
		b = append(b, `,"pos":`...)
		b = strconv.AppendInt(b, m.Pos, 10)
	}
	var err error
	if m.Event != nil {
		b = append(b, `,"ev":`...)
		if b, err = appendEvent(b, m.Event); err != nil {
			return nil, err
		}
	}
	if len(m.Events) > 0 {
		b = append(b, `,"evs":[`...)
		for i := range m.Events {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendEvent(b, &m.Events[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if m.Open {
		b = append(b, `,"open":true`...)
	}
	if m.After != "" {
		b = append(b, `,"after":`...)
		b = appendJSONString(b, m.After)
	}
	return append(b, '}'), nil
}

// relayMsgSize is about the length of m encoded, so that its buffer is
// made once: an event of strings is its strings and some 60 bytes of
// names, one with a result (a turn's end) a few hundred more.
func relayMsgSize(m *relayMsg) int {
	n := 64 + len(m.Nonce)
	size := func(ev *Event) {
		n += 64 + len(ev.ID) + len(ev.Kind) + len(ev.TurnID) + len(ev.Text)
		if ev.ToolCall != nil || ev.ToolResult != nil || ev.Approval != nil || ev.Delegate != nil || ev.Result != nil {
			n += 512
			if ev.Result != nil {
				n += len(ev.Result.Text)
			}
		}
	}
	if m.Event != nil {
		size(m.Event)
	}
	for i := range m.Events {
		size(&m.Events[i])
	}
	return n
}

// appendEvent appends ev as json.Marshal encodes it.
func appendEvent(b []byte, ev *Event) ([]byte, error) {
	if ev.ToolCall != nil || ev.ToolResult != nil || ev.Approval != nil || ev.Delegate != nil || ev.Result != nil {
		j, err := json.Marshal(ev)
		return append(b, j...), err
	}
	b = append(b, '{')
	if ev.ID != "" {
		b = append(b, `"id":`...)
		b = appendJSONString(b, ev.ID)
		b = append(b, ',')
	}
	b = append(b, `"kind":`...)
	b = appendJSONString(b, string(ev.Kind))
	if ev.TurnID != "" {
		b = append(b, `,"turnId":`...)
		b = appendJSONString(b, ev.TurnID)
	}
	if ev.Text != "" {
		b = append(b, `,"text":`...)
		b = appendJSONString(b, ev.Text)
	}
	return append(b, '}'), nil
}

// appendJSONString appends s quoted as encoding/json quotes it: a string
// of printable ASCII that needs no escape (encoding/json escapes <, > and
// & too) is copied; any other goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
