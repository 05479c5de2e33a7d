package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvKey is the environment variable KeyFromEnv reads.
const EnvKey = "SPOOL_ENCRYPTION_KEY"

// Key errors.
var (
	// ErrNoKey: SPOOL_ENCRYPTION_KEY is not set.
	ErrNoKey = errors.New("seal: " + EnvKey + " is not set")
	// ErrInvalidKey: a key (from the environment or a key file) is not
	// KeySize bytes in standard base64. The error never holds the value.
	ErrInvalidKey = errors.New("seal: invalid key")
)

// GenerateKey returns KeySize fresh random bytes for NewAEAD. It cannot
// fail: crypto/rand.Read never returns an error since Go 1.24.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return k
}

// EncodeKey returns key in standard base64 with padding: the form
// SPOOL_ENCRYPTION_KEY and key files hold.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// ParseKey decodes a key written by EncodeKey. Surrounding whitespace is
// ignored and the padding is optional. Errors match ErrInvalidKey and never
// quote s.
func ParseKey(s string) ([]byte, error) {
	key, problem := parseKey(s)
	if problem != "" {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKey, problem)
	}
	return key, nil
}

// parseKey returns the key in s, or what is wrong with s in words that do
// not quote it.
func parseKey(s string) ([]byte, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "empty"
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(s, "=") {
		enc = base64.RawStdEncoding
	}
	key, err := enc.DecodeString(s)
	if err != nil {
		return nil, "not standard base64"
	}
	if len(key) != KeySize {
		return nil, fmt.Sprintf("decodes to %d bytes, want %d", len(key), KeySize)
	}
	return key, ""
}

// KeyFromEnv returns the key in SPOOL_ENCRYPTION_KEY: KeySize random bytes
// in standard base64 (e.g. `head -c 32 /dev/urandom | base64`). It fails
// with ErrNoKey when the variable is not set, and with an error matching
// ErrInvalidKey and naming the variable, never its value, when the variable
// is set but empty or malformed: a set variable means encryption was asked
// for, so it never falls back to writing plain text.
func KeyFromEnv() ([]byte, error) {
	v, ok := os.LookupEnv(EnvKey)
	if !ok {
		return nil, ErrNoKey
	}
	key, problem := parseKey(v)
	if problem != "" {
		return nil, fmt.Errorf("%w in %s: %s (want %d random bytes in standard base64)", ErrInvalidKey, EnvKey, problem, KeySize)
	}
	return key, nil
}

// DefaultKeyFile returns where the key file lives by default:
// os.UserConfigDir()/spool/key (on Linux $XDG_CONFIG_HOME/spool/key or
// ~/.config/spool/key, on macOS ~/Library/Application Support/spool/key, on
// Windows %AppData%\spool\key).
func DefaultKeyFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("seal: no user config folder for the key file: %w", err)
	}
	return filepath.Join(dir, "spool", "key"), nil
}
