package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/transcript"
)

const chatHelp = `commands:
  /sessions            list this agent's sessions
  /open ID             continue another session
  /new                 start a new session
  /history             show what the next request carries
  /retry               answer your last question again (the first answer is kept)
  /edit [N]            change your last question, or your N-th: the old text is
                       in the line to edit, and the answer starts again from there
  /branches [N K]      list the questions that have other versions; with N K,
                       go back to version K of question N
  /compact [N]         summarize the older turns for the model, all but the
                       newest N (default 4): for a conversation longer
                       than the model's context window
  /mode ask|auto|off   set how tool calls are treated
  /call TOOL {JSON}    have the echo model call a tool (get_time, save_note)
  /help                this list
  /quit                leave (or Ctrl-D on an empty line)
Ctrl-C stops the answer being written (or /compact's summary), not the
program. In a terminal, Up and Down go through earlier prompts and a
pasted block of lines is one prompt; with TERM=dumb the terminal edits
the line itself, and each line is a prompt.`

// chat is one conversation in the terminal or over a pipe. Answers,
// tool lines and what a command shows go to stdout; the banner, notices,
// questions and errors to stderr, so that piped output is the answers
// alone.
type chat struct {
	env         *environ
	agent       *spool.Agent
	sess        *spool.Session
	ctx         context.Context // carries the user for user scope
	in          input
	interrupts  <-chan os.Signal
	interactive bool      // a terminal on both stdin and stdout
	out, errOut palette   // stdout's and stderr's colours
	md          *markdown // renders answers; nil when stdout is not a terminal
	failed      int       // turns that failed
	refused     int       // commands that failed
	pendingAt   string    // the session left with an approval pending, if any
}

// errQuit is /quit.
var errQuit = errors.New("quit")

