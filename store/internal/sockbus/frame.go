//go:build unix

package sockbus

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spool-go/spool/store"
)

// magic begins every connection.
const magic = "spoolbs1"

// MaxMessage is the longest payload a message may have. A live turn's
// snapshot of its events so far is the longest message spool sends; it
// stays far below.
const MaxMessage = 64 << 20

// maxBody is the longest frame body: a message's type, hash and payload.
const maxBody = 1 + hashLen + MaxMessage

const (
	hashLen   = sha256.Size
	kindMsg   = 'm'
	kindGap   = 'g'
	headerLen = 4
)

// keyHash names a key on the wire: no id is ever written, and the
// lengths framing its parts keep two keys from hashing alike.
type keyHash [hashLen]byte

func hashKey(key store.Key) keyHash {
	h := sha256.New()
	h.Write([]byte("spool sockbus key\x00"))
	for _, p := range []string{key.Agent, key.Owner, key.ID} {
		h.Write(strconv.AppendInt(nil, int64(len(p)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	var k keyHash
	h.Sum(k[:0])
	return k
}

// frame is one decoded frame.
type frame struct {
	kind    byte
	key     keyHash   // kindMsg
	payload []byte    // kindMsg
	lost    []keyHash // kindGap; none: any key
}

var errFrame = errors.New("sockbus: malformed frame")

// appendMessage appends the frame of a message for k.
func appendMessage(dst []byte, k keyHash, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+hashLen+len(payload)))
	dst = append(dst, kindMsg)
	dst = append(dst, k[:]...)
	return append(dst, payload...)
}

// appendGap appends the frame of a gap in the messages for lost (none:
// for any key).
func appendGap(dst []byte, lost []keyHash) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+hashLen*len(lost)))
	dst = append(dst, kindGap)
	for _, k := range lost {
		dst = append(dst, k[:]...)
	}
	return dst
}

// readFrame reads the next frame from r. At the end of the stream
// between two frames it returns io.EOF; in the middle of one,
// io.ErrUnexpectedEOF; a frame that is not of the format, an error
// matching errFrame, before reading its body when its length is wrong.
func readFrame(r *bufio.Reader) (frame, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n < 1 || n > maxBody {
		return frame{}, fmt.Errorf("%w: body of %d bytes", errFrame, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	return parseBody(body)
}

// parseBody decodes a frame's body; a message's payload is body's.
func parseBody(body []byte) (frame, error) {
	if len(body) == 0 {
		return frame{}, fmt.Errorf("%w: empty", errFrame)
	}
	f := frame{kind: body[0]}
	rest := body[1:]
	switch f.kind {
	case kindMsg:
		if len(rest) < hashLen {
			return frame{}, fmt.Errorf("%w: a message of %d bytes", errFrame, len(body))
		}
		copy(f.key[:], rest)
		f.payload = rest[hashLen:]
	case kindGap:
		if len(rest)%hashLen != 0 {
			return frame{}, fmt.Errorf("%w: a gap of %d bytes", errFrame, len(body))
		}
		for ; len(rest) > 0; rest = rest[hashLen:] {
			f.lost = append(f.lost, keyHash(rest[:hashLen]))
		}
	default:
		return frame{}, fmt.Errorf("%w: kind %#x", errFrame, f.kind)
	}
	return f, nil
}
