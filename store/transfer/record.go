package transfer

import (
	"bytes"
	"encoding/json"

	"github.com/spool-go/spool/transcript"
)

// parseRecord decodes one export line into a Record, as json.Unmarshal
// does. The line Export writes (the four fields in its order, the key's
// strings plain ASCII) is read directly, its entry by transcript.Parse;
// every other line goes through encoding/json, which decides and words
// the error. encoding/json scanned such a line three times (validating
// it, decoding it, finding the entry's end) before the entry's own parse:
// a sixth of an import's time. FuzzParseRecord holds the two to the same
// result.
func parseRecord(b []byte) (Record, error) {
	if rec, ok := parseRecordFast(b); ok {
		return rec, nil
	}
	var rec Record
	err := json.Unmarshal(b, &rec)
	return rec, err
}

var (
	recAgent   = []byte(`{"agent":"`)
	recOwner   = []byte(`","owner":"`)
	recSession = []byte(`","session":"`)
	recEntry   = []byte(`","entry":`)
)

func parseRecordFast(b []byte) (Record, bool) {
	var rec Record
	var ok bool
	if b, ok = bytes.CutPrefix(b, recAgent); !ok {
		return rec, false
	}
	if rec.Agent, b, ok = plainUntil(b, recOwner); !ok {
		return rec, false
	}
	if rec.Owner, b, ok = plainUntil(b, recSession); !ok {
		return rec, false
	}
	if rec.Session, b, ok = plainUntil(b, recEntry); !ok {
		return rec, false
	}
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) == 0 || b[len(b)-1] != '}' {
		return rec, false
	}
	e, err := transcript.Parse(b[:len(b)-1])
	if err != nil {
		return rec, false
	}
	rec.Entry = e
	return rec, true
}

// plainUntil reads a string's characters up to the closing quote that
// starts sep: printable ASCII other than a quote or backslash, which mean
// the same in JSON as in Go.
func plainUntil(b, sep []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == '"' {
			rest, ok := bytes.CutPrefix(b[i:], sep)
			return string(b[:i]), rest, ok
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return "", nil, false
		}
	}
	return "", nil, false
}
