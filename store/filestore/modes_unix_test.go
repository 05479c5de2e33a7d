//go:build unix

package filestore

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spool-go/spool/store"
)

func TestModesUnderAnyUmask(t *testing.T) {
	for _, mask := range []int{0o000, 0o022, 0o277} {
		old := syscall.Umask(mask)
		root := filepath.Join(t.TempDir(), "deep", "root")
		s := open(t, root)
		key := store.Key{Agent: "a", Owner: "bob", ID: "x"}
		seed(t, s, key, "", t0, 1)
		unlock, err := s.Lock(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		syscall.Umask(old)
		filepath.WalkDir(filepath.Dir(root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			st, _ := d.Info()
			want := fileMode
			if d.IsDir() {
				want = dirMode
			}
			if st.Mode().Perm() != want {
				t.Errorf("umask %03o: %s has mode %v, want %v", mask, path, st.Mode().Perm(), want)
			}
			return nil
		})
	}
}
