// Package durable holds the calls that make file writes survive a crash,
// once for the module, so that every package that promises durability
// (the file store, seal's key files, the CLI's key rotation) keeps the
// promise the same way on every OS.
//
// # When bytes are safe
//
// A write that returned has put its bytes in the operating system's cache:
// they survive a crash of the process (kill -9), not a crash of the machine
// or a power loss. They reach stable storage when:
//
//   - SyncData(f) returns nil: every byte written to f so far, and what is
//     needed to read them back (the file's size). Linux: fdatasync(2);
//     macOS: fcntl F_FULLFSYNC, which also empties the drive's own cache
//     (plain fsync there does not); Windows: FlushFileBuffers; elsewhere
//     fsync(2).
//   - Sync(f) returns nil: the same, and the rest of f's metadata (its
//     times); fsync(2), F_FULLFSYNC on macOS, FlushFileBuffers on Windows.
//
// A file's name is not its content: a file created, renamed or removed is
// an entry of its folder, which is safe once SyncDir(folder) returns nil
// (fsync of the folder). On Windows a folder cannot be flushed and SyncDir
// does nothing: NTFS journals folder entries, so a crash never leaves one
// half changed, but a change made just before the machine crashed may be
// lost.
//
// WriteFile puts the three together into an atomic replace: once it
// returns nil the new content is at the path, whole, and survives a crash;
// a crash before that leaves the old file or the new one, never a mix.
package durable

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Sync makes f's content and metadata durable (see the package doc).
func Sync(f *os.File) error { return f.Sync() }

// SyncDir makes the entries of the folder dir durable: the files created,
// renamed and removed in it (see the package doc for Windows).
func SyncDir(dir string) error { return syncDir(dir) }

// WriteFile replaces the file at path with content, atomically: it writes
// a temporary file in the same folder (mode perm), syncs it, renames it
// over path and syncs the folder. A crash leaves the old content or the
// new, never a mix, and at worst the temporary file (named .NAME-*.tmp)
// beside it; an error leaves the old content and removes the temporary
// file. The folder must exist.
func WriteFile(path string, content []byte, perm fs.FileMode) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	if perm != 0o600 {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		_, err = tmp.Write(content)
	}
	if err == nil {
		err = Sync(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("durable: replacing %s: %w", path, err)
	}
	return nil
}