func runChat(ctx context.Context, env *environ, args []string) error {
	var c common
	var mf modelFlags
	fs := newFlagSet("chat", "spool chat [--model SPEC] [--session ID | --continue] [--agent NAME] [--user ID] [--store URL]", env)
	c.register(fs, env)
	mf.register(fs, env)
	sessionID := fs.String("session", "", "continue this session, or start one under this id")
	cont := fs.Bool("continue", false, "continue the most recent session")
	instructions := fs.String("instructions", "", "the agent's instructions")
	mode := fs.String("mode", "ask", "tool mode of new sessions: ask, auto or off")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("chat takes no arguments (got %q); type prompts once it starts", pos[0])
	}
	if *cont && *sessionID != "" {
		return usagef("--continue and --session exclude each other")
	}
	if !transcript.ToolMode(*mode).Valid() {
		return usagef("--mode must be ask, auto or off")
	}
	if _, err := c.namespace(); err != nil {
		return err
	}
	// A --session no store accepts is a bad flag (exit 2, naming it), said
	// before a store is opened or created, as sessions show says it.
	if *sessionID != "" && !store.ValidID(*sessionID) {
		return badIDFlag("--session", *sessionID)
	}
	// The model first: one that cannot work is said before anything is
	// opened or created.
	m, err := mf.open(env)
	if err != nil {
		return err
	}
	st, err := c.open(ctx, env)
	if err != nil {
		return err
	}
	cfg := spool.Config{
		Name:         c.agent,
		Instructions: *instructions,
		Model:        m,
		Tools:        demoTools(),
		Store:        st,
		ToolMode:     transcript.ToolMode(*mode),
	}
	if c.user != "" {
		cfg.Scope = spool.ScopeUser
		ctx = spool.ContextWithUser(ctx, c.user)
	}
	// OpenTelemetry, when the OTEL_* variables ask for it: the turns'
	// spans and metrics, exported on the way out.
	tel, err := startTelemetry(ctx, slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), false)
	if err != nil {
		return err
	}
	defer tel.shutdown(ctx, slog.New(slog.NewTextHandler(env.stderr, nil)))
	if err := tel.instrument(&cfg, c.storeURL); err != nil {
		return err
	}
	agent, err := spool.New(cfg)
	if err != nil {
		return err
	}
	defer agent.Close()

	ch := &chat{env: env, agent: agent, ctx: ctx, interrupts: env.interrupts,
		out: outputFor(env, env.stdout), errOut: outputFor(env, env.stderr)}
	if ch.interrupts == nil {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		ch.interrupts = sig
	}
	// TERM=dumb (Emacs's M-x shell, for one) is a terminal that moves no
	// cursor and knows no escape sequence: the line editor's redraws and
	// the rendering's bold would be shown as text. It gets the prompts,
	// the terminal's own line editing and the answers as written.
	dumb := env.getenv("TERM") == "dumb"
	if isTerminal(env.stdout) && !dumb {
		ch.md = newMarkdown(env.stdout, ch.out.on)
	}
	if isTerminal(env.stdin) && isTerminal(env.stdout) && dumb {
		ch.interactive = true
		ch.in = &plainInput{pipeInput: newPipeInput(env.stdin, ch.interrupts), w: env.stdout}
	} else if isTerminal(env.stdin) && isTerminal(env.stdout) {
		ch.interactive = true
		hist, err := openPromptHistory(historyPath(env, &c))
		if err != nil {
			return fmt.Errorf("the prompt history: %w", err)
		}
		ch.in = newEditorInput(hist)
	} else {
		ch.in = newPipeInput(env.stdin, ch.interrupts)
	}
	switch {
	case *cont:
		page, err := agent.ListSessions(ctx, store.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Sessions) == 0 {
			ch.note("no session to continue; starting a new one")
			err = ch.newSession()
		} else {
			err = ch.open(page.Sessions[0].ID, false)
		}
		if err != nil && !errors.Is(err, errQuit) {
			return err
		}
		if errors.Is(err, errQuit) {
			return ch.end()
		}
	case *sessionID != "":
		if err := ch.open(*sessionID, true); err != nil {
			if errors.Is(err, errQuit) {
				return ch.end()
			}
			return err
		}
	default:
		if err := ch.newSession(); err != nil {
			return err
		}
	}
	return ch.loop()
}

// historyPath is the file of the prompts typed to this agent in a
// terminal: history/<agent>.prompts in spool's data folder (the parent
// of the default file store's sessions/), history/<agent>.users/<user>.prompts
// with --user. It is "" (the history stays in memory) when encryption at
// rest is on or the data folder is unknown.
func historyPath(env *environ, c *common) string {
	if c.encrypt || env.getenv(seal.EnvKey) != "" {
		return ""
	}
	root, err := filestore.DefaultRoot()
	if err != nil {
		return ""
	}
	dir := filepath.Join(filepath.Dir(root), "history")
	if c.user != "" {
		return filepath.Join(dir, c.agent+".users", c.user+".prompts")
	}
	return filepath.Join(dir, c.agent+".prompts")
}

// say writes a line of what the user asked for to stdout.
func (c *chat) say(format string, args ...any) {
	fmt.Fprintf(c.env.stdout, format+"\n", args...)
}

// note writes a notice to stderr.
func (c *chat) note(format string, args ...any) {
	fmt.Fprintln(c.env.stderr, c.errOut.paint(c.errOut.notice, fmt.Sprintf(format, args...)))
}

// fail writes an error to stderr.
func (c *chat) fail(err error) {
	fmt.Fprintln(c.env.stderr, c.errOut.paint(c.errOut.errorS, "error: "+err.Error()))
}

func (c *chat) newSession() error {
	s, err := c.agent.NewSession(c.ctx)
	if err != nil {
		return err
	}
	c.sess = s
	c.note("session %s (new; /help for commands)", s.ID())
	return nil
}

