package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsRename: rename gives ls its title; a blank title, a missing
// title and an unknown session are refused with a message naming why.
func TestSessionsRename(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	c := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + root})
	if code, out, errs := c.run("where is order 1042?\n/quit\n", "chat", "--session", "orders"); code != 0 {
		t.Fatalf("chat: %d %s %s", code, out, errs)
	}
	code, out, errs := c.run("", "sessions", "rename", "orders", "Order", "1042")
	if code != 0 || out != "renamed orders: Order 1042\n" {
		t.Fatalf("rename: %d %q %s", code, out, errs)
	}
	if _, out, _ := c.run("", "sessions", "ls"); !strings.Contains(out, "Order 1042") || strings.Contains(out, "where is order") {
		t.Fatalf("ls after rename:\n%s", out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"orders"}, "sessions rename takes a session id and the new title"},
		{[]string{"orders", " "}, "the title is blank"},
		{[]string{"nobody", "x"}, `session "nobody" not found`},
	} {
		if code, _, errs := c.run("", append([]string{"sessions", "rename"}, bad.args...)...); code == 0 || !strings.Contains(errs, bad.want) {
			t.Errorf("sessions rename %v: exit %d, %q; want %q", bad.args, code, errs, bad.want)
		}
	}
}
