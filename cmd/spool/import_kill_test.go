//go:build !windows

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/store/transfer"
)

// TestImportKilled kills spool sessions import (SIGKILL, as a crash or an
// OOM kill would) while it writes, then runs it again on the same input:
// the second run exits 0 and adds exactly what the first did not, a third
// adds nothing and says so, and an export of the target is the input,
// every session whole.
func TestImportKilled(t *testing.T) {
	const sessions, per = 300, 40
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	for i := range sessions {
		for _, e := range storetest.Chain("", start.Add(time.Duration(i)*time.Second), per) {
			if err := enc.Encode(transfer.Record{Agent: "kill", Session: fmt.Sprint("s", i), Entry: e}); err != nil {
				t.Fatal(err)
			}
		}
	}
	lines := strings.SplitAfter(in.String(), "\n")
	half := strings.Join(lines[:len(lines)/2], "")
	input := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(input, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{
		"file":   "file:" + t.TempDir(),
		"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "spool.db"),
	}
	if os.Getenv("SPOOL_TEST_POSTGRES") != "" {
		targets["postgres"] = teststores.PostgresURL(t)
	}
	bin := spooltest.Binary(t)
	c := newCLI(t, nil)
	for name, url := range targets {
		t.Run(name, func(t *testing.T) {
			// The first run gets half the input through a pipe left open,
			// so it cannot end by itself; it is killed once the target
			// holds some of it, wherever its writing is then.
			cmd := exec.Command(bin, "sessions", "import", "--store", url)
			w, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errs spooltest.Buffer
			cmd.Stderr = &errs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = w.Write([]byte(half)) }()
			for {
				_, out, _ := c.run("", "sessions", "ls", "--store", url, "--agent", "kill", "--json")
				if strings.Contains(out, `"id"`) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			w.Close()

			again := func() (added, there int) {
				t.Helper()
				cmd := exec.Command(bin, "sessions", "import", "--store", url)
				f, err := os.Open(input)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				cmd.Stdin = f
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("import after the kill: %v\n%s", err, out)
				}
				var n int
				if _, err := fmt.Sscanf(string(out[bytes.LastIndex(out, []byte("imported")):]), "imported %d sessions: %d entries added, %d already there", &n, &added, &there); err != nil || n != sessions {
					t.Fatalf("import output %q: %v", out, err)
				}
				return added, there
			}
			added, there := again()
			if added+there != sessions*per || there == 0 {
				t.Fatalf("import after the kill: %d added, %d already there; want %d in all, some there", added, there, sessions*per)
			}
			if added, there := again(); added != 0 || there != sessions*per {
				t.Fatalf("a third import: %d added, %d already there; want 0 and %d", added, there, sessions*per)
			}
			code, out, errOut := c.run("", "sessions", "export", "--all", "--store", url, "--agent", "kill")
			if code != 0 {
				t.Fatalf("export: %s", errOut)
			}
			got := strings.SplitAfter(out, "\n")
			want := slices.Clone(lines)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("the target's export (%d lines) is not the input (%d lines)", len(got), len(want))
			}
		})
	}
}
