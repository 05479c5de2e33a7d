package filestore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spool-go/spool/store"
)

// The index of a scope folder is the file ".index": a header line, then one
// line per record, each appended by whichever process changed a session:
//
//	spool-index	1	plain|sealed
//	S	<crc>	<id>	<size>	<mtime>	<inode>	<entries>	<messages>	<pending>	<started>	<last>	<flags>	<head>	<title>
//	D	<crc>	<id>
//
// The last record of an id wins: S is a session's whole SessionInfo with the
// size, mtime and inode of its transcript when the info was true (see
// fileState), D its deletion.
// crc is the CRC-32C of the rest of the line, so a record cut short by a
// crash is noticed and skipped. Times are Unix seconds.nanoseconds. head
// and title are written as they are, or Go-quoted when they hold a tab, a
// line break or start with a quote; an encrypted store keeps the title
// sealed (base64), or none.
//
// Records are appended under a shared lock on the index file and every
// process reads what the others appended (catchUp). When the records
// outnumber the sessions, a process rewrites the file (rewrite) under an
// exclusive lock and renames the new one over it; a writer that finds its
// open file replaced writes to the new one.
const indexMagic = "spool-index"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journal is a scope's view of its index file.
type journal struct {
	path    string
	f       *os.File    // open for appending records; nil until needed
	id      fs.FileInfo // the file read so far
	read    int64       // bytes of it applied
	records int         // records in it
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

func (s *Store) indexMode() string {
	if s.cfg.protector != nil {
		return "sealed"
	}
	return "plain"
}

func (s *Store) indexHeader() string { return indexMagic + "\t1\t" + s.indexMode() + "\n" }

// appendRecord appends the S record of r to dst.
func appendRecord(dst []byte, r *rec, sealed bool) []byte {
	start := len(dst)
	dst = append(dst, "S\t00000000\t"...)
	body := len(dst)
	dst = append(dst, r.info.ID...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, r.size, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, r.mtime, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendUint(dst, r.ino, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.Entries), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.MessageCount), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.info.PendingApprovals), 10)
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
func (sc *scope) parseRecord(line string) (string, *rec, error) {
	if len(line) < 12 || line[1] != '\t' || line[10] != '\t' {
		return "", nil, errRecord
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], []byte(line[2:10])); err != nil {
		return "", nil, errRecord
	}
	body := line[11:]
	if crc32.Checksum([]byte(body), crcTable) != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return "", nil, errRecord
	}
	switch line[0] {
	case 'D':
		if !store.ValidID(body) {
			return "", nil, errRecord
		}
		return body, nil, nil
	case 'S':
	default:
		return "", nil, errRecord
	}
	var f [12]string
	rest := body
	for i := 0; i < len(f)-1; i++ {
		j := indexByte(rest, '\t')
		if j < 0 {
			return "", nil, errRecord
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	f[len(f)-1] = rest
	id := f[0]
	if !store.ValidID(id) {
		return "", nil, errRecord
	}
	r := &rec{}
	var n [5]int64
	for i, k := range []int{1, 2, 4, 5, 6} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil || v < 0 {
			return "", nil, errRecord
		}
		n[i] = v
	}
	ino, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil {
		return "", nil, errRecord
	}
	r.size, r.mtime, r.ino = n[0], n[1], ino
	started, ok1 := parseTime(f[7])
	last, ok2 := parseTime(f[8])
	head, ok3 := parseField(f[10])
	if !ok1 || !ok2 || !ok3 {
		return "", nil, errRecord
	}
	r.head = head
	r.badTail = f[9] == "c"
	r.info = store.SessionInfo{
		ID:               id,
		Agent:            sc.key.Agent,
		Owner:            sc.key.Owner,
		Started:          started,
		LastActivity:     last,
		MessageCount:     int(n[3]),
		PendingApprovals: int(n[4]),
		Entries:          int(n[2]),
	}
	if sc.s.cfg.protector != nil {
		r.sealedTitle = f[11]
	} else {
		title, ok := parseField(f[11])
		if !ok {
			return "", nil, errRecord
		}
		r.info.Title, r.titleOK = title, true
	}
	return id, r, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func parseTime(s string) (time.Time, bool) {
	sec, nsec, ok := stringsCut(s, '.')
	if !ok {
		return time.Time{}, false
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(nsec, 10, 64)
	if err1 != nil || err2 != nil || b < 0 || b >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(a, b).UTC(), true
}

func stringsCut(s string, c byte) (string, string, bool) {
	if i := indexByte(s, c); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// applyRecords applies the complete record lines of b (up to its last
// newline) and returns how many bytes it consumed. A line that is not a
// record (cut short by a crash) is skipped and asks for validation. The
// caller holds sc.mu.
func (sc *scope) applyRecords(b []byte) int {
	consumed := 0
	for {
		i := bytes.IndexByte(b[consumed:], '\n')
		if i < 0 {
			return consumed
		}
		line := b[consumed : consumed+i]
		consumed += i + 1
		if len(line) == 0 {
			continue
		}
		sc.j.records++
		id, r, err := sc.parseRecord(string(line))
		switch {
		case err != nil:
			sc.needValidate = true
		case r == nil:
			sc.remove(id)
		default:
			if old := sc.recs[id]; old != nil && old.titleOK && old.sealedTitle == r.sealedTitle && !r.titleOK {
				// Keep the title already opened.
				r.info.Title, r.titleOK = old.info.Title, true
			}
			sc.put(r)
		}
	}
}

// load reads the whole index from f (or from its path when f is nil) into
// a fresh set of records. It reports false when there is no index or it is
// not one this store can use, which calls for a rebuild. The caller holds
// sc.mu.
func (sc *scope) load(f *os.File) (bool, error) {
	if f == nil {
		var err error
		f, err = openFile(sc.j.path, os.O_RDONLY, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				sc.j.id = nil
				return false, nil
			}
			return false, fmt.Errorf("filestore: %w", err)
		}
		defer f.Close()
	}
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("filestore: %w", err)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return false, fmt.Errorf("filestore: index: %w", err)
	}
	sc.j.id, sc.j.read, sc.j.records = st, 0, 0
	header := sc.s.indexHeader()
	if !bytes.HasPrefix(b, []byte(header)) {
		// Not an index of this store's kind (another version, or an
		// encrypted store's opened without its protector, or the reverse):
		// keep what is known and rebuild it from the transcripts.
		sc.j.read = st.Size()
		return false, nil
	}
	sc.replaceAll(make(map[string]*rec, len(b)/160))
	sc.j.read = int64(len(header) + sc.applyRecords(b[len(header):]))
	return true, nil
}

// catchUp applies what other processes appended to the index since the
// last call, or reloads it when another process rewrote it. The caller
// holds sc.mu.
func (sc *scope) catchUp() error {
	st, err := os.Stat(sc.j.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Deleted: rebuild it from the transcripts.
			sc.j.id = nil
			sc.j.close()
			sc.needValidate = true
			return nil
		}
		return fmt.Errorf("filestore: %w", err)
	}
	if sc.j.id == nil || !os.SameFile(st, sc.j.id) || st.Size() < sc.j.read {
		ok, err := sc.load(nil)
		if !ok || err != nil {
			sc.needValidate = true
		}
		return err
	}
	if st.Size() == sc.j.read {
		return nil
	}
	f, err := openFile(sc.j.path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	defer f.Close()
	b := make([]byte, st.Size()-sc.j.read)
	n, err := f.ReadAt(b, sc.j.read)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("filestore: index: %w", err)
	}
	sc.j.read += int64(sc.applyRecords(b[:n]))
	return nil
}

