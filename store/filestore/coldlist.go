package filestore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/spool-go/spool/store"
)

// The first page of a namespace a Store has not loaded (a command-line
// run's one List) needs the newest few sessions, not all of them. Loading
// the index parses every record and fills the map of them (10,000 sessions:
// most of a cold List); coldFirst instead reads the index file once,
// checks every line as loading does (each record's checksum, every mark),
// notes each session's last record by its id and last activity only, and
// parses in full only the records of the page. It answers only when the
// index is proved current (marks.go) and every line checked out: anything
// else, it leaves to the full load and the comparison with the folder,
// which say what is wrong and make it good. It loads nothing, so the
// Store's next use of the namespace loads the index as before; it answers
// a namespace once, so a long-lived Store that lists again loads it then.

// lastRec is what coldFirst keeps of a session's last record: no pointer,
// so that 10,000 of them cost the collector nothing.
type lastRec struct {
	sec        int64 // the last activity, as parseTime reads it
	nsec       int32
	start, end int32 // the line, in the index file's bytes
	id         int32 // the id's length, from start+11
	deleted    bool  // the last record is a D
}

// coldFirst returns the first k records of a namespace not loaded yet, in
// listing order, fully parsed with their titles opened, or false when the
// full load must answer.
//
// An index a rewrite wrote holds its records in listing order after a P
// mark that gives their length (rewrite), and then what was appended
// since. Then coldFirst reads the marks before it, the appended part
// whole, and of the sorted records only as many as the page needs: the
// first k that nothing appended since supersedes (any later record of a
// session, or its deletion, is in the appended part, which is read in
// full). Otherwise it reads the whole file.
func (ix *index) coldFirst(k int) ([]*rec, bool) {
	ix.valMu.Lock()
	defer ix.valMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.loaded || ix.validating || ix.peeked {
		return nil, false
	}
	ix.peeked = true
	f, err := openFile(ix.j.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false
	}
	size := st.Size()
	if size > math.MaxInt32 {
		return nil, false
	}
	raw := make([]byte, min(size, coldChunk))
	if n, err := f.ReadAt(raw, 0); n != len(raw) || (err != nil && n == 0) {
		return nil, false
	}
	header := ix.s.indexHeader()
	if !bytes.HasPrefix(raw, []byte(header)) {
		return nil, false
	}
	// A view of the index of its own, for the marks and the proof.
	t := newIndex(ix.s, ix.key, ix.dir)
	t.j.id = st
	secStart, secEnd := int64(-1), int64(-1)
	for at := len(header); ; {
		i := bytes.IndexByte(raw[at:], '\n')
		if i < 0 {
			break
		}
		line := raw[at : at+i]
		if len(line) > 11 && line[0] == 'P' && line[1] == '\t' && line[10] == '\t' && crcOK(line) {
			if n, ok := digits(string(line[11:])); ok {
				secStart = int64(at + i + 1)
				secEnd = secStart + int64(n)
			}
			break
		}
		if len(line) == 0 || !t.applyMarkLocked(line) {
			break // records before any P: not a sorted index
		}
		at += i + 1
	}
	var first []*rec
	if secStart < 0 || secEnd > size {
		// Not sorted (or not as it says): every line.
		if size > int64(len(raw)) {
			raw = make([]byte, size)
			if n, err := f.ReadAt(raw, 0); n != len(raw) || (err != nil && n == 0) {
				return nil, false
			}
		}
		t = newIndex(ix.s, ix.key, ix.dir)
		t.j.id = st
		recs, _, ok := t.lastRecords(raw, len(header))
		if !ok {
			return nil, false
		}
		if first, ok = t.firstOf(raw, recs, k, nil); !ok {
			return nil, false
		}
	} else {
		tail := make([]byte, size-secEnd)
		if n, err := f.ReadAt(tail, secEnd); n != len(tail) || (err != nil && n == 0) {
			return nil, false
		}
		recs, byID, ok := t.lastRecords(tail, 0)
		if !ok {
			return nil, false
		}
		sorted, ok := t.sortedFirst(f, secStart, secEnd, k, byID)
		if !ok {
			return nil, false
		}
		if first, ok = t.firstOf(tail, recs, k, sorted); !ok {
			return nil, false
		}
	}
	dir, err := os.Stat(ix.dir)
	if err != nil || !t.provenLocked(dir.ModTime().UnixNano(), t.deadLocked()) || len(t.unsure) > 0 {
		// Unproved, or a live writer's deferred records (pending.go) to
		// compare: the full load does.
		return nil, false
	}
	for _, r := range first {
		if err := t.openTitleLocked(r); err != nil || t.needValidate {
			return nil, false
		}
	}
	ix.coldSorted = secStart >= 0
	return first, true
}

// coldChunk is how much of the index coldFirst reads first: the header,
// the marks and, in a sorted index, the first records.
const coldChunk = 64 << 10