// open switches to session id: an existing one, or with create a new one
// under that id.
func (c *chat) open(id string, create bool) error {
	s, err := c.agent.OpenSession(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) && create {
		if s, err = c.agent.Session(c.ctx, id); err != nil {
			return err
		}
		c.sess = s
		c.note("session %s (new; /help for commands)", id)
		return nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("session %q not found (/sessions lists them)", id)
	}
	if err != nil {
		return err
	}
	c.sess = s
	msgs, err := s.Messages(c.ctx, 6)
	if err != nil {
		return err
	}
	c.note("session %s (continued)", id)
	for _, m := range msgs {
		c.note("  %s: %s", m.Role, recap(m))
	}
	pending, err := s.PendingApprovals(c.ctx)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return c.approve(pending)
	}
	return nil
}

// recap is a message on one line, as /open and /branches show the
// newest ones: its text, and the calls an assistant step made (a step
// that only calls a tool has no text, and was shown blank).
func recap(m spool.Message) string {
	text := m.Text
	for _, tc := range m.ToolCalls {
		text += fmt.Sprintf(" [calls %s %s]", tc.Name, tc.Arguments)
	}
	return clip(strings.Join(strings.Fields(printable(text)), " "), 100)
}

// prompt is the editor's prompt.
func (c *chat) prompt() string {
	return c.out.paint(c.out.user, "> ")
}

func (c *chat) loop() error {
	for {
		line, err := c.in.Line(c.prompt())
		switch {
		case errors.Is(err, errInterrupt):
			c.note("(type /quit or Ctrl-D to leave)")
			continue
		case errors.Is(err, io.EOF):
			if c.interactive {
				fmt.Fprintln(c.env.stdout)
			}
			return c.end()
		case err != nil:
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "/call ") {
			err := c.command(line)
			if errors.Is(err, errQuit) {
				return c.end()
			}
			if err != nil {
				c.refused++
				c.fail(err)
			}
			continue
		}
		err = c.turn(c.sess.Stream, line)
		if errors.Is(err, errQuit) {
			return c.end()
		}
		if err != nil {
			c.failed++
			c.fail(err)
		}
	}
}

// end is how chat ends: with a pipe for input, it fails when a turn or
// a command failed or an approval is left pending, so that a script can
// tell.
func (c *chat) end() error {
	if c.pendingAt != "" {
		c.note("an approval is still pending in session %s; spool chat --session %s asks again", c.pendingAt, c.pendingAt)
	}
	if c.interactive {
		return nil
	}
	var what []string
	if c.pendingAt != "" {
		what = append(what, "input ended with an approval pending")
	}
	if c.failed > 0 {
		what = append(what, fmt.Sprintf("%d turn(s) failed", c.failed))
	}
	if c.refused > 0 {
		what = append(what, fmt.Sprintf("%d command(s) failed", c.refused))
	}
	if len(what) == 0 {
		return nil
	}
	return errors.New(strings.Join(what, ", and "))
}

func (c *chat) command(line string) error {
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch cmd {
	case "/quit", "/exit":
		return errQuit
	case "/help":
		c.say("%s", chatHelp)
	case "/new":
		return c.newSession()
	case "/sessions":
		page, err := c.agent.ListSessions(c.ctx, store.ListOptions{Limit: 20})
		if err != nil {
			return err
		}
		for _, s := range page.Sessions {
			mark := " "
			if s.ID == c.sess.ID() {
				mark = "*"
			}
			c.say("%s %s  %s  %s", mark, s.ID, stamp(s.LastActivity), clip(printable(s.Title), 50))
		}
	case "/open":
		if arg == "" {
			return errors.New("/open needs a session id")
		}
		if !store.ValidID(arg) {
			return errors.New(store.IDProblem("session id", arg))
		}
		return c.open(arg, false)
	case "/history":
		msgs, err := c.sess.History(c.ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			c.say("%s: %s", m.Role, printable(m.Content))
		}
	case "/retry":
		err := c.turn(func(ctx context.Context, _ string) iter.Seq2[spool.Event, error] {
			return c.sess.RegenerateStream(ctx)
		}, "")
		if errors.Is(err, spool.ErrNoTurn) {
			// The library's words name the store's key; the person
			// needs to know there is nothing to answer again yet.
			return errors.New("/retry: this session has no question yet")
		}
		return err
	case "/edit":
		return c.edit(arg)
	case "/branches":
		return c.branches(arg)
	case "/compact":
		return c.compact(arg)
	case "/mode":
		if !transcript.ToolMode(arg).Valid() {
			return fmt.Errorf("/mode %q: use /mode ask, /mode auto or /mode off", arg)
		}
		if err := c.sess.SetToolMode(c.ctx, transcript.ToolMode(arg)); err != nil {
			return err
		}
		c.say("tool mode %s", arg)
	default:
		return fmt.Errorf("unknown command %s (/help lists them)", cmd)
	}
	return nil
}

