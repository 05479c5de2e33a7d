package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestKeyFromEnv(t *testing.T) {
	key := GenerateKey()
	good := EncodeKey(key)
	t.Setenv(EnvKey, good)
	got, err := KeyFromEnv()
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("KeyFromEnv = %x, %v", got, err)
	}
	for name, v := range map[string]string{
		"unpadded":       strings.TrimRight(good, "="),
		"with newline":   good + "\n",
		"with spaces":    "  " + good + " ",
		"from coreutils": base64.StdEncoding.EncodeToString(key),
	} {
		t.Setenv(EnvKey, v)
		if got, err := KeyFromEnv(); err != nil || !bytes.Equal(got, key) {
			t.Errorf("%s: KeyFromEnv = %x, %v", name, got, err)
		}
	}
}

func TestKeyFromEnvBad(t *testing.T) {
	secretish := "c2VjcmV0LXZhbHVlLXRoYXQtaXMtdG9vLXNob3J0" // 30 bytes
	for name, v := range map[string]string{
		"empty":       "",
		"bad base64":  "not*base64*at*all!" + secretish,
		"short":       secretish,
		"long":        EncodeKey(make([]byte, 48)),
		"url base64":  strings.NewReplacer("+", "-", "/", "_").Replace(EncodeKey(bytes.Repeat([]byte{0xfb, 0xff}, 16))),
		"hex of key":  strings.Repeat("ab", 32),
		"inner space": "AAAA AAAA" + EncodeKey(GenerateKey()),
	} {
		t.Setenv(EnvKey, v)
		_, err := KeyFromEnv()
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: err = %v, want ErrInvalidKey", name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, EnvKey) {
			t.Errorf("%s: error %q does not name %s", name, msg, EnvKey)
		}
		if v != "" && strings.Contains(msg, v) || strings.Contains(msg, secretish) {
			t.Errorf("%s: error %q echoes the value", name, msg)
		}
	}
}

func TestKeyFromEnvUnset(t *testing.T) {
	t.Setenv(EnvKey, "x") // restores the outer value after the test
	os.Unsetenv(EnvKey)
	if _, err := KeyFromEnv(); !errors.Is(err, ErrNoKey) {
		t.Fatalf("err = %v, want ErrNoKey", err)
	}
}

func TestDefaultKeyFile(t *testing.T) {
	if runtime.GOOS == "linux" {
		t.Setenv("XDG_CONFIG_HOME", "/cfg")
	}
	p, err := DefaultKeyFile()
	if err != nil {
		t.Skipf("no user config dir here: %v", err)
	}
	if !strings.HasSuffix(p, filepath.Join("spool", "key")) {
		t.Fatalf("DefaultKeyFile = %s", p)
	}
	if runtime.GOOS == "linux" && p != "/cfg/spool/key" {
		t.Fatalf("DefaultKeyFile = %s, want /cfg/spool/key", p)
	}
}

func TestKeyFileCreatedThenReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg", "spool")
	path := filepath.Join(dir, "key")
	k1, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != KeySize {
		t.Fatalf("key is %d bytes", len(k1))
	}
	if runtime.GOOS != "windows" {
		assertMode(t, path, 0o600)
		assertMode(t, dir, 0o700)
		assertMode(t, filepath.Dir(dir), 0o700)
	}
	data, _ := os.ReadFile(path)
	if string(data) != EncodeKey(k1)+"\n" {
		t.Fatal("key file does not hold the base64 key and a newline")
	}
	k2, err := LoadOrCreateKeyFile(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second call: %x, %v; want the first key", k2, err)
	}
	assertOnlyKeyFile(t, dir)
}

func TestKeyFileInsecureMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix modes only")
	}
	path := filepath.Join(t.TempDir(), "key")
	if _, err := LoadOrCreateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []fs.FileMode{0o644, 0o640, 0o604, 0o620} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateKeyFile(path)
		if !errors.Is(err, ErrInsecureKeyFile) {
			t.Fatalf("mode %04o: err = %v, want ErrInsecureKeyFile", mode, err)
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("error %q does not say which file and how to fix it", err)
		}
	}
}

func TestKeyFileMalformed(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":  "", // read as possibly half-written: errors after a second
		"short":  "c2hvcnQtc2VjcmV0\n",
		"binary": string(GenerateKey()) + "\n",
		"long":   EncodeKey(make([]byte, 40)),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateKeyFile(path)
		if !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("%s: err = %v, want ErrInvalidKey", name, err)
		}
		if !strings.Contains(err.Error(), path) || content != "" && strings.Contains(err.Error(), content) {
			t.Fatalf("%s: error %q must name the file and not its content", name, err)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Fatalf("%s: malformed key file was changed", name)
		}
	}
	if _, err := LoadOrCreateKeyFile(dir); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("folder as key file: err = %v", err)
	}
}

func TestKeyFileConcurrentCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "key")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			keys[i], errs[i] = LoadOrCreateKeyFile(path)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("callers disagree on the key")
		}
	}
	onDisk, err := LoadOrCreateKeyFile(path)
	if err != nil || !bytes.Equal(onDisk, keys[0]) {
		t.Fatalf("file holds another key than the callers got")
	}
	assertOnlyKeyFile(t, filepath.Join(dir, "sub"))
}

// TestKeyFileWithoutHardLinks takes the exclusive-create path used where the
// file system has no hard links.
func TestKeyFileWithoutHardLinks(t *testing.T) {
	linkFile = func(string, string) error { return &os.LinkError{Op: "link", Err: errors.ErrUnsupported} }
	t.Cleanup(func() { linkFile = os.Link })
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	const n = 4
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], errs[i] = LoadOrCreateKeyFile(path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d: %x, %v; want agreement", i, keys[i], errs[i])
		}
	}
	if runtime.GOOS != "windows" {
		assertMode(t, path, 0o600)
	}
	assertOnlyKeyFile(t, dir)
}

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Fatalf("%s has mode %04o, want %04o", path, got, want)
	}
}

// assertOnlyKeyFile checks no temporary file was left behind.
func assertOnlyKeyFile(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "key" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %v, want only key", dir, names)
	}
}

func TestParseKey(t *testing.T) {
	key := GenerateKey()
	if got, err := ParseKey(EncodeKey(key)); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("ParseKey(EncodeKey(k)) = %x, %v", got, err)
	}
	if bytes.Equal(key, GenerateKey()) {
		t.Fatal("GenerateKey returned the same key twice")
	}
	for _, s := range []string{"", "   ", "!!!!", EncodeKey(key[:31])} {
		if _, err := ParseKey(s); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%q): err = %v, want ErrInvalidKey", s, err)
		}
	}
}