// lastRecords checks every line of raw from the offset from as a load
// checks it, applies the marks to t, and notes each session's last record.
// It reports false for a line that is not a record.
func (t *index) lastRecords(raw []byte, from int) ([]lastRec, map[string]int, bool) {
	lines := bytes.Count(raw[from:], []byte{'\n'})
	byID := make(map[string]int, lines)
	recs := make([]lastRec, 0, lines)
	for at := from; ; {
		i := bytes.IndexByte(raw[at:], '\n')
		if i < 0 {
			break // a record cut short, or none: as applyRecordsLocked
		}
		start, end := at, at+i
		at = end + 1
		line := raw[start:end]
		if len(line) == 0 || t.applyMarkLocked(line) {
			continue
		}
		if len(line) < 12 || line[1] != '\t' || line[10] != '\t' || !crcOK(line) || end > math.MaxInt32 {
			return nil, nil, false
		}
		body := line[11:]
		switch line[0] {
		case 'D':
			if !validID(body) {
				return nil, nil, false
			}
			if j, ok := byID[string(body)]; ok {
				recs[j].deleted = true
			} else {
				byID[string(body)] = len(recs)
				recs = append(recs, lastRec{deleted: true})
			}
		case 'S':
			// <id> and, nine fields on, <last>.
			id, rest, ok := bytes.Cut(body, []byte{'\t'})
			for f := 0; ok && f < 8; f++ {
				_, rest, ok = bytes.Cut(rest, []byte{'\t'})
			}
			var field []byte
			if ok {
				field, _, ok = bytes.Cut(rest, []byte{'\t'})
			}
			var sec, nsec int64
			if ok {
				sec, nsec, ok = timeParts(field)
			}
			if !ok || !validID(id) {
				return nil, nil, false
			}
			r := lastRec{sec: sec, nsec: int32(nsec), start: int32(start), end: int32(end), id: int32(len(id))}
			if j, seen := byID[string(id)]; seen {
				recs[j] = r
			} else {
				byID[string(id)] = len(recs)
				recs = append(recs, r)
			}
		default:
			return nil, nil, false
		}
	}
	return recs, byID, true
}

// sortedFirst reads the sorted records of f between secStart and secEnd,
// checking each, up to the first k of sessions that byID (the records
// appended since) does not name, and returns them parsed.
func (t *index) sortedFirst(f *os.File, secStart, secEnd int64, k int, byID map[string]int) ([]*rec, bool) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, secStart, secEnd-secStart), coldChunk)
	var out []*rec
	for len(out) < k {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil {
			return nil, false // a record cut short, or one longer than the buffer
		}
		line = line[:len(line)-1]
		if len(line) < 12 || line[0] != 'S' || line[1] != '\t' || line[10] != '\t' || !crcOK(line) {
			return nil, false
		}
		id, _, _ := bytes.Cut(line[11:], []byte{'\t'})
		if _, later := byID[string(id)]; later {
			continue
		}
		r := &rec{}
		if _, deleted, err := t.parseRecordInto(r, string(line), line); err != nil || deleted {
			return nil, false
		}
		out = append(out, r)
	}
	return out, true
}

// firstOf returns the first k, in listing order, of the live records recs
// (last records, in raw) and more (parsed already), parsed.
func (t *index) firstOf(raw []byte, recs []lastRec, k int, more []*rec) ([]*rec, bool) {
	// The first k in one pass, as firstLocked.
	first := make([]*lastRec, 0, k+1)
	for i := range recs {
		r := &recs[i]
		if r.deleted || (len(first) == k && cmpLast(raw, r, first[k-1]) >= 0) {
			continue
		}
		j, _ := slices.BinarySearchFunc(first, r, func(a, b *lastRec) int { return cmpLast(raw, a, b) })
		first = slices.Insert(first, j, r)
		if len(first) > k {
			first = first[:k]
		}
	}
	out := more
	for _, l := range first {
		r := &rec{}
		if _, _, err := t.parseRecordInto(r, string(raw[l.start:l.end]), raw[l.start:l.end]); err != nil {
			return nil, false
		}
		out = append(out, r)
	}
	slices.SortFunc(out, cmpRec)
	return out[:min(k, len(out))], true
}

// cmpLast is cmpRec on what coldFirst keeps of the records in raw.
func cmpLast(raw []byte, a, b *lastRec) int {
	if c := cmp.Compare(b.sec, a.sec); c != 0 {
		return c
	}
	if c := cmp.Compare(b.nsec, a.nsec); c != 0 {
		return c
	}
	return bytes.Compare(raw[b.start+11:b.start+11+b.id], raw[a.start+11:a.start+11+a.id])
}

// timeParts reads a record's time, "<seconds>.<nanoseconds>", as
// parseTime does.
func timeParts(b []byte) (sec, nsec int64, ok bool) {
	s, n, found := bytes.Cut(b, []byte{'.'})
	if !found {
		return 0, 0, false
	}
	u, ok1 := digits(string(s))
	v, ok2 := digits(string(n))
	if !ok1 || !ok2 || u > math.MaxInt64 || v >= 1e9 {
		t, ok := parseTime(string(b)) // signs, and anything unusual
		return t.Unix(), int64(t.Nanosecond()), ok
	}
	return int64(u), int64(v), true
}

// validID is store.ValidID of bytes.
func validID(b []byte) bool { return store.ValidID(string(b)) }

// crcOK reports whether the checksum of the record line is right.
func crcOK(line []byte) bool {
	var want [4]byte
	if _, err := hex.Decode(want[:], line[2:10]); err != nil {
		return false
	}
	return crc32.Checksum(line[11:], crcTable) == uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3])
}

// sortedPlaceholder is the body of a P mark before its length is known:
// as wide as any length putSortedMark writes.
const sortedPlaceholder = "0000000000000000"

// putSortedMark writes n, the length of the sorted records after it, into
// the P mark line (appendMark of sortedPlaceholder), and its checksum.
func putSortedMark(line []byte, n int) {
	body := line[11 : 11+len(sortedPlaceholder)]
	s := strconv.Itoa(n)
	for i := range body {
		body[i] = '0'
	}
	copy(body[len(body)-len(s):], s)
	putCRC(line[2:10], body)
}