// questions returns the questions of the session's active branch, oldest
// first: the user message that opens each turn.
func (c *chat) questions() ([]spool.Message, error) {
	msgs, err := c.sess.Messages(c.ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []spool.Message
	for _, m := range msgs {
		if m.Role == model.RoleUser && (len(out) == 0 || out[len(out)-1].TurnID != m.TurnID) {
			out = append(out, m)
		}
	}
	return out, nil
}

// question returns question n (1-based) of qs, or the last when arg is
// empty.
func question(qs []spool.Message, arg, cmd string) (int, error) {
	if len(qs) == 0 {
		return 0, fmt.Errorf("%s: this session has no question yet", cmd)
	}
	if arg == "" {
		return len(qs) - 1, nil
	}
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 || n > len(qs) {
		return 0, fmt.Errorf("%s: N must be a question's number, 1 to %d (/branches lists them)", cmd, len(qs))
	}
	return n - 1, nil
}

// edit is /edit [N]: the question in the line editor, changed by the
// person, asked again in its place.
func (c *chat) edit(arg string) error {
	qs, err := c.questions()
	if err != nil {
		return err
	}
	i, err := question(qs, arg, "/edit")
	if err != nil {
		return err
	}
	if !c.interactive {
		c.note("(the next line is the new text of question %d)", i+1)
	}
	line, err := c.in.Edit(c.out.paint(c.out.user, "edit> "), qs[i].Text)
	switch {
	case errors.Is(err, errInterrupt):
		c.note("(edit cancelled)")
		return nil
	case errors.Is(err, io.EOF):
		// The input ended (a pipe's, or Ctrl-D on an emptied line) with
		// no new text: nothing to send; the loop's next read ends chat
		// when it was a pipe's.
		c.note("(edit cancelled: the input ended)")
		return nil
	case err != nil:
		return err
	}
	if strings.TrimSpace(line) == "" {
		c.note("(edit cancelled: the text is empty)")
		return nil
	}
	turnID := qs[i].TurnID
	return c.turn(func(ctx context.Context, text string) iter.Seq2[spool.Event, error] {
		return c.sess.EditStream(ctx, turnID, text)
	}, line)
}

// branches is /branches [N K]: the questions with other versions, or
// version K of question N made active again.
func (c *chat) branches(arg string) error {
	qs, err := c.questions()
	if err != nil {
		return err
	}
	if arg == "" {
		found := false
		for i, q := range qs {
			if q.Branch != nil {
				found = true
				c.say("%3d  %d/%d  %s", i+1, q.Branch.Index, q.Branch.Count, clip(strings.Join(strings.Fields(printable(q.Text)), " "), 80))
			}
		}
		if !found {
			c.say("no question has another version (/retry and /edit make them)")
			return nil
		}
		c.say("/branches N K goes back to version K of question N")
		return nil
	}
	f := strings.Fields(arg)
	if len(f) != 2 {
		return errors.New("/branches takes no argument (a list), or N K: question N, version K")
	}
	i, err := question(qs, f[0], "/branches")
	if err != nil {
		return err
	}
	b := qs[i].Branch
	k, err := strconv.Atoi(f[1])
	if b == nil {
		return fmt.Errorf("/branches: question %d has no other version", i+1)
	}
	if err != nil || k < 1 || k > b.Count {
		return fmt.Errorf("/branches: K must be a version of question %d, 1 to %d", i+1, b.Count)
	}
	if err := c.sess.SwitchBranch(c.ctx, b.Turns[k-1]); err != nil {
		return err
	}
	c.note("question %d is at version %d of %d", i+1, k, b.Count)
	msgs, err := c.sess.Messages(c.ctx, 4)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		c.note("  %s: %s", m.Role, recap(m))
	}
	return nil
}

