package filestore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/store"
)

// Proving an index current without a stat per session.
//
// A cold Store (a command-line run) used to compare every session's
// transcript with the index before its first listing, because a process
// may die between an append and the index record that follows it, and a
// power loss may drop records that were never synced. Instead, the index
// says which processes may have left it behind, and the folder says
// whether anything else changed it:
//
//	W	<crc>	<nonce>   a process began writing the namespace (synced)
//	C	<crc>	<nonce>   it stopped, every record of its written before (synced)
//	F	<crc>	<mtime>   the folder's mtime after a change a process made to it
//
// A Store that writes holds an exclusive lock on a file of its own,
// <root>/+writer.<nonce>, for its life; before its first append or delete
// in a namespace it appends W to the namespace's index, and Close appends C
// to each and removes the file. A process
// that dies drops its lock with it. So an index is current when every
// writer it names open still holds its lock (alive, and writing its
// records as it goes), and the folder's mtime is the last F: no transcript
// was added or removed but by a process that recorded it. Checking that is
// a stat of the folder and a lock attempt per live writer. When it cannot
// be proved (a writer died, the folder changed behind spool's back, the
// index is missing or damaged), the Store compares the whole folder as
// before, and then closes the dead writers' marks.
//
// What this does not see is another program appending to a transcript that
// exists without spool's help: the session's next read or append through
// spool notices it (they compare the file with its record) and records it.

// writerPrefix starts the name of a writer's lock file, in the root folder
// beside the encryption marker: no agent's folder starts with '+'.
const writerPrefix = "+writer."

// writerMark is this Store's writer lock: one file for the Store's life,
// named by the nonce its W marks give.
type writerMark struct {
	nonce string
	lock  *os.File
}

// appendMark appends a W, C or F record to dst.
func appendMark(dst []byte, kind byte, body string) []byte {
	start := len(dst)
	dst = append(dst, kind, '\t')
	dst = append(dst, "00000000\t"...)
	dst = append(dst, body...)
	putCRC(dst[start+2:start+10], dst[start+11:])
	return append(dst, '\n')
}

// applyMarkLocked applies a W, C or F record line, and reports whether the
// line was one. A mark that does not check out asks for validation.
func (ix *index) applyMarkLocked(line []byte) bool {
	if len(line) < 12 || (line[0] != 'W' && line[0] != 'C' && line[0] != 'F' && line[0] != 'U' && line[0] != 'V' && line[0] != 'P') {
		return false
	}
	var want [4]byte
	body := line[11:]
	if line[1] != '\t' || line[10] != '\t' {
		ix.needValidate = true
		return true
	}
	if _, err := hex.Decode(want[:], line[2:10]); err != nil {
		ix.needValidate = true
		return true
	}
	var got [8]byte
	putCRC(got[:], body)
	if hex.EncodeToString(want[:]) != string(got[:]) {
		ix.needValidate = true
		return true
	}
	switch line[0] {
	case 'W':
		if ix.writers == nil {
			ix.writers = map[string]bool{}
		}
		ix.writers[string(body)] = true
	case 'C':
		delete(ix.writers, string(body))
		ix.closeWriterMarksLocked(string(body))
	case 'P':
		// Only the cold first page reads it (coldlist.go).
	case 'U', 'V':
		nonce, id, ok := parseUnsure(string(body))
		if !ok {
			ix.needValidate = true
			return true
		}
		ix.openMarkLocked(nonce, id, line[0] == 'U')
	case 'F':
		v, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			ix.needValidate = true
			return true
		}
		ix.folder = v
	}
	return true
}

// appendMarksLocked appends the marks that stay true across a rewrite: the
// open writers, the folder's last mtime and the open U marks (which go
// after the records: see rewrite).
func (ix *index) appendMarksLocked(dst []byte) []byte {
	for nonce := range ix.writers {
		dst = appendMark(dst, 'W', nonce)
	}
	if ix.folder != 0 {
		dst = appendMark(dst, 'F', strconv.FormatInt(ix.folder, 10))
	}
	return dst
}

// appendUnsureLocked appends the open U marks.
func (ix *index) appendUnsureLocked(dst []byte) []byte {
	for id, nonces := range ix.unsure {
		for nonce := range nonces {
			dst = appendMark(dst, 'U', unsureBody(nonce, id))
		}
	}
	return dst
}

