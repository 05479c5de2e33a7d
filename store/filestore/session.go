package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// sfile is a session's transcript, open and locked (shared to read,
// exclusive to write) from openSession until close, with a complete last
// line. The lock is the session's, across processes: a function given an
// sfile needs no other lock of the session, and one that changes the file
// needs it exclusive.
type sfile struct {
	f    *os.File
	path string
	fileState
	ss *session // the session whose file f is, which close puts back (handles.go); nil to close it
}

// fileState is what says a file changed: its size, its mtime, and its
// identity (a file deleted and made again within one tick of a coarse clock
// may have the same size and mtime, but not the same inode).
type fileState struct {
	size  int64
	mtime int64
	ino   uint64
}

func stateOf(st fs.FileInfo) fileState {
	return fileState{size: st.Size(), mtime: st.ModTime().UnixNano(), ino: fileID(st)}
}

// close releases the lock, and closes the file or keeps it for the next
// append (see handles).
func (sf *sfile) close() {
	if sf.ss != nil {
		sf.ss.ix.s.handles.put(sf.ss)
		return
	}
	unlockAndClose(sf.f)
}

func (sf *sfile) stat() error {
	st, _, _, err := statOpen(sf.f, "")
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	sf.fileState = st
	return nil
}

// snapshot is what an append learns of its session from the index in a
// hold of the index's mutex it takes anyway (lockSession's, or
// openSession's): its record (when has), and its pending when it is one of
// the Store's deferred sessions (pending.go). The record is true of the
// file when the file is as it says (rec.sameAs), however long ago it was
// taken; pending changes only under the session's lock.
type snapshot struct {
	rec  rec
	has  bool
	pend *pending
}

// snapshotLocked copies to snap what the index has of session id. The
// caller holds ix.mu.
func (ix *index) snapshotLocked(id string, snap *snapshot) {
	if r := ix.recs[id]; r != nil {
		snap.rec, snap.has = *r, true
	}
	snap.pend = ix.mine[id]
}

// openSession opens and locks the transcript of id, waiting for the lock
// until ctx is done. Without create it returns nil for a session that has
// no file. Before it returns, a torn last line is set aside (repairTorn), so
// every line of the file is whole. With ss, the session held (appends and
// the records that follow them), it takes the file kept open between
// appends, when there is one, and close keeps it again (see handles).
// With dst, it reports whether the file is as the session's record says,
// and then leaves the record in dst: the one dst holds already (taken by
// lockSession), or a copy.
func (s *Store) openSession(ctx context.Context, ix *index, id string, exclusive, create bool, ss *session, dst *snapshot) (*sfile, bool, error) {
	var path string
	if ss != nil {
		path = ss.path
	} else {
		path = sessionPath(ix.dir, id)
	}
	flag := os.O_RDONLY
	if exclusive {
		flag = os.O_RDWR
	}
	if create {
		flag |= os.O_CREATE
	}
	for attempt := 0; attempt < 100; attempt++ {
		var f *os.File
		var err error
		if ss != nil {
			// Whatever happens to it below, the session's file is not kept
			// until close puts it back.
			f, ss.f = ss.f, nil
		}
		if f == nil {
			f, err = openFile(path, flag&^os.O_CREATE, fileMode)
			if create && errors.Is(err, fs.ErrNotExist) {
				// A new transcript: the folder changes.
				err = ix.changeDir(func() error {
					f, err = openFile(path, flag, fileMode)
					return err
				})
			}
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if !create {
					return nil, false, nil
				}
				if attempt == 0 {
					// The folder was removed under the store: make it again.
					if err := mkdirs(ix.dir); err != nil {
						return nil, false, err
					}
					continue
				}
			}
			return nil, false, fmt.Errorf("filestore: %w", err)
		}
		if err := lockCtx(ctx, f, exclusive); err != nil {
			return nil, false, err
		}
		st, gone, perm, err := statOpen(f, path)
		if err != nil {
			f.Close()
			return nil, false, fmt.Errorf("filestore: %w", err)
		}
		if gone {
			// Deleted while we waited for the lock: what we hold is no
			// longer the session.
			f.Close()
			continue
		}
		var sf *sfile
		if ss != nil {
			ss.f = f
			sf = &ss.sf
			*sf = sfile{f: f, path: path, fileState: st, ss: ss}
		} else {
			sf = &sfile{f: f, path: path, fileState: st}
		}
		if create && sf.size == 0 && perm != fileMode {
			f.Chmod(fileMode) // the umask may have narrowed it
		}
		// A file just as the index last saw it ends in a newline: the
		// index records only whole appends. Anything else is checked.
		known := dst != nil && dst.has && dst.rec.sameAs(sf.fileState)
		if !known {
			ix.mu.Lock()
			r := ix.recs[id]
			known = r != nil && r.sameAs(sf.fileState)
			if known && dst != nil {
				ix.snapshotLocked(id, dst)
			}
			ix.mu.Unlock()
		}
		torn := false
		if !known {
			if torn, err = sf.torn(); err != nil {
				sf.close()
				return nil, false, err
			}
		}
		if !torn {
			return sf, known && dst != nil, nil
		}
		if exclusive {
			if err := s.repairTorn(sf); err != nil {
				sf.close()
				return nil, false, err
			}
			return sf, false, nil
		}
		// Setting the tail aside needs the exclusive lock; take it on a
		// file of its own and start over.
		sf.close()
		w, _, err := s.openSession(ctx, ix, id, true, false, nil, nil)
		if err != nil {
			return nil, false, err
		}
		if w != nil {
			w.close()
		}
	}
	return nil, false, fmt.Errorf("filestore: %s keeps changing under the store", path)
}

