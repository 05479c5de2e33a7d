package filestore

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// Range reads find their start through a sparse offset index kept next to
// the transcript, <id>.jsonl.off: little-endian uint64s, the k-th (from 1)
// being the byte offset of the line of entry k*offsetEvery. Appends write
// an offset every offsetEvery entries, so reading entries [a, b) reads the
// offset of entry a - a%offsetEvery and at most offsetEvery-1 lines more
// than asked for, however long the transcript.
//
// The file is derived data and is not synced: an offset is used only if it
// lies inside the transcript just after a newline, and a file that is short
// or wrong (a crash, a transcript another program wrote) is rebuilt from the
// transcript on first use.
const offsetEvery = 256

func offsetsPath(transcript string) string {
	return transcript[:len(transcript)-len(transcriptExt)] + offsetsExt
}

// noteOffset records, when pos is a multiple of offsetEvery, that entry pos
// starts at off. It fails silently: a missing offset is rebuilt when needed.
// The caller holds the exclusive lock.
func (s *Store) noteOffset(sf *sfile, pos int, off int64) {
	if pos == 0 || pos%offsetEvery != 0 {
		return
	}
	f, err := openFile(offsetsPath(sf.path), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return
	}
	fixMode(f)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(off))
	f.WriteAt(b[:], int64(pos/offsetEvery-1)*8)
	f.Close()
}

// offsetOf returns the offset of the line of entry k*offsetEvery, which the
// caller knows exists, reading the offsets file or rebuilding it. The
// caller holds the session's lock.
func (s *Store) offsetOf(sf *sfile, k int) (int64, error) {
	if k == 0 {
		return 0, nil
	}
	if off, ok := readOffset(sf, k); ok {
		return off, nil
	}
	offs, err := buildOffsets(sf)
	if err != nil {
		return 0, err
	}
	if k > len(offs) {
		return 0, fmt.Errorf("filestore: %s has fewer entries than its index says", sf.path)
	}
	writeOffsets(offsetsPath(sf.path), offs)
	return offs[k-1], nil
}

func readOffset(sf *sfile, k int) (int64, bool) {
	f, err := openFile(offsetsPath(sf.path), os.O_RDONLY, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(k-1)*8); err != nil {
		return 0, false
	}
	off := int64(binary.LittleEndian.Uint64(b[:]))
	if off <= 0 || off >= sf.size {
		return 0, false
	}
	var nl [1]byte
	if _, err := sf.f.ReadAt(nl[:], off-1); err != nil || nl[0] != '\n' {
		return 0, false
	}
	return off, true
}

// buildOffsets scans the transcript for line starts, counting only lines
// that hold entries, and returns the offsets the file should hold.
func buildOffsets(sf *sfile) ([]int64, error) {
	var offs []int64
	buf := make([]byte, 256<<10)
	pos := 0
	lineStart := int64(0)
	nonBlank := false
	for at := int64(0); at < sf.size; {
		n, err := sf.f.ReadAt(buf[:min(int64(len(buf)), sf.size-at)], at)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("filestore: %w", err)
		}
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
			}
			nonBlank = nonBlank || !blank(part)
			if i < 0 {
				break
			}
			if nonBlank {
				if pos > 0 && pos%offsetEvery == 0 {
					offs = append(offs, lineStart)
				}
				pos++
			}
			lineStart = at + int64(n-len(chunk)+i+1)
			nonBlank = false
			chunk = chunk[i+1:]
		}
		at += int64(n)
	}
	return offs, nil
}

// writeOffsets replaces the offsets file. Readers holding the shared lock
// may do it at the same time; each writes a whole file and renames it.
func writeOffsets(path string, offs []int64) {
	b := make([]byte, 8*len(offs))
	for i, off := range offs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(off))
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := path + "." + hex.EncodeToString(rnd[:]) + tmpExt
	f, err := openFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return
	}
	fixMode(f)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
}
