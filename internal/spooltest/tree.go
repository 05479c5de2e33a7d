package spooltest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FileTree returns every file and folder under root with its mode and, for
// files, its bytes (sockets, a store's notifications, left out): two calls
// that compare equal show that nothing under root changed in between.
func FileTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			out[rel+"/"] = st.Mode().String()
			return nil
		}
		if !st.Mode().IsRegular() {
			return nil // a store's sockets (notifications): not data
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = st.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
