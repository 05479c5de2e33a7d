package transfer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
//
// A line written otherwise must still say whose session it is in the
// export's words: encoding/json would take a line with no "owner" (or a
// "user" in its place, which it ignores) as a project's session, and
// place a user's transcript where every user of the agent sees it. So
// such a line, or one with a field a Record does not have, is refused.
func parseRecord(b []byte) (Record, error) {
	if rec, ok := parseRecordFast(b); ok {
		return rec, nil
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return rec, err
	}
	owner := false
	for name := range fields {
		switch {
		case strings.EqualFold(name, "owner"):
			owner = true
		case strings.EqualFold(name, "agent"), strings.EqualFold(name, "session"), strings.EqualFold(name, "entry"):
		default:
			return rec, fmt.Errorf("unknown field %q (a record has agent, owner, session and entry)", name)
		}
	}
	if !owner {
		return rec, errors.New(`no "owner" (the user id; "" for a project's session)`)
	}
	return rec, nil
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
