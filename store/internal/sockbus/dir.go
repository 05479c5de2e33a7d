//go:build unix

package sockbus

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// maxSockPath is the longest socket path every Unix takes: sun_path is
// 104 bytes on macOS and the BSDs (108 on Linux), its NUL included.
const maxSockPath = 103

// maxNameLen is the longest socket name: "PID.RANDOM.sock".
const maxNameLen = len("4294967295.01234567.sock")

// socketDir is the folder of the sockets of the store at storePath,
// which prefers preferred (see the package documentation), and whether
// it is preferred.
func socketDir(preferred, storePath string) (string, bool, error) {
	if len(preferred)+1+maxNameLen <= maxSockPath {
		return preferred, true, nil
	}
	abs, err := filepath.Abs(storePath)
	if err != nil {
		return "", false, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	sum := sha256.Sum256([]byte(abs))
	sub := filepath.Join("spool-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8]))
	var bases []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		bases = append(bases, x)
	}
	bases = append(bases, os.TempDir(), "/tmp")
	for _, base := range bases {
		if dir := filepath.Join(base, sub); len(dir)+1+maxNameLen <= maxSockPath {
			return dir, false, nil
		}
	}
	return "", false, fmt.Errorf("sockbus: no folder for the sockets of %s is short enough for a socket address", storePath)
}

// resolve is the socket folder of the store at storePath: preferred (in
// the store) with the store's links resolved, so that every process
// finds the same folder however it names the store.
func resolve(preferred, storePath string) (string, bool, error) {
	if real, err := filepath.EvalSymlinks(filepath.Dir(preferred)); err == nil {
		preferred = filepath.Join(real, filepath.Base(preferred))
	}
	return socketDir(preferred, storePath)
}

// makePrivate makes dir, and its parent in the fallback folder, 0700,
// and checks that they are the user's alone (see checkPrivate).
func makePrivate(dir string, inStore bool) error {
	if !inStore {
		// $base/spool-UID: the one folder a shared base holds.
		if err := os.Mkdir(filepath.Dir(dir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("sockbus: %w", err)
		}
		if err := private(filepath.Dir(dir)); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("sockbus: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sockbus: %w", err)
	}
	return private(dir)
}

// checkPrivate checks dir (and its parent in the fallback folder, so
// that nobody else can put another folder in its place) as makePrivate
// does, making nothing.
func checkPrivate(dir string, inStore bool) error {
	if !inStore {
		if err := private(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	return private(dir)
}

// private checks that dir is a folder, not a link, owned by the user;
// one that others may enter is made 0700, as the user may.
func private(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("sockbus: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("sockbus: %s is not a folder of this user's: refusing to use it for notifications", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("sockbus: %w", err)
		}
	}
	return nil
}