// compact is /compact [N]: the session's turns but the newest N (the
// agent's default without N) summarized for the model, in this process,
// so that a session in a memory store can be compacted too. Ctrl-C
// stops the summarizer.
func (c *chat) compact(arg string) error {
	var opts spool.CompactOptions
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return fmt.Errorf("/compact N: N is how many of the newest turns stay as they are, at least 1 (got %q)", arg)
		}
		opts.KeepTurns = n
	}
	ctx, done := c.interruptible()
	defer done()
	c.note("(summarizing; Ctrl-C stops)")
	res, err := c.sess.Compact(ctx, opts)
	switch {
	case err == nil:
		// Compacted, even when a Ctrl-C came once the summary was
		// written: the compaction is recorded.
	case errors.Is(err, spool.ErrNothingToCompact):
		c.say("nothing to compact: no ended turn before the newest ones that is not summarized already (/compact N keeps fewer)")
		return nil
	case ctx.Err() != nil && c.ctx.Err() == nil:
		c.note("(stopped: nothing compacted)")
		return nil
	default:
		return err
	}
	c.say("compacted %d turns: the history is %d messages, %d tokens (was %d messages, %d tokens)",
		res.Turns, res.After.Messages, res.After.Tokens, res.Before.Messages, res.Before.Tokens)
	return nil
}

// turn runs one stream (a prompt, or a resumed approval), printing it as
// it comes, with Ctrl-C stopping it, then asks about the approvals it
// left pending.
func (c *chat) turn(stream func(context.Context, string) iter.Seq2[spool.Event, error], arg string) error {
	res, err := c.show(stream, arg)
	if err != nil || res == nil {
		return err
	}
	switch res.Status {
	case transcript.StatusOK:
		if res.Notice != "" {
			c.note("(incomplete: %s)", res.Notice) // the provider stopped the answer
		}
		if res.NoticeKind == transcript.NoticeOutputLimit {
			c.note("(--max-output-tokens N, or SPOOL_MAX_OUTPUT_TOKENS, raises the model's output token limit)")
		}
	case transcript.StatusCancelled:
		c.note("(stopped)")
	case transcript.StatusError:
		c.failed++
		fmt.Fprintln(c.env.stderr, c.errOut.paint(c.errOut.errorS, fmt.Sprintf("(failed: %s %s)", res.Error.Code, res.Error.Message)))
		if res.Error.Code == transcript.CodeContextTooLong {
			c.note("(the conversation is longer than the model's context window: /compact summarizes its older turns, then send again)")
		}
	case transcript.StatusPromptBlocked, transcript.StatusResponseBlocked:
		c.note("(%s: %s)", res.Status, res.Notice)
	case spool.StatusAwaitingApproval:
		// Asked only once show's Ctrl-C watcher has stopped, so that a
		// Ctrl-C during the resumed turn reaches that turn.
		return c.approve(res.Pending)
	}
	return nil
}

