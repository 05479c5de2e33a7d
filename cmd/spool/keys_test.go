package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
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

// The child side of TestKeysRotateCrash: SPOOL_ROTATE_CHILD holds the
// arguments of spool, separated by tabs; it runs them with the process's
// own environment.
const rotateChildEnv = "SPOOL_ROTATE_CHILD"

func TestKeysRotateChild(t *testing.T) {
	args := os.Getenv(rotateChildEnv)
	if args == "" {
		t.Skip("the child process of TestKeysRotateCrash")
	}
	env := &environ{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(context.Background(), env, strings.Split(args, "\t")))
}

const rotateSessions = 200

// seedEncrypted writes rotateSessions sessions of two entries under p.
func seedEncrypted(t *testing.T, url string, p seal.Protector) map[store.Key]int {
	t.Helper()
	st, err := openWith(context.Background(), url, p)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(st)
	want := map[store.Key]int{}
	for i := range rotateSessions {
		k := store.Key{Agent: "default", ID: fmt.Sprintf("s%03d", i)}
		for _, e := range storetest.Chain("", time.Now(), 2) {
			if err := st.Append(context.Background(), k, e); err != nil {
				t.Fatal(err)
			}
		}
		want[k] = 2
	}
	return want
}

// underKey counts the sessions whose first entry is sealed under the key
// with id keyID (an AEAD sealed value carries its key id in bytes 1-8).
func underKey(t *testing.T, url, keyID string) int {
	t.Helper()
	id := func(sealed []byte) string {
		if len(sealed) < 9 {
			return ""
		}
		return hex.EncodeToString(sealed[1:9])
	}
	n := 0
	if dir, ok := strings.CutPrefix(url, "file:"); ok {
		dir, _, _ = strings.Cut(dir, "?")
		files, _ := filepath.Glob(filepath.Join(dir, "default", "*.jsonl"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // replaced meanwhile
			}
			line, _, _ := bytes.Cut(b, []byte("\n"))
			if v, err := base64.RawStdEncoding.DecodeString(string(bytes.TrimPrefix(line, []byte("!")))); err == nil && id(v) == keyID {
				n++
			}
		}
		return n
	}
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT body FROM entries WHERE seq = 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		rows.Scan(&b)
		if id(b) == keyID {
			n++
		}
	}
	return n
}

// TestKeysRotateCrash kills spool keys rotate with SIGKILL part-way (it is
// held up on one session's lock: the file lock of the file store, SQLite's
// write lock), then: every session reads with the keyring of both keys;
// the same command finishes the job; every session reads with the new key
// alone.
func TestKeysRotateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	cases := map[string]struct {
		url     string
		keyFile bool // the key file, or SPOOL_ENCRYPTION_KEY and --new-key-file
	}{
		"file, key file": {"file:" + t.TempDir() + "?retention=none", true},
		"sqlite, env":    {tempStoreURL(t), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			config := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", config)
			keyFile := filepath.Join(config, "spool", "key")
			oldKey, err := seal.LoadOrCreateKeyFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			want := seedEncrypted(t, tc.url, aead(t, oldKey))
			args := []string{"keys", "rotate", "--store", tc.url}
			newPath := keyFile + ".new"
			var childEnv []string
			if !tc.keyFile {
				os.Remove(keyFile)
				newPath = filepath.Join(t.TempDir(), "new-key")
				args = append(args, "--new-key-file", newPath)
				childEnv = append(childEnv, seal.EnvKey+"="+seal.EncodeKey(oldKey))
			}

			release := holdUp(t, tc.url)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKeysRotateChild$", "-test.count=1")
			cmd.Env = append(append(os.Environ(), childEnv...), rotateChildEnv+"="+strings.Join(args, "\t"))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the rotation is part-way, the new key saved and
			// half of the sessions rewritten under it, and kill it there.
			var newID string
			deadline := time.Now().Add(60 * time.Second)
			for {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the rotation made no progress:\n%s", out.String())
				}
				time.Sleep(2 * time.Millisecond)
				if newID == "" {
					if b, err := os.ReadFile(newPath); err == nil {
						if k, err := seal.ParseKey(string(b)); err == nil {
							newID = aead(t, k).KeyID()
						}
					}
				}
				if newID != "" && underKey(t, tc.url, newID) >= rotateSessions/2 {
					break
				}
			}
			cmd.Process.Signal(unix.SIGKILL)
			cmd.Wait()
			release()
			newKey := readKey(t, newPath)
			done := underKey(t, tc.url, aead(t, newKey).KeyID())
			if done == 0 || done == rotateSessions {
				t.Fatalf("%d of %d sessions under the new key: not part-way", done, rotateSessions)
			}
			t.Logf("killed with %d of %d sessions under the new key", done, rotateSessions)

			// Every session reads with both keys; not with either alone.
			ring, _ := seal.NewKeyring(aead(t, newKey), aead(t, oldKey))
			st, err := openDirect(t, tc.url, ring)
			if err != nil {
				t.Fatal(err)
			}
			checkReads(t, st, want)
			store.Close(st)
			if _, err := openDirect(t, tc.url, aead(t, newKey)); err == nil {
				t.Fatal("the new key alone opened a half-rotated store")
			}

			// The same command again finishes it.
			vars := map[string]string{}
			if !tc.keyFile {
				vars[seal.EnvKey] = seal.EncodeKey(oldKey)
			} else {
				// Meanwhile the CLI reads with both keys on its own.
				if code, _, errs := newCLI(t, vars).run("", "sessions", "show", "s000", "--store", tc.url, "--encrypt"); code != 0 || !strings.Contains(errs, "rotation is not finished") {
					t.Fatalf("show during an interrupted rotation: %d %s", code, errs)
				}
			}
			code, stdout, errs := newCLI(t, vars).run("", args...)
			wantMsg := "re-encrypted " + strconv.Itoa(rotateSessions-done) + " sessions"
			if code != 0 || !strings.Contains(stdout, wantMsg) {
				t.Fatalf("rotate again: %d %s %s; want %q", code, stdout, errs, wantMsg)
			}
			if tc.keyFile && !bytes.Equal(readKey(t, keyFile), newKey) {
				t.Fatal("the key file does not hold the new key")
			}
			st, err = openDirect(t, tc.url, aead(t, newKey))
			if err != nil {
				t.Fatalf("the new key alone after the rotation: %v", err)
			}
			checkReads(t, st, want)
		})
	}
}

// holdUp makes a rotation wait in the middle session (sessions are
// rewritten in id order): for a file store it holds that session's file
// lock; for SQLite it adds a trigger that spins in the middle of that
// session's transaction, so the kill lands inside one. The returned func
// lets go (and drops the trigger).
func holdUp(t *testing.T, url string) func() {
	t.Helper()
	middle := fmt.Sprintf("s%03d", rotateSessions/2)
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TRIGGER hold_up BEFORE UPDATE ON entries
			WHEN new.sid = (SELECT sid FROM sessions WHERE id = '` + middle + `')
			AND (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000000) SELECT count(*) FROM c) > 0
			BEGIN SELECT 1; END`); err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := db.Exec(`DROP TRIGGER hold_up`); err != nil {
				t.Error(err)
			}
			db.Close()
		}
	}
	dir, _, _ := strings.Cut(strings.TrimPrefix(url, "file:"), "?")
	f, err := os.OpenFile(filepath.Join(dir, "default", middle+".jsonl"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}
