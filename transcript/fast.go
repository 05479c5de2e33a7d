package transcript

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// parseFast decodes the common shape of a line (what AppendJSON writes,
// and what most writers write): one object of the known fields, each at
// most once, with string values free of escapes and control characters
// and valid UTF-8, and a data object. It reports false for anything else,
// and Parse then takes the general path, so the result is always what
// parseSlow gives (FuzzParseFastMatchesSlow holds it to that). It is about
// four times as fast, and every read of a transcript is mostly parsing.
func parseFast(b []byte) (Entry, bool) {
	var e Entry
	var seen [7]bool
	var ts []byte
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return e, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return e, false // no fields: parseSlow says what is missing
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return e, false
		}
		j = skipSpace(b, j)
		if j >= len(b) || b[j] != ':' {
			return e, false
		}
		j = skipSpace(b, j+1)
		field := fieldIndex(key)
		if field < 0 || seen[field] {
			return e, false // unknown, differently cased or repeated: the general path decides
		}
		seen[field] = true
		if field == fieldData {
			end, ok := objectEnd(b, j)
			if !ok {
				return e, false
			}
			data, err := compactObject(b[j:end])
			if err != nil {
				return e, false
			}
			e.Data = data
			j = end
		} else {
			v, end, ok := plainString(b, j)
			if !ok {
				return e, false // null, a number, escapes: the general path decides
			}
			switch field {
			case fieldID:
				e.ID = string(v)
			case fieldParentID:
				e.ParentID = string(v)
			case fieldTimestamp:
				ts = v
			case fieldType:
				e.Type = Type(v)
			case fieldTurnID:
				e.TurnID = string(v)
			case fieldStatus:
				e.Status = Status(v)
			}
			j = end
		}
		j = skipSpace(b, j)
		if j >= len(b) {
			return e, false
		}
		if b[j] == '}' {
			if skipSpace(b, j+1) != len(b) {
				return e, false
			}
			break
		}
		if b[j] != ',' {
			return e, false
		}
		i = skipSpace(b, j+1)
	}
	if e.ID == "" || e.Type == "" || !seen[fieldTimestamp] || (e.Status != "" && !e.Status.Valid()) {
		return e, false // an error: parseSlow words it
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return e, false
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return e, false
	}
	e.Timestamp = t
	if !seen[fieldData] {
		e.Data = emptyObject
	}
	return e, true
}

const (
	fieldID = iota
	fieldParentID
	fieldTimestamp
	fieldType
	fieldTurnID
	fieldStatus
	fieldData
)

// fieldIndex returns the field a key names exactly, or -1. A key that
// names a field in other case is -1 too: encoding/json would match it.
func fieldIndex(key []byte) int {
	switch string(key) {
	case "id":
		return fieldID
	case "parentId":
		return fieldParentID
	case "timestamp":
		return fieldTimestamp
	case "type":
		return fieldType
	case "turnId":
		return fieldTurnID
	case "status":
		return fieldStatus
	case "data":
		return fieldData
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the contents of the JSON string at b[i] when it has
// no escapes, no control characters and only valid UTF-8, and the index
// after its closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	end := bytes.IndexByte(b[start:], '"')
	if end < 0 {
		return nil, 0, false
	}
	v := b[start : start+end]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return nil, 0, false
		}
	}
	if !utf8.Valid(v) {
		return nil, 0, false
	}
	return v, start + end + 1, true
}

// objectEnd returns the index after the object that starts at b[i],
// matching braces outside strings. It does not validate: compactObject
// does.
func objectEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}
