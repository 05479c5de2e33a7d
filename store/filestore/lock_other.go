//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// platformErr is why the store cannot run here: without flock or
// LockFileEx it could not keep two processes from interleaving a session,
// and New refuses rather than run unsafely.
var platformErr = fmt.Errorf("filestore: no file locks on %s; use another store", runtime.GOOS)

var errNoLocks = errors.New("file locks are not supported")

func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func lockFile(f *os.File, exclusive bool) error            { return errNoLocks }
func tryLockFile(f *os.File, exclusive bool) (bool, error) { return false, errNoLocks }
func unlockAndClose(f *os.File) error                      { return f.Close() }
func unlockFile(f *os.File) error                          { return errNoLocks }
func unlinked(st fs.FileInfo, path string) bool            { return false }
func statEach(dir *os.File, names []string, fn func(i int, st fileState, regular bool)) error {
	return statEachByPath(dir, names, fn)
}
func fileID(st fs.FileInfo) uint64                   { return 0 }
func pathErr(op string, f *os.File, err error) error { return err }

const keepHandles = false
