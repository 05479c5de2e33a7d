//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package filestore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// statEachByPath is statEach for systems without fstatat (Windows, and
// the systems lock_other.go covers): one Lstat per name.
func statEachByPath(dir *os.File, names []string, fn func(i int, st fileState, regular bool)) error {
	for i, name := range names {
		st, err := os.Lstat(filepath.Join(dir.Name(), name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		fn(i, stateOf(st), st.Mode().IsRegular())
	}
	return nil
}
