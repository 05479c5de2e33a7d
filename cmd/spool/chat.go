package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/signal"
	"strings"

	"golang.org/x/term"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

const chatHelp = `commands:
  /sessions          list this agent's sessions
  /open ID           continue another session
  /new               start a new session
  /history           show what the next request carries
  /mode ask|auto|off set how tool calls are treated
  /quit              leave (or Ctrl-D)
Ctrl-C stops the answer being written, not the program.`

// chat is one terminal conversation.
type chat struct {
	env         *environ
	agent       *spool.Agent
	sess        *spool.Session
	ctx         context.Context // carries the user for user scope
	lines       <-chan string
	inputErr    error // why input ended early; set before lines closes
	interrupts  <-chan os.Signal
	interactive bool
}

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
	agent, err := spool.New(cfg)
	if err != nil {
		return err
	}
	defer agent.Close()

	ch := &chat{env: env, agent: agent, ctx: ctx, interrupts: env.interrupts}
	ch.lines = readLines(env.stdin, &ch.inputErr)
	if f, ok := env.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		ch.interactive = true
	}
	if ch.interrupts == nil {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		ch.interrupts = sig
	}
	switch {
	case *cont:
		page, err := agent.ListSessions(ctx, store.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Sessions) == 0 {
			fmt.Fprintln(env.stderr, "spool: no session to continue; starting a new one")
			err = ch.newSession()
		} else {
			err = ch.open(page.Sessions[0].ID, false)
		}
		if err != nil {
			return err
		}
	case *sessionID != "":
		if err := ch.open(*sessionID, true); err != nil {
			return err
		}
	default:
		if err := ch.newSession(); err != nil {
			return err
		}
	}
	return ch.loop()
}

// maxPromptLine is the longest line chat reads as a prompt.
const maxPromptLine = 16 << 20

// readLines delivers stdin's lines; the channel closes at the end of
// input, after *failed is set when reading failed (a line over
// maxPromptLine, or an error of the input itself).
func readLines(r io.Reader, failed *error) <-chan string {
	out := make(chan string)
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
			*failed = fmt.Errorf("reading input: %w", err)
		}
	}()
	return out
}

func (c *chat) say(format string, args ...any) {
	fmt.Fprintf(c.env.stdout, format+"\n", args...)
}

func (c *chat) newSession() error {
	s, err := c.agent.NewSession(c.ctx)
	if err != nil {
		return err
	}
	c.sess = s
	c.say("session %s (new; /help for commands)", s.ID())
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
		c.say("session %s (new; /help for commands)", id)
		return nil
	}
	if err != nil {
		return err
	}
	c.sess = s
	msgs, err := s.Messages(c.ctx, 6)
	if err != nil {
		return err
	}
	c.say("session %s (continued)", id)
	for _, m := range msgs {
		c.say("  %s: %s", m.Role, clip(strings.Join(strings.Fields(m.Text), " "), 100))
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

func (c *chat) prompt() {
	if c.interactive {
		fmt.Fprint(c.env.stdout, "> ")
	}
}

// next waits for a line, reporting Ctrl-C while idle as a hint.
func (c *chat) next() (string, bool) {
	for {
		select {
		case line, ok := <-c.lines:
			return line, ok
		case <-c.interrupts:
			fmt.Fprintln(c.env.stdout, "\n(type /quit or Ctrl-D to leave)")
			c.prompt()
		}
	}
}

func (c *chat) loop() error {
	for {
		c.prompt()
		line, ok := c.next()
		if !ok {
			if c.interactive {
				fmt.Fprintln(c.env.stdout)
			}
			return c.inputErr
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "/call ") {
			quit, err := c.command(line)
			if err != nil {
				c.say("error: %v", err)
			}
			if quit {
				return nil
			}
			continue
		}
		if err := c.turn(c.sess.Stream, line); err != nil {
			c.say("error: %v", err)
		}
	}
}

func (c *chat) command(line string) (quit bool, err error) {
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch cmd {
	case "/quit", "/exit":
		return true, nil
	case "/help":
		c.say("%s", chatHelp)
	case "/new":
		return false, c.newSession()
	case "/sessions":
		page, err := c.agent.ListSessions(c.ctx, store.ListOptions{Limit: 20})
		if err != nil {
			return false, err
		}
		for _, s := range page.Sessions {
			mark := " "
			if s.ID == c.sess.ID() {
				mark = "*"
			}
			c.say("%s %s  %s  %s", mark, s.ID, stamp(s.LastActivity), clip(s.Title, 50))
		}
	case "/open":
		if arg == "" {
			return false, errors.New("/open needs a session id")
		}
		return false, c.open(arg, false)
	case "/history":
		msgs, err := c.sess.History(c.ctx)
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			c.say("%s: %s", m.Role, m.Content)
		}
	case "/mode":
		if err := c.sess.SetToolMode(c.ctx, transcript.ToolMode(arg)); err != nil {
			return false, err
		}
		c.say("tool mode %s", arg)
	default:
		return false, fmt.Errorf("unknown command %s (/help lists them)", cmd)
	}
	return false, nil
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
	case transcript.StatusCancelled:
		c.say("(stopped)")
	case transcript.StatusError:
		c.say("(failed: %s %s)", res.Error.Code, res.Error.Message)
	case transcript.StatusPromptBlocked, transcript.StatusResponseBlocked:
		c.say("(%s: %s)", res.Status, res.Notice)
	case spool.StatusAwaitingApproval:
		// Asked only once show's Ctrl-C watcher has stopped, so that a
		// Ctrl-C during the resumed turn reaches that turn.
		return c.approve(res.Pending)
	}
	return nil
}

