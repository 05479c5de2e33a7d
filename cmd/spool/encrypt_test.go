package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/seal"
)

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if before[k] != after[k] {
			diff = append(diff, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, k+" (gone)")
		}
	}
	t.Fatalf("%s changed the store: %v", what, diff)
}

func newKeyValue() string { return seal.EncodeKey(seal.GenerateKey()) }

// encryptedStores makes a file and an SQLite store encrypted with key,
// each holding session "alpha" made by spool chat, and returns their URLs
// and folders.
func encryptedStores(t *testing.T, key string) map[string][2]string {
	t.Helper()
	fileDir, sqlDir := t.TempDir(), t.TempDir()
	stores := map[string][2]string{
		"file":   {"file:" + fileDir, fileDir},
		"sqlite": {"sqlite:" + filepath.Join(sqlDir, "spool.db"), sqlDir},
	}
	c := newCLI(t, map[string]string{seal.EnvKey: key})
	for _, s := range stores {
		chatSessions(t, c, s[0], chatScript{"alpha", []string{"my passport is XK4471"}})
	}
	return stores
}

// TestEncryptedStoreRefused: an encrypted store opened without its key, or
// with another one, is a clear error (exit 1) and changes nothing, whatever
// the command: reading, listing, or chat, which would otherwise create a
// session and apply retention.
func TestEncryptedStoreRefused(t *testing.T) {
	key := newKeyValue()
	for name, s := range encryptedStores(t, key) {
		url, dir := s[0], s[1]
		t.Run(name, func(t *testing.T) {
			before := spooltest.FileTree(t, dir)
			for _, b := range before {
				if strings.Contains(b, "XK4471") {
					t.Fatal("the store holds the prompt in the clear")
				}
			}
			for _, tc := range []struct {
				name, key, want string
			}{
				{"no key", "", "is encrypted: set SPOOL_ENCRYPTION_KEY"},
				{"wrong key", newKeyValue(), "wrong key"},
			} {
				vars := map[string]string{}
				if tc.key != "" {
					vars[seal.EnvKey] = tc.key
				}
				c := newCLI(t, vars)
				for _, args := range [][]string{
					{"sessions", "ls"},
					{"sessions", "show", "alpha"},
					{"sessions", "rm", "alpha"},
					{"sessions", "prune", "--max-sessions", "1"},
					{"chat"},
					{"chat", "--session", "alpha"},
				} {
					code, out, errs := c.run("hello\n", append(args, "--store", url)...)
					if code != 1 || !strings.Contains(errs, tc.want) {
						t.Fatalf("%s: %v: exit %d, stderr %q; want 1 and %q", tc.name, args, code, errs, tc.want)
					}
					if strings.Contains(out, "XK4471") || strings.Contains(errs, "XK4471") {
						t.Fatalf("%s: %v printed the content", tc.name, args)
					}
					sameSnapshot(t, tc.name+" "+strings.Join(args, " "), before, spooltest.FileTree(t, dir))
				}
			}
			// With the key, all is there.
			c := newCLI(t, map[string]string{seal.EnvKey: key})
			if code, out, errs := c.run("", "sessions", "show", "alpha", "--store", url); code != 0 || !strings.Contains(out, "XK4471") {
				t.Fatalf("show with the key: %d %s %s", code, out, errs)
			}
		})
	}
}

