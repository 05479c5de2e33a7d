package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/reeflective/readline"
	"github.com/reeflective/readline/inputrc"
)

// errInterrupt is Ctrl-C while chat waits for a line.
var errInterrupt = errors.New("interrupted")

// input is where chat's lines come from: a line editor on a terminal, or
// the lines of whatever stdin is.
type input interface {
	// Line returns the next line, showing prompt on a terminal. It fails
	// with io.EOF at the end of input, and with errInterrupt on Ctrl-C.
	Line(prompt string) (string, error)
	// Answer is Line for the answer to a question (an approval): it is
	// kept out of the prompt history.
	Answer(prompt string) (string, error)
	// Edit is Line with text already typed, for the person to change: a
	// question being edited. From a pipe, the next line is the new text.
	Edit(prompt, text string) (string, error)
}

// maxPromptLine is the longest line chat reads from a pipe as a prompt.
const maxPromptLine = 16 << 20

// pipeInput reads lines from a pipe or a file. Lines are read ahead, so
// that a Ctrl-C (interrupts) while one is awaited is noticed.
type pipeInput struct {
	lines      <-chan string
	interrupts <-chan os.Signal
	err        error // why input ended early; set before lines closes
}

func newPipeInput(r io.Reader, interrupts <-chan os.Signal) *pipeInput {
	out := make(chan string)
	p := &pipeInput{lines: out, interrupts: interrupts}
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), maxPromptLine)
		for sc.Scan() {
			out <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("a line of input is longer than %d MiB; the rest of the input was not read", maxPromptLine>>20)
			}
			p.err = fmt.Errorf("reading input: %w", err)
		}
	}()
	return p
}

func (p *pipeInput) Line(string) (string, error) {
	select {
	case line, ok := <-p.lines:
		if !ok {
			if p.err != nil {
				return "", p.err
			}
			return "", io.EOF
		}
		return line, nil
	case <-p.interrupts:
		return "", errInterrupt
	}
}

func (p *pipeInput) Answer(prompt string) (string, error) { return p.Line(prompt) }

func (p *pipeInput) Edit(prompt, _ string) (string, error) { return p.Line(prompt) }

// plainInput reads lines from a terminal that the line editor cannot
// drive (TERM=dumb), in its own line mode: the prompt is written as it
// is, and the terminal echoes and edits what is typed. Ctrl-C is a
// signal there, which pipeInput turns into errInterrupt.
type plainInput struct {
	*pipeInput
	w io.Writer
}

func (p *plainInput) Line(prompt string) (string, error) {
	io.WriteString(p.w, prompt)
	line, err := p.pipeInput.Line(prompt)
	if errors.Is(err, errInterrupt) {
		io.WriteString(p.w, "\n") // the terminal leaves the cursor after ^C
	}
	return line, err
}

func (p *plainInput) Answer(prompt string) (string, error) { return p.Line(prompt) }

// Edit shows the text to change on a line of its own, for the person to
// copy: nothing can be put in a line the terminal edits.
func (p *plainInput) Edit(prompt, text string) (string, error) {
	fmt.Fprintf(p.w, "%s\n", printable(text))
	return p.Line(prompt)
}

// editorInput is the line editor on a terminal (github.com/reeflective/
// readline, in its Emacs mode, reading the user's ~/.inputrc): cursor
// keys, Home/End, Ctrl-A/E/W/U/K, Up and Down through the prompt history,
// Ctrl-R to search it, Ctrl-D on an empty line to leave. A paste of
// several lines (bracketed paste) is one prompt. What it returns has no
// control characters: an escape sequence never reaches a transcript.
type editorInput struct {
	rl   *readline.Shell
	hist *promptHistory
}

