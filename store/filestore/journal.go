package filestore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spool-go/spool/internal/durable"
)

// The index file on disk (the format is in record.go): loading it,
// following what other processes append to it, appending records, and
// rewriting it.

// journal is a namespace's view of its index file.
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

// applyRecords applies the complete record lines of b (up to its last
// newline) and returns how many bytes it consumed. A line that is not a
// record (cut short by a crash) is skipped and asks for validation. The
// caller holds ix.mu.
func (ix *index) applyRecords(b []byte) int {
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
		ix.j.records++
		if ix.applyMark(line) {
			continue
		}
		id, r, err := ix.parseRecord(string(line))
		switch {
		case err != nil:
			ix.needValidate = true
		case r == nil:
			ix.remove(id)
		default:
			if old := ix.recs[id]; old != nil && old.titleOK && old.sealedTitle == r.sealedTitle && !r.titleOK {
				// Keep the title already opened.
				r.info.Title, r.titleOK = old.info.Title, true
			}
			ix.put(r)
		}
	}
}

// load reads the whole index from f (or from its path when f is nil) into
// a fresh set of records. It reports false when there is no index or it is
// not one this store can use, which calls for a rebuild. The caller holds
// ix.mu.
func (ix *index) load(f *os.File) (bool, error) {
	if f == nil {
		var err error
		f, err = openFile(ix.j.path, os.O_RDONLY, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				ix.j.id = nil
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
	ix.j.id, ix.j.read, ix.j.records = st, 0, 0
	header := ix.s.indexHeader()
	if !bytes.HasPrefix(b, []byte(header)) {
		// Not an index of this store's kind (another version, or an
		// encrypted store's opened without its protector, or the reverse):
		// keep what is known and rebuild it from the transcripts.
		ix.j.read = st.Size()
		return false, nil
	}
	ix.replaceAll(make(map[string]*rec, len(b)/160))
	ix.writers, ix.folder = nil, 0
	ix.j.read = int64(len(header) + ix.applyRecords(b[len(header):]))
	return true, nil
}

// catchUp applies what other processes appended to the index since the
// last call, or reloads it when another process rewrote it. The caller
// holds ix.mu.
func (ix *index) catchUp() error {
	st, err := os.Stat(ix.j.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Deleted: rebuild it from the transcripts.
			ix.j.id = nil
			ix.j.close()
			ix.needValidate = true
			return nil
		}
		return fmt.Errorf("filestore: %w", err)
	}
	if ix.j.id == nil || !os.SameFile(st, ix.j.id) || st.Size() < ix.j.read {
		ok, err := ix.load(nil)
		if !ok || err != nil {
			ix.needValidate = true
		}
		return err
	}
	if st.Size() == ix.j.read {
		return nil
	}
	f, err := openFile(ix.j.path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	defer f.Close()
	b := make([]byte, st.Size()-ix.j.read)
	n, err := f.ReadAt(b, ix.j.read)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("filestore: index: %w", err)
	}
	ix.j.read += int64(ix.applyRecords(b[:n]))
	return nil
}

// write appends records to the index. It never fails the operation that
// changed the session: the index is derived data, and a record that could
// not be written is made good by the next validation. The caller holds
// ix.mu, and the lock of every session the records are about.
func (ix *index) write(b []byte) {
	for range 3 {
		if ix.j.f == nil {
			f, err := openFile(ix.j.path, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				// No index (never made, or deleted): the validation under
				// way, the first one, or the next one writes a whole one
				// from the folder. Records this process has in memory are
				// not enough: others' may have gone with a deleted file.
				if !ix.validating && ix.loaded {
					ix.needValidate = true
				}
				return
			}
			ix.j.f = f
		}
		f := ix.j.f
		if err := lockFile(f, false); err != nil {
			ix.j.close()
			ix.needValidate = true
			return
		}
		st, err := f.Stat()
		if err != nil || unlinked(st, ix.j.path) {
			// Another process renamed a new index over this one.
			unlockFile(f)
			ix.j.close()
			continue
		}
		_, err = f.Write(b)
		unlockFile(f)
		if err != nil {
			ix.j.close()
			ix.needValidate = true
		}
		// Counted again when catchUp reads it back: compaction comes at
		// most twice as early as it should.
		ix.j.records++
		return
	}
	ix.needValidate = true
}

// rewrite replaces the index with one record per session. It holds the
// index's exclusive lock meanwhile, so no record is appended to the old
// file after it was read. The caller holds ix.mu.
func (ix *index) rewrite() error {
	old, err := openFile(ix.j.path, os.O_RDONLY, 0)
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
		if unlinked(st, ix.j.path) {
			return nil // replaced meanwhile by another process; its turn
		}
		if ix.j.id == nil || !os.SameFile(st, ix.j.id) || st.Size() < ix.j.read {
			// A file this process has not read: another process made or
			// rewrote it. Take it in and compare it with the folder before
			// writing anything.
			ix.load(old)
			ix.needValidate = true
			return errForeignIndex
		}
		if err := ix.catchUp(); err != nil {
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	default:
		return fmt.Errorf("filestore: %w", err)
	}

	var rnd [6]byte
	rand.Read(rnd[:])
	tmpPath := filepath.Join(ix.dir, indexName+"."+hex.EncodeToString(rnd[:])+tmpExt)
	f, err := openFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	fixMode(f)
	buf := ix.appendMarks([]byte(ix.s.indexHeader()))
	sealed := ix.s.cfg.protector != nil
	for _, r := range ix.recs {
		buf = appendRecord(buf, r, sealed)
	}
	_, err = f.Write(buf)
	if err == nil {
		// A rename of unsynced data can leave an empty index after a
		// crash; rebuilding it would read every transcript.
		err = durable.Sync(f)
	}
	if err == nil {
		err = ix.install(tmpPath, old == nil)
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
	ix.j.close()
	ix.j.f, ix.j.id, ix.j.read, ix.j.records = f, st, int64(len(buf)), len(ix.recs)
	ix.touchDir()
	return nil
}

// compactDue reports whether superseded records make up most of the
// index. The caller holds ix.mu.
func (ix *index) compactDue() bool { return ix.j.records > 2*len(ix.recs)+1024 }

// install gives the index file written at tmpPath its name. The first
// index is linked, not renamed, so that two processes making it at once do
// not replace each other's (the loser fails with fs.ErrExist and reads the
// winner's); file systems without hard links fall back to rename.
func (ix *index) install(tmpPath string, first bool) error {
	if first {
		err := os.Link(tmpPath, ix.j.path)
		if err == nil || errors.Is(err, fs.ErrExist) {
			os.Remove(tmpPath)
			return err
		}
	}
	return os.Rename(tmpPath, ix.j.path)
}

// touchDir notes the folder's mtime after this process changed the folder
// itself, so that the change does not look like another program's. The
// caller holds ix.mu.
func (ix *index) touchDir() {
	if st, err := os.Stat(ix.dir); err == nil {
		ix.dirMod = st.ModTime()
		// And for other processes, in the index (see marks.go).
		if mtime := st.ModTime().UnixNano(); mtime != ix.folder {
			ix.folder = mtime
			ix.write(appendMark(nil, 'F', strconv.FormatInt(mtime, 10)))
		}
	}
}
