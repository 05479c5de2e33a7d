package filestore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spool-go/spool/store"
)

// The index of a namespace folder is the file ".index": a header line, then one
// line per record, each appended by whichever process changed a session:
//
//	spool-index	2	plain|sealed
//	S	<crc>	<id>	<size>	<mtime>	<inode>	<entries>	<messages>	<pending>	<compactions>	<started>	<last>	<flags>	<head>	<title>
//	D	<crc>	<id>
//
// and the marks of marks.go and pending.go (W, C, F, U, V). A rewrite
// writes every session's record in listing order after a mark giving their
// length (P, coldlist.go). The last record of an id wins: S is a session's whole SessionInfo with the
// size, mtime and inode of its transcript when the info was true (see
// fileState), D its deletion.
// crc is the CRC-32C of the rest of the line, so a record cut short by a
// crash is noticed and skipped. Times are Unix seconds.nanoseconds. head
// and title are written as they are, or Go-quoted when they hold a tab, a
// line break or start with a quote; an encrypted store keeps the title
// sealed (base64), or none.
//
// Records are appended under a shared lock on the index file and every
// process reads what the others appended (catchUpLocked). When the records
// outnumber the sessions, a process rewrites the file (rewrite) under an
// exclusive lock and renames the new one over it; a writer that finds its
// open file replaced writes to the new one.
//
// Version 2 added <compactions>. A version 1 index is another version's
// (see loadLocked): the store rebuilds it from the transcripts, since its
// records cannot tell how many compactions a session has.
const indexMagic = "spool-index"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func (s *Store) indexMode() string {
	if s.cfg.protector != nil {
		return "sealed"
	}
	return "plain"
}

func (s *Store) indexHeader() string { return indexMagic + "\t2\t" + s.indexMode() + "\n" }

// appendRecord appends the S record of r to dst.
func appendRecord(dst []byte, r *rec, sealed bool) []byte {
	start := len(dst)
	dst = append(dst, "S\t00000000\t"...)
	body := len(dst)
	dst = append(dst, r.info.ID...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, r.size, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, max(r.mtime, 0), 10) // unknownMtime: a record no file matches
	dst = append(dst, '\t')
	dst = strconv.AppendUint(dst, r.ino, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.Entries), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.MessageCount), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.PendingApprovals), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.Compactions), 10)
	dst = append(dst, '\t')
	dst = appendTime(dst, r.info.Started)
	dst = append(dst, '\t')
	dst = appendTime(dst, r.info.LastActivity)
	dst = append(dst, '\t')
	if r.badTail {
		dst = append(dst, 'c')
	}
	dst = append(dst, '\t')
	dst = appendField(dst, r.head)
	dst = append(dst, '\t')
	if sealed {
		dst = append(dst, r.sealedTitle...)
	} else {
		dst = appendField(dst, r.info.Title)
	}
	putCRC(dst[start+2:start+10], dst[body:])
	return append(dst, '\n')
}

func appendDelete(dst []byte, id string) []byte {
	start := len(dst)
	dst = append(dst, "D\t00000000\t"...)
	dst = append(dst, id...)
	putCRC(dst[start+2:start+10], dst[start+11:])
	return append(dst, '\n')
}

func putCRC(dst, body []byte) {
	var b [4]byte
	c := crc32.Checksum(body, crcTable)
	b[0], b[1], b[2], b[3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	hex.Encode(dst, b[:])
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = strconv.AppendInt(dst, t.Unix(), 10)
	dst = append(dst, '.')
	return strconv.AppendInt(dst, int64(t.Nanosecond()), 10)
}

func appendField(dst []byte, s string) []byte {
	if s != "" && (s[0] == '"' || bytes.ContainsAny([]byte(s), "\t\n\r")) {
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, s...)
}

func parseField(s string) (string, bool) {
	if s != "" && s[0] == '"' {
		u, err := strconv.Unquote(s)
		return u, err == nil
	}
	return s, true
}

var (
	errRecord       = errors.New("bad index record")
	errForeignIndex = errors.New("index replaced by another process")
)

// parseRecord parses one record line (without its newline): the id, and
// the record for S or nil for D.
func (ix *index) parseRecord(line string) (string, *rec, error) {
	r := &rec{}
	id, deleted, err := ix.parseRecordInto(r, line, []byte(line))
	if err != nil || deleted {
		return id, nil, err
	}
	return id, r, nil
}

// parseRecordInto parses the record line, whose bytes raw are (for the
// checksum, without a copy), into r, and returns its id and whether it is
// a deletion. The strings of r are line's.
func (ix *index) parseRecordInto(r *rec, line string, raw []byte) (id string, deleted bool, err error) {
	if len(line) < 12 || line[1] != '\t' || line[10] != '\t' {
		return "", false, errRecord
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], raw[2:10]); err != nil {
		return "", false, errRecord
	}
	body := line[11:]
	if crc32.Checksum(raw[11:], crcTable) != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return "", false, errRecord
	}
	switch line[0] {
	case 'D':
		if !store.ValidID(body) {
			return "", false, errRecord
		}
		return body, true, nil
	case 'S':
	default:
		return "", false, errRecord
	}
	var f [13]string
	rest := body
	for i := 0; i < len(f)-1; i++ {
		j := strings.IndexByte(rest, '\t')
		if j < 0 {
			return "", false, errRecord
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	f[len(f)-1] = rest
	id = f[0]
	if !store.ValidID(id) {
		return "", false, errRecord
	}
	*r = rec{}
	var n [6]int64
	for i, k := range [...]int{1, 2, 4, 5, 6, 7} {
		v, err := parseInt(f[k])
		if err != nil || v < 0 {
			return "", false, errRecord
		}
		n[i] = v
	}
	ino, err := parseUint(f[3])
	if err != nil {
		return "", false, errRecord
	}
	r.size, r.mtime, r.ino = n[0], n[1], ino
	started, ok1 := parseTime(f[8])
	last, ok2 := parseTime(f[9])
	head, ok3 := parseField(f[11])
	if !ok1 || !ok2 || !ok3 {
		return "", false, errRecord
	}
	r.head = head
	r.badTail = f[10] == "c"
	r.info = store.SessionInfo{
		ID:               id,
		Agent:            ix.key.Agent,
		Owner:            ix.key.Owner,
		Started:          started,
		LastActivity:     last,
		MessageCount:     int(n[3]),
		PendingApprovals: int(n[4]),
		Compactions:      int(n[5]),
		Entries:          int(n[2]),
	}
	if ix.s.cfg.protector != nil {
		r.sealedTitle = f[12]
	} else {
		title, ok := parseField(f[12])
		if !ok {
			return "", false, errRecord
		}
		r.info.Title, r.titleOK = title, true
	}
	return id, false, nil
}

func parseTime(s string) (time.Time, bool) {
	sec, nsec, ok := strings.Cut(s, ".")
	if !ok {
		return time.Time{}, false
	}
	a, err1 := parseInt(sec)
	b, err2 := parseInt(nsec)
	if err1 != nil || err2 != nil || b < 0 || b >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(a, b).UTC(), true
}

// parseUint and parseInt are strconv's base-10 parsers with a fast path
// for what records hold: up to 19 digits, which cannot overflow a uint64
// and need no sign (a cold Store parses some 70,000 numbers a 10,000
// sessions' index). Anything else goes to strconv.
func parseUint(s string) (uint64, error) {
	if v, ok := digits(s); ok {
		return v, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

func parseInt(s string) (int64, error) {
	if v, ok := digits(s); ok && v <= math.MaxInt64 {
		return int64(v), nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func digits(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	return v, true
}
