package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
)

// LineMarker is the first byte of every sealed line. Plain JSON lines start
// with '{' (or whitespace), never with it.
const LineMarker = '!'

// ErrNotSealed reports a line given to OpenLine that does not start with
// LineMarker. A store that has a protector should treat such a line as
// corrupt rather than read it as plain text: otherwise anyone who can write
// the file could slip in unsealed lines.
var ErrNotSealed = errors.New("seal: line is not sealed")

var lineEncoding = base64.RawStdEncoding.Strict()

// SealLine seals line with p, bound to ad, and returns one text line:
// LineMarker followed by the sealed value in unpadded standard base64. The
// result holds no '\n' or '\r' and no other byte outside [A-Za-z0-9+/!]; the
// caller appends the newline. line is the plain line without its newline.
//
// Stores pass AssociatedData(agent, owner, id, position) as ad, position
// being the line's index in the session, so the line opens only there.
func SealLine(p Protector, line, ad []byte) ([]byte, error) {
	if p == nil {
		return nil, errors.New("seal: SealLine needs a protector, got nil")
	}
	sealed, err := p.Seal(line, ad)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+lineEncoding.EncodedLen(len(sealed)))
	out[0] = LineMarker
	lineEncoding.Encode(out[1:], sealed)
	return out, nil
}

// OpenLine returns the plain line that SealLine sealed into line, which must
// be bound to the same ad. A trailing "\n" or "\r\n" on line is ignored, so
// lines can be passed as a reader returns them.
//
// Errors match ErrNotSealed (line does not start with LineMarker),
// ErrTampered (bad base64, too short, unknown format, changed, or sealed for
// other ad) or ErrWrongKey (sealed under a key p does not hold, or p is nil).
// The plaintext never appears in an error.
func OpenLine(p Protector, line, ad []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !IsSealedLine(line) {
		return nil, ErrNotSealed
	}
	if p == nil {
		return nil, fmt.Errorf("%w: the line is sealed and no protector was given", ErrWrongKey)
	}
	sealed := make([]byte, lineEncoding.DecodedLen(len(line)-1))
	n, err := lineEncoding.Decode(sealed, line[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: not valid base64 after the marker", ErrTampered)
	}
	return p.Open(sealed[:n], ad)
}

// IsSealedLine reports whether line was produced by SealLine, judged by its
// first byte only: it says which reader to use, not whether the line opens.
func IsSealedLine(line []byte) bool {
	return len(line) > 0 && line[0] == LineMarker
}
