package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

func sessionsLs(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("ls", "spool sessions ls [--limit N] [--cursor C] [--json]", env)
	c.register(fs, env)
	limit := fs.Int("limit", store.DefaultListLimit, "sessions per page")
	cursor := fs.String("cursor", "", "the cursor a previous page printed")
	asJSON := fs.Bool("json", false, `print {"sessions":[…],"nextCursor":…}`)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sessions ls takes no arguments (got %q)", pos[0])
	}
	if *limit < 1 || *limit > store.MaxListLimit {
		return usagef("--limit must be between 1 and %d", store.MaxListLimit)
	}
	ns, st, err := c.openNamespace(ctx, env)
	if err != nil {
		return err
	}
	defer store.Close(st)
	page, err := st.List(ctx, ns, store.ListOptions{Limit: *limit, Cursor: *cursor})
	if err != nil {
		if errors.Is(err, store.ErrInvalidCursor) {
			return usagef("--cursor: %v", err)
		}
		return err
	}
	if *asJSON {
		out := struct {
			Sessions   []store.SessionInfo `json:"sessions"`
			NextCursor *string             `json:"nextCursor"`
		}{Sessions: page.Sessions}
		if out.Sessions == nil {
			out.Sessions = []store.SessionInfo{}
		}
		if page.NextCursor != "" {
			out.NextCursor = &page.NextCursor
		}
		return printJSON(env, out)
	}
	if len(page.Sessions) == 0 {
		if *cursor != "" {
			fmt.Fprintln(env.stderr, "no more sessions")
		} else {
			fmt.Fprintf(env.stderr, "no sessions (agent %q%s)\n", ns.Agent, userNote(ns.Owner))
		}
		return nil
	}
	sessionTable(env.stdout, page.Sessions, isTerminal(env.stdout))
	if page.NextCursor != "" {
		cmd := strings.TrimSpace("spool sessions ls " + again(fs.FlagSet, "cursor"))
		fmt.Fprintf(env.stdout, "\nnext page: %s --cursor %s\n", cmd, page.NextCursor)
	}
	return nil
}

// sessionArg opens the store and checks that the session one positional
// argument names exists.
func sessionArg(ctx context.Context, env *environ, c *common, pos []string, cmd string) (store.Store, store.Key, error) {
	if len(pos) != 1 {
		return nil, store.Key{}, usagef("sessions %s takes one session id", cmd)
	}
	k, err := c.key(pos[0])
	if err != nil {
		return nil, k, err
	}
	st, err := c.openExisting(ctx, env)
	if err != nil {
		return nil, k, err
	}
	if err := checkSession(ctx, st, k); err != nil {
		store.Close(st)
		return nil, k, err
	}
	return st, k, nil
}

// checkSession fails when the session does not exist, with the one
// message every command gives for it.
func checkSession(ctx context.Context, st store.Store, k store.Key) error {
	_, err := store.Stat(ctx, st, k)
	if errors.Is(err, store.ErrNotFound) {
		return unknownSession{k}
	}
	return err
}

// unknownSession is a session id that names no session; it is
// store.ErrNotFound for errors.Is.
type unknownSession struct{ k store.Key }

func (e unknownSession) Error() string {
	return fmt.Sprintf("session %q not found (agent %q%s)", e.k.ID, e.k.Agent, userNote(e.k.Owner))
}

func (e unknownSession) Is(target error) bool { return target == store.ErrNotFound }

func userNote(owner string) string {
	if owner == "" {
		return ""
	}
	return fmt.Sprintf(", user %q", owner)
}

