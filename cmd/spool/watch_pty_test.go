//go:build unix

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store/pgstore/pgtest"
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

// A watch in one process follows a turn that another spool process runs,
// through a store that carries notifications between processes
// (Postgres): the other process's question, then its answer as the slow
// echo model streams it, once each.
func TestWatchAcrossProcesses(t *testing.T) {
	url := pgtest.URL(t)
	env := ptyEnv(t, t.TempDir(), "SPOOL_STORE="+url)
	chat := func(prompt string, args ...string) *exec.Cmd {
		cmd := exec.Command(spooltest.Binary(t), append([]string{"chat", "--session", "w1"}, args...)...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(prompt + "\n")
		return cmd
	}
	if out, err := chat("hello there").CombinedOutput(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	term := startTerminal(t, env, "sessions", "watch", "w1")
	term.expect("assistant: echo: hello there")
	question := "a question from another process, streamed word by word"
	other := chat(question, "--model", "echo:?delay=20ms")
	var otherOut spooltest.Buffer
	other.Stdout, other.Stderr = &otherOut, &otherOut
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	term.expect("user: " + question)
	term.expect("assistant: echo: a question")
	term.expect("word by word\n")
	if err := other.Wait(); err != nil {
		t.Fatalf("the other chat: %v\n%s", err, otherOut.String())
	}
	term.send("\x03")
	if code := term.wait(); code != 0 {
		t.Fatalf("Ctrl-C: exit %d", code)
	}
	text := term.text()
	for _, want := range []string{"user: " + question, "echo: " + question} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("%q shows %d times:\n%s", want, n, text)
		}
	}
}
