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

// applyRecordsLocked applies the complete record lines of b (up to its last
// newline) and returns how many bytes it consumed. A line that is not a
// record (cut short by a crash) is skipped and asks for validation. The
// caller holds ix.mu.
func (ix *index) applyRecordsLocked(b []byte) int {
	// One string and one block of records for all the lines, not one of
	// each a line: a cold Store loads every record of the index (10,000
	// sessions are 2 MB), and the fields of the records point into it.
	all := string(b)
	slab := make([]rec, bytes.Count(b, []byte{'\n'}))
	consumed := 0
	for {
		i := bytes.IndexByte(b[consumed:], '\n')
		if i < 0 {
			return consumed
		}
		line := b[consumed : consumed+i]
		text := all[consumed : consumed+i]
		consumed += i + 1
		if len(line) == 0 {
			continue
		}
		ix.j.records++
		if ix.applyMarkLocked(line) {
			continue
		}
		r := &slab[0]
		slab = slab[1:]
		id, deleted, err := ix.parseRecordInto(r, text, line)
		switch {
		case err != nil:
			ix.needValidate = true
		case deleted:
			ix.removeLocked(id)
		case ix.aheadLocked(r):
			// This Store's own record from before its deferred appends.
		default:
			if old := ix.recs[id]; old != nil && old.titleOK && old.sealedTitle == r.sealedTitle && !r.titleOK {
				// Keep the title already opened.
				r.info.Title, r.titleOK = old.info.Title, true
			}
			ix.putLocked(r)
		}
	}
}

// loadLocked reads the whole index from f (or from its path when f is nil) into
// a fresh set of records. It reports false when there is no index or it is
// not one this store can use, which calls for a rebuild. The caller holds
// ix.mu.
func (ix *index) loadLocked(f *os.File) (bool, error) {
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
	b := make([]byte, st.Size())
	n, err := f.ReadAt(b, 0)
	b = b[:n]
	if errors.Is(err, io.EOF) {
		err = nil // the file shrank since the Stat: parse what was read
	}
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
	old := ix.recs
	ix.replaceAllLocked(make(map[string]*rec, len(b)/160))
	ix.writers, ix.folder, ix.unsure = nil, 0, nil
	ix.j.read = int64(len(header) + ix.applyRecordsLocked(b[len(header):]))
	for id := range ix.mine {
		// This Store's deferred records stay newer than the file's.
		if m, r := old[id], ix.recs[id]; m != nil && r != nil && m.ino == r.ino && m.size > r.size {
			ix.putLocked(m)
		}
	}
	return true, nil
}

// catchUpLocked applies what other processes appended to the index since the
// last call, or reloads it when another process rewrote it. The caller
// holds ix.mu.
func (ix *index) catchUpLocked() error {
	if ix.rewriting {
		// The rewrite holds the index file's exclusive lock: no other
		// process can have appended, and the file at the path may already
		// be the new one, which lacks the records held for it.
		return nil
	}
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
		ok, err := ix.loadLocked(nil)
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
	ix.j.read += int64(ix.applyRecordsLocked(b[:n]))
	return nil
}

// writeLocked appends records to the index. It never fails the operation that
// changed the session: the index is derived data, and a record that could
// not be written is made good by the next validation. The caller holds
// ix.mu, and the lock of every session the records are about.
func (ix *index) writeLocked(b []byte) {
	if ix.rewriting {
		// The new index is being written from a snapshot; the rewrite
		// adds these after it (see rewrite).
		ix.held = append(ix.held, b)
		return
	}
	if ix.dropped {
		defer ix.j.close()
	}
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
		// Counted again when catchUpLocked reads it back: compaction comes at
		// most twice as early as it should.
		ix.j.records++
		return
	}
	ix.needValidate = true
}

