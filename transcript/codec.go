package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error the decoder returns for input that is
// not an entry.
var ErrSyntax = errors.New("transcript: not an entry")

const (
	millisLayout = "2006-01-02T15:04:05.000Z07:00"
)

// MarshalJSON encodes e in the wire shape. It is AppendJSON for callers that
// go through encoding/json.
func (e Entry) MarshalJSON() ([]byte, error) {
	return AppendJSON(nil, e)
}

// UnmarshalJSON decodes one entry, validating it as Parse does.
func (e *Entry) UnmarshalJSON(b []byte) error {
	d, err := Parse(b)
	if err != nil {
		return err
	}
	*e = d
	return nil
}

// AppendJSON appends the wire encoding of e (one JSON object, no newline) to
// dst. It fails only when e.Data is not a JSON object.
func AppendJSON(dst []byte, e Entry) ([]byte, error) {
	data, err := compactObject(e.Data)
	if err != nil {
		return dst, fmt.Errorf("transcript: entry %q: data: %w", e.ID, err)
	}
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, e.ID)
	if e.ParentID != "" {
		dst = append(dst, `,"parentId":`...)
		dst = appendString(dst, e.ParentID)
	}
	dst = append(dst, `,"timestamp":"`...)
	dst = appendTime(dst, e.Timestamp)
	dst = append(dst, `","type":`...)
	dst = appendString(dst, string(e.Type))
	dst = append(dst, `,"turnId":`...)
	dst = appendString(dst, e.TurnID)
	if e.Status != "" {
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, string(e.Status))
	}
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	return append(dst, '}'), nil
}

// AppendLine appends e and a newline to dst: one line of a JSON-lines
// transcript.
func AppendLine(dst []byte, e Entry) ([]byte, error) {
	dst, err := AppendJSON(dst, e)
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}

// appendTime writes t in UTC, with milliseconds when that is exact and with
// as many digits as needed otherwise, so that decoding gives t back.
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	if t.Nanosecond()%int(time.Millisecond) == 0 {
		return t.AppendFormat(dst, millisLayout)
	}
	return t.AppendFormat(dst, time.RFC3339Nano)
}

// wireEntry is the decoding shape: pointers tell a missing field from an
// empty one.
type wireEntry struct {
	ID        *string         `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp *string         `json:"timestamp"`
	Type      *string         `json:"type"`
	TurnID    *string         `json:"turnId"`
	Status    *string         `json:"status"`
	Data      json.RawMessage `json:"data"`
}

// Parse decodes one entry from its JSON encoding. Unknown fields are
// ignored. It returns an error wrapping ErrSyntax when b is not an entry:
// not a JSON object, id, type or timestamp missing or empty, a timestamp that
// is not RFC 3339, an unknown status, or data that is not an object.
func Parse(b []byte) (Entry, error) {
	p := Parser{oneOff: true}
	if e, ok := parseFast(&p, b); ok {
		return e, nil
	}
	return parseSlow(b)
}

// parseSlow is Parse through encoding/json, for every input.
func parseSlow(b []byte) (Entry, error) {
	var w wireEntry
	if err := json.Unmarshal(b, &w); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if w.ID == nil || *w.ID == "" {
		return Entry{}, fmt.Errorf("%w: missing id", ErrSyntax)
	}
	if w.Type == nil || *w.Type == "" {
		return Entry{}, fmt.Errorf("%w: entry %q: missing type", ErrSyntax, *w.ID)
	}
	if w.Timestamp == nil {
		return Entry{}, fmt.Errorf("%w: entry %q: missing timestamp", ErrSyntax, *w.ID)
	}
	ts, err := time.Parse(time.RFC3339Nano, *w.Timestamp)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: entry %q: timestamp: %v", ErrSyntax, *w.ID, err)
	}
	ts = ts.UTC()
	if y := ts.Year(); y < 0 || y > 9999 {
		return Entry{}, fmt.Errorf("%w: entry %q: timestamp %q is out of range", ErrSyntax, *w.ID, *w.Timestamp)
	}
	e := Entry{ID: *w.ID, Timestamp: ts, Type: Type(*w.Type)}
	if w.ParentID != nil {
		e.ParentID = *w.ParentID
	}
	if w.TurnID != nil {
		e.TurnID = *w.TurnID
	}
	if w.Status != nil && *w.Status != "" {
		e.Status = Status(*w.Status)
		if !e.Status.Valid() {
			return Entry{}, fmt.Errorf("%w: entry %q: unknown status %q", ErrSyntax, e.ID, *w.Status)
		}
	}
	if len(w.Data) == 0 || string(w.Data) == "null" {
		e.Data = emptyObject
	} else if e.Data, err = compactObject(w.Data); err != nil {
		return Entry{}, fmt.Errorf("%w: entry %q: data: %v", ErrSyntax, e.ID, err)
	}
	e.Data = e.Data[:len(e.Data):len(e.Data)] // as the fast path's: appending to it copies
	return e, nil
}

// An Encoder writes entries as JSON lines.
type Encoder struct {
	w   io.Writer
	buf []byte
}

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes e as one line.
func (enc *Encoder) Encode(e Entry) error {
	var err error
	enc.buf, err = AppendLine(enc.buf[:0], e)
	if err != nil {
		return err
	}
	_, err = enc.w.Write(enc.buf)
	return err
}

// MaxLineSize is the longest line a Decoder accepts by default.
const MaxLineSize = 64 << 20

// A Decoder reads entries from JSON lines. Blank lines are skipped.
type Decoder struct {
	r    *bufio.Reader
	p    Parser // the entries of one Decoder share its blocks
	line int
	max  int
}

// NewDecoder returns a decoder reading from r, accepting lines up to
// MaxLineSize bytes.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), max: MaxLineSize}
}

// Line returns the number of the line the last Decode call read, from 1.
func (d *Decoder) Line() int { return d.line }

// Decode reads the next entry. It returns io.EOF after the last one, and
// io.ErrUnexpectedEOF when the input ends in a line without its newline
// (what a write cut short leaves).
func (d *Decoder) Decode() (Entry, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return Entry{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := d.p.Parse(line)
		if err != nil {
			return Entry{}, fmt.Errorf("%w (line %d)", err, d.line)
		}
		return e, nil
	}
}

func (d *Decoder) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := d.r.ReadSlice('\n')
		if len(line)+len(chunk) > d.max {
			d.line++
			return nil, fmt.Errorf("%w: longer than %d bytes (line %d)", ErrSyntax, d.max, d.line)
		}
		switch {
		case err == nil:
			d.line++
			if line == nil {
				return chunk[:len(chunk)-1], nil
			}
			line = append(line, chunk[:len(chunk)-1]...)
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
		case errors.Is(err, io.EOF):
			line = append(line, chunk...)
			if len(line) == 0 {
				return nil, io.EOF
			}
			d.line++
			return line, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// in encoding/json; HTML characters are not escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hex = "0123456789abcdef"
