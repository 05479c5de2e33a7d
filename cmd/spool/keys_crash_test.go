//go:build unix

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