// rewrite replaces the index file with one record per session. It holds
// the old file's exclusive lock throughout, so no record is appended to it
// after it was read, and holds ix.mu only to take that lock and read the
// records and, at the end, to install the new file: the new file is
// written and synced outside it, from a snapshot, so that List and Stat go
// on meanwhile. Records this process appends meanwhile wait in ix.held and
// go into the new file before anyone can append to it. The caller holds no
// lock of ix.
func (ix *index) rewrite() error {
	ix.rewriteMu.Lock()
	defer ix.rewriteMu.Unlock()
	// The old file's lock is taken under mu, the order writeLocked takes
	// the lock in too; once rewriting is set, writeLocked takes it no more.
	ix.mu.Lock()
	old, err := openFile(ix.j.path, os.O_RDONLY, 0)
	switch {
	case err == nil:
		defer old.Close()
		if err := lockFile(old, true); err != nil {
			ix.mu.Unlock()
			return err
		}
		defer unlockFile(old)
		st, err := old.Stat()
		if err != nil {
			ix.mu.Unlock()
			return fmt.Errorf("filestore: %w", err)
		}
		if unlinked(st, ix.j.path) {
			ix.mu.Unlock()
			return nil // replaced meanwhile by another process; its turn
		}
		if ix.j.id == nil || !os.SameFile(st, ix.j.id) || st.Size() < ix.j.read {
			// A file this process has not read: another process made or
			// rewrote it. Take it in and compare it with the folder before
			// writing anything.
			ix.loadLocked(old)
			ix.needValidate = true
			ix.mu.Unlock()
			return errForeignIndex
		}
		if err := ix.catchUpLocked(); err != nil {
			ix.mu.Unlock()
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	default:
		ix.mu.Unlock()
		return fmt.Errorf("filestore: %w", err)
	}
	// The new file is made, and linked or renamed, in the folder.
	ix.beginDirChangeLocked()
	buf := ix.appendMarksLocked([]byte(ix.s.indexHeader()))
	sealed := ix.s.cfg.protector != nil
	// The records in listing order, after a P mark giving their length, so
	// that a cold first page reads the few it shows (coldlist.go).
	p := len(buf)
	buf = appendMark(buf, 'P', sortedPlaceholder)
	start := len(buf)
	for _, r := range ix.listingLocked() {
		buf = appendRecord(buf, r, sealed)
	}
	putSortedMark(buf[p:start], len(buf)-start)
	buf = ix.appendUnsureLocked(buf)
	records := len(ix.recs)
	ix.rewriting = true
	ix.mu.Unlock()

	f, err := ix.writeNew(buf, old == nil)

	ix.mu.Lock()
	defer ix.mu.Unlock()
	defer ix.endDirChangeLocked() // into the file installed, if it was
	ix.rewriting = false
	held := ix.held
	ix.held = nil
	if err != nil {
		if old != nil {
			unlockFile(old) // for the held records to go into it
		}
		for _, b := range held {
			ix.writeLocked(b)
		}
		return err
	}
	// The new file is at the path, under its exclusive lock: the held
	// records go in before another process can append after them.
	for _, b := range held {
		if _, werr := f.Write(b); werr != nil && err == nil {
			err = fmt.Errorf("filestore: index: %w", werr)
		}
		buf = append(buf, b...) // counted as read: they are in memory already
		records += bytes.Count(b, []byte{'\n'})
	}
	unlockFile(f)
	if err != nil {
		ix.needValidate = true
	}
	st, serr := f.Stat()
	if serr != nil || ix.dropped {
		f.Close()
		ix.j.close()
		ix.j.id = nil // read it again at the next use
		if err == nil && serr != nil {
			err = fmt.Errorf("filestore: %w", serr)
		}
		return err
	}
	ix.j.close()
	ix.j.f, ix.j.id, ix.j.read, ix.j.records = f, st, int64(len(buf)), records
	return err
}

// writeNew writes buf as a new index file, synced, and gives it the
// index's name (see install). It returns the new file open for appending,
// holding its exclusive lock.
func (ix *index) writeNew(buf []byte, first bool) (*os.File, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmpPath := filepath.Join(ix.dir, indexName+"."+hex.EncodeToString(rnd[:])+tmpExt)
	f, err := openFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, fileMode)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	fixMode(f)
	err = lockFile(f, true)
	if err == nil {
		_, err = f.Write(buf)
	}
	if err == nil && rewriteHook != nil {
		rewriteHook()
	}
	if err == nil {
		// A rename of unsynced data can leave an empty index after a
		// crash; rebuilding it would read every transcript.
		err = durable.Sync(f)
	}
	if err == nil {
		err = ix.install(tmpPath, first)
	}
	if err != nil {
		f.Close()
		os.Remove(tmpPath)
		return nil, fmt.Errorf("filestore: writing index: %w", err)
	}
	return f, nil
}

// rewriteHook, set by tests only, runs while a rewrite writes the new
// index file, outside ix.mu.
var rewriteHook func()

// compactDueLocked reports whether superseded records make up most of the
// index.
func (ix *index) compactDueLocked() bool { return ix.j.records > 2*len(ix.recs)+1024 }

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
