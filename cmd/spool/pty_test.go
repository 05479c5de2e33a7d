//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/spool-go/spool/internal/spooltest"
)

// terminal runs the spool binary on a pseudo-terminal, as a person at a
// terminal does: keys are bytes written to it, the screen is what it
// writes back.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer // everything written to the terminal
	seen int          // how much of out expect has consumed
	done chan struct{}
}

// ptyEnv is the environment of a terminal test: a home and data folder of
// its own (so no ~/.inputrc and no real sessions), and no SPOOL_* or
// NO_COLOR from the caller.
func ptyEnv(t *testing.T, data string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SPOOL_") || k == "NO_COLOR" || k == "HOME" || k == "XDG_DATA_HOME" || k == "TERM" || k == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"HOME=" + data, "XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + data, "TERM=xterm-256color"}, extra...)...)
}

func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(spooltest.Binary(t), args...)
	cmd.Env = env
	return startCommand(t, cmd)
}

// startCommand starts cmd on a new terminal, for whichever of its stdin,
// stdout and stderr it has not set.
func startCommand(t *testing.T, cmd *exec.Cmd) *terminal {
	t.Helper()
	// The terminal is the controlling one of the child's first standard
	// file that is on it.
	ctty := 0
	switch {
	case cmd.Stdin == nil:
	case cmd.Stdout == nil:
		ctty = 1
	default:
		ctty = 2
	}
	f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: 40, Cols: 120}, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: ctty})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, pty: f, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				close(term.done)
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		f.Close()
		if t.Failed() {
			text := term.text()
			t.Logf("the terminal showed (the end, without escapes):\n%s", text[max(0, len(text)-3000):])
		}
	})
	return term
}

