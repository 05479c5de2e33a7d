//go:build unix

package main

import (
	"path/filepath"
	"testing"
)

// spool sessions watch in a terminal, as a person runs it: the stored
// turns, then Ctrl-C ends it with status 0.
func TestWatchInTerminal(t *testing.T) {
	data := t.TempDir()
	url := "file:" + filepath.Join(data, "sessions")
	chatSessions(t, newCLI(t, nil), url, chatScript{"w1", []string{"hello there"}})
	env := ptyEnv(t, data, "SPOOL_STORE="+url)
	term := startTerminal(t, env, "sessions", "watch", "w1")
	term.expect("user: hello there")
	term.expect("assistant: echo: hello there")
	term.send("\x03")
	if code := term.wait(); code != 0 {
		t.Fatalf("Ctrl-C: exit %d", code)
	}
}
