package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/spool-go/spool/seal"
)

// Encryption at rest on the command line (SECURITY.md has the picture):
//
//   - SPOOL_ENCRYPTION_KEY set: that key, and nothing else.
//   - --encrypt without it: the key file, seal.DefaultKeyFile(), created on
//     first use, together with the keys of a rotation: <keyfile>.new, the
//     new key of a rotation not finished yet (it then seals), and
//     <keyfile>.old, every key the key file held before a rotation (they
//     open only). So a store rotated or not, another store still under an
//     older key, or one caught in an interrupted rotation all open.

// keyFileOld and keyFileNew name the files beside the key file.
const (
	keyFileNew = ".new"
	keyFileOld = ".old"
)

// encryption is the protector a command uses and where its keys came from.
type encryption struct {
	p      seal.Protector // nil: no encryption
	source string         // "SPOOL_ENCRYPTION_KEY" or the key file's path
	keyID  string         // the id of the key that seals
}

// loadEncryption returns the encryption a command asked for: the
// environment's key, the key file's with --encrypt, or none.
func loadEncryption(env *environ, encrypt bool) (encryption, error) {
	key, ok, err := envKey(env)
	if err != nil {
		return encryption{}, err
	}
	if ok {
		a, err := seal.NewAEAD(key)
		if err != nil {
			return encryption{}, err
		}
		return encryption{p: a, source: seal.EnvKey, keyID: a.KeyID()}, nil
	}
	if !encrypt {
		return encryption{}, nil
	}
	path, err := seal.DefaultKeyFile()
	if err != nil {
		return encryption{}, err
	}
	key, err = seal.LoadOrCreateKeyFile(path)
	if err != nil {
		return encryption{}, err
	}
	current, err := seal.NewAEAD(key)
	if err != nil {
		return encryption{}, err
	}
	var previous []seal.Protector
	next, err := readKeyIfExists(path + keyFileNew)
	if err != nil {
		return encryption{}, err
	}
	if next != nil && !bytes.Equal(next, key) {
		fmt.Fprintf(env.stderr, "spool: a key rotation is not finished (%s exists): new writes use the new key; run spool keys rotate again to finish it\n", path+keyFileNew)
		previous = append(previous, current)
		if current, err = seal.NewAEAD(next); err != nil {
			return encryption{}, err
		}
	}
	olds, err := readOldKeys(path + keyFileOld)
	if err != nil {
		return encryption{}, err
	}
	for _, k := range olds {
		a, err := seal.NewAEAD(k)
		if err != nil {
			return encryption{}, err
		}
		previous = append(previous, a)
	}
	enc := encryption{p: current, source: path, keyID: current.KeyID()}
	if len(previous) > 0 {
		if enc.p, err = seal.NewKeyring(current, previous...); err != nil {
			return encryption{}, err
		}
	}
	return enc, nil
}

// envKey returns the key in SPOOL_ENCRYPTION_KEY, and whether it is set.
// A variable set but empty is an error, as in seal.KeyFromEnv: encryption
// was asked for, so it never falls back to plain text.
func envKey(env *environ) ([]byte, bool, error) {
	v := env.getenv(seal.EnvKey)
	if v == "" {
		if _, set := os.LookupEnv(seal.EnvKey); set && os.Getenv(seal.EnvKey) == "" {
			return nil, false, fmt.Errorf("%w in %s: it is set but empty (unset it, or set it to %d random bytes in standard base64)", seal.ErrInvalidKey, seal.EnvKey, seal.KeySize)
		}
		return nil, false, nil
	}
	key, err := seal.ParseKey(v)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w (want %d random bytes in standard base64, e.g. head -c32 /dev/urandom | base64)", seal.EnvKey, err, seal.KeySize)
	}
	return key, true, nil
}

// readKeyIfExists reads a key file that may not exist (nil then), with the
// checks of seal.LoadOrCreateKeyFile, never creating one.
func readKeyIfExists(path string) ([]byte, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return seal.LoadOrCreateKeyFile(path)
}

// readOldKeys reads <keyfile>.old: one key a line, newest first. A missing
// file holds none. Like the key file it must be private (unix mode 0600).
func readOldKeys(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("previous keys: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("previous keys: %w", err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", seal.ErrInsecureKeyFile, path, st.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("previous keys: %w", err)
	}
	var keys [][]byte
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, err := seal.ParseKey(line)
		if err != nil {
			return nil, fmt.Errorf("%s, line %d: %w", path, i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