// screen is everything written to the terminal, escape sequences
// included.
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// ansiRE matches the terminal's escape sequences: CSI, OSC and two-byte
// ones.
var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[^\[\]]`)

// text is the screen without escape sequences and carriage returns.
func (term *terminal) text() string {
	return strings.ReplaceAll(ansiRE.ReplaceAllString(term.screen(), ""), "\r", "")
}

// send types keys.
func (term *terminal) send(keys string) {
	term.t.Helper()
	if _, err := term.pty.Write([]byte(keys)); err != nil {
		term.t.Fatalf("typing %q: %v", keys, err)
	}
}

// expect waits until the terminal shows want (escape sequences aside)
// after what earlier expects consumed, and consumes up to it.
func (term *terminal) expect(want string) {
	term.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		text := term.text()
		if i := strings.Index(text[min(term.seen, len(text)):], want); i >= 0 {
			term.seen += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the terminal never showed %q", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits for the program to exit and returns its status.
func (term *terminal) wait() int {
	term.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- term.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		term.t.Fatal("the program did not exit")
	}
	return term.cmd.ProcessState.ExitCode()
}

// userPrompts returns the text of every user.message in the store's
// transcripts, and fails the test if a transcript holds an escape byte.
func userPrompts(t *testing.T, root string) []string {
	t.Helper()
	var prompts []string
	filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(b, "\x1b\x03\x04") || bytes.Contains(b, []byte(`\u001b`)) {
			t.Errorf("%s holds a control character from the terminal:\n%q", path, b)
		}
		for line := range bytes.SplitSeq(bytes.TrimSpace(b), []byte("\n")) {
			var e struct {
				Type string `json:"type"`
				Data struct {
					Text string `json:"text"`
				} `json:"data"`
			}
			if json.Unmarshal(line, &e) == nil && e.Type == "user.message" {
				prompts = append(prompts, e.Data.Text)
			}
		}
		return nil
	})
	return prompts
}

const (
	keyLeft  = "\x1b[D"
	keyUp    = "\x1b[A"
	keyHome  = "\x1b[H"
	keyEnd   = "\x1b[F"
	keyEnter = "\r"
	ctrlA    = "\x01"
	ctrlC    = "\x03"
	ctrlD    = "\x04"
	ctrlE    = "\x05"
	ctrlU    = "\x15"
	ctrlW    = "\x17"
)

// Line editing in spool chat: cursor keys, Home/End, the Emacs keys, a
// pasted block as one prompt, the history of earlier prompts across runs,
// Ctrl-D to leave; and not one escape byte in a transcript.
func TestChatLineEditing(t *testing.T) {
	data := t.TempDir()
	root := filepath.Join(data, "sessions")
	env := ptyEnv(t, data, "SPOOL_STORE=file:"+root)
	term := startTerminal(t, env, "chat", "--session", "edits")
	term.expect("> ")

	steps := []struct{ keys, prompt string }{
		{"abc" + keyLeft + "X" + keyEnter, "abXc"},
		{keyUp + keyEnter, "abXc"}, // the previous prompt, recalled
		{"hello world" + ctrlW + "there" + keyEnter, "hello there"},
		{"mid" + ctrlA + "<" + ctrlE + ">" + keyEnter, "<mid>"},
		{"junk" + ctrlU + "bcd" + keyHome + "a" + keyEnd + "e" + keyEnter, "abcde"},
		{"\x1b[200~first line\rsecond line\x1b[201~" + keyEnter, "first line\nsecond line"},
		{"\x1b[15~f5 pressed" + keyEnter, "f5 pressed"}, // an unbound key types nothing
	}
	for _, s := range steps {
		term.send(s.keys)
		term.expect("echo: " + strings.ReplaceAll(s.prompt, "\n", " "))
		term.expect("> ")
	}
	term.send(ctrlD)
	if code := term.wait(); code != 0 {
		t.Fatalf("Ctrl-D on an empty line: exit %d, want 0", code)
	}

	var want []string
	for _, s := range steps {
		want = append(want, s.prompt)
	}
	if got := userPrompts(t, root); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored prompts %q, want %q", got, want)
	}

	hist := filepath.Join(data, "spool", "history", "default.prompts")
	fi, err := os.Stat(hist)
	if err != nil {
		t.Fatalf("no prompt history: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", hist, fi.Mode().Perm())
	}
	if fi, err := os.Stat(filepath.Dir(hist)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the history folder: %v %v, want mode 0700", fi.Mode().Perm(), err)
	}

	// The next run recalls the last prompt of this one.
	term = startTerminal(t, env, "chat", "--session", "edits")
	term.expect("> ")
	term.send(keyUp + keyEnter)
	term.expect("echo: f5 pressed")
	term.send("/quit" + keyEnter)
	if code := term.wait(); code != 0 {
		t.Fatalf("/quit: exit %d", code)
	}
	if got := userPrompts(t, root); len(got) != len(want)+1 || got[len(got)-1] != "f5 pressed" {
		t.Errorf("after the second run: %q", got)
	}
}

// At an approval question, Ctrl-C and a typed message lose nothing
// silently: the message is said not to be sent, and is not; /quit leaves
// the call pending.
func TestChatApprovalKeepsTypedMessages(t *testing.T) {
	data := t.TempDir()
	root := filepath.Join(data, "sessions")
	env := ptyEnv(t, data, "SPOOL_STORE=file:"+root)
	term := startTerminal(t, env, "chat", "--session", "ask")
	term.expect("> ")
	term.send(`/call save_note {"text":"milk"}` + keyEnter)
	term.expect("[a]lways for this session: ")
	term.send(ctrlC)
	term.expect("/quit leaves the call pending")
	term.send("where is my parcel" + keyEnter)
	term.expect(`not sent: "where is my parcel"`)
	term.send("y" + keyEnter)
	term.expect("saved note: milk")
	term.expect("> ")
	term.send(`/call save_note {"text":"eggs"}` + keyEnter)
	term.expect("[a]lways for this session: ")
	term.send("/quit" + keyEnter)
	term.expect("an approval is still pending in session ask")
	if code := term.wait(); code != 0 {
		t.Fatalf("/quit at an approval: exit %d, want 0 in a terminal", code)
	}
	for _, p := range userPrompts(t, root) {
		if strings.Contains(p, "parcel") {
			t.Errorf("the message typed at the question reached the transcript: %q", p)
		}
	}
}

var colourRE = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|38;5;[0-9]+|9[0-7])m`)

