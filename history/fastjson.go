package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// Decoding the data of the entries a window shows is most of what building
// it costs, and encoding/json spends most of that on reflection and on
// validating the input before decoding it. The decoders here read the few
// shapes the rules use in one pass, and give up (ok false) on anything
// that is not plainly what encoding/json would decode without error: a
// field of another type or null, a key in other case or repeated, a string
// with an escaped surrogate or invalid UTF-8, invalid JSON anywhere. The
// caller then decodes with encoding/json, so the result is always
// encoding/json's (FuzzFastDecode holds them to that).

// scan reads JSON from b.
type scan struct {
	b []byte
	i int
}

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads the object at s.i, calling field for each member with its
// key, which must read the value and report false to give up.
func (s *scan) object(field func(key []byte) bool) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, ok := s.plainKey()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if !field(key) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// plainKey reads a key without escapes.
func (s *scan) plainKey() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	key := s.b[start : start+end]
	for _, c := range key {
		if c < 0x20 || c == '\\' {
			return nil, false
		}
	}
	s.i = start + end + 1
	return key, true
}

// str reads a string value.
func (s *scan) str() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	rest := s.b[s.i+1:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return "", false
	}
	if bytes.IndexByte(rest[:q], '\\') >= 0 {
		return s.escaped()
	}
	v := rest[:q]
	if !plain(v) {
		return "", false
	}
	s.i += q + 2
	return string(v), true
}

// plain reports whether v has no control characters and is valid UTF-8.
func plain(v []byte) bool { return controlFree(v) && utf8.Valid(v) }

// escaped reads a string value that has escapes.
func (s *scan) escaped() (string, bool) {
	s.i++
	out := make([]byte, 0, 64)
	for {
		rest := s.b[s.i:]
		// Two IndexByte calls, not IndexAny, which builds its set of
		// bytes on every call.
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			return "", false
		}
		if k := bytes.IndexByte(rest[:j], '\\'); k >= 0 {
			j = k
		}
		if !controlFree(rest[:j]) {
			return "", false
		}
		out = append(out, rest[:j]...)
		s.i += j
		if rest[j] == '"' {
			s.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		}
		if s.i+1 >= len(s.b) {
			return "", false
		}
		switch s.b[s.i+1] {
		case '"', '\\', '/':
			out = append(out, s.b[s.i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s.b[s.i+2:])
			if !ok || utf16.IsSurrogate(r) {
				return "", false // surrogates: encoding/json's rules decide
			}
			out = utf8.AppendRune(out, r)
			s.i += 4
		default:
			return "", false
		}
		s.i += 2
	}
}

// controlFree reports whether v has no control characters (its UTF-8 is
// checked once the whole string is in). Every string of a window passes
// here, so it reads eight bytes at a time: (w - 0x20 in every byte) &^ w
// has a byte's high bit set exactly when some byte of w is below 0x20.
func controlFree(v []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := binary.LittleEndian.Uint64(v[i:])
		if (w-0x20*ones)&^w&highs != 0 {
			return false
		}
	}
	for _, c := range v[i:] {
		if c < 0x20 {
			return false
		}
	}
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// boolean reads true or false.
func (s *scan) boolean() (bool, bool) {
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}

