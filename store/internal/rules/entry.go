package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// The entry checks of the store contract (storekit.CheckEntry and its
// kin), here so that store's AppendBatch fallback applies the same ones.
// They are generic in the key so that a store.Key is made an interface
// (an allocation) only for an error, not on every append.
// They take the sentinel errors they wrap, store.ErrInvalidEntry and
// store.ErrConflict, from their callers, since this package cannot import
// store.

// The timestamps a store keeps: Unix nanoseconds reach from 1678 to 2262
// (see storekit.MinTimestamp).
var (
	MinTimestamp = time.Unix(0, math.MinInt64).UTC().Add(time.Second).Truncate(time.Second)
	MaxTimestamp = time.Unix(0, math.MaxInt64).UTC().Truncate(time.Second)
)

// CheckEntry is storekit.CheckEntry; invalid is store.ErrInvalidEntry.
func CheckEntry[K fmt.Stringer](key K, e transcript.Entry, invalid error) ([]byte, error) {
	if err := checkFields(key, e, invalid); err != nil {
		return nil, err
	}
	line, err := transcript.AppendJSON(make([]byte, 0, 192+len(e.Data)), e)
	if err != nil {
		return nil, entryError(key, invalid, "%v", err)
	}
	return line, nil
}

// ValidEntry is storekit.ValidEntry: CheckEntry's checks without the
// encoding, for a store that keeps entries rather than lines. It refuses
// exactly what CheckEntry refuses: AppendJSON fails only on data that
// is not one JSON object (json.Compact's verdict, whose scanner
// json.Valid shares).
func ValidEntry[K fmt.Stringer](key K, e transcript.Entry, invalid error) error {
	if err := checkFields(key, e, invalid); err != nil {
		return err
	}
	if len(e.Data) > 0 && (!isObject(e.Data) || !json.Valid(e.Data)) {
		// The same words as CheckEntry's error, from AppendJSON.
		_, err := transcript.AppendJSON(nil, e)
		if err == nil {
			err = errors.New("data is not a JSON object")
		}
		return entryError(key, invalid, "%v", err)
	}
	return nil
}

// isObject reports whether raw's first byte outside JSON white space
// opens an object.
func isObject(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c == '{'
		}
	}
	return false
}

func entryError[K fmt.Stringer](key K, invalid error, format string, args ...any) error {
	return fmt.Errorf("%w: session %s: "+format, append([]any{invalid, key}, args...)...)
}

// checkFields checks all of e but its data.
func checkFields[K fmt.Stringer](key K, e transcript.Entry, invalid error) error {
	errorf := func(format string, args ...any) error { return entryError(key, invalid, format, args...) }
	switch {
	case e.ID == "":
		return errorf("entry without id")
	case e.Type == "":
		return errorf("entry %q without type", e.ID)
	case e.Timestamp.IsZero():
		return errorf("entry %q without timestamp", e.ID)
	case e.Timestamp.Before(MinTimestamp) || e.Timestamp.After(MaxTimestamp):
		return errorf("entry %q: timestamp %v outside %d-%d", e.ID, e.Timestamp, MinTimestamp.Year(), MaxTimestamp.Year())
	case e.Status != "" && !e.Status.Valid():
		return errorf("entry %q: unknown status %q", e.ID, e.Status)
	}
	for _, f := range [...]struct{ name, v string }{{"id", e.ID}, {"parentId", e.ParentID}, {"turnId", e.TurnID}, {"type", string(e.Type)}} {
		if !plainText(f.v) {
			return errorf("entry %.40q: %s %.40q is not valid UTF-8 without control characters", e.ID, f.name, f.v)
		}
	}
	return nil
}

// CheckParent is storekit.CheckParent; conflict is store.ErrConflict.
func CheckParent[K fmt.Stringer](key K, head string, e transcript.Entry, conflict error) error {
	if e.ParentID != head {
		return Conflict(key, e.ParentID, head, conflict)
	}
	return nil
}

// Conflict is storekit.ConflictError; conflict is store.ErrConflict.
func Conflict[K fmt.Stringer](key K, parent, head string, conflict error) error {
	return fmt.Errorf("%w: session %s: entry parent %q, last entry %q", conflict, key, parent, head)
}

// CheckBatch is storekit.CheckBatch; invalid and conflict are
// store.ErrInvalidEntry and store.ErrConflict.
func CheckBatch[K fmt.Stringer](key K, entries []transcript.Entry, invalid, conflict error) ([][]byte, error) {
	lines := make([][]byte, len(entries))
	for i, e := range entries {
		line, err := CheckEntry(key, e, invalid)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			if err := CheckParent(key, entries[i-1].ID, e, conflict); err != nil {
				return nil, err
			}
		}
		lines[i] = line
	}
	return lines, nil
}

// ValidBatch is storekit.ValidBatch: CheckBatch without the encodings.
func ValidBatch[K fmt.Stringer](key K, entries []transcript.Entry, invalid, conflict error) error {
	for i, e := range entries {
		if err := ValidEntry(key, e, invalid); err != nil {
			return err
		}
		if i > 0 {
			if err := CheckParent(key, entries[i-1].ID, e, conflict); err != nil {
				return err
			}
		}
	}
	return nil
}

// plainText reports whether s is valid UTF-8 without control characters.
// Every append checks four fields (ids, turn id, type), which are ASCII:
// eight bytes at a time, a word holds no control character when no byte
// has its high bit set (ASCII), is below 0x20, or is 0x7f; anything else
// goes rune by rune.
func plainText(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		del := w ^ (0x7f * ones)
		// (x - 0x20..) & ^x & highs is nonzero when a byte of x, all below
		// 0x80, is below 0x20; (y - ones) & ^y & highs when a byte of y is 0.
		if w&highs != 0 || ((w-0x20*ones)&^w|(del-ones)&^del)&highs != 0 {
			return plainRunes(s[i:])
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return plainRunes(s[i:])
		}
	}
	return true
}

// plainRunes is plainText rune by rune.
func plainRunes(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