// write appends records to the index. It never fails the operation that
// changed the session: the index is derived data, and a record that could
// not be written is made good by the next validation. The caller holds
// sc.mu, and the lock of every session the records are about.
func (sc *scope) write(b []byte) {
	for range 3 {
		if sc.j.f == nil {
			f, err := openFile(sc.j.path, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				// No index (never made, or deleted): the validation under
				// way, the first one, or the next one writes a whole one
				// from the folder. Records this process has in memory are
				// not enough: others' may have gone with a deleted file.
				if !sc.validating && sc.loaded {
					sc.needValidate = true
				}
				return
			}
			sc.j.f = f
		}
		f := sc.j.f
		if err := lockFile(f, false); err != nil {
			sc.j.close()
			sc.needValidate = true
			return
		}
		st, err := f.Stat()
		if err != nil || unlinked(st, sc.j.path) {
			// Another process renamed a new index over this one.
			unlockFile(f)
			sc.j.close()
			continue
		}
		_, err = f.Write(b)
		unlockFile(f)
		if err != nil {
			sc.j.close()
			sc.needValidate = true
		}
		// Counted again when catchUp reads it back: compaction comes at
		// most twice as early as it should.
		sc.j.records++
		return
	}
	sc.needValidate = true
}

// rewrite replaces the index with one record per session. It holds the
// index's exclusive lock meanwhile, so no record is appended to the old
// file after it was read. The caller holds sc.mu.
func (sc *scope) rewrite() error {
	old, err := openFile(sc.j.path, os.O_RDONLY, 0)
	switch {
	case err == nil:
		defer old.Close()
		if err := lockFile(old, true); err != nil {
			return err
		}
		defer unlockFile(old)
		st, err := old.Stat()
		if err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
		if unlinked(st, sc.j.path) {
			return nil // replaced meanwhile by another process; its turn
		}
		if sc.j.id == nil || !os.SameFile(st, sc.j.id) || st.Size() < sc.j.read {
			// A file this process has not read: another process made or
			// rewrote it. Take it in and compare it with the folder before
			// writing anything.
			sc.load(old)
			sc.needValidate = true
			return errForeignIndex
		}
		if err := sc.catchUp(); err != nil {
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	default:
		return fmt.Errorf("filestore: %w", err)
	}

	var rnd [6]byte
	rand.Read(rnd[:])
	tmpPath := filepath.Join(sc.dir, indexName+"."+hex.EncodeToString(rnd[:])+tmpExt)
	f, err := openFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	fixMode(f)
	buf := []byte(sc.s.indexHeader())
	sealed := sc.s.cfg.protector != nil
	for _, r := range sc.recs {
		buf = appendRecord(buf, r, sealed)
	}
	_, err = f.Write(buf)
	if err == nil {
		// A rename of unsynced data can leave an empty index after a
		// crash; rebuilding it would read every transcript.
		err = f.Sync()
	}
	if err == nil {
		err = sc.install(tmpPath, old == nil)
	}
	if err != nil {
		f.Close()
		os.Remove(tmpPath)
		return fmt.Errorf("filestore: writing index: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("filestore: %w", err)
	}
	sc.j.close()
	sc.j.f, sc.j.id, sc.j.read, sc.j.records = f, st, int64(len(buf)), len(sc.recs)
	sc.touchDir()
	return nil
}

// compactDue reports whether superseded records make up most of the
// index. The caller holds sc.mu.
func (sc *scope) compactDue() bool { return sc.j.records > 2*len(sc.recs)+1024 }

// install gives the index file written at tmpPath its name. The first
// index is linked, not renamed, so that two processes making it at once do
// not replace each other's (the loser fails with fs.ErrExist and reads the
// winner's); file systems without hard links fall back to rename.
func (sc *scope) install(tmpPath string, first bool) error {
	if first {
		err := os.Link(tmpPath, sc.j.path)
		if err == nil || errors.Is(err, fs.ErrExist) {
			os.Remove(tmpPath)
			return err
		}
	}
	return os.Rename(tmpPath, sc.j.path)
}

// touchDir notes the folder's mtime after this process changed the folder
// itself, so that the change does not look like another program's. The
// caller holds sc.mu.
func (sc *scope) touchDir() {
	if st, err := os.Stat(sc.dir); err == nil {
		sc.dirMod = st.ModTime()
	}
}