// In a terminal the answer's Markdown is rendered and lines have colour;
// NO_COLOR keeps the rendering and drops the colour.
func TestChatTerminalColourAndMarkdown(t *testing.T) {
	for _, noColour := range []bool{false, true} {
		data := t.TempDir()
		env := ptyEnv(t, data, "SPOOL_STORE=memory:")
		if noColour {
			env = append(env, "NO_COLOR=1")
		}
		term := startTerminal(t, env, "chat")
		term.expect("> ")
		term.send("some **bold** and `code`" + keyEnter)
		term.expect("echo: some bold and")
		term.expect("code")
		term.expect("> ")
		term.send("/quit" + keyEnter)
		term.wait()
		screen := term.screen()
		answer := screen[strings.LastIndex(screen, "echo:"):]
		answer = answer[:strings.Index(answer, "\n")]
		if !strings.Contains(answer, "\x1b[1mbold") && !strings.Contains(answer, ";1mbold") {
			t.Errorf("NO_COLOR=%v: the answer's bold is not bold:\n%q", noColour, answer)
		}
		if has := colourRE.MatchString(screen); has == noColour {
			t.Errorf("NO_COLOR=%v: colour %v on the screen:\n%q", noColour, has, answer)
		}
	}
}

// In a terminal, ls shows relative times and rm asks before it deletes.
func TestSessionsInTerminal(t *testing.T) {
	data := t.TempDir()
	url := "file:" + filepath.Join(data, "sessions")
	chatSessions(t, newCLI(t, nil), url, chatScript{"keep", []string{"one"}}, chatScript{"drop", []string{"two"}})
	env := ptyEnv(t, data, "SPOOL_STORE="+url)

	term := startTerminal(t, env, "sessions", "ls")
	term.expect("just now")
	term.wait()

	term = startTerminal(t, env, "sessions", "rm", "drop")
	term.expect("delete 1 session(s): drop? [y/N] ")
	term.send("n" + keyEnter)
	term.expect("nothing deleted")
	term.wait()
	term = startTerminal(t, env, "sessions", "rm", "drop")
	term.expect("[y/N] ")
	term.send("y" + keyEnter)
	term.expect("deleted drop")
	term.wait()
	term = startTerminal(t, env, "sessions", "rm", "keep", "--yes")
	term.expect("deleted keep")
	if code := term.wait(); code != 0 {
		t.Fatalf("rm --yes: exit %d", code)
	}
}

// Long work shows a bar with its total on stderr in a terminal, and
// ends it at the exact count.
func TestProgressInTerminal(t *testing.T) {
	const n = 400
	data := t.TempDir()
	url := "file:" + filepath.Join(data, "sessions")
	export := exportFile(t, n)
	env := ptyEnv(t, data, "SPOOL_STORE="+url)

	run := func(stdin, stdout string, args ...string) *terminal {
		t.Helper()
		cmd := exec.Command(spooltest.Binary(t), args...)
		cmd.Env = env
		if stdin != "" {
			f, err := os.Open(stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = f
		}
		if stdout != "" {
			f, err := os.Create(stdout)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdout = f
		}
		return startCommand(t, cmd)
	}
	term := run(export, "", "sessions", "import")
	term.expect("importing")
	term.expect(fmt.Sprintf("imported %d sessions", n))
	if code := term.wait(); code != 0 {
		t.Fatalf("import: exit %d", code)
	}
	if !strings.Contains(term.text(), "100%") {
		t.Errorf("import showed no bar at 100%%:\n%s", term.text())
	}

	term = run("", filepath.Join(data, "out.jsonl"), "sessions", "export", "--all")
	term.expect(fmt.Sprintf("%d/%d", n, n))
	term.expect(fmt.Sprintf("exported %d sessions", n))
	if code := term.wait(); code != 0 {
		t.Fatalf("export: exit %d", code)
	}
	if !strings.Contains(term.text(), "sessions/s") {
		t.Errorf("export showed no rate:\n%s", term.text())
	}
}

// /edit puts the old question in the line editor, where it is edited like
// any line (here: the cursor moved, a word changed, text added at the
// end), and the answer starts again from the edited question; /retry and
// /branches work on the same terminal.
func TestChatEditInTheLineEditor(t *testing.T) {
	data := t.TempDir()
	root := filepath.Join(data, "sessions")
	env := ptyEnv(t, data, "SPOOL_STORE=file:"+root)
	term := startTerminal(t, env, "chat", "--session", "tree")
	term.expect("> ")
	term.send("where is my parcel" + keyEnter)
	term.expect("echo: where is my parcel")
	term.expect("> ")
	term.send("thanks" + keyEnter)
	term.expect("echo: thanks")
	term.expect("> ")

	term.send("/edit 1" + keyEnter)
	term.expect("edit> where is my parcel") // the old text, ready to edit
	term.send(ctrlW + "order" + ctrlA + "so, " + ctrlE + " 1042?" + keyEnter)
	term.expect("echo: so, where is my order 1042?")
	term.expect("> ")
	term.send("/retry" + keyEnter)
	term.expect("echo: so, where is my order 1042?")
	term.expect("> ")
	term.send("/branches" + keyEnter)
	term.expect("1  3/3  so, where is my order 1042?")
	term.expect("> ")
	term.send("/branches 1 1" + keyEnter)
	term.expect("question 1 is at version 1 of 3")
	term.expect("> ")
	// A Ctrl-C in the editor cancels the edit, and writes nothing.
	term.send("/edit" + keyEnter)
	term.expect("edit> thanks")
	term.send(ctrlC)
	term.expect("(edit cancelled)")
	term.expect("> ")
	term.send("/quit" + keyEnter)
	if code := term.wait(); code != 0 {
		t.Fatalf("/quit: exit %d", code)
	}
	want := []string{"where is my parcel", "thanks", "so, where is my order 1042?", "so, where is my order 1042?"}
	if got := userPrompts(t, root); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored prompts %q, want %q", got, want)
	}
}

