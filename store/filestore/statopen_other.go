//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package filestore

import (
	"io/fs"
	"os"
)

// statOpen returns the state of the open file f, whether it is no longer
// the file at path (see unlinked; not checked when path is ""), and its
// permission bits.
func statOpen(f *os.File, path string) (st fileState, gone bool, perm fs.FileMode, err error) {
	info, err := f.Stat()
	if err != nil {
		return fileState{}, false, 0, err
	}
	return stateOf(info), path != "" && unlinked(info, path), info.Mode().Perm(), nil
}
