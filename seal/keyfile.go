package seal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spool-go/spool/internal/durable"
)

// ErrInsecureKeyFile: the key file can be read or written by group or
// others (unix only; on Windows the user profile's ACL protects it).
var ErrInsecureKeyFile = errors.New("seal: key file is accessible by group or others")

// keyFileMax bounds what is read from a key file; a key is 45 bytes.
const keyFileMax = 1024

// keyFileLen is the length of a key file this package writes.
var keyFileLen = len(EncodeKey(make([]byte, KeySize))) + 1

// errIncomplete marks a key file too short to be finished and without the
// final newline every key file written here ends with. Its text is empty:
// it only adds meaning to an ErrInvalidKey error.
var errIncomplete = errors.New("")

// linkFile publishes a finished key file; a variable so tests can take the
// path for file systems without hard links.
var linkFile = os.Link

// LoadOrCreateKeyFile returns the key in the file at path, creating the file
// with a fresh key on first use.
//
// A new key file holds EncodeKey(GenerateKey()) and a newline, mode 0600;
// missing folders are created 0700. It is written to a temporary file in the
// same folder, synced, then hard-linked into place, which fails rather than
// replace a file another process created meanwhile; the loser of such a race
// reads the winner's key, so concurrent first uses agree on one key. Where
// hard links are not supported the file is created exclusively instead. When
// the call returns, the file and its folder entry are synced.
//
// An existing file must be a regular file; on unix its mode must give group
// and others no access (ErrInsecureKeyFile; fix with chmod 600). Malformed
// content fails with ErrInvalidKey naming the path, never the content.
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("seal: key file path is empty")
	}
	key, err := readKeyFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return createKeyFile(path)
	case errors.Is(err, errIncomplete):
		return readRacingKeyFile(path)
	}
	return key, err
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	defer f.Close()
	// Stat the open file, not the path, so the checks apply to what is read.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: key file %s is not a regular file", ErrInvalidKey, path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", ErrInsecureKeyFile, path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, keyFileMax))
	if err != nil {
		return nil, fmt.Errorf("seal: key file %s: %w", path, err)
	}
	key, problem := parseKey(string(data))
	if problem != "" {
		err := fmt.Errorf("%w in key file %s: %s", ErrInvalidKey, path, problem)
		if len(data) < keyFileLen && !bytes.HasSuffix(data, []byte("\n")) {
			// Perhaps still being written by createExclusive elsewhere.
			err = fmt.Errorf("%w%w", err, errIncomplete)
		}
		return nil, err
	}
	return key, nil
}

func createKeyFile(path string) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("seal: key file folder: %w", err)
	}
	key := GenerateKey()
	content := []byte(EncodeKey(key) + "\n")

	tmp, err := os.CreateTemp(dir, ".key-*.tmp") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := writeSyncClose(tmp, content); err != nil {
		return nil, fmt.Errorf("seal: writing key file: %w", err)
	}

	err = linkFile(tmpName, path)
	if errors.Is(err, fs.ErrExist) {
		return readKeyFile(path)
	}
	if err != nil {
		// No hard links here: create in place, still never replacing a file.
		if err := createExclusive(path, content); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return readRacingKeyFile(path)
			}
			return nil, fmt.Errorf("seal: writing key file: %w", err)
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("seal: syncing key file folder: %w", err)
	}
	return key, nil
}

func createExclusive(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := writeSyncClose(f, content); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// readRacingKeyFile reads a key file another caller may have created in
// place and still be writing (where there are no hard links): it retries for
// up to a second while the content looks incomplete.
func readRacingKeyFile(path string) ([]byte, error) {
	var err error
	for range 50 {
		var key []byte
		if key, err = readKeyFile(path); !errors.Is(err, errIncomplete) {
			return key, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

func writeSyncClose(f *os.File, content []byte) error {
	_, err := f.Write(content)
	if err == nil {
		err = durable.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