func sessionsShow(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("show", "spool sessions show ID [--branches active|all] [--json]", env)
	c.register(fs, env)
	asJSON := fs.Bool("json", false, "print the transcript as JSON lines (with --branches all: as stored)")
	branches := fs.String("branches", "active", "active: the active branch, without the turns regenerates and edits replaced; all: every entry, those of replaced turns marked")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *branches != "active" && *branches != "all" {
		return usagef("--branches must be active or all")
	}
	st, k, err := sessionArg(ctx, env, &c, pos, "show")
	if err != nil {
		return err
	}
	defer store.Close(st)
	entries, err := st.Read(ctx, k)
	if err != nil {
		return err
	}
	t := readTurns(entries)
	if *asJSON {
		enc := transcript.NewEncoder(env.stdout)
		for _, e := range entries {
			if *branches == "active" && !t.br.Active(e.TurnID) {
				continue
			}
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	inUse, _ := history.SummaryOf(entries)
	prev := ""
	for _, e := range entries {
		active := t.br.Active(e.TurnID)
		if *branches == "active" && !active {
			continue
		}
		when := e.Timestamp.Local().Format("2006-01-02 15:04:05")
		if e.TurnID != prev && t.asks[e.TurnID] {
			// Each question's turn gets a line: its number on the active
			// branch (what --at of sessions fork and /edit in chat take),
			// its id and its versions.
			num := "–"
			if n := slices.Index(t.branch, e.TurnID); n >= 0 {
				num = strconv.Itoa(n + 1)
			}
			head := e.TurnID
			if v := t.br.Alternatives(e.TurnID); v != nil {
				head += fmt.Sprintf("  version %d of %d", slices.Index(v, e.TurnID)+1, len(v))
			}
			if !active {
				head += "  (replaced)"
			}
			fmt.Fprintf(tw, "%s\tturn %s\t%s\n", when, num, head)
		}
		prev = e.TurnID
		desc := describe(e)
		if e.Type == transcript.TypeCompaction {
			desc = t.compaction(e, inUse.ID == e.ID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", when, label(e), desc)
	}
	return tw.Flush()
}

// turns is what sessions show and fork need of a transcript's turns: the
// questions (turns whose first message is a user message), those on the
// active branch in order, and what the branch markers say.
type turns struct {
	asks   map[string]bool
	branch []string
	br     *history.Branches
}

// compaction describes a compaction entry with the numbers of the turns it
// covers on the active branch, and whether the history uses it (rule 10).
func (t turns) compaction(e transcript.Entry, inUse bool) string {
	var d transcript.Compaction
	_ = e.DecodeData(&d)
	num := func(id string) string {
		if n := slices.Index(t.branch, id); n >= 0 {
			return strconv.Itoa(n + 1)
		}
		return id
	}
	s := fmt.Sprintf("turns %s to %s summarized (%d turns)", num(d.FirstTurn), num(d.LastTurn), d.Turns)
	if inUse {
		s += ", in use"
	} else {
		s += ", not in use"
	}
	return s + ": " + clip(strings.Join(strings.Fields(d.Summary), " "), 120)
}

func readTurns(entries []transcript.Entry) turns {
	t := turns{asks: map[string]bool{}, br: history.ReadBranches(entries)}
	decided := map[string]bool{}
	for _, e := range entries {
		if !e.Type.IsMessage() || decided[e.TurnID] {
			continue
		}
		decided[e.TurnID] = true
		if e.Type == transcript.TypeUserMessage {
			t.asks[e.TurnID] = true
			if t.br.Active(e.TurnID) {
				t.branch = append(t.branch, e.TurnID)
			}
		}
	}
	return t
}

func sessionsFork(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("fork", "spool sessions fork ID --at TURN [--to NEWID]", env)
	c.register(fs, env)
	at := fs.String("at", "", "the turn to copy up to, included: its id, or its number on the active branch (spool sessions show prints both)")
	to := fs.String("to", "", "the new session's id (default: a fresh one)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *at == "" && len(pos) == 1 {
		return usagef("sessions fork needs --at TURN, the turn to copy up to (spool sessions show %s lists them)", pos[0])
	}
	if *to != "" {
		if _, err := c.key(*to); err != nil {
			return usagef("--to: %v", err)
		}
	}
	st, k, err := sessionArg(ctx, env, &c, pos, "fork")
	if err != nil {
		return err
	}
	defer store.Close(st)
	if *at == "" {
		return usagef("sessions fork needs --at TURN, the turn to copy up to (spool sessions show %s lists them)", k.ID)
	}
	turnID := *at
	if n, err := strconv.Atoi(*at); err == nil {
		entries, err := st.Read(ctx, k)
		if err != nil {
			return err
		}
		b := readTurns(entries).branch
		if n < 1 || n > len(b) {
			return usagef("--at %d: the active branch of session %s has turns 1 to %d", n, k.ID, len(b))
		}
		turnID = b[n-1]
	}
	ctx, agent, err := agentFor(ctx, k, st, echo.New())
	if err != nil {
		return err
	}
	var opts []spool.ForkOption
	if *to != "" {
		opts = append(opts, spool.WithForkID(*to))
	}
	fork, err := agent.Fork(ctx, k.ID, turnID, opts...)
	switch {
	case errors.Is(err, spool.ErrNoTurn):
		return usagef("--at %s: session %s has no such turn (spool sessions show %s lists them)", *at, k.ID, k.ID)
	case errors.Is(err, spool.ErrSessionExists):
		return usagef("--to %s: a session with that id exists (leave --to out for a fresh id)", *to)
	case errors.Is(err, spool.ErrTurnRunning):
		return fmt.Errorf("turn %s of session %s has not ended (it is running, or waits on an approval)", turnID, k.ID)
	case err != nil:
		return err
	}
	fmt.Fprintf(env.stdout, "forked %s at turn %s into %s\n", k.ID, turnID, fork.ID())
	return nil
}

// agentFor returns an agent of the session k on st, answering with m,
// and the context its calls need (the user of a user-scoped session).
func agentFor(ctx context.Context, k store.Key, st store.Store, m model.Model) (context.Context, *spool.Agent, error) {
	cfg := spool.Config{Name: k.Agent, Model: m, Store: st}
	if k.Owner != "" {
		cfg.Scope = spool.ScopeUser
		ctx = spool.ContextWithUser(ctx, k.Owner)
	}
	agent, err := spool.New(cfg)
	return ctx, agent, err
}

// sessionFor returns the session k through an agent of it on st
// (agentFor), with the context its calls need.
func sessionFor(ctx context.Context, k store.Key, st store.Store, m model.Model) (context.Context, *spool.Session, error) {
	ctx, agent, err := agentFor(ctx, k, st, m)
	if err != nil {
		return ctx, nil, err
	}
	sess, err := agent.Session(ctx, k.ID)
	return ctx, sess, err
}

func sessionsHistory(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("history", "spool sessions history ID [--json] [--max-messages N] [--budget TOKENS]", env)
	c.register(fs, env)
	asJSON := fs.Bool("json", false, "print the messages as one JSON array")
	maxMessages := fs.Int("max-messages", history.DefaultMaxMessages, "the window's cap (negative: no cap)")
	budget := fs.Int("budget", 0, "the history budget in tokens (0: none)")
	instructions := fs.String("instructions", "", "the agent's instructions, sent first as a system message")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *maxMessages == 0 {
		return usagef("--max-messages 0 would send nothing; use a negative value for no cap")
	}
	if *budget < 0 {
		return usagef("--budget must not be negative")
	}
	st, k, err := sessionArg(ctx, env, &c, pos, "history")
	if err != nil {
		return err
	}
	defer store.Close(st)
	entries, err := st.Read(ctx, k)
	if err != nil {
		return err
	}
	msgs := history.Build(entries, history.Options{Instructions: *instructions, MaxMessages: *maxMessages, Budget: *budget})
	if *asJSON {
		if msgs == nil {
			msgs = []model.Message{}
		}
		return printJSON(env, msgs)
	}
	for _, m := range msgs {
		line := fmt.Sprintf("%s: %s", m.Role, m.Content)
		if m.ToolCallID != "" {
			line = fmt.Sprintf("%s [%s]: %s", m.Role, m.ToolCallID, m.Content)
		}
		for _, tc := range m.ToolCalls {
			line += fmt.Sprintf("\n  → %s %s [%s]", tc.Name, tc.Arguments, tc.ID)
		}
		fmt.Fprintln(env.stdout, line)
	}
	return nil
}

func sessionsRm(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("rm", "spool sessions rm ID… [--yes]", env)
	c.register(fs, env)
	yes := fs.Bool("yes", false, "delete without asking (in a terminal, rm asks first)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("sessions rm takes one or more session ids")
	}
	var keys []store.Key
	var names []string
	for _, id := range pos {
		k, err := c.key(id)
		if err != nil {
			return err
		}
		if !slices.Contains(keys, k) { // an id given twice is one session, deleted once
			keys, names = append(keys, k), append(names, id)
		}
	}
	st, err := c.openExisting(ctx, env)
	if err != nil {
		return err
	}
	defer store.Close(st)
	// Every id first: a typo deletes nothing.
	for _, k := range keys {
		if err := checkSession(ctx, st, k); err != nil {
			return err
		}
	}
	if !*yes && isTerminal(env.stdin) {
		fmt.Fprintf(env.stderr, "delete %d session(s): %s? [y/N] ", len(keys), strings.Join(names, ", "))
		answer, _ := bufio.NewReader(env.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(env.stderr, "nothing deleted")
			return nil
		}
	}
	for i, k := range keys {
		if err := deleteSession(ctx, st, k); err != nil {
			return fmt.Errorf("after deleting %d of %d sessions: %w", i, len(keys), err)
		}
		fmt.Fprintf(env.stdout, "deleted %s\n", k.ID)
	}
	return nil
}

// deleteSession deletes one session, waiting for a turn another process
// is running on it rather than cutting into it.
func deleteSession(ctx context.Context, st store.Store, k store.Key) error {
	if l, ok := st.(store.Locker); ok {
		unlock, err := l.Lock(ctx, k)
		if err != nil {
			return err
		}
		defer unlock()
	}
	return st.Delete(ctx, k)
}

func sessionsPrune(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("prune", "spool sessions prune [--max-sessions N] [--max-age DAYS] [--dry-run]", env)
	c.register(fs, env)
	maxSessions := fs.Int("max-sessions", 0, "keep the newest N sessions (0: no limit)")
	maxAge := fs.Float64("max-age", 0, "delete sessions idle longer than DAYS (0: no limit)")
	dryRun := fs.Bool("dry-run", false, "list the sessions that would be deleted, and delete nothing")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sessions prune takes no arguments")
	}
	if *maxSessions < 0 || *maxAge < 0 {
		return usagef("--max-sessions and --max-age must not be negative")
	}
	// More days than a duration holds would wrap to a negative age (no
	// limit) or a short one; NaN fails every comparison.
	const maxDays = math.MaxInt64 / int64(24*time.Hour) // about 292 years
	if !(*maxAge <= float64(maxDays)) {
		return usagef("--max-age %v: give a number of days up to %d", *maxAge, maxDays)
	}
	r := store.Retention{MaxSessions: *maxSessions, MaxAge: time.Duration(*maxAge * float64(24*time.Hour))}
	if r.Unlimited() {
		return usagef("give --max-sessions or --max-age (or both)")
	}
	ns, st, err := c.openNamespace(ctx, env)
	if err != nil {
		return err
	}
	defer store.Close(st)
	now := time.Now()
	if *dryRun {
		victims, err := storekit.Victims(ctx, st, ns, r, now)
		if err != nil {
			return err
		}
		if len(victims) == 0 {
			fmt.Fprintln(env.stderr, "nothing to prune")
			return nil
		}
		sessionTable(env.stdout, victims, isTerminal(env.stdout))
		fmt.Fprintf(env.stderr, "would delete %d sessions (nothing deleted: --dry-run)\n", len(victims))
		return nil
	}
	if p, ok := st.(store.Pruner); ok {
		n, err := p.Prune(ctx, ns, r, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "pruned %d sessions\n", n)
		return nil
	}
	victims, err := storekit.Victims(ctx, st, ns, r, now)
	if err != nil {
		return err
	}
	prog := newProgress(env, "pruning", len(victims))
	for i, v := range victims {
		if err := st.Delete(ctx, v.Key()); err != nil {
			return fmt.Errorf("after pruning %d sessions: %w", i, err)
		}
		prog.set(int64(i + 1))
	}
	prog.done()
	fmt.Fprintf(env.stdout, "pruned %d sessions\n", len(victims))
	return nil
}

func printJSON(env *environ, v any) error {
	enc := json.NewEncoder(env.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func label(e transcript.Entry) string {
	switch e.Type {
	case transcript.TypeUserMessage:
		return "user"
	case transcript.TypeAssistantMessage:
		return "assistant"
	case transcript.TypeToolResult:
		return "tool"
	case transcript.TypeApprovalRequest:
		return "approval?"
	case transcript.TypeApprovalDecision:
		return "approval"
	case transcript.TypeGovernanceNotice:
		return "notice"
	case transcript.TypeSessionMode:
		return "mode"
	case transcript.TypeTurnEnd:
		return "turn end"
	case transcript.TypeBranch:
		var d transcript.Branch
		if e.DecodeData(&d) == nil && d.Kind != "" {
			return string(d.Kind)
		}
		return "branch"
	case transcript.TypeFork:
		return "fork"
	case transcript.TypeCompaction:
		return "compaction"
	}
	return string(e.Type)
}

// describe renders an entry's data for people, on one line.
func describe(e transcript.Entry) string {
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	switch e.Type {
	case transcript.TypeUserMessage:
		var d transcript.UserMessage
		_ = e.DecodeData(&d)
		return oneLine(d.Text)
	case transcript.TypeAssistantMessage:
		var d transcript.AssistantMessage
		_ = e.DecodeData(&d)
		s := oneLine(d.Text)
		for _, c := range d.ToolCalls {
			s += fmt.Sprintf(" [calls %s %s]", c.Name, c.Arguments)
		}
		return strings.TrimSpace(s)
	case transcript.TypeToolResult:
		var d transcript.ToolResult
		_ = e.DecodeData(&d)
		s := fmt.Sprintf("%s → %s", d.Tool, oneLine(d.Result))
		if d.IsError {
			s += " (error)"
		}
		return s
	case transcript.TypeApprovalRequest:
		var d transcript.ApprovalRequest
		_ = e.DecodeData(&d)
		return fmt.Sprintf("%s %s waits for approval (%s)", d.Tool, d.Arguments, d.ApprovalID)
	case transcript.TypeApprovalDecision:
		var d transcript.ApprovalDecision
		_ = e.DecodeData(&d)
		s := fmt.Sprintf("%s, %s (%s)", d.Decision, d.Scope, d.ApprovalID)
		if d.Reason != "" {
			s += ": " + oneLine(d.Reason)
		}
		return s
	case transcript.TypeGovernanceNotice:
		var d transcript.GovernanceNotice
		_ = e.DecodeData(&d)
		return fmt.Sprintf("%s: %s", d.Kind, oneLine(d.Message))
	case transcript.TypeSessionMode:
		var d transcript.SessionMode
		_ = e.DecodeData(&d)
		return "tool mode " + string(d.ToolMode)
	case transcript.TypeTurnEnd:
		var d transcript.TurnEnd
		_ = e.DecodeData(&d)
		s := fmt.Sprintf("%s (%d in / %d out tokens, %s)", e.Status, d.Usage.InputTokens, d.Usage.OutputTokens, time.Duration(d.DurationMs)*time.Millisecond)
		if d.Error != nil {
			s += fmt.Sprintf(": %s %s", d.Error.Code, oneLine(d.Error.Message))
		}
		return s
	case transcript.TypeBranch:
		var d transcript.Branch
		_ = e.DecodeData(&d)
		s := "replaces " + strings.Join(d.Supersedes, ", ")
		if len(d.Restores) > 0 {
			s += "; brings back " + strings.Join(d.Restores, ", ")
		}
		return s
	case transcript.TypeFork:
		var d transcript.Fork
		_ = e.DecodeData(&d)
		s := fmt.Sprintf("copied from session %s up to turn %s", d.Source, d.TurnID)
		if d.ToolMode != "" {
			s += ", tool mode " + string(d.ToolMode)
		}
		if len(d.ApprovedTools) > 0 {
			s += ", approved for the session: " + strings.Join(d.ApprovedTools, ", ")
		}
		return s
	}
	return string(e.Data)
}
