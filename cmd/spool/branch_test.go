package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatBranchesPiped: /retry, /edit (the next line is the new text from
// a pipe), /branches and its errors, as a script drives them; then the
// session as sessions show, history and fork see it.
func TestChatBranchesPiped(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	c := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + root})
	in := strings.Join([]string{
		"one", "two",
		"/retry",
		"/edit 1", "uno",
		"/branches",
		"/edit 9",
		"/branches 1 7",
		"/branches 1 1",
		"/history",
		"/quit",
	}, "\n") + "\n"
	code, out, errs := c.run(in, "chat", "--session", "tree")
	if code != 1 || !strings.Contains(errs, "2 command(s) failed") { // /edit 9 and /branches 1 7
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"echo: two\necho: two\n", // the answer, and the answer regenerated
		"echo: uno",
		"  1  2/2  uno",
		"user: one\nassistant: echo: one\nuser: two\nassistant: echo: two\n", // /history after going back
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"error: /edit: N must be a question's number, 1 to 1",
		"error: /branches: K must be a version of question 1, 1 to 2",
		"question 1 is at version 1 of 2",
	} {
		if !strings.Contains(errs, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, errs)
		}
	}

	// show: the active branch, each turn numbered with its versions; all
	// branches on request; JSON of the view.
	_, out, _ = c.run("", "sessions", "show", "tree")
	if strings.Contains(out, "uno") || !strings.Contains(out, "turn 1") || !strings.Contains(out, "version 1 of 2") || !strings.Contains(out, "switch") {
		t.Fatalf("show of the active branch:\n%s", out)
	}
	_, all, _ := c.run("", "sessions", "show", "tree", "--branches", "all")
	if !strings.Contains(all, "uno") || !strings.Contains(all, "(replaced)") || !strings.Contains(all, "turn –") || !strings.Contains(all, "edit") {
		t.Fatalf("show --branches all:\n%s", all)
	}
	_, js, _ := c.run("", "sessions", "show", "tree", "--json")
	_, jsAll, _ := c.run("", "sessions", "show", "tree", "--json", "--branches", "all")
	if n, m := strings.Count(js, "\n"), strings.Count(jsAll, "\n"); n >= m || strings.Contains(js, `"text":"uno"`) {
		t.Fatalf("show --json printed %d lines of %d (all), uno included: %v", n, m, strings.Contains(js, "uno"))
	}
	if code, _, errs := c.run("", "sessions", "show", "tree", "--branches", "some"); code != 2 || !strings.Contains(errs, "--branches must be active or all") {
		t.Fatalf("a bad --branches: %d %s", code, errs)
	}

	// fork at turn 1 by number, into a chosen id; its history is one turn.
	code, out, errs = c.run("", "sessions", "fork", "tree", "--at", "1", "--to", "tree-1")
	if code != 0 || !strings.Contains(out, "forked tree at turn ") || !strings.Contains(out, " into tree-1") {
		t.Fatalf("fork: %d %s %s", code, out, errs)
	}
	_, hist, _ := c.run("", "sessions", "history", "tree-1", "--json")
	var msgs []struct{ Role, Content string }
	if err := json.Unmarshal([]byte(hist), &msgs); err != nil || len(msgs) != 2 || msgs[1].Content != "echo: one" {
		t.Fatalf("the fork's history: %s (%v)", hist, err)
	}
	// by turn id, into a fresh id
	var first struct {
		TurnID string `json:"turnId"`
	}
	json.Unmarshal([]byte(strings.SplitN(js, "\n", 2)[0]), &first)
	if code, out, errs := c.run("", "sessions", "fork", "tree", "--at", first.TurnID); code != 0 || !strings.Contains(out, " into ses_") {
		t.Fatalf("fork by turn id: %d %s %s", code, out, errs)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"tree"}, "sessions fork needs --at TURN"},
		{[]string{"tree", "--at", "5"}, "--at 5: the active branch of session tree has turns 1 to 2"},
		{[]string{"tree", "--at", "nope"}, "--at nope: session tree has no such turn"},
		{[]string{"tree", "--at", "1", "--to", "tree-1"}, "--to tree-1: a session with that id exists"},
		{[]string{"tree", "--at", "1", "--to", "../x"}, "--to:"},
		{[]string{"nobody", "--at", "1"}, `session "nobody" not found`},
	} {
		if code, _, errs := c.run("", append([]string{"sessions", "fork"}, bad.args...)...); code == 0 || !strings.Contains(errs, bad.want) {
			t.Fatalf("sessions fork %v: exit %d, %q; want %q", bad.args, code, errs, bad.want)
		}
	}
}

// /edit as the last line of piped input has no new text to take: the edit
// is cancelled, saying so, not reported as "error: EOF", and nothing of the
// session changes.
func TestChatEditAtEndOfInput(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": tempStoreURL(t)})
	code, out, errs := c.run("one\n/edit", "chat", "--session", "s")
	if code != 0 || strings.Contains(errs, "EOF") || !strings.Contains(errs, "edit cancelled") {
		t.Fatalf("exit %d, stderr %q; want 0 and the edit cancelled, no EOF", code, errs)
	}
	if out != "echo: one\n" {
		t.Fatalf("stdout %q", out)
	}
	if _, show, _ := c.run("", "sessions", "show", "s", "--branches", "all"); strings.Count(show, "user ") != 1 {
		t.Fatalf("the session changed:\n%s", show)
	}
}