// Letters from U+0080 to U+00FF (é, ä, ß, ñ, …) are typed as text, in a
// new prompt and in /edit: the editor took each for a Meta key, so é
// typed nothing, ä killed a word and ß pasted the last prompt's last
// word.
func TestChatLatinLettersAreText(t *testing.T) {
	data := t.TempDir()
	root := filepath.Join(data, "sessions")
	env := ptyEnv(t, data, "SPOOL_STORE=file:"+root)
	term := startTerminal(t, env, "chat", "--session", "latin")
	term.expect("> ")
	term.send("one two" + keyEnter)
	term.expect("echo: one two")
	term.expect("> ")
	const typed = "café Grüße, señor: ä ö ø å à"
	term.send(typed + keyEnter)
	term.expect("echo: " + typed)
	term.expect("> ")
	term.send("/edit" + keyEnter)
	term.expect("edit> " + typed)
	term.send(keyLeft + "é" + keyEnter)
	term.expect("echo: café Grüße, señor: ä ö ø å éà")
	term.expect("> ")
	term.send("/quit" + keyEnter)
	if code := term.wait(); code != 0 {
		t.Fatalf("/quit: exit %d", code)
	}
	want := []string{"one two", typed, "café Grüße, señor: ä ö ø å éà"}
	if got := userPrompts(t, root); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored prompts %q, want %q", got, want)
	}
}

// display is what a terminal of cols columns shows after the program's
// output: a small emulator of what the line editor and chat write
// (text, CR, LF, backspace, the cursor moves CSI A/B/C/D, the erases
// CSI K/J; other sequences change nothing on it). Rows grow downwards
// without a limit, as the scrollback would hold them.
func (term *terminal) display(cols int) string {
	var rows [][]rune
	r, c := 0, 0 // c == cols: past the last column, wrapping on the next character
	row := func() []rune {
		for len(rows) <= r {
			rows = append(rows, nil)
		}
		return rows[r]
	}
	screen := term.screen()
	for i := 0; i < len(screen); {
		ch, size := utf8.DecodeRuneInString(screen[i:])
		i += size
		switch {
		case ch == '\r':
			c = 0
		case ch == '\n':
			r++
		case ch == '\b':
			c = max(0, min(c, cols-1)-1)
		case ch == '\x1b' && i < len(screen) && screen[i] == '[':
			j := i + 1
			for j < len(screen) && (screen[j] < 0x40 || screen[j] > 0x7e) {
				j++
			}
			if j == len(screen) {
				i = j
				continue
			}
			params, final := screen[i+1:j], screen[j]
			i = j + 1
			n, err := strconv.Atoi(params)
			if err != nil || n < 1 {
				n = 1
			}
			c = min(c, cols-1)
			switch final {
			case 'A':
				r = max(0, r-n)
			case 'B':
				r += n
			case 'C':
				c = min(cols-1, c+n)
			case 'D':
				c = max(0, c-n)
			case 'K':
				if l := row(); c < len(l) {
					rows[r] = l[:c]
				}
			case 'J':
				if l := row(); c < len(l) {
					rows[r] = l[:c]
				}
				rows = rows[:r+1]
			}
		case ch == '\x1b':
			i = min(len(screen), i+1) // a two-byte sequence
		case ch < ' ':
		default:
			if c == cols {
				r, c = r+1, 0
			}
			l := row()
			for len(l) <= c {
				l = append(l, ' ')
			}
			l[c] = ch
			rows[r] = l
			c++
		}
	}
	lines := make([]string, len(rows))
	for k, l := range rows {
		lines[k] = strings.TrimRight(string(l), " ")
	}
	return strings.Join(lines, "\n")
}