// show prints one stream as it comes and returns how its turn ended. A
// Ctrl-C while it runs stops it.
func (c *chat) show(stream func(context.Context, string) iter.Seq2[spool.Event, error], arg string) (*spool.Result, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
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
	defer func() { close(stop); <-watching }()
	var res *spool.Result
	midLine := false
	defer func() {
		if midLine {
			fmt.Fprintln(c.env.stdout)
		}
	}()
	for ev, err := range stream(ctx, arg) {
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case spool.EventText:
			fmt.Fprint(c.env.stdout, ev.Text)
			midLine = true
		case spool.EventToolCall:
			if midLine {
				fmt.Fprintln(c.env.stdout)
				midLine = false
			}
			c.say("[calls %s %s]", ev.ToolCall.Name, ev.ToolCall.Arguments)
		case spool.EventToolResult:
			c.say("[%s → %s]", ev.ToolResult.Tool, clip(strings.Join(strings.Fields(ev.ToolResult.Result), " "), 200))
		case spool.EventTurnEnd:
			res = ev.Result
		}
	}
	return res, nil
}

// approve asks about each pending call: y(es), n(o), a(lways for this
// session).
func (c *chat) approve(pending []spool.Approval) error {
	for _, p := range pending {
		for {
			fmt.Fprintf(c.env.stdout, "allow %s %s? [y]es, [n]o, [a]lways for this session: ", p.Tool, p.Arguments)
			line, ok := c.next()
			if !ok {
				fmt.Fprintln(c.env.stdout)
				return errors.New("input ended with an approval pending; it stays pending in the session")
			}
			if !c.interactive {
				fmt.Fprintln(c.env.stdout, line)
			}
			var d spool.Decision
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "y", "yes":
				d = spool.Decision{Allow: true, Scope: transcript.ApprovalScopeOnce}
			case "a", "always":
				d = spool.Decision{Allow: true, Scope: transcript.ApprovalScopeSession}
			case "n", "no":
				d = spool.Decision{Reason: "declined in spool chat"}
			default:
				continue
			}
			id := p.ID
			resolve := func(ctx context.Context, _ string) iter.Seq2[spool.Event, error] {
				return c.sess.Resolve(ctx, id, d)
			}
			err := c.turn(resolve, "")
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
}

func (m *modelFlags) register(fs interface {
	StringVar(*string, string, string, string)
}, env *environ) {
	fs.StringVar(&m.spec, "model", env.getenv("SPOOL_MODEL"), "echo, openai:MODEL, anthropic:MODEL or ollama:MODEL (env SPOOL_MODEL; default echo)")
	fs.StringVar(&m.baseURL, "base-url", "", "the provider's endpoint (default from OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST)")
	fs.StringVar(&m.apiKey, "model-key", "", "the model provider's key (default from OPENAI_API_KEY, ANTHROPIC_API_KEY)")
}

func (m *modelFlags) open(env *environ) (model.Model, error) {
	if env.model != nil {
		return env.model, nil
	}
	if m.spec == "" {
		fmt.Fprintln(env.stderr, "spool: no model configured: using the offline echo model (choose one with --model or SPOOL_MODEL)")
		m.spec = "echo"
	}
	mod, err := model.Open(m.spec, model.Config{BaseURL: m.baseURL, APIKey: m.apiKey})
	if err != nil {
		if errors.Is(err, model.ErrUnknownProvider) {
			return nil, usagef("--model: %v", err)
		}
		return nil, err
	}
	return mod, nil
}
