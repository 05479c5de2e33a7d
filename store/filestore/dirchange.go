package filestore

import (
	"os"
	"strconv"
	"time"
)

// This process's own changes to a namespace's folder.
//
// The folder's mtime tells a Store whether anything but spool added or
// removed a transcript (see marks.go): a Store that changes the folder
// itself (a transcript, lock or offsets file made, a session deleted, the
// index rewritten) records the mtime its change left, in memory (dirMod)
// and in the index (F), so that its own change does not look like
// another program's. It may do so only when the change was the only one:
// recording the mtime after a change another program made first would
// hide that change from every Store for good. So each change is
// bracketed: beginDirChangeLocked looks at the folder before it, and
// when the folder is not as this process last saw it (nor as the index
// says another spool process left it), and no change of this process is
// under way to explain that, the change is another's; endDirChangeLocked
// then records nothing and asks for a comparison of the folder, which
// records the mtime it compared. A change another program makes in the
// moment this process's own is under way is seen at the folder's next
// change, as a change in the same tick of a coarse clock is.

// beginDirChangeLocked notes that this process is about to change the
// folder. The caller holds ix.mu, and calls endDirChangeLocked after the
// change, whether it was made or not.
func (ix *index) beginDirChangeLocked() {
	if ix.dirChanging == 0 {
		st, err := os.Stat(ix.dir)
		if err == nil && !ix.knownDirLocked(st.ModTime()) {
			// Another spool process may have changed it, and said so in
			// the index.
			ix.catchUpLocked()
		}
		if err != nil || !ix.knownDirLocked(st.ModTime()) {
			ix.dirForeign = true
		}
	}
	ix.dirChanging++
}

// knownDirLocked reports whether m, the folder's mtime, is one this
// process compared or made, or the one the index's last F mark records.
func (ix *index) knownDirLocked(m time.Time) bool {
	return m.Equal(ix.dirMod) || (ix.folder != 0 && m.UnixNano() == ix.folder)
}

// endDirChangeLocked records the folder's mtime after this process's
// change (see beginDirChangeLocked), for this process and, in the index,
// for others. The caller holds ix.mu.
func (ix *index) endDirChangeLocked() {
	ix.dirChanging--
	ix.dirGen++
	if ix.dirForeign {
		ix.needValidate = true
		if ix.dirChanging == 0 {
			ix.dirForeign = false
		}
		return
	}
	if st, err := os.Stat(ix.dir); err == nil {
		ix.recordDirLocked(st.ModTime())
	}
}

// recordDirLocked records m as the folder's mtime this process knows, and
// as the index's F mark when it is not that already. The caller holds
// ix.mu.
func (ix *index) recordDirLocked(m time.Time) {
	ix.dirMod = m
	if mtime := m.UnixNano(); mtime != ix.folder {
		ix.folder = mtime
		ix.writeLocked(appendMark(nil, 'F', strconv.FormatInt(mtime, 10)))
	}
}

// changeDir makes a change to the folder (see beginDirChangeLocked). The
// caller holds no lock of ix.
func (ix *index) changeDir(change func() error) error {
	ix.mu.Lock()
	ix.beginDirChangeLocked()
	ix.mu.Unlock()
	err := change()
	ix.mu.Lock()
	ix.endDirChangeLocked()
	ix.mu.Unlock()
	return err
}