// TestEncryptFlag: --encrypt without the variable uses the key file,
// created 0600 on first use, and the store is sealed with it.
func TestEncryptFlag(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	dir := t.TempDir()
	url := "file:" + dir
	c := newCLI(t, nil)
	if code, _, errs := c.run("the launch code is swordfish\n", "chat", "--store", url, "--session", "s", "--encrypt"); code != 0 {
		t.Fatalf("chat --encrypt: %s", errs)
	}
	keyFile := filepath.Join(config, "spool", "key")
	st, err := os.Stat(keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	for name, b := range spooltest.FileTree(t, dir) {
		if strings.Contains(b, "swordfish") {
			t.Fatalf("%s holds the prompt in the clear", name)
		}
	}
	if code, out, _ := c.run("", "sessions", "show", "s", "--store", url, "--encrypt"); code != 0 || !strings.Contains(out, "swordfish") {
		t.Fatalf("show --encrypt: %d %s", code, out)
	}
	if code, _, errs := c.run("", "sessions", "show", "s", "--store", url); code != 1 || !strings.Contains(errs, "--encrypt") {
		t.Fatalf("show without --encrypt: %d %s", code, errs)
	}
	// The variable wins over the key file.
	c = newCLI(t, map[string]string{seal.EnvKey: newKeyValue()})
	if code, _, errs := c.run("", "sessions", "ls", "--store", url, "--encrypt"); code != 1 || !strings.Contains(errs, "wrong key") || !strings.Contains(errs, seal.EnvKey) {
		t.Fatalf("ls with another key in the variable: %d %s", code, errs)
	}
}

func TestEncryptionScope(t *testing.T) {
	c := newCLI(t, map[string]string{seal.EnvKey: newKeyValue()})
	for _, url := range []string{"postgres://postgres@127.0.0.1:1/none", "redis://127.0.0.1:1/0"} {
		code, _, errs := c.run("", "sessions", "ls", "--store", url)
		if code != 1 || !strings.Contains(errs, "available for file: and sqlite: stores only") {
			t.Fatalf("%s with a key: %d %s", url, code, errs)
		}
	}
	if code, _, errs := c.run("hi\n", "chat", "--store", "memory:"); code != 0 {
		t.Fatalf("memory: with a key: %d %s", code, errs)
	}
	if code, _, errs := c.run("", "sessions", "ls", "--store", "file:"+t.TempDir(), "--encrypt"); code != 0 {
		t.Fatalf("an empty store with a key: %d %s", code, errs)
	}
	bad := newCLI(t, map[string]string{seal.EnvKey: "not a key"})
	if code, _, errs := bad.run("", "sessions", "ls", "--store", "file:"+t.TempDir()); code != 1 || !strings.Contains(errs, seal.EnvKey) || strings.Contains(errs, "not a key") {
		t.Fatalf("a malformed key: %d %s", code, errs)
	}

	// A plain store is not encrypted in place.
	for _, url := range []string{"file:" + t.TempDir(), tempStoreURL(t)} {
		chatSessions(t, newCLI(t, nil), url, chatScript{"plain", []string{"hello"}})
		dir := strings.TrimPrefix(url, "file:")
		if strings.HasPrefix(url, "sqlite:") {
			dir = filepath.Dir(strings.TrimPrefix(url, "sqlite:"))
		}
		before := spooltest.FileTree(t, dir)
		code, _, errs := c.run("hi\n", "chat", "--store", url)
		if code != 1 || !strings.Contains(errs, "is not encrypted") || !strings.Contains(errs, "export") {
			t.Fatalf("%s: a key on a plain store: %d %s", url, code, errs)
		}
		sameSnapshot(t, "a key on a plain store", before, spooltest.FileTree(t, dir))
	}
}

func TestEncryptionKeyEmptyInEnvironment(t *testing.T) {
	t.Setenv(seal.EnvKey, "")
	c := newCLI(t, nil)
	code, _, errs := c.run("", "sessions", "ls", "--store", "file:"+t.TempDir())
	if code != 1 || !strings.Contains(errs, "set but empty") {
		t.Fatalf("an empty %s: %d %s", seal.EnvKey, code, errs)
	}
}

func TestEncryptedExportImport(t *testing.T) {
	key := newKeyValue()
	stores := encryptedStores(t, key)
	c := newCLI(t, map[string]string{seal.EnvKey: key})
	code, exported, errs := c.run("", "sessions", "export", "--all", "--store", stores["file"][0])
	if code != 0 || !strings.Contains(exported, "XK4471") {
		t.Fatalf("export with the key: %d %s", code, errs)
	}
	// Into a new plain store: the way out of encryption (and, the other
	// way round, into it).
	plain := "file:" + t.TempDir()
	if code, _, errs := newCLI(t, nil).run(exported, "sessions", "import", "--store", plain); code != 0 {
		t.Fatalf("import into a plain store: %s", errs)
	}
	code, out, _ := newCLI(t, nil).run("", "sessions", "show", "alpha", "--store", plain, "--json")
	if code != 0 || !bytes.Contains([]byte(out), []byte("XK4471")) {
		t.Fatalf("show of the imported session: %d %s", code, out)
	}
	// And back into a new encrypted store: how a plain store is encrypted.
	again := "file:" + t.TempDir()
	_, plainExport, _ := newCLI(t, nil).run("", "sessions", "export", "--all", "--store", plain)
	if code, _, errs := c.run(plainExport, "sessions", "import", "--store", again); code != 0 {
		t.Fatalf("import into a new encrypted store: %s", errs)
	}
	if code, out, _ := c.run("", "sessions", "show", "alpha", "--store", again); code != 0 || !strings.Contains(out, "XK4471") {
		t.Fatalf("show of the re-encrypted session: %d %s", code, out)
	}
	for name, b := range spooltest.FileTree(t, strings.TrimPrefix(again, "file:")) {
		if strings.Contains(b, "XK4471") {
			t.Fatalf("%s holds the prompt in the clear", name)
		}
	}
	// migrate between two encrypted stores keeps both encrypted.
	to := "sqlite:" + filepath.Join(t.TempDir(), "to.db")
	if code, _, errs := c.run("", "migrate", "--from", stores["file"][0], "--to", to); code != 0 {
		t.Fatalf("migrate: %s", errs)
	}
	if code, _, errs := newCLI(t, nil).run("", "sessions", "ls", "--store", to); code != 1 || !strings.Contains(errs, "is encrypted") {
		t.Fatalf("the migrated store opened without the key: %d %s", code, errs)
	}
}

// TestMigrateBetweenEncryptedAndServer: migrate opens both stores with the
// one key, so an encrypted store cannot be migrated to postgres: or
// redis:, which spool does not encrypt, nor one of them to an encrypted
// store. The error said to unset the key, after which the encrypted store
// refused to open without it; it names export and import, which can.
func TestMigrateBetweenEncryptedAndServer(t *testing.T) {
	key := newKeyValue()
	enc := encryptedStores(t, key)["file"][0]
	c := newCLI(t, map[string]string{seal.EnvKey: key})
	server := "postgres://127.0.0.1:1/none" // refused before it is dialled
	for _, args := range [][]string{
		{"migrate", "--from", enc, "--to", server},
		{"migrate", "--from", server, "--to", "file:" + t.TempDir()},
	} {
		code, _, errs := c.run("", args...)
		if code != 1 || !strings.Contains(errs, "spool sessions export --all --store ") || !strings.Contains(errs, "spool sessions import --store ") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and the export and import that move the sessions", strings.Join(args, " "), code, errs)
		}
	}
}

// The export and import that migrate's error gives are commands to paste
// in a shell: a store URL with a query (?sslmode=disable&…) is quoted, as
// the next-page hint quotes it; unquoted, the shell ran the import in the
// background at the &, without its input.
func TestMigrateBetweenEncryptedAndServerQuotes(t *testing.T) {
	key := newKeyValue()
	enc := encryptedStores(t, key)["file"][0]
	c := newCLI(t, map[string]string{seal.EnvKey: key})
	server := "postgres://127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
	code, _, errs := c.run("", "migrate", "--from", enc, "--to", server)
	if want := "spool sessions import --store '" + server + "' < sessions.jsonl"; code != 1 || !strings.Contains(errs, want) {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errs, want)
	}
}
