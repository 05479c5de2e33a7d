package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
)

func aead(t testing.TB, key []byte) *seal.AEAD {
	t.Helper()
	a, err := seal.NewAEAD(key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func readKey(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k, err := seal.ParseKey(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// openDirect opens a store with exactly protector p, bypassing the CLI.
func openDirect(t testing.TB, url string, p seal.Protector) (store.Store, error) {
	t.Helper()
	st, err := openWith(context.Background(), url, p)
	if err == nil {
		t.Cleanup(func() { store.Close(st) })
	}
	return st, err
}

// checkReads checks that every session of want reads, in full, through st.
func checkReads(t testing.TB, st store.Store, want map[store.Key]int) {
	t.Helper()
	for k, n := range want {
		got, err := st.Read(context.Background(), k)
		if err != nil || len(got) != n {
			t.Fatalf("Read %s: %d entries, %v; want %d", k, len(got), err, n)
		}
	}
}

// TestKeysRotateKeyFile: with the key file, rotation replaces it, keeps the
// old key in <keyfile>.old (another store still under it keeps opening),
// and leaves the store opening with the new key alone.
func TestKeysRotateKeyFile(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	keyFile := filepath.Join(config, "spool", "key")
	for name, url := range map[string]string{"file": "file:" + t.TempDir(), "sqlite": tempStoreURL(t)} {
		t.Run(name, func(t *testing.T) {
			other := "file:" + t.TempDir() // a second store under the same key file
			c := newCLI(t, nil)
			for _, u := range []string{url, other} {
				if code, _, errs := c.run("hello\nagain\n", "chat", "--store", u, "--session", "s", "--encrypt"); code != 0 {
					t.Fatalf("chat: %s", errs)
				}
			}
			oldKey := readKey(t, keyFile)
			code, out, errs := c.run("", "keys", "rotate", "--store", url)
			if code != 0 || !strings.Contains(out, "re-encrypted 1 sessions") || !strings.Contains(out, keyFile+".old") {
				t.Fatalf("rotate: %d %s %s", code, out, errs)
			}
			newKey := readKey(t, keyFile)
			if bytes.Equal(oldKey, newKey) {
				t.Fatal("the key file still holds the old key")
			}
			if _, err := os.Stat(keyFile + ".new"); !os.IsNotExist(err) {
				t.Fatalf("the pending key file is still there: %v", err)
			}
			olds, err := readOldKeys(keyFile + ".old")
			if err != nil || len(olds) == 0 || !bytes.Equal(olds[0], oldKey) {
				t.Fatalf(".old: %d keys, %v", len(olds), err)
			}
			want := map[store.Key]int{{Agent: "default", ID: "s"}: 6}
			st, err := openDirect(t, url, aead(t, newKey))
			if err != nil {
				t.Fatalf("the new key alone: %v", err)
			}
			checkReads(t, st, want)
			if _, err := openDirect(t, url, aead(t, oldKey)); err == nil {
				t.Fatal("the old key still opens the rotated store")
			}
			// Both stores open through the CLI.
			for _, u := range []string{url, other} {
				if code, out, errs := c.run("", "sessions", "show", "s", "--store", u, "--encrypt"); code != 0 || !strings.Contains(out, "again") {
					t.Fatalf("show %s after rotation: %d %s", u, code, errs)
				}
			}
		})
	}
	c := newCLI(t, nil)
	if code, _, _ := c.run("", "keys", "rotate", "--store", "memory:"); code != 2 {
		t.Fatal("rotation of memory: accepted")
	}
	if code, _, _ := c.run("", "keys", "frob"); code != 2 {
		t.Fatal("an unknown keys command accepted")
	}
}

// TestKeysRotateEnv: with SPOOL_ENCRYPTION_KEY, the new key goes to
// --new-key-file (required) and the user switches the variable to it.
func TestKeysRotateEnv(t *testing.T) {
	oldKey := seal.GenerateKey()
	url := "file:" + t.TempDir()
	c := newCLI(t, map[string]string{seal.EnvKey: seal.EncodeKey(oldKey)})
	chatSessions(t, c, url, chatScript{"s", []string{"hello"}})
	if code, _, errs := c.run("", "keys", "rotate", "--store", url); code != 2 || !strings.Contains(errs, "--new-key-file") {
		t.Fatalf("rotate without --new-key-file: %d %s", code, errs)
	}
	newFile := filepath.Join(t.TempDir(), "new-key")
	code, out, errs := c.run("", "keys", "rotate", "--store", url, "--new-key-file", newFile)
	if code != 0 || !strings.Contains(out, "export SPOOL_ENCRYPTION_KEY=") || strings.Contains(out, seal.EncodeKey(readKey(t, newFile))) {
		t.Fatalf("rotate: %d %s %s (the key itself must not be printed)", code, out, errs)
	}
	if code, _, errs := c.run("", "sessions", "show", "s", "--store", url); code != 1 || !strings.Contains(errs, "wrong key") {
		t.Fatalf("show with the old key: %d %s", code, errs)
	}
	c = newCLI(t, map[string]string{seal.EnvKey: seal.EncodeKey(readKey(t, newFile))})
	if code, out, _ := c.run("", "sessions", "show", "s", "--store", url); code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("show with the new key: %d %s", code, out)
	}
}

// TestKeysRotateRefuses: no store, an empty one, a plain one or one under
// another key is an error that makes no key and changes nothing.
func TestKeysRotateRefuses(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	keyFile := filepath.Join(config, "spool", "key")
	c := newCLI(t, nil)
	if code, _, errs := c.run("", "keys", "rotate", "--store", "file:"+t.TempDir()); code != 1 || !strings.Contains(errs, "no key to rotate") {
		t.Fatalf("rotate without any key: %d %s", code, errs)
	}
	if _, err := seal.LoadOrCreateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	before := spooltest.FileTree(t, config)
	plain := "file:" + t.TempDir()
	chatSessions(t, c, plain, chatScript{"s", []string{"hello"}})
	other := "file:" + t.TempDir()
	chatSessions(t, newCLI(t, map[string]string{seal.EnvKey: newKeyValue()}), other, chatScript{"s", []string{"hello"}})
	for _, tc := range []struct{ url, want string }{
		{"sqlite:" + filepath.Join(t.TempDir(), "none.db"), "no store to re-encrypt"},
		{"file:" + t.TempDir(), "holds no sessions"},
		{plain, "is not encrypted"},
		{other, "wrong key"},
	} {
		dir := strings.TrimPrefix(tc.url, "file:")
		var storeBefore map[string]string
		if strings.HasPrefix(tc.url, "file:") {
			storeBefore = spooltest.FileTree(t, dir)
		}
		if code, _, errs := c.run("", "keys", "rotate", "--store", tc.url); code != 1 || !strings.Contains(errs, tc.want) {
			t.Fatalf("rotate %s: %d %s; want %q", tc.url, code, errs, tc.want)
		}
		if storeBefore != nil {
			sameSnapshot(t, "a refused rotation", storeBefore, spooltest.FileTree(t, dir))
		}
	}
	sameSnapshot(t, "refused rotations (key files)", before, spooltest.FileTree(t, config))
}