// torn reports whether the file's last byte is not a newline: a write cut
// short by a crash, or another program's file without its final newline.
// Under the session's lock no spool writer is half way, so it is never a
// write in progress.
func (sf *sfile) torn() (bool, error) {
	if sf.size == 0 {
		return false, nil
	}
	var b [1]byte
	if _, err := sf.f.ReadAt(b[:], sf.size-1); err != nil {
		return false, fmt.Errorf("filestore: %w", err)
	}
	return b[0] != '\n', nil
}

// repairTorn ends the file at its last complete line. A last line that is
// a whole plain entry missing only its newline (as other programs may
// write) gets its newline. Anything else is moved, first, to the side file
// <id>.jsonl.torn (one fragment a line, appended, synced) and then cut off;
// nothing is destroyed. The caller holds the exclusive lock.
func (s *Store) repairTorn(sf *sfile) error {
	start, err := lastLineStart(sf.f, sf.size)
	if err != nil {
		return err
	}
	tail := make([]byte, sf.size-start)
	if _, err := sf.f.ReadAt(tail, start); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	if s.cfg.protector == nil && !blank(tail) {
		if _, err := transcript.Parse(tail); err == nil {
			if _, err := sf.f.WriteAt([]byte{'\n'}, sf.size); err != nil {
				return fmt.Errorf("filestore: %w", err)
			}
			if err := durable.SyncData(sf.f); err != nil {
				return fmt.Errorf("filestore: %w", err)
			}
			return sf.stat()
		}
	}
	tornPath := sf.path[:len(sf.path)-len(transcriptExt)] + tornExt
	_, existed := os.Stat(tornPath)
	t, err := openFile(tornPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("filestore: setting aside a torn line: %w", err)
	}
	fixMode(t)
	_, err = t.Write(append(tail, '\n'))
	if err == nil {
		err = durable.SyncData(t)
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil && existed != nil {
		err = durable.SyncDir(filepath.Dir(sf.path))
	}
	if err != nil {
		return fmt.Errorf("filestore: setting aside a torn line: %w", err)
	}
	if err := sf.f.Truncate(start); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	if err := durable.SyncData(sf.f); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return sf.stat()
}

// lastLineStart returns the offset just past the last newline before size,
// or 0 when there is none, reading backwards in chunks.
func lastLineStart(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 8<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return 0, fmt.Errorf("filestore: %w", err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// scan reads the whole transcript and returns its record for the index,
// or nil for an empty one. Lines that do not decode count as entries (they
// hold a position) but add nothing else; Read reports them.
func (s *Store) scan(key store.Key, sf *sfile) (*rec, error) {
	lr := newLineReader(sf.f, 0, sf.size)
	r := &rec{fileState: sf.fileState, titleOK: true}
	pos := 0
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, errLongLine) {
			return nil, fmt.Errorf("filestore: reading %s: %w", sf.path, err)
		}
		if err == nil && blank(line) {
			continue
		}
		var e transcript.Entry
		if err == nil {
			e, err = s.decodeLine(line, key, pos, func() string { return "" })
		}
		pos++
		if err != nil {
			r.badTail = true
			continue
		}
		if err := s.applyEntry(r, key, e); err != nil {
			return nil, err
		}
		r.head, r.badTail = e.ID, false
	}
	if pos == 0 {
		return nil, nil
	}
	// Entries counts every line with a position, decoded or not, so that
	// it agrees with the positions reads and appends use.
	r.info.Entries = pos
	r.info.ID, r.info.Agent, r.info.Owner = key.ID, key.Agent, key.Owner
	return r, nil
}
