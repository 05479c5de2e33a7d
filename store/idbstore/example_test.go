//go:build js && wasm

package idbstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/idbstore"
)

// An app compiled with GOOS=js GOARCH=wasm keeps its conversations in the
// browser: the agent's store is the IndexedDB database "spool-sessions".
// After a reload (here: Close, and a new agent) the conversation list
// opens from the list records and the chat goes on where it was.
func Example() {
	ctx := context.Background()
	newAgent := func() *spool.Agent {
		sessions, err := idbstore.New(ctx, idbstore.DatabaseName) // newest 50 sessions, none idle over 90 days
		if err != nil {
			log.Fatal(err) // no IndexedDB (some private modes), or a newer schema
		}
		agent, err := spool.New(spool.Config{
			Name:  "chat",
			Model: echo.New(), // offline; a real app calls its server or a provider
			Store: sessions,
		})
		if err != nil {
			log.Fatal(err)
		}
		return agent
	}

	agent := newAgent()
	sess, _ := agent.Session(ctx, "first-chat")
	res, _ := sess.Send(ctx, "Hello from the browser")
	fmt.Println(res.Status, "|", res.Text)
	agent.Close() // closes the database

	// The page reloads.
	agent = newAgent()
	defer agent.Close()
	page, _ := agent.ListSessions(ctx, store.ListOptions{Limit: 20})
	for _, info := range page.Sessions {
		fmt.Println(info.ID, "|", info.Title, "|", info.MessageCount, "messages")
	}
	sess, _ = agent.OpenSession(ctx, "first-chat")
	res, _ = sess.Send(ctx, "Still there?")
	fmt.Println(res.Status, "|", res.Text)

	agent.DeleteSession(ctx, "first-chat")
	// Output:
	// ok | echo: Hello from the browser
	// first-chat | Hello from the browser | 2 messages
	// ok | echo: Still there?
}
