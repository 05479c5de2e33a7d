package filestore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// blank reports whether a line holds only white space. Blank lines are not
// entries and have no position; other programs' files may have them.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// lineReader reads the lines of a transcript from an offset on.
type lineReader struct {
	r    *bufio.Reader
	line []byte
	no   int // 1-based number of the last line read, from the start offset
	max  int // the longest line, newline included, as transcript.Decoder
}

func newLineReader(f *os.File, off, size int64) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10), max: transcript.MaxLineSize}
}

// errLongLine reports a line longer than any entry may be; the reader has
// gone past it.
var errLongLine = fmt.Errorf("a line longer than %d bytes", transcript.MaxLineSize)

// next returns the next line without its newline (valid until the next
// call), or io.EOF. Every line ends in a newline: the file was repaired
// when it was opened, and bytes appended after its size are not read.
func (lr *lineReader) next() ([]byte, error) {
	lr.line = lr.line[:0]
	long := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !long && len(lr.line)+len(chunk) > lr.max {
			long, lr.line = true, lr.line[:0]
		}
		switch {
		case err == nil:
			lr.no++
			if long {
				return nil, errLongLine
			}
			if len(lr.line) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			lr.line = append(lr.line, chunk...)
			return lr.line[:len(lr.line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			if !long {
				lr.line = append(lr.line, chunk...)
			}
		case errors.Is(err, io.EOF):
			if len(lr.line)+len(chunk) == 0 && !long {
				return nil, io.EOF
			}
			// The file changed size under a lock that should have kept it
			// still: report it rather than read half a line.
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// encodeLine appends the stored form of e, at position pos of session key,
// with its newline.
func (s *Store) encodeLine(dst []byte, key store.Key, pos int, e transcript.Entry) ([]byte, error) {
	if s.cfg.protector == nil {
		return transcript.AppendLine(dst, e)
	}
	plain, err := transcript.AppendJSON(nil, e)
	if err != nil {
		return dst, err
	}
	return s.appendSealed(dst, plain, key, pos)
}

// lineOf returns the stored line of an entry whose wire encoding is plain,
// at position pos of session key: plain itself and a newline, or sealed.
// It may append to plain.
func (s *Store) lineOf(plain []byte, key store.Key, pos int) ([]byte, error) {
	if s.cfg.protector == nil {
		return append(plain, '\n'), nil
	}
	return s.appendSealed(nil, plain, key, pos)
}

// appendSealed appends plain sealed for position pos of session key, and a
// newline.
func (s *Store) appendSealed(dst, plain []byte, key store.Key, pos int) ([]byte, error) {
	sealed, err := seal.SealLine(s.cfg.protector, plain, seal.AssociatedData(key.Agent, key.Owner, key.ID, pos))
	if err != nil {
		return dst, fmt.Errorf("filestore: sealing entry %d of session %s: %w", pos, key, err)
	}
	dst = append(dst, sealed...)
	return append(dst, '\n'), nil
}

// decodeLine decodes the stored line at position pos of session key; where
// says where it is ("file:line") for errors.
func (s *Store) decodeLine(line []byte, key store.Key, pos int, where func() string) (transcript.Entry, error) {
	return s.parseLine(nil, line, key, pos, where)
}

// parseLine is decodeLine parsing with p (a read's), or with
// transcript.Parse when p is nil.
func (s *Store) parseLine(p *transcript.Parser, line []byte, key store.Key, pos int, where func() string) (transcript.Entry, error) {
	line = bytes.TrimRight(line, " \t\r")
	corrupt := func(err error) error {
		return &store.CorruptError{Key: key, Position: pos, Where: where(), Err: err}
	}
	if s.cfg.protector == nil {
		if seal.IsSealedLine(bytes.TrimLeft(line, " \t")) {
			return transcript.Entry{}, fmt.Errorf("session %s (%s): %w", key, where(), ErrEncrypted)
		}
		e, err := parse(p, line)
		if err != nil {
			return transcript.Entry{}, corrupt(err)
		}
		return e, nil
	}
	plain, err := seal.OpenLine(s.cfg.protector, line, seal.AssociatedData(key.Agent, key.Owner, key.ID, pos))
	switch {
	case errors.Is(err, seal.ErrWrongKey):
		return transcript.Entry{}, fmt.Errorf("session %s (%s): the store is encrypted with another key: %w", key, where(), err)
	case errors.Is(err, seal.ErrNotSealed):
		return transcript.Entry{}, corrupt(fmt.Errorf("an unencrypted line in an encrypted store: %w", err))
	case err != nil:
		return transcript.Entry{}, corrupt(err)
	}
	e, err := parse(p, plain)
	if err != nil {
		return transcript.Entry{}, corrupt(err)
	}
	return e, nil
}

func parse(p *transcript.Parser, b []byte) (transcript.Entry, error) {
	if p == nil {
		return transcript.Parse(b)
	}
	return p.Parse(b)
}
