package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsCompact: compact a session made in chat, by hand, as a
// person does: it says what it covered and the sizes before and after;
// history then shows the summary and the turns kept, show still every turn
// with the compaction marked; a second run has nothing to do; bad flags
// are named.
func TestSessionsCompact(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	c := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + root, "SPOOL_MODEL": "echo"})
	in := "My name is Ana.\nI live in Porto.\nMy order is 1042.\nWhen does it arrive?\n/quit\n"
	if code, out, errs := c.run(in, "chat", "--session", "long"); code != 0 {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := c.run("", "sessions", "compact", "long", "--keep-turns", "1")
	if code != 0 {
		t.Fatalf("compact: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"compacted session long: turns 1 to 3 (3 turns, 3 newly summarized)",
		"history: 8 messages",
		"; 4 messages,",
		"- My name is Ana.\n- I live in Porto.\n- My order is 1042.",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("compact output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = c.run("", "sessions", "history", "long")
	want := "user: Summarize the earlier part of our conversation.\n" +
		"assistant: Summary of the earlier part of our conversation:\n\n- My name is Ana.\n- I live in Porto.\n- My order is 1042.\n" +
		"user: When does it arrive?\nassistant: echo: When does it arrive?\n"
	if out != want {
		t.Fatalf("history after compaction:\n%s\nwant\n%s", out, want)
	}
	_, out, _ = c.run("", "sessions", "show", "long")
	if !strings.Contains(out, "My name is Ana.") || !strings.Contains(out, "compaction") ||
		!strings.Contains(out, "turns 1 to 3 summarized (3 turns), in use") {
		t.Fatalf("show after compaction:\n%s", out)
	}
	if code, out, _ := c.run("", "sessions", "compact", "long", "--keep-turns", "1"); code != 0 || !strings.Contains(out, "nothing to compact") {
		t.Fatalf("second compact: exit %d\n%s", code, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"long", "--keep-turns", "0"}, "--keep-turns must be at least 1"},
		{[]string{"long", "--model", "nope:x"}, "--model"},
		{[]string{"missing"}, "missing"},
	} {
		if code, _, errs := c.run("", append([]string{"sessions", "compact"}, bad.args...)...); code == 0 || !strings.Contains(errs, bad.want) {
			t.Errorf("compact %v: exit %d, stderr %q, want it to name %q", bad.args, code, errs, bad.want)
		}
	}
}

// TestSessionsCompactApprovalPending: compact of a session that chat left
// with an approval pending fails naming the session and how to answer it,
// and writes nothing (its entry would split the waiting turn); once the
// approval is answered, it compacts.
func TestSessionsCompactApprovalPending(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	c := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + root, "SPOOL_MODEL": "echo"})
	c.run("one\ntwo\n/call save_note {\"text\":\"x\"}\n", "chat", "--session", "w")
	_, before, _ := c.run("", "sessions", "show", "w", "--json")
	code, _, errs := c.run("", "sessions", "compact", "w", "--keep-turns", "1")
	if code != 1 || !strings.Contains(errs, "session w waits on an approval: answer it first (spool chat --session w asks about it)") {
		t.Fatalf("compact with an approval pending: exit %d, stderr %q", code, errs)
	}
	if _, after, _ := c.run("", "sessions", "show", "w", "--json"); after != before {
		t.Fatalf("the refused compact wrote:\n%s\nwas\n%s", after, before)
	}
	if code, out, errs := c.run("y\n/quit\n", "chat", "--session", "w"); code != 0 || !strings.Contains(out, "saved note: x") {
		t.Fatalf("chat answering the approval: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := c.run("", "sessions", "compact", "w", "--keep-turns", "1"); code != 0 || !strings.Contains(out, "compacted session w: turns 1 to 2") {
		t.Fatalf("compact after the answer: exit %d\n%s\n%s", code, out, errs)
	}
}