// interruptible returns a context that a Ctrl-C from now on ends, for
// one turn or summary, and the func that ends the watch of Ctrl-C. A
// Ctrl-C from before (pressed as the last turn ended) is not for it.
func (c *chat) interruptible() (context.Context, func()) {
	for len(c.interrupts) > 0 {
		<-c.interrupts
	}
	ctx, cancel := context.WithCancel(c.ctx)
	stop := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-c.interrupts:
			cancel()
		case <-stop:
		}
	}()
	return ctx, func() {
		close(stop)
		<-watching
		cancel()
	}
}

// show prints one stream as it comes and returns how its turn ended. A
// Ctrl-C while it runs stops it.
func (c *chat) show(stream func(context.Context, string) iter.Seq2[spool.Event, error], arg string) (*spool.Result, error) {
	ctx, done := c.interruptible()
	defer done()
	var res *spool.Result
	midLine := false
	endText := func() {
		if c.md != nil {
			c.md.Flush()
		} else if midLine {
			fmt.Fprintln(c.env.stdout)
		}
		midLine = false
	}
	defer endText()
	for ev, err := range stream(ctx, arg) {
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case spool.EventText:
			if c.md != nil {
				c.md.Write(ev.Text)
			} else {
				fmt.Fprint(c.env.stdout, ev.Text)
				midLine = !strings.HasSuffix(ev.Text, "\n")
			}
		case spool.EventToolCall:
			endText()
			c.say("%s", c.out.paint(c.out.tool, printable(fmt.Sprintf("[calls %s %s]", ev.ToolCall.Name, ev.ToolCall.Arguments))))
		case spool.EventToolResult:
			endText()
			c.say("%s", c.out.paint(c.out.tool, printable(fmt.Sprintf("[%s → %s]", ev.ToolResult.Tool, clip(strings.Join(strings.Fields(ev.ToolResult.Result), " "), 200)))))
		case spool.EventTurnEnd:
			res = ev.Result
		}
	}
	return res, nil
}

// approve asks about each pending call: y(es), n(o), a(lways for this
// session). Anything else typed at the question is not sent anywhere, and
// chat says so; /quit leaves the approval pending.
func (c *chat) approve(pending []spool.Approval) error {
	for _, p := range pending {
		for {
			call := printable(fmt.Sprintf("allow %s %s?", p.Tool, p.Arguments))
			const choices = " [y]es, [n]o, [a]lways for this session: "
			var line string
			var err error
			if c.interactive {
				// The call on a line of its own, the choices as the
				// editor's prompt: the editor redraws its prompt from
				// the start of the line it is on, so a prompt wider than
				// the terminal (long arguments) was left on the screen
				// once more at each redraw.
				fmt.Fprintln(c.env.stderr, c.errOut.paint(c.errOut.tool, call))
				line, err = c.in.Answer(c.errOut.paint(c.errOut.tool, strings.TrimPrefix(choices, " ")))
			} else {
				fmt.Fprint(c.env.stderr, call+choices)
				line, err = c.in.Answer(call + choices)
			}
			if errors.Is(err, errInterrupt) {
				if !c.interactive {
					fmt.Fprintln(c.env.stderr)
				}
				c.note("(answer y, n or a; /quit leaves the call pending)")
				continue
			}
			if err != nil {
				if !c.interactive || errors.Is(err, io.EOF) {
					fmt.Fprintln(c.env.stderr)
				}
				c.pendingAt = c.sess.ID()
				if errors.Is(err, io.EOF) {
					return errQuit
				}
				return err
			}
			if !c.interactive {
				fmt.Fprintln(c.env.stderr, line)
			}
			answer := strings.TrimSpace(line)
			var d spool.Decision
			switch strings.ToLower(answer) {
			case "y", "yes":
				d = spool.Decision{Allow: true, Scope: transcript.ApprovalScopeOnce}
			case "a", "always":
				d = spool.Decision{Allow: true, Scope: transcript.ApprovalScopeSession}
			case "n", "no":
				d = spool.Decision{Reason: "declined in spool chat"}
			case "/quit", "/exit":
				c.pendingAt = c.sess.ID()
				return errQuit
			case "":
				continue
			default:
				c.note("not sent: %q; answer the tool call first (y, n or a), or /quit to leave it pending", clip(answer, 60))
				continue
			}
			id := p.ID
			resolve := func(ctx context.Context, _ string) iter.Seq2[spool.Event, error] {
				return c.sess.Resolve(ctx, id, d)
			}
			err = c.turn(resolve, "")
			if errors.Is(err, spool.ErrNoApproval) {
				break // settled along with another (an "always")
			}
			return err
		}
	}
	return nil
}