// An approval question wider than the terminal (a call with long
// arguments) is on the screen once: the line editor redrew its prompt
// from the start of the prompt's last row, leaving a copy of the rows
// above at each redraw.
func TestChatLongApprovalQuestionShownOnce(t *testing.T) {
	data := t.TempDir()
	env := ptyEnv(t, data, "SPOOL_STORE=memory:")
	term := startTerminal(t, env, "chat")
	term.expect("> ")
	note := strings.Repeat("a long note to save for later, ", 6) + "the end"
	term.send(`/call save_note {"text":"` + note + `"}` + keyEnter)
	term.expect("[a]lways for this session: ")
	term.send("x")
	term.send("\x7f") // typed and rubbed out: two redraws
	term.send("y" + keyEnter)
	term.expect("saved note: a long note")
	term.expect("> ")
	term.send("/quit" + keyEnter)
	term.wait()
	if got := term.display(120); strings.Count(got, "allow save_note") != 1 {
		t.Errorf("the question is on the screen %d times, want once:\n%s", strings.Count(got, "allow save_note"), got)
	}
}

// An answer is wrapped at the terminal's width when it is written, not
// when chat started: a terminal made narrower (a window resized, a pane
// split) got lines as wide as the old one, cut by the terminal
// mid-word. A terminal of 20 columns or fewer got lines of 100.
func TestChatWrapsAtTheWidthOfNow(t *testing.T) {
	for _, cols := range []int{50, 16} {
		data := t.TempDir()
		env := ptyEnv(t, data, "SPOOL_STORE=memory:")
		term := startTerminal(t, env, "chat")
		term.expect("> ")
		if err := pty.Setsize(term.pty, &pty.Winsize{Rows: 40, Cols: uint16(cols)}); err != nil {
			t.Fatal(err)
		}
		words := strings.TrimSpace(strings.Repeat("parcel ", 30))
		term.send(words + keyEnter)
		term.expect("echo: parcel")
		term.expect("> ")
		term.send("/quit" + keyEnter)
		term.wait()
		text := term.text()
		answer := text[strings.LastIndex(text, "echo: parcel"):]
		answer = answer[:strings.Index(answer, "> ")]
		for line := range strings.SplitSeq(answer, "\n") {
			if len(line) > cols {
				t.Errorf("a line of the answer is %d columns wide on a %d-column terminal:\n%s", len(line), cols, answer)
				break
			}
		}
	}
}

// On a terminal with TERM=dumb (Emacs's M-x shell), chat writes no escape
// sequence: the prompts as text, the terminal's own line editing, the
// answer as the model wrote it; /edit shows the old text to copy, and
// Ctrl-D leaves. The line editor's redraws and the rendering's bold
// were shown there as text.
func TestChatDumbTerminal(t *testing.T) {
	data := t.TempDir()
	root := filepath.Join(data, "sessions")
	env := ptyEnv(t, data, "SPOOL_STORE=file:"+root, "TERM=dumb")
	term := startTerminal(t, env, "chat", "--session", "dumb")
	term.expect("> ")
	term.send("some **bold**" + keyEnter)
	term.expect("echo: some **bold**")
	term.expect("> ")
	term.send("/edit" + keyEnter)
	term.expect("some **bold**")
	term.expect("edit> ")
	term.send("plain" + keyEnter)
	term.expect("echo: plain")
	term.expect("> ")
	term.send(ctrlD)
	if code := term.wait(); code != 0 {
		t.Fatalf("Ctrl-D: exit %d, want 0", code)
	}
	if screen := term.screen(); strings.Contains(screen, "\x1b") {
		t.Errorf("an escape sequence on a dumb terminal:\n%q", screen)
	}
	if got := userPrompts(t, root); strings.Join(got, "|") != "some **bold**|plain" {
		t.Errorf("stored prompts %q", got)
	}
}