func newEditorInput(hist *promptHistory) *editorInput {
	rl := readline.NewShell()
	rl.Config.Set("enable-bracketed-paste", true)
	// The prompt always starts a line, so its width tells where input
	// starts; asking the terminal (ESC[6n) would hang on one that does not
	// answer.
	rl.Config.Set("cursor-position-probe", false)
	// A terminal sends UTF-8: é is the bytes C3 A9, which the editor reads
	// as the rune U+00E9. With its defaults (convert-meta on, output-meta
	// off), every rune from U+0080 to U+00FF was taken for Meta and a
	// key: é was Meta-i (nothing typed), ä Meta-d (kill-word), ß Meta-_
	// (the last prompt's last word pasted). These three make such a
	// letter text, as GNU readline does in a UTF-8 locale.
	rl.Config.Set("convert-meta", false)
	rl.Config.Set("input-meta", true)
	rl.Config.Set("output-meta", true)
	// An unbound key's escape sequence is dropped, not typed as text.
	rl.Config.Bind("emacs", inputrc.Unescape(`\e[`), "skip-csi-sequence", false)
	rl.PasteTransformer = printable
	rl.History.Add("prompts", hist)
	return &editorInput{rl: rl, hist: hist}
}

func (e *editorInput) Line(prompt string) (string, error) {
	e.rl.Prompt.Primary(func() string { return prompt })
	line, err := e.rl.Readline()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return "", errInterrupt
	case err != nil:
		return "", err
	}
	return printable(line), nil
}

// Edit puts text in the line as a bracketed paste would (several lines
// stay one prompt), with the cursor at its end, before the person types.
// The editor's keys are bytes: each byte of text goes as one.
func (e *editorInput) Edit(prompt, text string) (string, error) {
	keys := []rune("\x1b[200~")
	for _, b := range []byte(printable(text)) {
		keys = append(keys, rune(b))
	}
	e.rl.Keys.Feed(false, append(keys, []rune("\x1b[201~")...)...)
	return e.Line(prompt)
}

func (e *editorInput) Answer(prompt string) (string, error) {
	e.hist.pause(true)
	defer e.hist.pause(false)
	return e.Line(prompt)
}

// promptHistory is the prompts typed to one agent in a terminal, newest
// last, for Up and Down: a file of JSON strings, one a line, in the data
// folder (history/ beside the file store's sessions/), owner-only (the
// file 0600 always; a folder it makes 0700, one that exists keeps its
// mode, the person's choice). With no file (encryption at rest is on: the prompts
// would be plain text beside an encrypted store), it lives in memory.
type promptHistory struct {
	mu     sync.Mutex
	path   string // "" keeps it in memory
	lines  []string
	paused bool
}

// historyKeep is how many prompts the history keeps; its file is cut back
// to that when it has grown to twice as many.
const historyKeep = 1000

// openPromptHistory loads the history at path, or starts one in memory
// when path is "".
func openPromptHistory(path string) (*promptHistory, error) {
	h := &promptHistory{path: path}
	if path == "" {
		return h, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		var s string
		if json.Unmarshal([]byte(l), &s) == nil && strings.TrimSpace(s) != "" {
			h.lines = append(h.lines, printable(s))
		}
	}
	if len(h.lines) > 2*historyKeep {
		h.lines = h.lines[len(h.lines)-historyKeep:]
		if err := h.rewrite(); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return h, nil
}

// rewrite replaces the file with the lines held, atomically.
func (h *promptHistory) rewrite() error {
	var b strings.Builder
	for _, l := range h.lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, h.path)
}

func (h *promptHistory) pause(p bool) {
	h.mu.Lock()
	h.paused = p
	h.mu.Unlock()
}

// Write implements readline.History: it keeps an accepted prompt.
func (h *promptHistory) Write(line string) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line = strings.TrimSpace(printable(line))
	if h.paused || line == "" || (len(h.lines) > 0 && h.lines[len(h.lines)-1] == line) {
		return len(h.lines), nil
	}
	h.lines = append(h.lines, line)
	if h.path == "" {
		return len(h.lines), nil
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return len(h.lines), err
	}
	j, _ := json.Marshal(line)
	_, err = f.Write(append(j, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return len(h.lines), err
}

// GetLine implements readline.History.
func (h *promptHistory) GetLine(i int) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < 0 || i >= len(h.lines) {
		return "", fmt.Errorf("no history line %d", i)
	}
	return h.lines[i], nil
}

// Len implements readline.History.
func (h *promptHistory) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lines)
}

// Dump implements readline.History.
func (h *promptHistory) Dump() any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines...)
}

var _ readline.History = (*promptHistory)(nil)
