package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/store/transfer"
)

// exportFile writes an export of n sessions of three entries each.
func exportFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	start := time.Now().Add(-time.Hour)
	for i := range n {
		for _, e := range storetest.Chain("", start.Add(time.Duration(i)*time.Second), 3) {
			if err := enc.Encode(transfer.Record{Agent: "default", Session: fmt.Sprintf("s%05d", i), Entry: e}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

// The counts a command reports are what it did, to the last session.
func TestTransferCountsAreExact(t *testing.T) {
	const n = 3000
	export := exportFile(t, n)
	url := "file:" + t.TempDir()
	in, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, nil)
	code, _, errs := c.run(string(in), "sessions", "import", "--store", url)
	if code != 0 || errs != fmt.Sprintf("imported %d sessions: %d entries added, 0 already there\n", n, 3*n) {
		t.Fatalf("import: exit %d, stderr %q", code, errs)
	}
	code, out, errs := c.run("", "sessions", "export", "--all", "--store", url)
	if code != 0 || errs != fmt.Sprintf("exported %d sessions, %d entries\n", n, 3*n) || strings.Count(out, "\n") != 3*n {
		t.Fatalf("export: exit %d, stderr %q, %d lines", code, errs, strings.Count(out, "\n"))
	}
	code, _, errs = c.run("", "migrate", "--from", url, "--to", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	if code != 0 || errs != fmt.Sprintf("migrated %d sessions: %d entries added, 0 already there\n", n, 3*n) {
		t.Fatalf("migrate: exit %d, stderr %q", code, errs)
	}
}

// Sessions idle longer than the target's TTL arrive whole, and the
// command says they are expired there.
func TestImportIntoATTLSaysWhatExpired(t *testing.T) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	long := time.Now().Add(-60 * 24 * time.Hour)
	for i, start := range []time.Time{long, time.Now().Add(-time.Hour)} {
		for _, e := range storetest.Chain("", start, 3000) {
			if err := enc.Encode(transfer.Record{Agent: "default", Session: fmt.Sprintf("s%d", i), Entry: e}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := newCLI(t, nil)
	code, _, errs := c.run(b.String(), "sessions", "import", "--store", "sqlite:"+filepath.Join(t.TempDir(), "x.db")+"?ttl=720h")
	want := "imported 2 sessions: 6000 entries added, 0 already there\n" +
		"1 of them had been idle longer than the target's ttl (720h0m0s), and are expired there: a new message starts each afresh\n"
	if code != 0 || errs != want {
		t.Fatalf("import: exit %d, stderr %q", code, errs)
	}
}
