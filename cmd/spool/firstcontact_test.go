package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rivo/uniseg"

	"github.com/spool-go/spool/internal/spooltest"
)

// A read-only command on a store that does not exist says so and creates
// nothing; a command that writes may create its store.
func TestReadOnlyCommandsNeedAStore(t *testing.T) {
	dir := t.TempDir()
	missing := map[string]string{
		"file:" + filepath.Join(dir, "typo"):                         filepath.Join(dir, "typo"),
		"sqlite:" + filepath.Join(dir, "nonexistent", "dir", "x.db"): filepath.Join(dir, "nonexistent"),
	}
	for url, path := range missing {
		for _, args := range [][]string{
			{"sessions", "ls", "--store", url},
			{"sessions", "show", "x", "--store", url},
			{"sessions", "history", "x", "--store", url},
			{"sessions", "search", "hello", "--store", url},
			{"sessions", "export", "--all", "--store", url},
			{"sessions", "rm", "x", "--store", url},
			{"sessions", "prune", "--max-sessions", "1", "--store", url},
			{"migrate", "--from", url, "--to", "memory:"},
		} {
			code, out, errs := newCLI(t, nil).run("", args...)
			if code != 1 || !strings.Contains(errs, "no store at "+path) || out != "" {
				t.Errorf("%v: exit %d, stderr %q; want 1 and \"no store at %s\"", args, code, errs, path)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%v created %s", args, path)
			}
		}
	}
	target := filepath.Join(dir, "new")
	chatSessions(t, newCLI(t, nil), "file:"+target, chatScript{"first", []string{"hello"}})
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("chat did not create its store: %v", err)
	}
}

// An unknown session is an error in every command, said once, in words
// for the person at the terminal.
func TestUnknownSessionIsAnError(t *testing.T) {
	url := "file:" + t.TempDir()
	c := newCLI(t, map[string]string{"SPOOL_STORE": url})
	chatSessions(t, c, url, chatScript{"known", []string{"hello there"}})
	const want = "spool: session \"nope\" not found (agent \"default\")\n"
	for _, args := range [][]string{
		{"sessions", "search", "hello", "--session", "nope"},
		{"sessions", "export", "nope"},
		{"sessions", "show", "nope"},
		{"sessions", "history", "nope"},
		{"sessions", "rm", "known", "nope"},
	} {
		code, _, errs := c.run("", args...)
		if code != 1 || errs != want {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", args, code, errs, want)
		}
	}
	// rm with a typo among its ids deleted nothing.
	if code, out, _ := c.run("", "sessions", "show", "known"); code != 0 || !strings.Contains(out, "hello there") {
		t.Fatalf("rm deleted a session although another id was unknown")
	}
	if code, out, _ := c.run("", "sessions", "search", "hello", "--session", "known"); code != 0 || !strings.Contains(out, "known") {
		t.Fatalf("search of a known session: %d %s", code, out)
	}
}

// CLI errors name what to type: a flag or a variable, never a Go option,
// and a store's client library does not print its own log lines.
func TestErrorsNameFlags(t *testing.T) {
	code, _, errs := newCLI(t, nil).run("", "sessions", "ls", "--store", "nosuch:thing")
	if code != 2 || !strings.Contains(errs, "--store") || strings.Contains(errs, "imported") {
		t.Errorf("unknown store kind: exit %d, %q", code, errs)
	}
	out, _ := exec.Command(spooltest.Binary(t), "sessions", "ls", "--store", "redis://127.0.0.1:1/0").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "spool: ") {
		t.Errorf("a store that cannot be reached: want spool's one line, got:\n%s", out)
	}
}

