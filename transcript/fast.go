package transcript

import (
	"encoding/binary"
	"time"
	"unicode/utf8"
)

// parseFast decodes the common shape of a line (what AppendJSON writes,
// and what most writers write): one object of the known fields, each at
// most once, with string values free of escapes and control characters
// and valid UTF-8, and a data object. It reports false for anything else,
// and Parse then takes the general path, so the result is always what
// parseSlow gives (FuzzParseFastMatchesSlow and FuzzParserMatchesSlow hold
// it to that). It is several times as fast, and every read of a transcript
// is mostly parsing.
//
// It runs in two steps: scanLine finds the fields in b without
// allocating, and p.build copies what the entry keeps into p's blocks.
func parseFast(p *Parser, b []byte) (Entry, bool) {
	var l line
	if !l.scan(b) {
		return Entry{}, false
	}
	return p.build(b, &l)
}

// line is where scan found the fields of an entry in its line.
type line struct {
	at   [nFields][2]int // b[at[f][0]:at[f][1]], the value of field f
	seen [nFields]bool
	// compact is whether the data object needs no compacting: it is
	// copied as it is.
	compact bool
	ts      time.Time
}

const (
	fieldID = iota
	fieldParentID
	fieldTimestamp
	fieldType
	fieldTurnID
	fieldStatus
	fieldData
	nFields
)

// scan checks b and records where its fields are. It reports false for
// anything the fast path does not take.
func (l *line) scan(b []byte) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return false // no fields: parseSlow says what is missing
	}
	for {
		ks, ke, ok := plainString(b, i)
		if !ok {
			return false
		}
		j := skipSpace(b, ke+1)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		j = skipSpace(b, j+1)
		field := fieldIndex(b[ks:ke])
		if field < 0 || l.seen[field] {
			return false // unknown, differently cased or repeated: the general path decides
		}
		l.seen[field] = true
		if field == fieldData {
			if j >= len(b) || b[j] != '{' {
				return false
			}
			end, ok := compactValue(b, j)
			if ok {
				l.compact = true
			} else if end, ok = objectEnd(b, j); !ok {
				return false
			}
			l.at[field] = [2]int{j, end}
			j = end
		} else {
			vs, ve, ok := plainString(b, j)
			if !ok {
				return false // null, a number, escapes: the general path decides
			}
			l.at[field] = [2]int{vs, ve}
			j = ve + 1
		}
		j = skipSpace(b, j)
		if j >= len(b) {
			return false
		}
		if b[j] == '}' {
			if skipSpace(b, j+1) != len(b) {
				return false
			}
			break
		}
		if b[j] != ',' {
			return false
		}
		i = skipSpace(b, j+1)
	}
	if l.empty(fieldID) || l.empty(fieldType) || !l.seen[fieldTimestamp] {
		return false // an error: parseSlow words it
	}
	if st := l.at[fieldStatus]; st[1] > st[0] && statusOf(b[st[0]:st[1]]) == "" {
		return false
	}
	t, ok := parseTime(b[l.at[fieldTimestamp][0]:l.at[fieldTimestamp][1]])
	if !ok {
		return false
	}
	l.ts = t
	return true
}

func (l *line) empty(f int) bool { return l.at[f][1] == l.at[f][0] }

func (l *line) value(b []byte, f int) []byte { return b[l.at[f][0]:l.at[f][1]] }

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

// knownType returns the constant a type's text names, or "" for a type
// spool does not write, so that the entries of a read share the
// constants' text instead of a copy each.
func knownType(v []byte) Type {
	switch Type(v) {
	case TypeUserMessage:
		return TypeUserMessage
	case TypeAssistantMessage:
		return TypeAssistantMessage
	case TypeApprovalRequest:
		return TypeApprovalRequest
	case TypeApprovalDecision:
		return TypeApprovalDecision
	case TypeToolResult:
		return TypeToolResult
	case TypeGovernanceNotice:
		return TypeGovernanceNotice
	case TypeSessionMode:
		return TypeSessionMode
	case TypeTurnEnd:
		return TypeTurnEnd
	case TypeBranch:
		return TypeBranch
	case TypeFork:
		return TypeFork
	case TypeCompaction:
		return TypeCompaction
	}
	return ""
}

// statusOf returns the status v names, or "" when it is not one.
func statusOf(v []byte) Status {
	switch Status(v) {
	case StatusOK:
		return StatusOK
	case StatusPromptBlocked:
		return StatusPromptBlocked
	case StatusResponseBlocked:
		return StatusResponseBlocked
	case StatusError:
		return StatusError
	case StatusCancelled:
		return StatusCancelled
	}
	return ""
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SWAR masks: a byte of x below 0x20, or equal to '"' or '\\', or with
// its high bit set, shows as a high bit in the word's test.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns a word whose high bits mark, among the 8 bytes of x,
// those that are a control character, '"' or '\\' (and, now and then, a
// byte next to one: callers look at the bytes again).
func special(x uint64) uint64 {
	quote := x ^ ('"' * ones)
	bslash := x ^ ('\\' * ones)
	return ((x-0x20*ones)&^x | (quote-ones)&^quote | (bslash-ones)&^bslash) & highs
}

// plainString returns where the contents of the JSON string at b[i] are,
// [start, end) with b[end] its closing quote, when it has no escapes, no
// control characters and only valid UTF-8.
func plainString(b []byte, i int) (start, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	start = i + 1
	ascii := true
	j := start
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		if x&highs != 0 {
			ascii = false
		}
		if special(x) != 0 {
			break
		}
	}
	for ; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:j]) {
				return 0, 0, false
			}
			return start, j, true
		case c < 0x20 || c == '\\':
			return 0, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return 0, 0, false
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

// parseTime is time.Parse(time.RFC3339Nano, string(v)).UTC() for the
// shape spool writes, 2006-01-02T15:04:05Z with 0 to 9 digits of a
// second, reporting false for anything else (time.Parse then decides):
// time.Parse of such a text is a UTC time, out of range in no field.
// FuzzParseTime holds the two to the same result.
func parseTime(v []byte) (time.Time, bool) {
	if len(v) < 20 || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' || v[len(v)-1] != 'Z' {
		return slowTime(v)
	}
	year, ok1 := digits(v[0:4])
	month, ok2 := digits(v[5:7])
	day, ok3 := digits(v[8:10])
	hour, ok4 := digits(v[11:13])
	minute, ok5 := digits(v[14:16])
	sec, ok6 := digits(v[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return slowTime(v)
	}
	ns := 0
	if frac := v[19 : len(v)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return slowTime(v)
		}
		n, ok := digits(frac[1:])
		if !ok {
			return slowTime(v)
		}
		for range 10 - len(frac) {
			n *= 10
		}
		ns = n
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return slowTime(v)
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ns, time.UTC), true
}

// slowTime is parseTime's general path.
func slowTime(v []byte) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, string(v))
	if err != nil {
		return time.Time{}, false
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// digits returns the decimal number v spells, all of it digits.
func digits(v []byte) (int, bool) {
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
