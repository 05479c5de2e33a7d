//go:build unix

package sockbus

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadFrame: any bytes are read without a panic, as frames or an
// error; a frame read encodes back to the bytes it came from.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendMessage(nil, keyHash{1}, []byte("hello")))
	f.Add(appendGap(nil, []keyHash{{2}, {3}}))
	f.Add(appendGap(nil, nil))
	f.Add([]byte{0, 0, 0, 1, 'x'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 5, 'm', 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		read := 0
		for {
			fr, err := readFrame(r)
			if err != nil {
				if err == io.EOF && read != len(data) {
					t.Fatalf("EOF after %d of %d bytes", read, len(data))
				}
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, errFrame) {
					t.Fatalf("error %v", err)
				}
				return
			}
			var again []byte
			switch fr.kind {
			case kindMsg:
				again = appendMessage(nil, fr.key, fr.payload)
			case kindGap:
				again = appendGap(nil, fr.lost)
			default:
				t.Fatalf("kind %q", fr.kind)
			}
			if !bytes.Equal(again, data[read:read+len(again)]) {
				t.Fatalf("frame %x encodes as %x", data[read:], again)
			}
			read += len(again)
		}
	})
}
