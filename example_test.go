package spool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// The whole flow: a new session, a turn, a tool call that waits for
// approval, a restart, the approval, and the conversation going on.
func Example() {
	ctx := context.Background()
	st := memstore.New() // in production: filestore, sqlitestore, pgstore, …

	type refundArgs struct {
		Order int `json:"order" jsonschema:"the order to refund"`
	}
	refund := tool.New("refund", "Refund an order.",
		func(ctx context.Context, a refundArgs) (string, error) {
			return fmt.Sprintf("order %d refunded", a.Order), nil
		}, tool.RequireApproval())

	newAgent := func() *spool.Agent {
		a, err := spool.New(spool.Config{
			Name:         "support",
			Instructions: "You help with orders.",
			Model:        echo.New(), // offline; try openai.New("gpt-4o") instead
			Tools:        []*tool.Tool{refund},
			Store:        st,
		})
		if err != nil {
			log.Fatal(err)
		}
		return a
	}

	agent := newAgent()
	sess, err := agent.Session(ctx, "ticket-1042")
	if err != nil {
		log.Fatal(err)
	}
	res, err := sess.Send(ctx, "Where is order 1042?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "|", res.Text)

	// The echo model calls a tool when asked to with /call.
	res, err = sess.Send(ctx, `/call refund {"order":1042}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "|", res.Pending[0].Tool, string(res.Pending[0].Arguments))

	// The process restarts: a new agent on the same store.
	agent = newAgent()
	sess, err = agent.OpenSession(ctx, "ticket-1042")
	if err != nil {
		log.Fatal(err)
	}
	pending, err := sess.PendingApprovals(ctx)
	if err != nil {
		log.Fatal(err)
	}
	res, err = sess.Approve(ctx, pending[0].ID, transcript.ApprovalScopeOnce)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "|", res.Text)

	res, err = sess.Send(ctx, "Thanks!")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "|", res.Text)
	// Output:
	// ok | echo: Where is order 1042?
	// awaiting_approval | refund {"order":1042}
	// ok | tool refund returned: order 1042 refunded
	// ok | echo: Thanks!
}

// Stream yields the turn as it happens; the answer is persisted once the
// stream has been consumed.
func ExampleSession_Stream() {
	ctx := context.Background()
	agent, err := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := agent.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range sess.Stream(ctx, "stream this answer") {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Kind {
		case spool.EventText:
			fmt.Printf("%q ", ev.Text)
		case spool.EventTurnEnd:
			fmt.Println("→", ev.Result.Status)
		}
	}
	// Output:
	// "echo: " "stream " "this " "answer" → ok
}