// skip reads any value, checking that it is valid JSON, and returns its
// text. depth bounds nesting as encoding/json does.
func (s *scan) skip(depth int) ([]byte, bool) {
	if depth > 10000 {
		return nil, false
	}
	start := s.i
	if s.i >= len(s.b) {
		return nil, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		if _, ok := s.str(); !ok {
			return nil, false
		}
	case c == '{':
		ok := s.object(func([]byte) bool {
			_, ok := s.skip(depth + 1)
			return ok
		})
		if !ok {
			return nil, false
		}
	case c == '[':
		if !s.array(func() bool {
			_, ok := s.skip(depth + 1)
			return ok
		}) {
			return nil, false
		}
	case c == 't' || c == 'f':
		if _, ok := s.boolean(); !ok {
			return nil, false
		}
	case c == 'n':
		if !bytes.HasPrefix(s.b[s.i:], []byte("null")) {
			return nil, false
		}
		s.i += 4
	default:
		if !s.number() {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// array reads an array, calling elem for each element.
func (s *scan) array(elem func() bool) bool {
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		s.ws()
		if !elem() {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// number reads a number by JSON's grammar.
func (s *scan) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	s.i = i
	return true
}

// end reports whether only white space is left.
func (s *scan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// fields decodes the object b into the named fields, each read by its
// function; other members are checked and skipped. It gives up on a key
// that differs from a field's name only in case (encoding/json would take
// it) and on a field given twice.
func fields(b []byte, names []string, read []func(*scan) bool) bool {
	s := scan{b: b}
	var seen uint32
	ok := s.object(func(key []byte) bool {
		for n, name := range names {
			if string(key) == name {
				if seen&(1<<n) != 0 {
					return false
				}
				seen |= 1 << n
				return read[n](&s)
			}
			if bytes.EqualFold(key, []byte(name)) {
				return false
			}
		}
		_, ok := s.skip(1)
		return ok
	})
	return ok && s.end()
}

func readString(dst *string) func(*scan) bool {
	return func(s *scan) bool {
		v, ok := s.str()
		*dst = v
		return ok
	}
}

func readBool(dst *bool) func(*scan) bool {
	return func(s *scan) bool {
		v, ok := s.boolean()
		*dst = v
		return ok
	}
}

// fastUser decodes a user.message's data as json.Unmarshal would into a
// transcript.UserMessage, or reports false.
func fastUser(b []byte) (transcript.UserMessage, bool) {
	var u transcript.UserMessage
	ok := fields(b, []string{"text"}, []func(*scan) bool{readString(&u.Text)})
	return u, ok
}

// fastAssistant decodes an assistant.message's text and calls.
func fastAssistant(b []byte) (assistantData, bool) {
	var a assistantData
	calls := func(s *scan) bool {
		if s.i >= len(s.b) || s.b[s.i] != '[' {
			return false // null or another type: encoding/json decides
		}
		a.ToolCalls = []transcript.ToolCall{}
		return s.array(func() bool {
			var c transcript.ToolCall
			args := func(s *scan) bool {
				if s.i < len(s.b) && s.b[s.i] == 'n' {
					return false
				}
				raw, ok := s.skip(2)
				c.Arguments = json.RawMessage(bytes.Clone(raw))
				return ok
			}
			if s.i >= len(s.b) || s.b[s.i] != '{' {
				return false
			}
			var seen uint32
			names := [...]string{"id", "name", "arguments"}
			read := [...]func(*scan) bool{readString(&c.ID), readString(&c.Name), args}
			ok := s.object(func(key []byte) bool {
				for n, name := range names {
					if string(key) == name {
						if seen&(1<<n) != 0 {
							return false
						}
						seen |= 1 << n
						return read[n](s)
					}
					if bytes.EqualFold(key, []byte(name)) {
						return false
					}
				}
				_, ok := s.skip(3)
				return ok
			})
			a.ToolCalls = append(a.ToolCalls, c)
			return ok
		})
	}
	ok := fields(b, []string{"text", "toolCalls"}, []func(*scan) bool{readString(&a.Text), calls})
	return a, ok
}

// fastToolResult decodes a tool result's call id, result and error flag.
func fastToolResult(b []byte) (toolResultData, bool) {
	var r toolResultData
	ok := fields(b, []string{"callId", "result", "isError"},
		[]func(*scan) bool{readString(&r.CallID), readString(&r.Result), readBool(&r.IsError)})
	return r, ok
}

// fastDecision decodes a decision's call, verdict and reason.
func fastDecision(b []byte) (decisionData, bool) {
	var d decisionData
	var verdict string
	ok := fields(b, []string{"callId", "decision", "reason"},
		[]func(*scan) bool{readString(&d.CallID), readString(&verdict), readString(&d.Reason)})
	d.Decision = transcript.Verdict(verdict)
	return d, ok
}

// fastApproval decodes an approval entry's id.
func fastApproval(b []byte) (approvalData, bool) {
	var a approvalData
	ok := fields(b, []string{"approvalId"}, []func(*scan) bool{readString(&a.ApprovalID)})
	return a, ok
}
