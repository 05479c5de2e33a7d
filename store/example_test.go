package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/memstore" // registers memory:
	"github.com/spool-go/spool/transcript"
)

// Example shows the store contract: append entries each naming the one
// before as its parent, read them back, and list the sessions of a namespace.
func Example() {
	ctx := context.Background()
	s, err := store.Open(ctx, "memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close(s)

	key := store.Key{Agent: "support", Owner: "alice", ID: "order-1042"}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

	question, _ := transcript.New(now, transcript.TypeUserMessage, "turn-1", transcript.UserMessage{Text: "Where is order 1042?"})
	// The first entry of a session has no parent.
	if err := s.Append(ctx, key, question); err != nil {
		fmt.Println(err)
		return
	}
	end, _ := transcript.New(now.Add(2*time.Second), transcript.TypeTurnEnd, "turn-1", transcript.TurnEnd{})
	end.Status = transcript.StatusOK
	end.ParentID = question.ID // the session's last entry
	if err := s.Append(ctx, key, end); err != nil {
		fmt.Println(err)
		return
	}
	// Appending it again names a parent that is no longer the last entry.
	err = s.Append(ctx, key, end)
	fmt.Println("conflict:", errors.Is(err, store.ErrConflict))

	entries, err := s.Read(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Println(e.Type, e.Status, e.ParentID == "" || e.ParentID == question.ID)
	}

	page, err := s.List(ctx, key.Namespace(), store.ListOptions{Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, info := range page.Sessions {
		fmt.Printf("%s %q %d messages, last activity %s\n", info.ID, info.Title, info.MessageCount, info.LastActivity.Format(time.TimeOnly))
	}
	fmt.Printf("more: %t\n", page.NextCursor != "")
	// Output:
	// conflict: true
	// user.message  true
	// assistant.turn_end ok true
	// order-1042 "Where is order 1042?" 1 messages, last activity 10:00:02
	// more: false
}
