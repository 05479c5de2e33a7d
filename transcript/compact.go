package transcript

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
)

// compactObject returns raw without insignificant space, failing unless it
// is one JSON object. A nil or empty raw is the empty object. The result
// never shares memory with raw.
//
// Almost every object it sees is compact already (the encoder writes it
// so), and json.Compact spends most of an append and of a line's decoding
// re-scanning it byte by byte: a one-pass check comes first, and
// json.Compact runs only for an object that needs it or is not valid,
// which it then reports. FuzzCompactObject holds the two to the same
// result.
func compactObject(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return emptyObject, nil
	}
	if raw[0] == '{' && compactJSON(raw) {
		return bytes.Clone(raw), nil
	}
	return compactSlow(raw)
}

func compactSlow(raw json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if b[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	return b, nil
}

// compactJSON reports whether b is one valid JSON value with no space
// outside its strings. It is conservative: false sends the value to
// json.Compact, which decides.
func compactJSON(b []byte) bool {
	end, ok := compactValue(b, 0)
	return ok && end == len(b)
}

// compactValue returns the index after the value at b[i] when it is
// valid JSON with no space outside its strings; the bytes after it are
// not looked at. It is conservative as compactJSON is.
func compactValue(b []byte, i int) (int, bool) {
	// A stack of open containers: '{' expecting a key or '}', ':' after
	// a key, 'o' after an object member, '[' at an array's start, 'a'
	// after an element.
	var stackBuf [64]byte
	stack := stackBuf[:0]
	for {
		// A value at b[i].
		if i >= len(b) {
			return 0, false
		}
		switch c := b[i]; {
		case c == '{':
			if len(stack) >= 10000 {
				return 0, false
			}
			i++
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			stack = append(stack, '{')
			j, ok := skipString(b, i)
			if !ok || j >= len(b) || b[j] != ':' {
				return 0, false
			}
			i = j + 1
			continue
		case c == '[':
			if len(stack) >= 10000 {
				return 0, false
			}
			i++
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			stack = append(stack, '[')
			continue
		case c == '"':
			j, ok := skipString(b, i)
			if !ok {
				return 0, false
			}
			i = j
		case c == 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return 0, false
			}
			i += 4
		case c == 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return 0, false
			}
			i += 5
		case c == 'n':
			if !bytes.HasPrefix(b[i:], []byte("null")) {
				return 0, false
			}
			i += 4
		default:
			j, ok := skipNumber(b, i)
			if !ok {
				return 0, false
			}
			i = j
		}
		// After a value: close containers, or go on to the next member.
		for {
			if len(stack) == 0 {
				return i, true
			}
			if i >= len(b) {
				return 0, false
			}
			top := stack[len(stack)-1]
			switch {
			case b[i] == ',' && top == '{':
				j, ok := skipString(b, i+1)
				if !ok || j >= len(b) || b[j] != ':' {
					return 0, false
				}
				i = j + 1
			case b[i] == ',' && top == '[':
				i++
			case b[i] == '}' && top == '{', b[i] == ']' && top == '[':
				stack = stack[:len(stack)-1]
				i++
				continue
			default:
				return 0, false
			}
			break
		}
	}
}

// skipString returns the index after the string at b[i], checking its
// escapes; it does not check UTF-8, which JSON text needs not be for
// json.Compact.
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); {
		for i+8 <= len(b) && special(binary.LittleEndian.Uint64(b[i:])) == 0 {
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) || b[i] < 0x20 {
			return 0, false
		}
		if b[i] == '"' {
			return i + 1, true
		}
		if i+1 >= len(b) {
			return 0, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) {
				return 0, false
			}
			for _, h := range b[i+2 : i+6] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return 0, false
				}
			}
			i += 6
		default:
			return 0, false
		}
	}
	return 0, false
}

// skipNumber returns the index after the number at b[i], by JSON's grammar.
func skipNumber(b []byte, i int) (int, bool) {
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
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
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
			return 0, false
		}
	}
	return i, true
}