// ls fits 100 columns with its columns aligned whatever the titles'
// scripts, says when there is nothing, and its next-page hint is a
// command that works as it is.
func TestSessionsLsLayout(t *testing.T) {
	url := "file:" + t.TempDir()
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	titles := []string{
		"注文番号1042の配送状況を教えてください。いつ届きますか？それとも遅れていますか",
		"🎉🎉 party planning with emoji 🎈🎈 and a rather long title that needs cutting",
		"plain ascii",
	}
	for i, title := range titles {
		chatSessions(t, c, url, chatScript{"s" + string(rune('a'+i)), []string{title}})
	}
	code, _, errs := c.run("", "sessions", "ls", "--store", url, "--agent", "other")
	if code != 0 || !strings.Contains(errs, "no sessions") {
		t.Fatalf("ls of nothing: exit %d, stderr %q", code, errs)
	}
	code, out, errs := c.run("", "sessions", "ls", "--store", url, "--limit", "3")
	if code != 0 {
		t.Fatalf("ls: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("ls printed %d lines:\n%s", len(lines), out)
	}
	col := -1
	for _, l := range lines {
		if w := uniseg.StringWidth(l); w > 100 {
			t.Errorf("a line %d columns wide: %q", w, l)
		}
		// LAST ACTIVITY starts at the same display column on every line.
		i := strings.Index(l, "LAST ACTIVITY")
		if i < 0 {
			i = strings.Index(l, time.Now().UTC().Format("2006-01-02T"))
		}
		c := uniseg.StringWidth(l[:i])
		if col >= 0 && c != col {
			t.Errorf("columns out of line (%d, not %d):\n%s", c, col, out)
		}
		col = c
	}

	code, out, _ = c.run("", "sessions", "ls", "--store", url, "--limit", "1", "--agent", "default")
	hint := out[strings.Index(out, "next page: ")+len("next page: "):]
	hint = strings.TrimSpace(hint)
	if code != 0 || !strings.Contains(hint, "--store "+url) || !strings.Contains(hint, "--agent default") || !strings.Contains(hint, "--limit 1") {
		t.Fatalf("next page hint %q does not repeat the flags", hint)
	}
	args := strings.Fields(strings.TrimPrefix(hint, "spool "))
	if code, out, errs := c.run("", args...); code != 0 || strings.Count(out, "\ns") != 1 {
		t.Fatalf("the hint's command: exit %d\n%s%s", code, out, errs)
	}

	code, out, _ = c.run("", "sessions", "ls", "--store", url, "--json")
	var page struct {
		Sessions []struct {
			LastActivity string `json:"lastActivity"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil || len(page.Sessions) != 3 {
		t.Fatalf("ls --json: %d %v %s", code, err, out)
	}
	if _, err := time.Parse(time.RFC3339, page.Sessions[0].LastActivity); err != nil {
		t.Errorf("--json times are not RFC 3339: %v", err)
	}
}

// prune --dry-run lists what would go and deletes nothing.
func TestPruneDryRun(t *testing.T) {
	url := "file:" + t.TempDir()
	c := newCLI(t, nil)
	chatSessions(t, c, url, chatScript{"old", []string{"one"}}, chatScript{"mid", []string{"two"}}, chatScript{"new", []string{"three"}})
	code, out, errs := c.run("", "sessions", "prune", "--store", url, "--max-sessions", "1", "--dry-run")
	if code != 0 || !strings.Contains(out, "old") || !strings.Contains(out, "mid") || strings.Contains(out, "new ") || !strings.Contains(errs, "would delete 2 sessions") {
		t.Fatalf("prune --dry-run: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = c.run("", "sessions", "ls", "--store", url)
	if code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("--dry-run deleted something:\n%s", out)
	}
	code, out, _ = c.run("", "sessions", "prune", "--store", url, "--max-sessions", "1")
	if code != 0 || !strings.Contains(out, "pruned 2 sessions") {
		t.Fatalf("prune: %s", out)
	}
}

// rm deletes several sessions at once.
func TestRmSeveral(t *testing.T) {
	url := "file:" + t.TempDir()
	c := newCLI(t, nil)
	chatSessions(t, c, url, chatScript{"a", []string{"one"}}, chatScript{"b", []string{"two"}}, chatScript{"c", []string{"three"}})
	code, out, errs := c.run("", "sessions", "rm", "a", "b", "--store", url)
	if code != 0 || out != "deleted a\ndeleted b\n" {
		t.Fatalf("rm a b: exit %d %q %q", code, out, errs)
	}
	code, out, _ = c.run("", "sessions", "ls", "--store", url)
	if code != 0 || !strings.Contains(out, "\nc ") || strings.Count(out, "\n") != 2 {
		t.Fatalf("after rm:\n%s", out)
	}
}