// modelFlags choose the model.
type modelFlags struct {
	spec, baseURL, apiKey string
	maxTokens             int64 // 0: SPOOL_MAX_OUTPUT_TOKENS, else the provider's default
}

// maxTokensUsage is the help of --max-output-tokens, without the variable
// it reads: spool serve adds that to each of its flags' help.
const maxTokensUsage = "the most tokens an answer may take (default the provider's: 4096 for anthropic, the server's for openai and ollama)"

func (m *modelFlags) register(fs *flagSet, env *environ) {
	fs.StringVar(&m.spec, "model", env.getenv("SPOOL_MODEL"), "echo, openai:MODEL, anthropic:MODEL or ollama:MODEL (env SPOOL_MODEL; default echo)")
	fs.StringVar(&m.baseURL, "base-url", "", "the provider's endpoint (default from OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST)")
	fs.StringVar(&m.apiKey, "model-key", "", "the model provider's key (default from OPENAI_API_KEY, ANTHROPIC_API_KEY)")
	fs.Int64Var(&m.maxTokens, "max-output-tokens", 0, maxTokensUsage+" (env SPOOL_MAX_OUTPUT_TOKENS)")
}

// outputCap is the cap of each answer the flags (or the environment) set,
// 0 for the provider's default.
func (m *modelFlags) outputCap(env *environ) (int64, error) {
	if m.maxTokens < 0 {
		return 0, usagef("--max-output-tokens: want a positive number of tokens, not %d", m.maxTokens)
	}
	if v := strings.TrimSpace(env.getenv("SPOOL_MAX_OUTPUT_TOKENS")); m.maxTokens == 0 && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, usagef("SPOOL_MAX_OUTPUT_TOKENS: want a positive number of tokens, not %q", v)
		}
		return n, nil
	}
	return m.maxTokens, nil
}

func (m *modelFlags) open(env *environ) (model.Model, error) {
	if env.model != nil {
		return env.model, nil
	}
	if m.spec == "" {
		fmt.Fprintln(env.stderr, "spool: no model configured: using the offline echo model (choose one with --model or SPOOL_MODEL)")
		m.spec = "echo"
	}
	maxTokens, err := m.outputCap(env)
	if err != nil {
		return nil, err
	}
	mod, err := model.Open(m.spec, model.Config{BaseURL: m.baseURL, APIKey: m.apiKey, MaxOutputTokens: maxTokens})
	if err != nil {
		if errors.Is(err, model.ErrUnknownProvider) {
			return nil, usagef("--model: %v", err)
		}
		return nil, usagef("--model %s: %v", m.spec, err)
	}
	if ck, ok := mod.(model.Checker); ok {
		if err := ck.Check(); errors.Is(err, model.ErrNoAPIKey) {
			provider, _, _ := strings.Cut(m.spec, ":")
			v := keyVariables[strings.ToLower(strings.TrimSpace(provider))]
			if v == "" {
				v = "the provider's key variable"
			}
			return nil, usagef("--model %s needs an API key: set %s or pass --model-key", m.spec, v)
		} else if err != nil {
			return nil, usagef("--model %s: %v", m.spec, err)
		}
	}
	return mod, nil
}

// keyVariables name the environment variable each hosted provider takes
// its key from.
var keyVariables = map[string]string{
	"openai":    "OPENAI_API_KEY",
	"anthropic": "ANTHROPIC_API_KEY",
}