// markWriter returns, holding it to read (Close waits for it), this
// Store's writer mark, having made sure that ix's index names it (W,
// synced) before the first change the Store makes to the namespace's
// transcripts; the caller releases it once the change and its record are
// written. When no mark can be made the Store goes on without one: the
// folder's mtime still moves without an F whenever a transcript is made
// or removed, and a process killed between an append and its record is
// then the one change a cold Store misses.
func (s *Store) markWriter(ix *index) (release func(), nonce string) {
	s.wmu.RLock()
	if w := ix.markedBy.Load(); w != nil {
		// Named already; the mark lives as long as the Store, and Close
		// waits for wmu.
		return s.runlock, w.nonce
	}
	s.mu.Lock()
	if s.writer == nil && !s.closed {
		var rnd [8]byte
		rand.Read(rnd[:])
		nonce := hex.EncodeToString(rnd[:])
		if err := mkdirs(s.root); err == nil {
			if f, err := openFile(filepath.Join(s.root, writerPrefix+nonce), os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode); err == nil {
				fixMode(f)
				if lockFile(f, true) == nil {
					s.writer = &writerMark{nonce: nonce, lock: f}
				} else {
					f.Close()
				}
			}
		}
	}
	w, done := s.writer, s.markedNS[ix.key]
	s.mu.Unlock()
	if w == nil {
		return s.runlock, ""
	}
	if !done {
		// No rewrite may be under way: it would hold the mark for the
		// new file, unsynced. The sync is outside ix.mu, on the file the
		// mark went to, which only a rewrite replaces.
		ix.rewriteMu.Lock()
		ix.mu.Lock()
		ix.writeLocked(appendMark(nil, 'W', w.nonce))
		f := ix.j.f
		if f != nil {
			if ix.writers == nil {
				ix.writers = map[string]bool{}
			}
			ix.writers[w.nonce] = true
		}
		ix.mu.Unlock()
		if f != nil {
			durable.SyncData(f)
		}
		ix.rewriteMu.Unlock()
		if f == nil {
			// No index file took the mark (none is made yet, or it was
			// deleted): the namespace is not marked. The change goes on
			// without one, its record written as it is made (nothing
			// deferred), and the next change tries again; the index that
			// a validation then builds from the folder has what it did.
			return s.runlock, ""
		}
		s.mu.Lock()
		s.markedNS[ix.key] = true
		s.mu.Unlock()
	}
	ix.markedBy.Store(w)
	return s.runlock, w.nonce
}

// unmarkWriter closes this Store's marks, at Close, after the writes under
// way: each namespace it wrote gets C, synced, and then the lock goes. Not
// the folder's mtime: each change this Store made recorded it, and one
// recorded now would take in whatever another program did since.
func (s *Store) unmarkWriter(w *writerMark, namespaces map[store.Namespace]bool) {
	if w == nil {
		return
	}
	for ns := range namespaces {
		dir := s.namespaceDir(ns)
		x := newIndex(s, ns, dir)
		x.mu.Lock()
		x.writeLocked(appendMark(nil, 'C', w.nonce))
		if x.j.f != nil {
			durable.SyncData(x.j.f) // a fresh index of its own: no List waits on it
		}
		x.j.close()
		x.mu.Unlock()
	}
	os.Remove(w.lock.Name())
	unlockAndClose(w.lock)
}

// alive reports whether the writer nonce still holds its lock file.
func (ix *index) alive(nonce string) bool {
	f, err := openFile(filepath.Join(ix.s.root, writerPrefix+nonce), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	ok, err := tryLockFile(f, true)
	if err != nil {
		return false
	}
	if ok {
		unlockFile(f)
		return false
	}
	return true
}

// provenLocked reports whether the index is current without comparing the
// folder (see above), the folder's mtime being mtime, the index just
// caught up; dead are the writers it names that died.
func (ix *index) provenLocked(mtime int64, dead []string) bool {
	return ix.j.id != nil && !ix.needValidate && ix.folder != 0 && mtime == ix.folder && len(dead) == 0
}

// deadLocked returns the writers the index names open whose process died.
func (ix *index) deadLocked() []string {
	var dead []string
	for nonce := range ix.writers {
		if !ix.alive(nonce) {
			dead = append(dead, nonce)
		}
	}
	return dead
}

// closeDeadLocked closes the marks of the writers dead, found dead before
// a comparison of the folder that has made good what they left undone,
// and removes their lock files. Only those: a writer that died while the
// folder was compared may have appended after its transcripts were, and
// its open marks are what tells the next Store to compare again.
func (ix *index) closeDeadLocked(dead []string) {
	var b []byte
	for _, nonce := range dead {
		if !ix.writers[nonce] {
			continue
		}
		path := filepath.Join(ix.s.root, writerPrefix+nonce)
		if f, err := openFile(path, os.O_RDWR, 0); err == nil {
			if ok, _ := tryLockFile(f, true); ok {
				os.Remove(path)
			}
			unlockAndClose(f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		b = appendMark(b, 'C', nonce)
		delete(ix.writers, nonce)
		ix.closeWriterMarksLocked(nonce)
	}
	if len(b) > 0 {
		ix.writeLocked(b)
	}
}
