package spool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
)

// A conversation as a tree: an answer regenerated, the question edited,
// the first version made active again, and the edited branch forked into
// a session of its own. The transcript only ever grows.
func ExampleSession_Edit() {
	ctx := context.Background()
	agent, err := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := agent.Session(ctx, "colours")
	if err != nil {
		log.Fatal(err)
	}
	first, err := sess.Send(ctx, "Name a colour.")
	if err != nil {
		log.Fatal(err)
	}
	again, err := sess.Regenerate(ctx)
	if err != nil {
		log.Fatal(err)
	}
	edited, err := sess.Edit(ctx, again.TurnID, "Name a warm colour.")
	if err != nil {
		log.Fatal(err)
	}
	show := func(s *spool.Session) {
		msgs, err := s.Messages(ctx, 0)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range msgs {
			line := string(m.Role) + ": " + m.Text
			if m.Branch != nil {
				line += fmt.Sprintf(" (%d / %d)", m.Branch.Index, m.Branch.Count)
			}
			fmt.Println(line)
		}
	}
	show(sess)
	if err := sess.SwitchBranch(ctx, first.TurnID); err != nil {
		log.Fatal(err)
	}
	show(sess)
	forked, err := agent.Fork(ctx, sess.ID(), edited.TurnID, spool.WithForkID("warm"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fork", forked.ID())
	show(forked)
	// Output:
	// user: Name a warm colour. (3 / 3)
	// assistant: echo: Name a warm colour. (3 / 3)
	// user: Name a colour. (1 / 3)
	// assistant: echo: Name a colour. (1 / 3)
	// fork warm
	// user: Name a warm colour.
	// assistant: echo: Name a warm colour.
}
