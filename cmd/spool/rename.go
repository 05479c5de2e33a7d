package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
)

// sessionsRename is spool sessions rename ID TITLE…: the session's title
// from now on (a session.title entry, spool.Session.Rename), in ls, the
// web UI and every list.
func sessionsRename(ctx context.Context, env *environ, args []string) error {
	var c common
	fs := newFlagSet("rename", "spool sessions rename ID TITLE…", env)
	c.register(fs, env)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("sessions rename takes a session id and the new title")
	}
	title := strings.Join(pos[1:], " ")
	if strings.TrimSpace(title) == "" {
		return usagef("sessions rename: the title is blank")
	}
	st, k, err := sessionArg(ctx, env, &c, pos[:1], "rename")
	if err != nil {
		return err
	}
	defer store.Close(st)
	ctx, agent, err := agentFor(ctx, k, st, echo.New())
	if err != nil {
		return err
	}
	sess, err := agent.Session(ctx, k.ID)
	if err != nil {
		return err
	}
	if err := sess.Rename(ctx, title); errors.Is(err, spool.ErrApprovalPending) {
		return fmt.Errorf("session %s waits on an approval: answer it first, then rename", k.ID)
	} else if err != nil {
		return err
	}
	info, err := agent.SessionInfo(ctx, k.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "renamed %s: %s\n", k.ID, info.Title)
	return nil
}
