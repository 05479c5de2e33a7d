package main

import (
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/spooltest"
)

var hostileIDs = map[string]string{
	"parent folder":     "../x",
	"slash":             "a/b",
	"absolute":          "/etc/passwd",
	"backslash":         `a\b`,
	"NUL":               "a\x00b",
	"Cyrillic а":        "\u0430lpha",
	"fullwidth solidus": "a\uff0fb",
	"10 KB":             strings.Repeat("a", 10<<10),
	"dot dot":           "..",
}

// TestHostileCLI: hostile ids as sessions, agents and users, bogus cursors,
// another user's cursor, a huge prompt and deeply nested JSON through the
// commands: each is a clear error (exit 2 for bad arguments, 1 for bad
// input) that prints nothing of another user's, and the store's files do
// not change; the huge prompt is stored and read back.
func TestHostileCLI(t *testing.T) {
	dir := t.TempDir()
	url := "file:" + dir + "?retention=none"
	c := newCLI(t, map[string]string{"SPOOL_STORE": url})
	for _, user := range []string{"alice", "bob"} {
		for _, id := range []string{"one", "two"} {
			if code, _, errs := c.run("secret of "+user+" in "+id+"\n", "chat", "--user", user, "--session", id); code != 0 {
				t.Fatalf("seed: %s", errs)
			}
		}
	}
	before := spooltest.FileTree(t, dir)
	check := func(what string, wantCode int, stdin string, args ...string) string {
		t.Helper()
		code, out, errs := c.run(stdin, args...)
		if code != wantCode || errs == "" {
			t.Fatalf("%s: exit %d, stderr %.200q; want %d and a message", what, code, errs, wantCode)
		}
		if strings.Contains(out+errs, "secret of alice") {
			t.Fatalf("%s: printed alice's content", what)
		}
		return errs
	}

	for name, id := range hostileIDs {
		check(name+": show", 2, "", "sessions", "show", id, "--user", "bob")
		check(name+": history", 2, "", "sessions", "history", id, "--user", "bob")
		check(name+": rm", 2, "", "sessions", "rm", id, "--user", "bob")
		check(name+": export", 2, "", "sessions", "export", id, "--user", "bob")
		check(name+": search --session", 2, "", "sessions", "search", "x", "--session", id, "--user", "bob")
		check(name+": as the user", 2, "", "sessions", "ls", "--user", id)
		check(name+": as the agent", 2, "", "sessions", "ls", "--agent", id)
		if errs := check(name+": chat --session", 2, "hello\n", "chat", "--session", id, "--user", "bob"); !strings.Contains(errs, "spool: --session ") || !strings.Contains(errs, "A-Z a-z 0-9") && !strings.Contains(errs, "at most") {
			t.Fatalf("%s: chat --session: %q does not say what is wrong with --session", name, errs)
		}
		check(name+": chat --user", 2, "hello\n", "chat", "--user", id)
	}

	// Cursors: bogus ones, and alice's in bob's listing.
	for _, cur := range []string{"bogus", "!!!", strings.Repeat("A", 4000)} {
		check("bogus cursor", 2, "", "sessions", "ls", "--user", "bob", "--cursor", cur)
	}
	code, out, _ := c.run("", "sessions", "ls", "--user", "alice", "--limit", "1")
	i := strings.Index(out, "--cursor ")
	if code != 0 || i < 0 {
		t.Fatalf("alice's first page: %d %s", code, out)
	}
	aliceCursor := strings.TrimSpace(out[i+len("--cursor "):])
	check("bob with alice's cursor", 2, "", "sessions", "ls", "--user", "bob", "--cursor", aliceCursor)

	// Deeply nested JSON on import: refused, nothing written.
	deep := `{"id":"01JF00000000000000000000AA","timestamp":"2026-11-29T10:00:00Z","type":"user.message","data":` +
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000) + "}\n"
	check("import of 10,000-deep JSON", 1, deep, "sessions", "import")

	sameSnapshot(t, "hostile commands", before, spooltest.FileTree(t, dir))

	// A prompt of 1 MiB on one line is stored and comes back whole.
	huge := strings.Repeat("0123456789abcdef", 1<<20/16)
	if code, _, errs := c.run(huge+"\n", "chat", "--user", "bob", "--session", "huge"); code != 0 {
		t.Fatalf("chat with a 1 MiB prompt: %s", errs)
	}
	if code, out, _ := c.run("", "sessions", "show", "huge", "--user", "bob", "--json"); code != 0 || !strings.Contains(out, huge) {
		t.Fatalf("show of the 1 MiB prompt: %d, %d bytes", code, len(out))
	}
}
