package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
)

// sessionsCompact summarizes a session's older turns (history rule 10) and
// says what it covered and the history's size before and after.
func sessionsCompact(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("compact", "spool sessions compact ID [--keep-turns N] [--model SPEC]", env)
	c.register(fs, env)
	keep := fs.Int("keep-turns", spool.DefaultKeepTurns, "the newest turns left as they are (at least 1)")
	var mf modelFlags
	mf.register(fs, env)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *keep < 1 {
		return usagef("--keep-turns must be at least 1: the newest turn is always sent as itself")
	}
	st, k, err := sessionArg(ctx, env, &c, pos, "compact")
	if err != nil {
		return err
	}
	defer store.Close(st)
	m, err := mf.open(env)
	if err != nil {
		return err
	}
	ctx, s, err := sessionFor(ctx, k, st, m)
	if err != nil {
		return err
	}
	res, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: *keep})
	switch {
	case errors.Is(err, spool.ErrNothingToCompact):
		fmt.Fprintf(env.stdout, "nothing to compact: session %s has no ended turn before its newest %d that is not summarized already\n", k.ID, *keep)
		return nil
	case errors.Is(err, spool.ErrApprovalPending):
		// A compaction entry would split the waiting turn in two.
		return fmt.Errorf("session %s waits on an approval: answer it first (spool chat --session %s asks about it), then compact", k.ID, k.ID)
	case err != nil:
		return err
	}
	entries, err := st.Read(ctx, k)
	if err != nil {
		return err
	}
	branch := readTurns(entries).branch
	num := func(id string) int { return slices.Index(branch, id) + 1 }
	fmt.Fprintf(env.stdout, "compacted session %s: turns %d to %d (%d turns, %d newly summarized) in entry %s\n",
		k.ID, num(res.FirstTurn), num(res.LastTurn), res.Turns, res.NewTurns, res.EntryID)
	fmt.Fprintf(env.stdout, "history: %d messages, %d tokens before; %d messages, %d tokens after\n",
		res.Before.Messages, res.Before.Tokens, res.After.Messages, res.After.Tokens)
	fmt.Fprintf(env.stdout, "summary (%s, %d in / %d out tokens):\n%s\n", res.Model, res.Usage.InputTokens, res.Usage.OutputTokens, res.Summary)
	return nil
}
