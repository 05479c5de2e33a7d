package spool

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// ForkOption configures Fork.
type ForkOption func(*forkConfig)

type forkConfig struct {
	id string
}

// WithForkID gives the new session of Fork the id id instead of a fresh
// one (NewSessionID). A session with that id must not exist.
func WithForkID(id string) ForkOption {
	return func(c *forkConfig) { c.id = id }
}

// Fork copies session id up to its turn atTurn into a new session and
// returns it. The new session's history is the source's history as it was
// when that turn ended: its first entry (session.fork) names the source
// and the turn and carries the tool mode and the tools approved for the
// session as they were then, and the entries of the turns on the active
// branch up to atTurn follow, copied with their ids, turn ids and
// timestamps (markers, and the turns they had superseded, are not
// copied), with the compaction that applies at that turn (written before
// the next turn began), if one does. Both sessions are the caller's: a user-scoped agent forks a
// user's session into a session of the same user.
//
// It reads the source once and writes the copy in one batch
// (store.AppendBatch): its cost is the entries copied. On a store that
// appends a batch atomically the copy appears whole or not at all;
// elsewhere a copy that fails part way is deleted. It fails with
// store.ErrNotFound for an unknown source, ErrNoTurn for a turn that is not
// one of its questions, ErrTurnRunning for a turn that has not ended, and
// ErrSessionExists when the new id (WithForkID) has a transcript.
func (a *Agent) Fork(ctx context.Context, id, atTurn string, opts ...ForkOption) (*Session, error) {
	cfg := forkConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.id == "" {
		cfg.id = NewSessionID()
	}
	src, err := a.key(ctx, id)
	if err != nil {
		return nil, err
	}
	dst, err := a.Session(ctx, cfg.id)
	if err != nil {
		return nil, err
	}
	entries, err := a.cfg.Store.Read(ctx, src)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("spool: session %s: %w", src, store.ErrNotFound)
	}
	c := readConversation(entries)
	t, ok := c.byID[atTurn]
	if !ok {
		return nil, fmt.Errorf("%w: %q in session %s", ErrNoTurn, atTurn, src)
	}
	if !t.ended {
		return nil, fmt.Errorf("%w: turn %s of session %s has not ended", ErrTurnRunning, atTurn, src)
	}
	// Compactions after the turn and before the next one cover it and the
	// turns before: they are part of the session as it stood then, with or
	// without a title, mode or notice written between (which are not: the
	// fork's mode is the one its turn ran under).
	prefix := entries[:t.last+1]
	for _, e := range entries[t.last+1:] {
		if e.Type == transcript.TypeCompaction {
			prefix = append(prefix[:len(prefix):len(prefix)], e)
			continue
		}
		if e.Type != transcript.TypeSessionTitle && e.Type != transcript.TypeSessionMode && e.Type != transcript.TypeGovernanceNotice {
			break
		}
	}
	copies, head := forkEntries(prefix, a)
	head.Source, head.TurnID = id, atTurn
	first, err := transcript.New(a.now(), transcript.TypeFork, transcript.NewID(a.now()), head)
	if err != nil {
		return nil, err
	}
	all := append([]transcript.Entry{first}, copies...)
	err = dst.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		if sl.st.count > 0 {
			return fmt.Errorf("%w: %s", ErrSessionExists, dst.key)
		}
		data := make([]any, len(all))
		data[0] = head
		err := dst.writer(sl).appendEntries(ctx, all, data)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			// Part of the copy may be in; a conflict means another writer
			// made the session, which is theirs.
			_ = a.cfg.Store.Delete(context.WithoutCancel(ctx), dst.key)
		}
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%w: %s: %w", ErrSessionExists, dst.key, err)
		}
		if err == nil && !a.cfg.Retention.Unlimited() {
			a.prune(ctx)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// forkEntries returns the copies a fork at the end of prefix starts with:
// the entries of the turns on its active branch that ask something, and
// the session state those entries leave out (the tool mode, the tools
// approved for the session, grants of superseded turns included) for the
// fork's first entry.
func forkEntries(prefix []transcript.Entry, a *Agent) ([]transcript.Entry, transcript.Fork) {
	c := readConversation(prefix)
	st := loadState(prefix, a.historyOptions())
	head := transcript.Fork{ToolMode: st.mode}
	for tool := range st.approved {
		head.ApprovedTools = append(head.ApprovedTools, tool)
	}
	slices.Sort(head.ApprovedTools)
	// The compaction that applies at the turn comes along, where it was:
	// it covers turns of the active branch only, so it applies in the copy
	// too, and the copy's history is the source's (rule 10).
	summary, _ := st.hist.Summary()
	var out []transcript.Entry
	for _, e := range prefix {
		if e.Type == transcript.TypeCompaction {
			if e.ID == summary.ID {
				out = append(out, e)
			}
			continue
		}
		if t, ok := c.byID[e.TurnID]; ok && e.Type != transcript.TypeBranch && c.active(t) {
			out = append(out, e)
		}
	}
	return out, head
}
